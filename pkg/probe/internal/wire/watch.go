package wire

import (
	"encoding/binary"
	"fmt"
	"io"
)

// EventType is the type of a watch event.
type EventType uint8

// Event types, as the API server names them.
const (
	Added EventType = iota + 1
	Modified
	Deleted
	Bookmark
	Error
)

func eventType(b []byte) (EventType, bool) {
	switch string(b) {
	case "ADDED":
		return Added, true
	case "MODIFIED":
		return Modified, true
	case "DELETED":
		return Deleted, true
	case "BOOKMARK":
		return Bookmark, true
	case "ERROR":
		return Error, true
	}
	return 0, false
}

// Event is one watch event.
type Event struct {
	Type EventType
	// Meta is the object's, for every type but Error.
	Meta Meta
	// Object is the object as it came, for an Error event (a Status: JSON,
	// or protobuf in its envelope), to be decoded by the caller.
	Object []byte
}

// WatchDecoder reads the events of a watch stream.
type WatchDecoder struct {
	r      *reader
	format Format
	md     metaDecoder
}

// NewWatchDecoder reads a watch response body r in format f.
func NewWatchDecoder(r io.Reader, f Format, fields Fields) *WatchDecoder {
	return &WatchDecoder{r: newReader(r, 16<<10), format: f, md: metaDecoder{fields: fields}}
}

// Next reads the next event into ev. It returns io.EOF at the stream's
// end, and the body's error when it broke.
func (d *WatchDecoder) Next(ev *Event) error {
	*ev = Event{}
	d.md.reset(&ev.Meta)
	switch d.format {
	case JSON:
		b, err := d.r.jsonValue()
		if err != nil {
			return err
		}
		return d.jsonEvent(b, ev)
	case Protobuf:
		if err := d.r.need(4); err != nil {
			if err == io.ErrUnexpectedEOF && d.r.off == d.r.end {
				return io.EOF
			}
			return err
		}
		n := binary.BigEndian.Uint32(d.r.buf[d.r.off:])
		d.r.off += 4
		b, err := d.r.take(uint64(n))
		if err != nil {
			return err
		}
		return d.protoEvent(b, ev)
	}
	return fmt.Errorf("wire: unknown format %d", d.format)
}

func (d *WatchDecoder) jsonEvent(b []byte, ev *Event) error {
	o, err := objectAt(b, 0)
	if err != nil {
		return err
	}
	var object []byte
	for {
		key, esc, ok, err := o.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		switch {
		case isKey(key, esc, "type", &d.md.scratch):
			var t []byte
			if err := o.stringValue(&t, &d.md.scratch); err != nil {
				return err
			}
			if ev.Type, ok = eventType(t); !ok {
				return fmt.Errorf("wire: unknown watch event type %q", t)
			}
		case isKey(key, esc, "object", &d.md.scratch):
			start := o.pos
			if err := o.skip(); err != nil {
				return err
			}
			object = b[start:o.pos]
		default:
			if err := o.skip(); err != nil {
				return err
			}
		}
	}
	if ev.Type == 0 || object == nil {
		return fmt.Errorf("wire: watch event without type or object")
	}
	if ev.Type == Error {
		ev.Object = object
		return nil
	}
	return d.md.jsonObject(object, &ev.Meta)
}

// protoEvent reads a metav1.WatchEvent: type 1, object 2 (a RawExtension
// whose raw 1 is the object in its envelope).
func (d *WatchDecoder) protoEvent(b []byte, ev *Event) error {
	var object []byte
	for i := 0; i < len(b); {
		num, wt, next, err := tag(b, i)
		if err != nil {
			return err
		}
		switch {
		case num == 1 && wt == wireBytes:
			var t []byte
			if t, i, err = bytesField(b, next); err != nil {
				return err
			}
			var ok bool
			if ev.Type, ok = eventType(t); !ok {
				return fmt.Errorf("wire: unknown watch event type %q", t)
			}
		case num == 2 && wt == wireBytes:
			var ext []byte
			if ext, i, err = bytesField(b, next); err != nil {
				return err
			}
			if object, _, err = bytesOf(ext, 1); err != nil {
				return err
			}
		default:
			if i, err = skipField(b, next, wt); err != nil {
				return err
			}
		}
	}
	if ev.Type == 0 || object == nil {
		return fmt.Errorf("wire: watch event without type or object")
	}
	if ev.Type == Error {
		ev.Object = object
		return nil
	}
	raw, err := unwrap(object)
	if err != nil {
		return err
	}
	return d.md.protoObject(raw, &ev.Meta)
}
