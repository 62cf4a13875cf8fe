package wire

import (
	"bytes"
	"errors"
	"unicode/utf16"
	"unicode/utf8"
)

var errJSON = errors.New("wire: malformed JSON")

// scanner finds the end of one JSON value in bytes that arrive in pieces:
// scan may be called again with more bytes from where it stopped.
type scanner struct {
	started, scalar  bool
	inString, escape bool
	depth            int
	err              error
}

func (s *scanner) reset(byte) { *s = scanner{} }

// scan scans b from i and returns the end of the value (just past it) and
// true, or len(b) and false when the value goes on past b.
func (s *scanner) scan(b []byte, i int) (int, bool) {
	if !s.started && i < len(b) {
		s.started = true
		switch b[i] {
		case '{', '[':
			s.depth = 1
			i++
		case '"':
			s.inString = true
			i++
		case '}', ']', ',', ':':
			s.err = errJSON
			return i + 1, true
		default:
			s.scalar = true
		}
	}
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case s.inString:
			if s.escape {
				s.escape = false
				continue
			}
			// skip to the next quote or backslash
			j := bytes.IndexAny(b[i:], "\"\\")
			if j < 0 {
				return len(b), false
			}
			i += j
			if b[i] == '\\' {
				s.escape = true
				continue
			}
			s.inString = false
			if s.depth == 0 {
				return i + 1, true
			}
		case s.scalar:
			switch c {
			case ',', '}', ']', ':', ' ', '\t', '\n', '\r', '{', '[', '"':
				return i, true
			}
		default:
			switch c {
			case '{', '[':
				s.depth++
			case '}', ']':
				s.depth--
				if s.depth == 0 {
					return i + 1, true
				}
			case '"':
				s.inString = true
			}
		}
	}
	return len(b), false
}

// atEOF reports whether the value is complete when the input ends here.
func (s *scanner) atEOF() bool { return s.started && s.scalar }

// ---- parsing a complete JSON value in memory ----

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringAt reads the JSON string at b[i] (its opening quote). It returns its
// raw contents (between the quotes), whether they hold escapes, and the
// index past the closing quote.
func stringAt(b []byte, i int) (raw []byte, escaped bool, next int, err error) {
	if i >= len(b) || b[i] != '"' {
		return nil, false, i, errJSON
	}
	start := i + 1
	for j := start; j < len(b); {
		k := bytes.IndexAny(b[j:], "\"\\")
		if k < 0 {
			break
		}
		j += k
		if b[j] == '\\' {
			escaped = true
			j += 2
			continue
		}
		return b[start:j], escaped, j + 1, nil
	}
	return nil, false, len(b), errJSON
}

// skipValue returns the index past the JSON value at b[i] (after white
// space).
func skipValue(b []byte, i int) (int, error) {
	i = skipWS(b, i)
	if i >= len(b) {
		return i, errJSON
	}
	var s scanner
	end, done := s.scan(b, i)
	if !done {
		if s.atEOF() {
			return len(b), nil
		}
		return end, errJSON
	}
	return end, s.err
}

// unquote appends the string of raw JSON string contents to dst, resolving
// escapes.
func unquote(dst, raw []byte) ([]byte, error) {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			j := bytes.IndexByte(raw[i:], '\\')
			if j < 0 {
				return append(dst, raw[i:]...), nil
			}
			dst = append(dst, raw[i:i+j]...)
			i += j
			continue
		}
		if i+1 >= len(raw) {
			return dst, errJSON
		}
		switch e := raw[i+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, n, ok := hexRune(raw[i:])
			if !ok {
				return dst, errJSON
			}
			dst = utf8.AppendRune(dst, r)
			i += n
			continue
		default:
			return dst, errJSON
		}
		i += 2
	}
	return dst, nil
}

// hexRune decodes a \uXXXX escape at the start of b, with its low surrogate
// when it is a high one; it returns the rune and the bytes it took.
func hexRune(b []byte) (rune, int, bool) {
	r, ok := hex4(b)
	if !ok {
		return 0, 0, false
	}
	if utf16.IsSurrogate(r) {
		if r2, ok := hex4(b[6:]); ok {
			if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
				return d, 12, true
			}
		}
		return utf8.RuneError, 6, true
	}
	return r, 6, true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// object walks the members of the JSON object at b[i]: next returns each
// key (its raw contents, escaped or not) and leaves pos at its value; the
// caller reads the value and sets pos past it, or calls skip.
// Callers write the loop over next themselves: a helper calling back with
// the object would move it to the heap, an allocation per object read (4
// per watch event, measured with BenchmarkWatchDecoder).
type object struct {
	b     []byte
	pos   int
	first bool
}

func objectAt(b []byte, i int) (object, error) {
	i = skipWS(b, i)
	if i >= len(b) || b[i] != '{' {
		return object{}, errJSON
	}
	return object{b: b, pos: i + 1, first: true}, nil
}

// next returns the next key, or ok false at the object's end (pos then
// past its closing brace).
func (o *object) next() (key []byte, escaped, ok bool, err error) {
	i := skipWS(o.b, o.pos)
	if i >= len(o.b) {
		return nil, false, false, errJSON
	}
	if o.b[i] == '}' {
		o.pos = i + 1
		return nil, false, false, nil
	}
	if !o.first {
		if o.b[i] != ',' {
			return nil, false, false, errJSON
		}
		i = skipWS(o.b, i+1)
	}
	o.first = false
	key, escaped, i, err = stringAt(o.b, i)
	if err != nil {
		return nil, false, false, err
	}
	i = skipWS(o.b, i)
	if i >= len(o.b) || o.b[i] != ':' {
		return nil, false, false, errJSON
	}
	o.pos = skipWS(o.b, i+1)
	return key, escaped, true, nil
}

func (o *object) skip() error {
	end, err := skipValue(o.b, o.pos)
	o.pos = end
	return err
}

// isKey reports whether a key read by object.next is want.
func isKey(key []byte, escaped bool, want string, scratch *[]byte) bool {
	if !escaped {
		return string(key) == want
	}
	u, err := unquote((*scratch)[:0], key)
	*scratch = u
	return err == nil && string(u) == want
}

// stringValue reads the string at o.pos (null reads as empty) into *dst
// (the raw bytes, or unescaped into buf) and moves past it.
func (o *object) stringValue(dst *[]byte, buf *[]byte) error {
	i := o.pos
	if i < len(o.b) && o.b[i] == 'n' {
		return o.null()
	}
	raw, escaped, next, err := stringAt(o.b, i)
	if err != nil {
		return err
	}
	o.pos = next
	if !escaped {
		*dst = raw
		return nil
	}
	start := len(*buf)
	u, err := unquote(*buf, raw)
	if err != nil {
		return err
	}
	*buf = u
	*dst = u[start:len(u):len(u)]
	return nil
}

func (o *object) null() error {
	if len(o.b)-o.pos >= 4 && string(o.b[o.pos:o.pos+4]) == "null" {
		o.pos += 4
		return nil
	}
	return errJSON
}

// intValue reads the JSON number at o.pos as an int64; ok is false for
// null, a fraction, an exponent or a value out of range (the number is
// consumed either way).
func (o *object) intValue() (v int64, ok bool, err error) {
	end, err := skipValue(o.b, o.pos)
	if err != nil {
		return 0, false, err
	}
	num := o.b[o.pos:end]
	o.pos = end
	v, ok = parseInt(num)
	return v, ok, nil
}

// parseInt parses a JSON integer.
func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	if len(b) == 0 || len(b) > 19 || (b[0] == '0' && len(b) > 1) {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if v > (1<<63-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		v = -v
	}
	return v, true
}
