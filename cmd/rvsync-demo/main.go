// Command rvsync-demo is `make demo`: the whole rvsync-slo stack on this
// machine. It starts etcd and kube-apiserver from the tool cache, a workload that
// writes ConfigMaps and Deployments, the exporter, a real Prometheus
// loading the chart's rules and a real Alertmanager routing them as
// docs/alertmanager.yaml does to the demo's own receiver, and prints a live
// table of the signals with each alert's state beside them.
//
// Faults come on a key press, or from --fault flags for a scripted run:
// stall the informers' connection, slow it, restart kube-apiserver. Every
// page (and its resolution) that reaches the receiver is printed with the
// time since the fault began (ended).
//
// Bad flags exit with code 2 and one line naming the problem.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// options are the demo's flags.
type options struct {
	every, duration time.Duration
	rate            float64
	exporterAddr    string
	prometheusAddr  string
	alertmanagerAdr string
	logDir          string
	faults          faultFlags
	// notes say which default addresses were busy and replaced.
	notes []string
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rvsync-demo: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "rvsync-demo: %v\n", err)
		stop()
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("rvsync-demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o options
	fs.DurationVar(&o.every, "every", 5*time.Second, "refresh period of the table")
	fs.DurationVar(&o.duration, "duration", 0, "stop this long after the first table (0: run until q or Ctrl-C)")
	fs.Float64Var(&o.rate, "rate", 20, "ConfigMap writes per second of the workload")
	fs.StringVar(&o.exporterAddr, "listen-address", "127.0.0.1:8080", "address of the exporter's /metrics (port 0: a free port; a busy default port is replaced by a free one)")
	fs.StringVar(&o.prometheusAddr, "prometheus-address", "127.0.0.1:9090", "address of Prometheus' web UI and API (as --listen-address)")
	fs.StringVar(&o.alertmanagerAdr, "alertmanager-address", "127.0.0.1:9093", "address of Alertmanager's web UI and API (as --listen-address)")
	fs.StringVar(&o.logDir, "log-dir", "", "directory for the components' logs (default: a new directory under /tmp, kept after the stop)")
	fs.Var(&o.faults, "fault", "a scripted fault, repeatable: KIND[=DELAY]@AFTER[+FOR|+page], AFTER counted from the moment every informer has synced; "+
		"KIND stall (hold the informers' connection), slow (delay it, by DELAY, default 3s) or restart (kube-apiserver); "+
		"+FOR ends it after FOR, +page when a page arrives, without: at the end (e.g. stall@30s+page)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "Usage: rvsync-demo [flags]\n\n"+
				"Runs etcd, kube-apiserver, a workload, the exporter, Prometheus with the chart's rules and\n"+
				"Alertmanager on this machine and prints a live table; keys s, d, r inject faults, q quits.\n\nFlags:\n")
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return o, err
		}
		return o, fmt.Errorf("%w (see -help)", err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (flags only; see -help)", fs.Arg(0))
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	switch {
	case o.every <= 0:
		return o, fmt.Errorf("--every %v: want a positive duration, e.g. 5s", o.every)
	case o.duration < 0:
		return o, fmt.Errorf("--duration %v: want 0 (until q or Ctrl-C) or a positive duration", o.duration)
	case !(o.rate > 0):
		return o, fmt.Errorf("--rate %v: want a positive number of writes per second, e.g. 20", o.rate)
	}
	for _, a := range []struct {
		flag string
		addr *string
	}{{"listen-address", &o.exporterAddr}, {"prometheus-address", &o.prometheusAddr}, {"alertmanager-address", &o.alertmanagerAdr}} {
		if _, _, err := net.SplitHostPort(*a.addr); err != nil {
			return o, fmt.Errorf("--%s %q: want host:port, e.g. 127.0.0.1:0 for a free port", a.flag, *a.addr)
		}
		addr, note, err := listenAddr(a.flag, *a.addr, explicit[a.flag])
		if err != nil {
			return o, err
		}
		*a.addr = addr
		if note != "" {
			o.notes = append(o.notes, note)
		}
	}
	return o, nil
}

// listenAddr returns the address a component should listen on: addr, or a
// free port when addr's port is 0, or when addr is the flag's default and
// in use (then note says so). An address given on the command line that
// is in use is an error.
func listenAddr(flagName, addr string, explicit bool) (string, string, error) {
	host, port, _ := net.SplitHostPort(addr)
	if port != "0" {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			_ = ln.Close()
			return addr, "", nil
		}
		if explicit {
			return "", "", fmt.Errorf("--%s %s: %v; pass a free address (port 0 picks one)", flagName, addr, err)
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", "", fmt.Errorf("--%s %s: %v", flagName, addr, err)
	}
	free := ln.Addr().String()
	_ = ln.Close()
	if port == "0" {
		return free, "", nil
	}
	return free, fmt.Sprintf("%s is in use: using %s (--%s sets it)", addr, free, flagName), nil
}
