package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat (USER_HZ, 100 on
// every Linux architecture Go supports).
const userHZ = 100

// usage is a reading of a process's resource use from /proc.
type usage struct {
	cpuSeconds float64 // user + system
	rss, hwm   int64   // VmRSS and VmHWM (peak RSS), bytes
}

// readUsage reads the CPU time and RSS of pid from /proc.
func readUsage(pid int) (usage, error) {
	var u usage
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	// The command name may hold spaces; fields restart after its ')'.
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return u, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64) // field 14 of stat(5)
	stime, _ := strconv.ParseInt(fields[12], 10, 64) // field 15
	u.cpuSeconds = float64(utime+stime) / userHZ
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	u.rss = statusKiB(string(status), "VmRSS:") * 1024
	u.hwm = statusKiB(string(status), "VmHWM:") * 1024
	return u, nil
}

// statusKiB returns the value of a "Key:   123 kB" line of /proc status or
// meminfo text.
func statusKiB(text, key string) int64 {
	for line := range strings.Lines(text) {
		if rest, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				v, _ := strconv.ParseInt(f[0], 10, 64)
				return v
			}
		}
	}
	return 0
}

// machine describes the host for the report.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if rest, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), ":"))
				break
			}
		}
	}
	mem := int64(0)
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		mem = statusKiB(string(b), "MemTotal:")
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return fmt.Sprintf("%s, %d CPUs, %.1f GiB RAM, Linux %s, %s/%s, %s",
		model, runtime.NumCPU(), float64(mem)/(1<<20), strings.TrimSpace(string(kernel)), runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// loadAverage returns the 1-minute load average of the host.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}

// perfRecord starts Linux perf sampling the CPU stacks of process pid
// (499 Hz, frame-pointer call graphs, which Go binaries keep) into path,
// and returns the function that stops it and waits until the file is
// written.
func perfRecord(pid int, path string) (func() error, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	cmd := exec.Command("perf", "record", "--quiet", "-F", "499", "-g", "-p", strconv.Itoa(pid), "-o", path)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("perf record (-perf needs Linux perf): %w", err)
	}
	return func() error {
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			return err
		}
		err := cmd.Wait() // perf exits 130 when interrupted, having written the file
		if fi, serr := os.Stat(path); serr != nil || fi.Size() == 0 {
			return fmt.Errorf("perf record wrote no %s: %v", path, err)
		}
		return nil
	}, nil
}
