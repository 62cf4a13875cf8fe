package process

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is a long-running program a test starts, signals and stops:
// Prometheus, Alertmanager, or a control-plane process found in /proc.
type Process struct {
	Path string
	Args []string
	// Log receives the output of a process started by Start; nil discards it.
	Log io.Writer
	// Env are extra environment variables of a process started by Start.
	Env []string

	pid  int
	done chan struct{} // closed when a process started by Start has exited
}

// FindProcess returns the running process whose executable is path and
// whose arguments include arg, e.g. etcd with "--data-dir=/tmp/x".
func FindProcess(path, arg string) (*Process, error) {
	found, err := running(func(argv []string) bool { return argv[0] == path && slices.Contains(argv[1:], arg) })
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("no running %s with argument %s", filepath.Base(path), arg)
	}
	return found[0], nil
}

// Naming returns the running processes (this one aside) one of whose
// arguments contains s, e.g. every process of a control plane by the
// directory that holds its data and certificates.
func Naming(s string) ([]*Process, error) {
	return running(func(argv []string) bool {
		return slices.ContainsFunc(argv[1:], func(a string) bool { return strings.Contains(a, s) })
	})
}

// running returns the running processes whose command line matches, in
// the order of their pids.
func running(match func(argv []string) bool) ([]*Process, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var found []*Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		argv := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
		if match(argv) {
			found = append(found, &Process{Path: argv[0], Args: argv[1:], pid: pid})
		}
	}
	return found, nil
}

// String is the process' pid and command line.
func (p *Process) String() string {
	return fmt.Sprintf("%d: %s", p.pid, strings.Join(append([]string{p.Path}, p.Args...), " "))
}

// PID is the process id, 0 before Start.
func (p *Process) PID() int { return p.pid }

// Start starts the program in a process group of its own; Stop or Kill ends it.
func (p *Process) Start() error {
	cmd := exec.Command(p.Path, p.Args...)
	out := p.Log
	if out == nil {
		out = io.Discard
	}
	cmd.Stdout, cmd.Stderr = out, out
	if len(p.Env) > 0 {
		cmd.Env = append(os.Environ(), p.Env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", filepath.Base(p.Path), err)
	}
	p.pid = cmd.Process.Pid
	p.done = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return nil
}

// Pause freezes the process (SIGSTOP): its sockets stay open, nothing answers.
func (p *Process) Pause() error { return p.signal(syscall.SIGSTOP) }

// Resume lets a paused process run on (SIGCONT).
func (p *Process) Resume() error { return p.signal(syscall.SIGCONT) }

func (p *Process) signal(sig syscall.Signal) error {
	if p.pid == 0 {
		return fmt.Errorf("%s: not started", filepath.Base(p.Path))
	}
	if err := syscall.Kill(p.pid, sig); err != nil {
		return fmt.Errorf("%s %s (pid %d): %w", sig, filepath.Base(p.Path), p.pid, err)
	}
	return nil
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	if p.done != nil {
		select {
		case <-p.done:
			return true
		default:
			return false
		}
	}
	// Not our child: gone, or a zombie its parent has yet to reap.
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		return true
	}
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] == 'Z' || stat[i+2] == 'X'
	}
	return false
}

