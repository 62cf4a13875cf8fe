package wire

import (
	"fmt"
	"io"
)

// ListMeta is what the probe reads of a list: its resource version and the
// continue token of a page that has more after it. Its byte slices are
// copies, valid after DecodeList returns.
type ListMeta struct {
	ResourceVersion, Continue []byte
}

// DecodeList reads a list response body r in format f as a stream,
// calling each with every item in order (its Meta is valid during the call
// only), and returns the list's metadata. An error from each ends the
// decoding and is returned.
func DecodeList(r io.Reader, f Format, fields Fields, each func(*Meta) error) (ListMeta, error) {
	d := listDecoder{r: newReader(r, 64<<10), md: metaDecoder{fields: fields}, each: each}
	var err error
	switch f {
	case JSON:
		err = d.json()
	case Protobuf:
		err = d.proto()
	default:
		err = fmt.Errorf("wire: unknown format %d", f)
	}
	return d.list, err
}

type listDecoder struct {
	r    *reader
	md   metaDecoder
	each func(*Meta) error
	list ListMeta
	item Meta
}

func (d *listDecoder) json() error {
	r := d.r
	c, err := r.skipSpace()
	if err != nil {
		return unexpected(err)
	}
	if c != '{' {
		return errJSON
	}
	r.off++
	for first := true; ; first = false {
		done, err := r.nextMember(first, '}')
		if err != nil || done {
			return unexpected(err)
		}
		k, err := r.jsonValue()
		if err != nil {
			return unexpected(err)
		}
		raw, esc, _, err := stringAt(k, 0)
		if err != nil {
			return err
		}
		var key []byte
		if key, err = unquoteIf(raw, esc, &d.md.scratch); err != nil {
			return err
		}
		if c, err = r.skipSpace(); err != nil || c != ':' {
			return errJSON
		}
		r.off++
		switch string(key) {
		case "items":
			err = d.jsonItems()
		case "metadata":
			var v []byte
			if v, err = r.jsonValue(); err == nil {
				err = d.jsonListMeta(v)
			}
		default:
			_, err = r.jsonValue()
		}
		if err != nil {
			return unexpected(err)
		}
	}
}

func unquoteIf(raw []byte, escaped bool, scratch *[]byte) ([]byte, error) {
	if !escaped {
		return raw, nil
	}
	u, err := unquote((*scratch)[:0], raw)
	*scratch = u
	return u, err
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (d *listDecoder) jsonItems() error {
	r := d.r
	c, err := r.skipSpace()
	if err != nil {
		return err
	}
	if c == 'n' { // null
		_, err := r.jsonValue()
		return err
	}
	if c != '[' {
		return errJSON
	}
	r.off++
	for first := true; ; first = false {
		done, err := r.nextMember(first, ']')
		if err != nil || done {
			return err
		}
		v, err := r.jsonValue()
		if err != nil {
			return err
		}
		d.md.reset(&d.item)
		if err := d.md.jsonObject(v, &d.item); err != nil {
			return err
		}
		if err := d.each(&d.item); err != nil {
			return err
		}
	}
}

func (d *listDecoder) jsonListMeta(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	o, err := objectAt(b, 0)
	if err != nil {
		return err
	}
	for {
		key, esc, ok, err := o.next()
		if err != nil || !ok {
			return err
		}
		var v []byte
		switch {
		case isKey(key, esc, "resourceVersion", &d.md.scratch):
			if err = o.stringValue(&v, &d.md.strs); err == nil {
				d.list.ResourceVersion = append([]byte(nil), v...)
			}
		case isKey(key, esc, "continue", &d.md.scratch):
			if err = o.stringValue(&v, &d.md.strs); err == nil {
				d.list.Continue = append([]byte(nil), v...)
			}
		default:
			err = o.skip()
		}
		if err != nil {
			return err
		}
	}
}

// proto reads a list in its envelope: a runtime.Unknown whose raw (2) is
// the list — metadata 1 (a ListMeta), items 2 — read field by field from
// the stream.
func (d *listDecoder) proto() error {
	r := d.r
	magic, err := r.take(uint64(len(protoMagic)))
	if err != nil {
		return err
	}
	if string(magic) != protoMagic {
		return errProto
	}
	for {
		t, err := r.varint()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		num, wt := t>>3, int(t&7)
		if num == 2 && wt == wireBytes {
			n, err := r.varint()
			if err != nil {
				return unexpected(err)
			}
			if err := d.protoList(n); err != nil {
				return err
			}
			continue
		}
		if err := d.skip(wt); err != nil {
			return err
		}
	}
}

// protoList reads the n bytes of a list message.
func (d *listDecoder) protoList(n uint64) error {
	r := d.r
	for n > 0 {
		before := r.consumed()
		t, err := r.varint()
		if err != nil {
			return unexpected(err)
		}
		num, wt := t>>3, int(t&7)
		switch {
		case (num == 1 || num == 2) && wt == wireBytes:
			size, err := r.varint()
			if err != nil {
				return unexpected(err)
			}
			b, err := r.take(size)
			if err != nil {
				return err
			}
			if num == 1 {
				err = d.protoListMeta(b)
			} else {
				d.md.reset(&d.item)
				if err = d.md.protoObject(b, &d.item); err == nil {
					err = d.each(&d.item)
				}
			}
			if err != nil {
				return err
			}
		default:
			if err := d.skip(wt); err != nil {
				return err
			}
		}
		used := uint64(r.consumed() - before)
		if used > n {
			return errProto
		}
		n -= used
	}
	return nil
}

// ListMeta's field numbers.
const (
	listResourceVersion = 2
	listContinue        = 3
)

func (d *listDecoder) protoListMeta(b []byte) error {
	for i := 0; i < len(b); {
		num, wt, next, err := tag(b, i)
		if err != nil {
			return err
		}
		var v []byte
		switch {
		case wt == wireBytes && num == listResourceVersion:
			v, i, err = bytesField(b, next)
			d.list.ResourceVersion = append([]byte(nil), v...)
		case wt == wireBytes && num == listContinue:
			v, i, err = bytesField(b, next)
			d.list.Continue = append([]byte(nil), v...)
		default:
			i, err = skipField(b, next, wt)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// skip consumes a field's value of wire type wt from the stream.
func (d *listDecoder) skip(wt int) error {
	r := d.r
	switch wt {
	case wireVarint:
		_, err := r.varint()
		return unexpected(err)
	case wireFixed64:
		return r.discard(8)
	case wireFixed32:
		return r.discard(4)
	case wireBytes:
		n, err := r.varint()
		if err != nil {
			return unexpected(err)
		}
		return r.discard(n)
	}
	return errProto
}
