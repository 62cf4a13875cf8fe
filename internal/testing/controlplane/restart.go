package controlplane

import (
	"context"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/process"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Grace periods of a stop before SIGKILL. kube-apiserver waits up to a
// minute on SIGTERM for open watches to end; like a supervisor with a short
// termination grace period, the tests do not wait that long.
const (
	apiServerGrace = 10 * time.Second
	etcdGrace      = 30 * time.Second
)

// Processes are the control plane's etcd and kube-apiserver as processes a
// test can pause, restart and restore. envtest keeps its process handles
// private, so they are found in /proc by the data and certificate
// directories envtest gave them. A process restarted here is a child of the
// test: call Stop before Env.Stop.
type Processes struct {
	env       *Env
	Etcd      *process.Process
	APIServer *process.Process
	// EtcdStopped is when etcd last stopped for a restore: no write
	// commits in the history it had after then.
	EtcdStopped time.Time
	// OnEtcdStopped, if set, is called when etcd has stopped for a restore,
	// before its data is replaced: what a test observes then was written
	// before the restore.
	OnEtcdStopped func()
}

// Processes finds the running etcd and kube-apiserver of e. log, if not
// nil, receives the output of processes restarted later.
func (e *Env) Processes(log io.Writer) (*Processes, error) {
	cp := e.Environment.ControlPlane
	etcd, err := process.FindProcess(cp.Etcd.Path, "--data-dir="+cp.Etcd.DataDir)
	if err != nil {
		return nil, err
	}
	var api *process.Process
	if e.HA != nil { // its API servers share the certificate directory
		api = e.HA.Servers[0].Process
	} else if api, err = process.FindProcess(cp.APIServer.Path, "--cert-dir="+cp.APIServer.CertDir); err != nil {
		return nil, err
	}
	etcd.Log, api.Log = log, log
	return &Processes{env: e, Etcd: etcd, APIServer: api}, nil
}

// RestartAPIServer stops kube-apiserver (SIGTERM, SIGKILL after a grace
// period) and starts it again with the same flags, certificates and port on
// the same etcd, and waits until it is ready.
func (p *Processes) RestartAPIServer(ctx context.Context) error {
	if err := p.APIServer.Stop(apiServerGrace); err != nil {
		return err
	}
	if err := p.APIServer.Start(); err != nil {
		return err
	}
	return p.waitAPIServer(ctx)
}

// RestartEtcd stops etcd and starts it again on the same data and ports,
// with extraArgs added to its flags, and waits until etcd is healthy and
// kube-apiserver ready again.
func (p *Processes) RestartEtcd(ctx context.Context, extraArgs ...string) error {
	if err := p.Etcd.Stop(etcdGrace); err != nil {
		return err
	}
	p.Etcd.Args = append(p.Etcd.Args, extraArgs...)
	if err := p.Etcd.Start(); err != nil {
		return err
	}
	if err := p.waitEtcd(ctx); err != nil {
		return err
	}
	return p.waitAPIServer(ctx)
}

// SnapshotEtcd copies etcd's data directory into dir (which must not
// exist) while etcd is paused, so the copy is consistent. A paused etcd
// stays paused; a running one runs on.
func (p *Processes) SnapshotEtcd(dir string, paused bool) error {
	if !paused {
		if err := p.Etcd.Pause(); err != nil {
			return err
		}
		defer func() { _ = p.Etcd.Resume() }()
	}
	return copyDir(p.env.Environment.ControlPlane.Etcd.DataDir, dir)
}

// RestoreEtcd replaces etcd's data with a SnapshotEtcd copy, as an operator
// restoring a backup would: kube-apiserver and etcd stop, the data directory
// is replaced, etcd starts, then kube-apiserver starts on it. Resource
// versions go back to those of the snapshot.
func (p *Processes) RestoreEtcd(ctx context.Context, snapshot string) error {
	if err := p.APIServer.Stop(apiServerGrace); err != nil {
		return err
	}
	if err := p.restoreEtcdData(ctx, snapshot); err != nil {
		return err
	}
	if err := p.APIServer.Start(); err != nil {
		return err
	}
	return p.waitAPIServer(ctx)
}

// RestoreEtcdUnderAPIServer restores etcd's data while kube-apiserver runs
// on, as a careless restore does: kube-apiserver reconnects to the restored
// etcd with its watch caches still holding the lost, newer history.
func (p *Processes) RestoreEtcdUnderAPIServer(ctx context.Context, snapshot string) error {
	if err := p.restoreEtcdData(ctx, snapshot); err != nil {
		return err
	}
	return p.waitAPIServer(ctx)
}

// restoreEtcdData stops etcd, replaces its data directory with snapshot and
// starts it again.
func (p *Processes) restoreEtcdData(ctx context.Context, snapshot string) error {
	if err := p.Etcd.Stop(etcdGrace); err != nil {
		return err
	}
	p.EtcdStopped = time.Now()
	if p.OnEtcdStopped != nil {
		p.OnEtcdStopped()
	}
	data := p.env.Environment.ControlPlane.Etcd.DataDir
	if err := os.RemoveAll(data); err != nil {
		return err
	}
	if err := copyDir(snapshot, data); err != nil {
		return err
	}
	if err := p.Etcd.Start(); err != nil {
		return err
	}
	return p.waitEtcd(ctx)
}

// Stop stops kube-apiserver, then etcd. envtest's Stop then finds them
// ended and only removes their directories.
func (p *Processes) Stop() error {
	errAPI := p.APIServer.Stop(apiServerGrace)
	errEtcd := p.Etcd.Stop(etcdGrace)
	if errAPI != nil {
		return errAPI
	}
	return errEtcd
}

// waitAPIServer polls /readyz until it answers ok or ctx ends.
func (p *Processes) waitAPIServer(ctx context.Context) error {
	rc := p.env.Client.Discovery().RESTClient()
	return process.Poll(ctx, "kube-apiserver ready", func(ctx context.Context) error {
		if p.APIServer.Exited() {
			return process.ErrExited
		}
		return rc.Get().AbsPath("/readyz").Do(ctx).Error()
	})
}

// waitEtcd polls etcd's /health until it answers ok or ctx ends.
func (p *Processes) waitEtcd(ctx context.Context) error {
	url := p.env.EtcdURL().String() + "/health"
	return process.Poll(ctx, "etcd healthy", func(ctx context.Context) error {
		if p.Etcd.Exited() {
			return process.ErrExited
		}
		return process.GetOK(ctx, url)
	})
}

// copyDir copies the tree at src to dst, which must not exist.
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Mkdir(target, info.Mode().Perm())
		}
		return copyFile(path, target, info.Mode().Perm())
	})
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
