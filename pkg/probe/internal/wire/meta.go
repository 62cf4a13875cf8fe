package wire

import (
	"errors"
	"strings"
)

// Format is the encoding of a response body.
type Format uint8

// Formats the API server answers a metadata client in.
const (
	JSON     Format = iota + 1 // application/json
	Protobuf                   // application/vnd.kubernetes.protobuf
)

// FormatOf returns the format of a response's Content-Type.
func FormatOf(contentType string) (Format, bool) {
	mt, _, _ := strings.Cut(contentType, ";")
	switch strings.ToLower(strings.TrimSpace(mt)) {
	case "application/json":
		return JSON, true
	case "application/vnd.kubernetes.protobuf":
		return Protobuf, true
	}
	return 0, false
}

// Fields selects what Meta carries besides identity and resource version.
type Fields struct {
	// Observed is the path of an object's observed generation, e.g.
	// ["status", "observedGeneration"]; nil: none. Objects in protobuf
	// cannot be read this way (their fields are numbered by their type):
	// ask for JSON to read it.
	Observed []string
	// Annotation is the key of one annotation whose value to read into
	// Meta.Annotation (the canary's heartbeat); "": none.
	Annotation string
}

// Meta is what the probe reads of one object. Its byte slices point into
// the decoder's buffer: valid until the decoder's next call.
type Meta struct {
	Namespace, Name, UID, ResourceVersion []byte
	Generation                            int64
	// ObservedGeneration is the integer at Fields.Observed, when
	// HasObserved.
	ObservedGeneration int64
	HasObserved        bool
	// InitialEventsEnd: the object carries the annotation
	// k8s.io/initial-events-end: "true" (the bookmark that ends a
	// watch-list's initial events).
	InitialEventsEnd bool
	// Annotation is the value of the annotation Fields.Annotation names;
	// nil: the object has none.
	Annotation []byte
}

// initialEventsEnd is metav1.InitialEventsAnnotationKey.
const initialEventsEnd = "k8s.io/initial-events-end"

var errProto = errors.New("wire: malformed protobuf")

// metaDecoder reads Meta from objects; it keeps the buffer that unescaped
// JSON strings are written to.
type metaDecoder struct {
	fields  Fields
	strs    []byte // unescaped strings of the current object
	scratch []byte // unescaped keys
}

func (d *metaDecoder) reset(m *Meta) {
	*m = Meta{}
	d.strs = d.strs[:0]
}

// jsonObject reads m from the JSON object b (a whole object, or a
// PartialObjectMetadata).
func (d *metaDecoder) jsonObject(b []byte, m *Meta) error {
	o, err := objectAt(b, 0)
	if err != nil {
		return err
	}
	for {
		key, esc, ok, err := o.next()
		if err != nil || !ok {
			return err
		}
		switch {
		case isKey(key, esc, "metadata", &d.scratch):
			if err := d.jsonMeta(&o, m); err != nil {
				return err
			}
		case len(d.fields.Observed) > 0 && isKey(key, esc, d.fields.Observed[0], &d.scratch):
			if err := d.jsonObserved(&o, d.fields.Observed[1:], m); err != nil {
				return err
			}
		default:
			if err := o.skip(); err != nil {
				return err
			}
		}
	}
}

// jsonMeta reads the ObjectMeta at o.pos and moves past it.
func (d *metaDecoder) jsonMeta(parent *object, m *Meta) error {
	if parent.pos < len(parent.b) && parent.b[parent.pos] == 'n' {
		return parent.null()
	}
	o, err := objectAt(parent.b, parent.pos)
	if err != nil {
		return err
	}
	for {
		key, esc, ok, err := o.next()
		if err != nil {
			return err
		}
		if !ok {
			parent.pos = o.pos
			return nil
		}
		switch {
		case isKey(key, esc, "name", &d.scratch):
			err = o.stringValue(&m.Name, &d.strs)
		case isKey(key, esc, "namespace", &d.scratch):
			err = o.stringValue(&m.Namespace, &d.strs)
		case isKey(key, esc, "uid", &d.scratch):
			err = o.stringValue(&m.UID, &d.strs)
		case isKey(key, esc, "resourceVersion", &d.scratch):
			err = o.stringValue(&m.ResourceVersion, &d.strs)
		case isKey(key, esc, "generation", &d.scratch):
			m.Generation, _, err = o.intValue()
		case isKey(key, esc, "annotations", &d.scratch):
			err = d.jsonAnnotations(&o, m)
		default:
			err = o.skip()
		}
		if err != nil {
			return err
		}
	}
}

func (d *metaDecoder) jsonAnnotations(parent *object, m *Meta) error {
	if parent.pos < len(parent.b) && parent.b[parent.pos] == 'n' {
		return parent.null()
	}
	o, err := objectAt(parent.b, parent.pos)
	if err != nil {
		return err
	}
	for {
		key, esc, ok, err := o.next()
		if err != nil {
			return err
		}
		if !ok {
			parent.pos = o.pos
			return nil
		}
		if d.fields.Annotation != "" && isKey(key, esc, d.fields.Annotation, &d.scratch) {
			if err := o.stringValue(&m.Annotation, &d.strs); err != nil {
				return err
			}
			continue
		}
		if !isKey(key, esc, initialEventsEnd, &d.scratch) {
			if err := o.skip(); err != nil {
				return err
			}
			continue
		}
		var v []byte
		mark := len(d.strs)
		if err := o.stringValue(&v, &d.strs); err != nil {
			return err
		}
		m.InitialEventsEnd = string(v) == "true"
		d.strs = d.strs[:mark]
	}
}

