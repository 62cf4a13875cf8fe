//go:build linux

package readbatch

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// writerEnv makes the test binary a writer process (TestMain): it dials
// the address it names and writes an event of eventBytes every 1/rate s.
const writerEnv = "RVSYNC_READBATCH_WRITER"

const eventBytes = 400 // about a metadata watch event on the wire

func TestMain(m *testing.M) {
	if v := os.Getenv(writerEnv); v != "" {
		os.Exit(write(v))
	}
	os.Exit(m.Run())
}

// write is the writer process: addr,rate.
func write(v string) int {
	var addr string
	var rate float64
	if _, err := fmt.Sscanf(v, "%s %g", &addr, &rate); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	event := make([]byte, eventBytes)
	every := time.Duration(float64(time.Second) / rate)
	next := time.Now()
	for {
		next = next.Add(every)
		time.Sleep(time.Until(next))
		if _, err := c.Write(event); err != nil {
			return 0 // the reader is done
		}
	}
}

// BenchmarkReadEvents reads events arriving at a steady rate from another
// process over TCP and reports this process's CPU per event: read at once
// (interval 0), in batches of an interval, and in batches with the
// socket's low-water mark held while it waits (hold, what Config's
// connections do). What a wake-up costs the reader on this machine, and
// how much each saves; the writer is a process of its own so that its CPU
// is not counted.
//
//	go test -run '^$' -bench ReadEvents -benchtime 2000x ./exporter/internal/readbatch
func BenchmarkReadEvents(b *testing.B) {
	for _, rate := range []float64{200, 1000} {
		b.Run(fmt.Sprintf("rate=%g/interval=0", rate), func(b *testing.B) { readEvents(b, rate, 0, false) })
		for _, interval := range []time.Duration{20 * time.Millisecond, 50 * time.Millisecond} {
			for _, hold := range []bool{false, true} {
				b.Run(fmt.Sprintf("rate=%g/interval=%v/hold=%v", rate, interval, hold), func(b *testing.B) {
					readEvents(b, rate, interval, hold)
				})
			}
		}
	}
}

func readEvents(b *testing.B, rate float64, interval time.Duration, hold bool) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	w := exec.Command(os.Args[0], "-test.run=^$")
	w.Env = append(os.Environ(), writerEnv+"="+ln.Addr().String()+" "+strconv.FormatFloat(rate, 'g', -1, 64))
	w.Stderr = os.Stderr
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = w.Wait() }()
	raw, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	var c net.Conn = raw
	switch {
	case hold:
		c = newConn(raw, interval)
	case interval > 0:
		c = &Conn{Conn: raw, Interval: interval} // no socket: no low-water mark
	}
	defer c.Close()
	buf := make([]byte, 32<<10) // http2's read buffer is of this order
	want := int64(b.N) * eventBytes
	// the first event, so that the clock starts with the stream running
	if _, err := io.ReadFull(c, buf[:eventBytes]); err != nil {
		b.Fatal(err)
	}
	cpu0 := cpuTime(b)
	b.ResetTimer()
	var got int64
	for got < want {
		n, err := c.Read(buf[:min(int64(len(buf)), want-got)])
		if err != nil {
			b.Fatal(err)
		}
		got += int64(n)
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/event")
}

// cpuTime is the CPU this process has used.
func cpuTime(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
