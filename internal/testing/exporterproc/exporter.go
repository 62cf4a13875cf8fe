package exporterproc

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/controlplane"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/process"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

var (
	buildOnce sync.Once
	builtPath string
	buildErr  error
)

// ExporterBinary builds cmd/exporter, the binary the chart ships, once per
// test process (go build is incremental, so a rebuild of unchanged code
// takes a second) into a directory of the system's temp dir keyed by the
// checkout, so parallel checkouts never run each other's build, and returns
// its path. Tests run the exporter as a process, as it runs in a pod: its
// flags, its config file, its exit codes.
func ExporterBinary() (string, error) {
	buildOnce.Do(func() {
		root, err := process.RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		sum := sha256.Sum256([]byte(root))
		builtPath = filepath.Join(os.TempDir(), "rvsync-exporter-"+hex.EncodeToString(sum[:6]), "exporter")
		cmd := exec.Command("go", "build", "-o", builtPath, "./cmd/exporter")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/exporter: %v\n%s", err, out)
		}
	})
	return builtPath, buildErr
}

// ExporterOptions start an exporter process.
type ExporterOptions struct {
	// Informer and Probe are written to kubeconfig files for --kubeconfig
	// and --probe-kubeconfig (Probe nil: the same as Informer).
	Informer, Probe *rest.Config
	// Config, when set, is written to a file for --config.
	Config []byte
	// Args are extra flags.
	Args []string
	// Env are extra environment variables ("POD_NAME=x").
	Env []string
	// Log receives the exporter's output; nil keeps it in memory for Output.
	Log io.Writer
	// Dir holds the kubeconfig and config files; default a new temp dir.
	Dir string
	// Addr is the listen address; default a free loopback port.
	Addr string
	// TLS says the exporter serves https (--secure-metrics): the readiness
	// check then speaks TLS, without verifying the self-signed certificate.
	TLS bool
}

// Exporter is a running exporter process.
type Exporter struct {
	*process.Process
	// Addr is the address it serves on.
	Addr string
	out  *lockedBuffer
	tls  bool
}

// MetricsURL is the URL of its /metrics.
func (e *Exporter) MetricsURL() string { return "http://" + e.Addr + "/metrics" }

// Output returns what it wrote, when ExporterOptions.Log was nil.
func (e *Exporter) Output() string {
	if e.out == nil {
		return ""
	}
	return e.out.String()
}

// StartExporter builds and starts an exporter process on a free loopback
// port and waits until /healthz answers. Stop it with Stop.
func StartExporter(o ExporterOptions) (*Exporter, error) {
	bin, err := ExporterBinary()
	if err != nil {
		return nil, err
	}
	if o.Dir == "" {
		if o.Dir, err = os.MkdirTemp("", "rvsync-exporter-"); err != nil {
			return nil, err
		}
	}
	addr := o.Addr
	if addr == "" {
		if addr, err = process.FreeAddr(); err != nil {
			return nil, err
		}
	}
	args := []string{"--listen-address=" + addr}
	if o.Informer != nil {
		p := filepath.Join(o.Dir, "informer.kubeconfig")
		if err := controlplane.WriteKubeconfig(p, o.Informer); err != nil {
			return nil, err
		}
		args = append(args, "--kubeconfig="+p)
	}
	if o.Probe != nil {
		p := filepath.Join(o.Dir, "probe.kubeconfig")
		if err := controlplane.WriteKubeconfig(p, o.Probe); err != nil {
			return nil, err
		}
		args = append(args, "--probe-kubeconfig="+p)
	}
	if o.Config != nil {
		p := filepath.Join(o.Dir, "config.yaml")
		if err := os.WriteFile(p, o.Config, 0o600); err != nil {
			return nil, err
		}
		args = append(args, "--config="+p)
	}
	e := &Exporter{Addr: addr, tls: o.TLS}
	log := o.Log
	if log == nil {
		e.out = &lockedBuffer{}
		log = e.out
	}
	e.Process = &process.Process{Path: bin, Args: append(args, o.Args...), Log: log, Env: o.Env}
	if err := e.Start(); err != nil {
		return nil, err
	}
	if err := e.waitHealthy(); err != nil {
		_ = e.Stop(5 * time.Second)
		return nil, err
	}
	return e, nil
}

// Restart stops the exporter (SIGTERM, then SIGKILL after grace) and starts
// it again with the same flags on the same address, as a pod's restart
// does: its informers list anew. It waits until /healthz answers.
func (e *Exporter) Restart(grace time.Duration) error {
	if err := e.Stop(grace); err != nil {
		return err
	}
	if err := e.Start(); err != nil {
		return err
	}
	return e.waitHealthy()
}

// waitHealthy polls /healthz until it answers ok, for up to a minute.
func (e *Exporter) waitHealthy() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	health := "http://" + e.Addr + "/healthz"
	if e.tls {
		health = "https://" + e.Addr + "/healthz"
	}
	err := process.Poll(ctx, "exporter /healthz", func(ctx context.Context) error {
		if e.Exited() {
			return process.ErrExited
		}
		return process.GetOK(ctx, health)
	})
	if err != nil {
		return fmt.Errorf("%w; output ends:\n%s", err, process.LastLines(e.Output(), 40))
	}
	return nil
}

// CheckConfig runs `exporter --check` on a config file's content and
// returns the effective configuration it prints, as generic YAML, or the
// one-line error it exits 2 with.
func CheckConfig(config []byte) (map[string]any, error) {
	bin, err := ExporterBinary()
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp("", "rvsync-config-*.yaml")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(config); err != nil {
		return nil, err
	}
	_ = f.Close()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "--check", "--config="+f.Name())
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("exporter --check: %v: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var out map[string]any
	return out, yaml.Unmarshal(stdout.Bytes(), &out)
}

// lockedBuffer is a bytes.Buffer safe for a writing process and a reading test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// ConfigResources returns the names of the resources of an effective
// configuration printed by `exporter --check`, in order.
func ConfigResources(effective map[string]any) []string {
	var out []string
	list, _ := effective["resources"].([]any)
	for _, r := range list {
		if m, ok := r.(map[string]any); ok {
			if n, ok := m["name"].(string); ok {
				out = append(out, n)
			}
		}
	}
	return out
}
