package wire

import (
	"errors"
	"fmt"
	"io"
)

// MaxFrame bounds one frame of a stream: a watch event, a list item. The
// API server stores objects of at most 1.5 MiB (etcd's default request
// limit); an object in JSON with its managed fields stays well below this.
const MaxFrame = 64 << 20

// errFrameTooLarge is returned for a frame larger than MaxFrame.
var errFrameTooLarge = fmt.Errorf("wire: frame larger than %d bytes", MaxFrame)

// reader buffers a response body. It reads from the body only when it
// needs more bytes to complete what it decodes, so that a stream is
// consumed no further than the frame being decoded.
type reader struct {
	r        io.Reader
	buf      []byte
	off, end int // buf[off:end] is read and not yet consumed
	base     int // bytes consumed before buf[0]
	err      error
}

// consumed returns how many bytes of the body were consumed.
func (r *reader) consumed() int { return r.base + r.off }

const minRead = 4 << 10

func newReader(r io.Reader, size int) *reader {
	return &reader{r: r, buf: make([]byte, size)}
}

// fill reads more of the body, keeping buf[off:end] (moved to the start of
// the buffer when that makes room). It returns the body's error (io.EOF at
// its end) once nothing more comes.
func (r *reader) fill() error {
	if r.err != nil {
		return r.err
	}
	if r.off > 0 && (r.off == r.end || len(r.buf)-r.end < minRead) {
		n := copy(r.buf, r.buf[r.off:r.end])
		r.base += r.off
		r.off, r.end = 0, n
	}
	if len(r.buf)-r.end < minRead {
		if r.end-r.off >= MaxFrame {
			r.err = errFrameTooLarge
			return r.err
		}
		grown := make([]byte, max(2*len(r.buf), r.end+minRead))
		copy(grown, r.buf[:r.end])
		r.buf = grown
	}
	for range 100 {
		n, err := r.r.Read(r.buf[r.end:])
		r.end += n
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.EOF
			}
			r.err = err
			if n > 0 {
				return nil
			}
			return err
		}
		if n > 0 {
			return nil
		}
	}
	r.err = io.ErrNoProgress
	return r.err
}

// need makes n unconsumed bytes available (buf[off:off+n]); at the body's
// end before them it returns io.ErrUnexpectedEOF.
func (r *reader) need(n int) error {
	if n > MaxFrame {
		return errFrameTooLarge
	}
	for r.end-r.off < n {
		if err := r.fill(); err != nil {
			if err == io.EOF {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

// skipSpace consumes JSON white space and returns the next byte, unconsumed;
// io.EOF at the body's end.
func (r *reader) skipSpace() (byte, error) {
	for {
		for r.off < r.end {
			switch c := r.buf[r.off]; c {
			case ' ', '\t', '\n', '\r':
				r.off++
			default:
				return c, nil
			}
		}
		if err := r.fill(); err != nil {
			return 0, err
		}
	}
}

// nextMember consumes what comes before the next member of a JSON object
// or array being read (white space, and a comma after the first) and
// reports whether close, which ends it, came instead (consumed).
func (r *reader) nextMember(first bool, close byte) (done bool, err error) {
	c, err := r.skipSpace()
	if err != nil {
		return false, err
	}
	if c == close {
		r.off++
		return true, nil
	}
	if !first {
		if c != ',' {
			return false, errJSON
		}
		r.off++
	}
	return false, nil
}

// jsonValue consumes one JSON value (after white space) and returns it; the
// slice is valid until the reader's next call.
func (r *reader) jsonValue() ([]byte, error) {
	c, err := r.skipSpace()
	if err != nil {
		return nil, err
	}
	var s scanner
	s.reset(c)
	for i := r.off; ; {
		end, done := s.scan(r.buf[:r.end], i)
		if done {
			v := r.buf[r.off:end]
			r.off = end
			return v, s.err
		}
		start := r.off
		if err := r.fill(); err != nil {
			if err == io.EOF {
				if s.atEOF() { // a number ends at the body's end
					v := r.buf[r.off:r.end]
					r.off = r.end
					return v, nil
				}
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if r.end-r.off > MaxFrame {
			return nil, errFrameTooLarge
		}
		i = end - start + r.off // fill may have moved the bytes
	}
}

// varint consumes one protobuf varint.
func (r *reader) varint() (uint64, error) {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if r.off == r.end {
			if err := r.fill(); err != nil {
				if err == io.EOF && shift > 0 {
					return 0, io.ErrUnexpectedEOF
				}
				return 0, err
			}
		}
		c := r.buf[r.off]
		r.off++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, nil
		}
	}
	return 0, errVarint
}

// discard consumes n bytes without keeping them.
func (r *reader) discard(n uint64) error {
	for n > 0 {
		if r.off == r.end {
			if err := r.fill(); err != nil {
				if err == io.EOF {
					return io.ErrUnexpectedEOF
				}
				return err
			}
		}
		k := min(n, uint64(r.end-r.off))
		r.off += int(k)
		n -= k
	}
	return nil
}

// take consumes n bytes and returns them (valid until the next call).
func (r *reader) take(n uint64) ([]byte, error) {
	if n > MaxFrame {
		return nil, errFrameTooLarge
	}
	if err := r.need(int(n)); err != nil {
		return nil, err
	}
	b := r.buf[r.off : r.off+int(n)]
	r.off += int(n)
	return b, nil
}
