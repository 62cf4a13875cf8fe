// Command image writes a container image holding one static binary as a
// tarball that `ctr images import`, `docker load` and `kind load
// image-archive` read, without a registry or a container engine; and, as
// `image index`, joins such tarballs of several architectures into one
// multi-arch image (an OCI image layout, and pushed to a registry by the
// release workflow).
//
// The image matches what the repository's Dockerfile makes: the binary as
// the entrypoint, run as the distroless nonroot user (65532:65532), no
// shell, /etc/passwd and /etc/group naming that user, and a world-writable
// /tmp. Layers carry fixed timestamps, so one binary always gives one digest.
// Each -label becomes a label of the image config: the release sets the
// org.opencontainers.image.* labels (source, version, revision, licenses)
// that registries and scanners read.
//
//	image -binary bin/exporter -name rvsync.local/rvsync-slo:dev -out bin/images/rvsync-slo.tar \
//	  -label org.opencontainers.image.licenses=Apache-2.0
//	image index -layout dist/images/oci [-push ghcr.io/o/r:1.0.0] a-amd64.tar a-arm64.tar
//
// Bad flags exit with code 2 and one line naming the problem.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// epoch is the timestamp of every file and of the image: a fixed one makes
// the image reproducible (the same binary gives the same digest).
var epoch = time.Unix(0, 0).UTC()

// spec is what the flags describe.
type spec struct {
	binary     string
	ref        name.Tag
	out        string
	entrypoint string
	uid, gid   int
	ports      []string
	arch       string
	labels     map[string]string
}

// labelFlags collects repeated -label key=value flags.
type labelFlags map[string]string

func (l labelFlags) String() string { return fmt.Sprint(map[string]string(l)) }

func (l labelFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("want key=value, got %q", v)
	}
	if _, dup := l[k]; dup {
		return fmt.Errorf("label %s given twice", k)
	}
	l[k] = val
	return nil
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "index" {
		os.Exit(indexMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	s, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(2)
	}
	if err := write(s); err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (spec, error) {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		binary     = fs.String("binary", "", "static binary to put in the image (required)")
		ref        = fs.String("name", "", "image name with tag, e.g. rvsync.local/rvsync-slo:dev (required): the name the runtime knows it by after import")
		out        = fs.String("out", "", "tarball to write (required)")
		entrypoint = fs.String("entrypoint", "", "absolute path of the binary in the image and the entrypoint (default: /<base name of -binary>)")
		user       = fs.String("user", "65532:65532", "uid:gid the image runs as (the distroless nonroot user, which the chart's securityContext expects)")
		ports      = fs.String("expose", "", "comma-separated ports the image declares, e.g. 8080/tcp (documentation only, as in a Dockerfile's EXPOSE)")
		arch       = fs.String("arch", runtime.GOARCH, "architecture of the binary, recorded in the image config")
		labels     = labelFlags{}
	)
	fs.Var(labels, "label", "key=value label of the image config, repeatable (e.g. org.opencontainers.image.source=https://github.com/o/r)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "Usage: image -binary FILE -name NAME:TAG -out FILE [flags]\n\nWrites an image tarball holding one static binary.\n\nFlags:\n")
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return spec{}, err
		}
		return spec{}, fmt.Errorf("%w (see -help)", err)
	}
	if fs.NArg() > 0 {
		return spec{}, fmt.Errorf("unexpected argument %q (flags only; see -help)", fs.Arg(0))
	}
	s := spec{binary: *binary, out: *out, entrypoint: *entrypoint, arch: *arch, labels: labels}
	switch {
	case s.binary == "":
		return s, errors.New("-binary is required")
	case *ref == "":
		return s, errors.New("-name is required")
	case s.out == "":
		return s, errors.New("-out is required")
	}
	var err error
	if s.ref, err = name.NewTag(*ref, name.StrictValidation); err != nil {
		return s, fmt.Errorf("-name %q: %v (want host/repository:tag)", *ref, err)
	}
	if s.entrypoint == "" {
		s.entrypoint = "/" + path.Base(s.binary)
	}
	if !path.IsAbs(s.entrypoint) || path.Clean(s.entrypoint) != s.entrypoint || s.entrypoint == "/" {
		return s, fmt.Errorf("-entrypoint %q: want a clean absolute file path", s.entrypoint)
	}
	if s.uid, s.gid, err = parseUser(*user); err != nil {
		return s, fmt.Errorf("-user %q: %v", *user, err)
	}
	for p := range strings.SplitSeq(*ports, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		num, proto, _ := strings.Cut(p, "/")
		if n, err := strconv.Atoi(num); err != nil || n < 1 || n > 65535 || (proto != "" && proto != "tcp" && proto != "udp") {
			return s, fmt.Errorf("-expose %q: want PORT[/tcp|/udp]", p)
		}
		if proto == "" {
			p += "/tcp"
		}
		s.ports = append(s.ports, p)
	}
	return s, nil
}

// parseUser reads "uid:gid" as numbers: a name would need the image's
// /etc/passwd at run time, and runAsNonRoot can only be checked on a number.
func parseUser(u string) (uid, gid int, err error) {
	us, gs, ok := strings.Cut(u, ":")
	if !ok {
		return 0, 0, errors.New("want uid:gid")
	}
	if uid, err = strconv.Atoi(us); err != nil || uid < 0 {
		return 0, 0, errors.New("uid is not a number")
	}
	if gid, err = strconv.Atoi(gs); err != nil || gid < 0 {
		return 0, 0, errors.New("gid is not a number")
	}
	return uid, gid, nil
}

func write(s spec) error {
	bin, err := os.ReadFile(s.binary)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(bin, []byte("\x7fELF")) {
		return fmt.Errorf("%s is not an ELF binary", s.binary)
	}
	layer, err := rootfs(s, bin)
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", s.arch
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = []string{s.entrypoint}
	cf.Config.User = fmt.Sprintf("%d:%d", s.uid, s.gid)
	cf.Config.WorkingDir = "/"
	if len(s.labels) > 0 {
		cf.Config.Labels = maps.Clone(s.labels)
	}
	if len(s.ports) > 0 {
		cf.Config.ExposedPorts = map[string]struct{}{}
		for _, p := range s.ports {
			cf.Config.ExposedPorts[p] = struct{}{}
		}
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	if err := os.MkdirAll(path.Dir(s.out), 0o755); err != nil {
		return err
	}
	if err := tarball.WriteToFile(s.out+".tmp", s.ref, img); err != nil {
		return err
	}
	// a reader never sees half a tarball
	return os.Rename(s.out+".tmp", s.out)
}

// rootfs is the image's only layer: the binary (root-owned, executable by
// the run-as user), /etc/passwd and /etc/group naming root and the run-as
// user as distroless does, and /tmp.
func rootfs(s spec, bin []byte) (v1.Layer, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	dirs := map[string]bool{}
	var mkdirs func(dir string) error
	mkdirs = func(dir string) error {
		if dir == "/" || dir == "." || dirs[dir] {
			return nil
		}
		if err := mkdirs(path.Dir(dir)); err != nil {
			return err
		}
		dirs[dir] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(dir, "/") + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX})
	}
	file := func(p string, mode int64, data []byte) error {
		if err := mkdirs(path.Dir(p)); err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(p, "/"), Mode: mode, Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", s.uid, s.gid)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", s.gid)
	for _, f := range []struct {
		path string
		mode int64
		data []byte
	}{
		{"/etc/passwd", 0o644, []byte(passwd)},
		{"/etc/group", 0o644, []byte(group)},
		{s.entrypoint, 0o755, bin},
	} {
		if err := file(f.path, f.mode, f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := b.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
}