// jsonObserved follows path from the value at parent.pos to an integer.
func (d *metaDecoder) jsonObserved(parent *object, path []string, m *Meta) error {
	if len(path) == 0 {
		v, ok, err := parent.intValue()
		if ok {
			m.ObservedGeneration, m.HasObserved = v, true
		}
		return err
	}
	if parent.pos >= len(parent.b) || parent.b[parent.pos] != '{' {
		return parent.skip()
	}
	o, err := objectAt(parent.b, parent.pos)
	if err != nil {
		return err
	}
	for {
		key, esc, ok, err := o.next()
		if err != nil {
			return err
		}
		if !ok {
			parent.pos = o.pos
			return nil
		}
		if isKey(key, esc, path[0], &d.scratch) {
			err = d.jsonObserved(&o, path[1:], m)
		} else {
			err = o.skip()
		}
		if err != nil {
			return err
		}
	}
}

// ---- protobuf ----

// protoMagic starts every object the API server encodes in protobuf: the
// bytes of a runtime.Unknown, whose field 2 (raw) holds the object.
const protoMagic = "k8s\x00"

// unwrap returns the raw object in the runtime.Unknown envelope b.
func unwrap(b []byte) ([]byte, error) {
	if len(b) < len(protoMagic) || string(b[:len(protoMagic)]) != protoMagic {
		return nil, errProto
	}
	raw, _, err := bytesOf(b[len(protoMagic):], 2)
	return raw, err
}

// bytesOf returns the last length-delimited field num of the message b
// (found false: none), skipping the others.
func bytesOf(b []byte, num uint64) (v []byte, found bool, err error) {
	for i := 0; i < len(b); {
		n, wt, next, err := tag(b, i)
		if err != nil {
			return nil, false, err
		}
		if n == num && wt == wireBytes {
			v, i, err = bytesField(b, next)
			found = true
		} else {
			i, err = skipField(b, next, wt)
		}
		if err != nil {
			return nil, false, err
		}
	}
	return v, found, nil
}

// protoObject reads m from an object's protobuf (the raw bytes inside the
// envelope): its ObjectMeta is field 1, as in every Kubernetes type.
func (d *metaDecoder) protoObject(b []byte, m *Meta) error {
	meta, found, err := bytesOf(b, 1)
	if err != nil || !found {
		return err
	}
	return protoMeta(meta, m, d.fields.Annotation)
}

// ObjectMeta's field numbers (k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto).
const (
	metaName            = 1
	metaNamespace       = 3
	metaUID             = 5
	metaResourceVersion = 6
	metaGeneration      = 7
	metaAnnotations     = 12
)

func protoMeta(b []byte, m *Meta, annotation string) error {
	for i := 0; i < len(b); {
		num, wt, next, err := tag(b, i)
		if err != nil {
			return err
		}
		var v []byte
		switch {
		case wt == wireBytes && (num == metaName || num == metaNamespace || num == metaUID || num == metaResourceVersion || num == metaAnnotations):
			if v, i, err = bytesField(b, next); err != nil {
				return err
			}
			switch num {
			case metaName:
				m.Name = v
			case metaNamespace:
				m.Namespace = v
			case metaUID:
				m.UID = v
			case metaResourceVersion:
				m.ResourceVersion = v
			case metaAnnotations:
				k, val, err := mapEntry(v)
				if err != nil {
					return err
				}
				switch {
				case string(k) == initialEventsEnd:
					m.InitialEventsEnd = string(val) == "true"
				case annotation != "" && string(k) == annotation:
					m.Annotation = val
				}
			}
		case wt == wireVarint && num == metaGeneration:
			var u uint64
			if u, i, err = varint(b, next); err != nil {
				return err
			}
			m.Generation = int64(u)
		default:
			if i, err = skipField(b, next, wt); err != nil {
				return err
			}
		}
	}
	return nil
}

// mapEntry reads a map<string, string> entry: key 1, value 2.
func mapEntry(b []byte) (key, value []byte, err error) {
	for i := 0; i < len(b); {
		num, wt, next, err := tag(b, i)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case wt == wireBytes && num == 1:
			key, i, err = bytesField(b, next)
		case wt == wireBytes && num == 2:
			value, i, err = bytesField(b, next)
		default:
			i, err = skipField(b, next, wt)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return key, value, nil
}

// Protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

var errVarint = errors.New("wire: malformed varint")

func varint(b []byte, i int) (uint64, int, error) {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if i >= len(b) {
			return 0, i, errProto
		}
		c := b[i]
		i++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, i, nil
		}
	}
	return 0, i, errVarint
}

// tag reads a field's tag: its number and wire type.
func tag(b []byte, i int) (num uint64, wt int, next int, err error) {
	t, next, err := varint(b, i)
	if err != nil {
		return 0, 0, next, err
	}
	num, wt = t>>3, int(t&7)
	if num == 0 {
		return 0, 0, next, errProto
	}
	return num, wt, next, nil
}

func bytesField(b []byte, i int) ([]byte, int, error) {
	n, i, err := varint(b, i)
	if err != nil {
		return nil, i, err
	}
	if n > uint64(len(b)-i) {
		return nil, i, errProto
	}
	return b[i : i+int(n)], i + int(n), nil
}

func skipField(b []byte, i int, wt int) (int, error) {
	switch wt {
	case wireVarint:
		_, i, err := varint(b, i)
		return i, err
	case wireFixed64:
		i += 8
	case wireFixed32:
		i += 4
	case wireBytes:
		_, i, err := bytesField(b, i)
		return i, err
	default:
		return i, errProto
	}
	if i > len(b) {
		return i, errProto
	}
	return i, nil
}