// Stop asks the process to end (SIGCONT, then SIGTERM) and waits for it;
// if it has not ended after grace, it is killed (SIGKILL).
func (p *Process) Stop(grace time.Duration) error {
	if p.pid == 0 || p.Exited() {
		return nil
	}
	_ = p.Resume() // a paused process cannot handle SIGTERM
	if err := p.signal(syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	if p.waitExit(grace) {
		return nil
	}
	return p.Kill()
}

// Kill ends the process at once (SIGKILL, which a paused process obeys too)
// and waits for it to exit: a crash, with no chance to clean up or hand
// anything over.
func (p *Process) Kill() error {
	if p.pid == 0 || p.Exited() {
		return nil
	}
	if err := p.signal(syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	if !p.waitExit(30 * time.Second) {
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", filepath.Base(p.Path), p.pid)
	}
	return nil
}

func (p *Process) waitExit(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for !p.Exited() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// Tail returns the last n lines of a file, or the error reading it.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return LastLines(string(b), n)
}

// LineDiff lists the lines only in want (prefixed "- ") and only in got
// ("+ "), for messages comparing two texts whose line order is not the
// point.
func LineDiff(want, got string) string {
	ws, gs := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out []string
	for _, l := range ws {
		if !slices.Contains(gs, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range gs {
		if !slices.Contains(ws, l) {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// LastLines returns the last n lines of s.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// FreeAddr returns a loopback address with a port that was free a moment
// ago, reserved against envtest's choices. envtest (controller-runtime)
// picks the ports of its etcd and kube-apiserver the same way, closes
// them, and binds them seconds later (longer under load); a process of
// ours that took one of them meanwhile made that control plane fail to
// start, every retry alike. Both now mark a port they hand out in
// envtest's port cache (a file port-<n> in the user's cache directory's
// kubebuilder-envtest, held under an exclusive flock for as long as the
// process lives; envtest drops marks older than 2 minutes), and neither
// hands out a port the other marked.
func FreeAddr() (string, error) {
	dir, err := portCacheDir()
	if err != nil {
		return "", err
	}
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		addr := ln.Addr().(*net.TCPAddr)
		if err := ln.Close(); err != nil {
			return "", err
		}
		ok, err := reservePort(dir, addr.Port)
		if err != nil {
			return "", err
		}
		if ok {
			return addr.String(), nil
		}
	}
	return "", errors.New("no free port that envtest has not marked, in 100 tries")
}

// portCacheDir is envtest's port cache: kubebuilder-envtest in the user's
// cache directory, or in the temporary directory without one.
func portCacheDir() (string, error) {
	var errs []error
	for _, base := range []func() (string, error){os.UserCacheDir, func() (string, error) { return os.TempDir(), nil }} {
		b, err := base()
		if err == nil {
			dir := filepath.Join(b, "kubebuilder-envtest")
			if err = os.MkdirAll(dir, 0o750); err == nil {
				return dir, nil
			}
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("envtest's port cache: %w", errors.Join(errs...))
}

// reservePort marks port in the port cache dir, as envtest does; false
// when another process holds the mark. The mark's descriptor stays open
// (and its lock held) until the process exits.
func reservePort(dir string, port int) (bool, error) {
	fd, err := syscall.Open(filepath.Join(dir, "port-"+strconv.Itoa(port)), syscall.O_CREAT|syscall.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return false, err
	}
	switch err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); {
	case err == nil:
		return true, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		_ = syscall.Close(fd)
		return false, nil
	default:
		_ = syscall.Close(fd)
		return false, err
	}
}

// GetOK reports as an error anything but a 200 answer to GET url.
func GetOK(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// probeClient checks health endpoints of test processes on loopback; their
// https certificates are self-signed.
var probeClient = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}

// ErrExited tells Poll to give up: the process it waits for has ended.
var ErrExited = errors.New("process exited")

// Poll calls check every 200ms (each call limited to 5s) until it returns
// nil; it gives up when ctx ends or check returns an error wrapping
// ErrExited, returning check's last error.
func Poll(ctx context.Context, what string, check func(context.Context) error) error {
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := check(cctx)
		cancel()
		switch {
		case err == nil:
			return nil
		case errors.Is(err, ErrExited):
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// HostLock is a lock of this machine, held across processes (an flock of
// a file): one test run's cluster, one control plane starting.
type HostLock struct{ f *os.File }

// LockHost waits until it holds the lock of file, or ctx ends; logf hears
// once that another process holds it, saying what for and which process
// (the holder writes its pid and command line into the file).
func LockHost(ctx context.Context, file, what string, logf func(string, ...any)) (*HostLock, error) {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	logged := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			// who holds it, for the next waiter's log line
			if f.Truncate(0) == nil {
				_, _ = f.WriteAt([]byte(holder()), 0)
			}
			return &HostLock{f: f}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", file, err)
		}
		if !logged && logf != nil {
			held, _ := os.ReadFile(file)
			logf("%s (%s is locked by %s); waiting", what, file, cmp.Or(strings.TrimSpace(string(held)), "a process that did not say"))
			logged = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for %s: %w", file, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// holder names this process for a lock file: pid, since when, command line.
func holder() string {
	return fmt.Sprintf("pid %d since %s: %s\n", os.Getpid(), time.Now().Format(time.TimeOnly), strings.Join(os.Args, " "))
}

// Unlock releases the lock.
func (l *HostLock) Unlock() error { return l.f.Close() } // closing releases the flock
