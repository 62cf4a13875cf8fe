package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/scrape"
	"github.com/rvsync-slo/rvsync-slo/pkg/catalog"
)

// program is one of the binaries under comparison.
type program struct {
	name string // "exporter", "baseline", exporterBName or ksmName
	kind string // how it is run and read: exporterName, baselineName or ksmName
	bin  string
	args []string // besides --kubeconfig (and the exporter's --listen-address)
}

const (
	exporterName = "exporter"
	baselineName = "baseline"
	// exporterBName is the second exporter build of an A/B (-exporter-b).
	exporterBName = "exporter-b"
)

// running is a started program.
type running struct {
	prog    *program
	cmd     *exec.Cmd
	lines   chan string // the baseline's stdout
	metrics string      // the exporter's /metrics URL
}

// start runs p against kubeconfig, logging its stderr into dir.
func (p *program) start(kubeconfig, dir string) (*running, error) {
	args := append([]string{"--kubeconfig", kubeconfig}, p.args...)
	r := &running{prog: p}
	switch p.kind {
	case exporterName:
		addr, err := freeAddress()
		if err != nil {
			return nil, err
		}
		args = append(args, "--listen-address", addr)
		r.metrics = "http://" + addr + "/metrics"
	case ksmName:
		flags, url, err := ksmAddresses()
		if err != nil {
			return nil, err
		}
		args = append(args, flags...)
		r.metrics = url
	}
	r.cmd = exec.Command(p.bin, args...)
	logFile, err := os.Create(filepath.Join(dir, p.name+".log"))
	if err != nil {
		return nil, err
	}
	r.cmd.Stderr = logFile
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := r.cmd.Start(); err != nil {
		return nil, err
	}
	r.lines = make(chan string, 64)
	go func() {
		defer logFile.Close()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	return r, nil
}

func freeAddress() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func (r *running) pid() int { return r.cmd.Process.Pid }

// waitSynced waits until the program's informers synced and, for the
// exporter, each resource of want holds at least its number of objects.
func (r *running) waitSynced(ctx context.Context, want map[string]int) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	switch r.prog.kind {
	case baselineName:
		_, err := r.readLine(ctx, "synced objects=")
		return err
	case ksmName:
		return r.waitKSMSynced(ctx, want)
	}
	for {
		if m, err := scrape.Scrape(r.metrics); err == nil && exporterSynced(m, want) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not synced: %w", r.prog.name, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func exporterSynced(m scrape.Metrics, want map[string]int) bool {
	for resource, n := range want {
		labels := map[string]string{catalog.LabelResource: resource}
		synced, _ := m.Value(catalog.InformerSynced.Name, labels)
		have, _ := m.Value(catalog.Objects.Name, labels)
		if synced != 1 || int(have) < n {
			return false
		}
	}
	return true
}

// events returns how many watch events of the benchmark's resources the
// program has processed: the exporter's delivery-lag observations, or the
// baseline's handler count.
func (r *running) events(ctx context.Context) (float64, error) {
	if r.prog.kind == ksmName {
		return 0, nil // counted from the churn's writes (see ksm.go)
	}
	if r.prog.kind == baselineName {
		if err := r.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
			return 0, err
		}
		v, err := r.readLine(ctx, "events=")
		if err != nil {
			return 0, err
		}
		return strconv.ParseFloat(v, 64)
	}
	m, err := scrape.Scrape(r.metrics)
	if err != nil {
		return 0, err
	}
	total := 0.0
	for _, resource := range benchResources {
		if h, ok := m.Histogram(catalog.EventDeliveryLag.Name, map[string]string{catalog.LabelResource: resource}); ok {
			total += float64(h.GetSampleCount())
		}
	}
	return total, nil
}

// readLine returns the rest of the next stdout line starting with prefix.
func (r *running) readLine(ctx context.Context, prefix string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				return "", fmt.Errorf("%s exited (see its log)", r.prog.name)
			}
			if rest, found := strings.CutPrefix(line, prefix); found {
				v, _, _ := strings.Cut(rest, " ")
				return v, nil
			}
		case <-ctx.Done():
			return "", fmt.Errorf("%s: no %q line: %w", r.prog.name, prefix, ctx.Err())
		}
	}
}

// stop terminates the program and waits for it.
func (r *running) stop() {
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		_ = r.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		<-done
	}
}
