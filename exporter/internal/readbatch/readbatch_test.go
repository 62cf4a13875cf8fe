package readbatch

import (
	"bytes"
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"
)

// socket is a connection's receive buffer: a read returns everything that
// arrived since the last one, up to its buffer, and blocks only when
// nothing did.
type socket struct {
	net.Conn
	arrive  chan []byte
	pending []byte
	reads   int
}

func (s *socket) Read(b []byte) (int, error) {
	s.reads++
	if len(s.pending) == 0 {
		chunk, ok := <-s.arrive
		if !ok {
			return 0, io.EOF
		}
		s.pending = chunk
	}
drain:
	for len(s.pending) < len(b) {
		select {
		case chunk, ok := <-s.arrive:
			if !ok {
				break drain
			}
			s.pending = append(s.pending, chunk...)
		default:
			break drain
		}
	}
	n := copy(b, s.pending)
	s.pending = s.pending[n:]
	return n, nil
}

// Events that arrive 1 ms apart are read in batches, one read per
// interval, each no later than the interval after it arrived; a bulk
// transfer is read without waiting.
func TestReadsInBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &socket{arrive: make(chan []byte, 1<<12)}
		c := &Conn{Conn: s, Interval: 20 * time.Millisecond}
		const events = 200
		sent := make(chan time.Time, events)
		go func() {
			for range events {
				time.Sleep(time.Millisecond)
				sent <- time.Now()
				s.arrive <- []byte{'e'}
			}
		}()
		buf := make([]byte, 4096)
		var late time.Duration
		for got := 0; got < events; {
			n, err := c.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			for range n {
				late = max(late, time.Since(<-sent))
			}
			got += n
		}
		if late > 20*time.Millisecond {
			t.Errorf("an event read %v after it arrived, want at most the 20ms interval", late)
		}
		if want := events/20 + 2; s.reads > want {
			t.Errorf("%d reads for %d events 1ms apart, want at most %d (one per 20ms)", s.reads, events, want)
		}

		// a bulk transfer: every read fills its buffer, none waits
		time.Sleep(time.Millisecond)
		for range 64 {
			s.arrive <- bytes.Repeat([]byte{'b'}, 16<<10)
		}
		start := time.Now()
		if _, err := io.ReadFull(c, make([]byte, 64*16<<10)); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 20*time.Millisecond {
			t.Errorf("1 MiB read in %v, want no waiting beyond one interval (reads that fill their buffer are followed at once)", d)
		}
	})
}

// Without batching, the same events take a read each: what the test above
// saves.
func TestUnbatchedReadsOneEach(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &socket{arrive: make(chan []byte, 1<<12)}
		go func() {
			for range 200 {
				time.Sleep(time.Millisecond)
				s.arrive <- []byte{'e'}
			}
		}()
		buf := make([]byte, 4096)
		for got := 0; got < 200; {
			n, _ := s.Read(buf)
			got += n
		}
		if s.reads != 200 {
			t.Errorf("%d reads of 200 events 1ms apart, want 200", s.reads)
		}
	})
}
