package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// indexMain runs `image index`: the image tarballs given as arguments (one
// per architecture, as `image` writes them) become one multi-arch image,
// an index naming each image with its platform, written as an OCI image
// layout (-layout) and pushed (-push, with the credentials of
// `docker login`, the registry's usual keychain). It prints the index's
// digest and each platform's, and returns the exit code: 2 for bad flags.
func indexMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("image index", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("layout", "", "directory of the OCI image layout to write the multi-arch image into")
	push := fs.String("push", "", "image reference (registry/repository:tag) to push the multi-arch image to; prints ref@digest")
	insecure := fs.Bool("insecure", false, "push over plain HTTP (a registry on localhost in tests)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "Usage: image index [-layout DIR] [-push REF] IMAGE.tar...\n\nJoins single-architecture image tarballs into one multi-arch image.\n\nFlags:\n")
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "image index: %v (see -help)\n", err)
		return 2
	}
	if fs.NArg() == 0 || (*out == "" && *push == "") {
		fmt.Fprintln(stderr, "image index: want image tarballs as arguments and -layout or -push (see -help)")
		return 2
	}
	idx, err := buildIndex(fs.Args())
	if err != nil {
		fmt.Fprintf(stderr, "image index: %v\n", err)
		return 1
	}
	if *out != "" {
		if err := os.RemoveAll(*out); err != nil {
			fmt.Fprintf(stderr, "image index: %v\n", err)
			return 1
		}
		// index.json names the multi-arch index, as registries' own layouts do
		lp, err := layout.Write(*out, empty.Index)
		if err == nil {
			err = lp.AppendIndex(idx)
		}
		if err != nil {
			fmt.Fprintf(stderr, "image index: -layout %s: %v\n", *out, err)
			return 1
		}
	}
	if *push != "" {
		var opts []name.Option
		if *insecure {
			opts = append(opts, name.Insecure)
		}
		ref, err := name.NewTag(*push, append(opts, name.StrictValidation)...)
		if err != nil {
			fmt.Fprintf(stderr, "image index: -push %q: %v (want registry/repository:tag)\n", *push, err)
			return 2
		}
		if err := remote.WriteIndex(ref, idx, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			fmt.Fprintf(stderr, "image index: push %s: %v\n", ref, err)
			return 1
		}
	}
	return printDigests(stdout, idx, *push)
}

// buildIndex makes the index of the images in the tarballs, each under the
// platform its config names; two images of one platform are an error.
func buildIndex(tarballs []string) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.DockerManifestList) // the images are Docker schema 2, as tarball writes them
	seen := map[string]string{}
	for _, path := range tarballs {
		img, err := tarball.ImageFromPath(path, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		p := v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
		if p.OS == "" || p.Architecture == "" {
			return nil, fmt.Errorf("%s: the image config names no OS or architecture", path)
		}
		if other, dup := seen[p.String()]; dup {
			return nil, fmt.Errorf("%s and %s are both %s", other, path, p.String())
		}
		seen[p.String()] = path
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return idx, nil
}

// printDigests writes the index's digest (as ref@digest when pushed) and
// each platform's image digest, one per line.
func printDigests(w io.Writer, idx v1.ImageIndex, ref string) int {
	d, err := idx.Digest()
	if err != nil {
		return 1
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return 1
	}
	if ref != "" {
		r, _ := name.NewTag(ref, name.Insecure)
		fmt.Fprintf(w, "%s@%s\n", r.Context().Name(), d)
	} else {
		fmt.Fprintf(w, "index %s\n", d)
	}
	for _, desc := range m.Manifests {
		fmt.Fprintf(w, "%s %s\n", desc.Platform, desc.Digest)
	}
	return 0
}
