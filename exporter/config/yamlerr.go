package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	yamlv3 "go.yaml.in/yaml/v3"
)

// decodeYAML decodes the config file b into c strictly, from the YAML
// nodes themselves: every error names the line and column of the node that
// is wrong, the key's path (resources[1].space) and what is wrong, in YAML
// terms. Keys are the fields' json names (the chart and --check write
// them).
func decodeYAML(b []byte, c *Config) error {
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(b, &root); err != nil {
		return syntaxError(b, err)
	}
	if root.Kind == 0 || len(root.Content) == 0 { // an empty file
		return nil
	}
	return (&nodeDecoder{}).decode(root.Content[0], reflect.ValueOf(c).Elem(), "")
}

// nodeError is a problem at one node of the file.
type nodeError struct {
	line, column int
	path, msg    string
}

func (e *nodeError) Error() string {
	if e.path == "" {
		return fmt.Sprintf("line %d, column %d: %s", e.line, e.column, e.msg)
	}
	return fmt.Sprintf("line %d, column %d: %s: %s", e.line, e.column, e.path, e.msg)
}

type nodeDecoder struct{}

func errAt(n *yamlv3.Node, path, format string, a ...any) error {
	return &nodeError{line: n.Line, column: n.Column, path: path, msg: fmt.Sprintf(format, a...)}
}

var (
	durationType = reflect.TypeFor[Duration]()
	resourceType = reflect.TypeFor[ResourceConfig]()
)

// decode decodes node n, found at path, into v.
func (d *nodeDecoder) decode(n *yamlv3.Node, v reflect.Value, path string) error {
	if n.Kind == yamlv3.AliasNode {
		n = n.Alias
	}
	if n.Kind == yamlv3.ScalarNode && n.ShortTag() == "!!null" {
		return nil // `key:` or `key: null` leaves the default
	}
	switch {
	case v.Type() == durationType:
		return decodeDuration(n, v, path)
	case v.Type() == resourceType && n.Kind == yamlv3.ScalarNode:
		if n.ShortTag() != "!!str" {
			return errAt(n, path, "want a resource name such as pods or deployments.apps, got %s", describe(n))
		}
		v.Set(reflect.ValueOf(ResourceConfig{Name: n.Value}))
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if err := d.decode(n, p.Elem(), path); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case reflect.Struct:
		return d.decodeStruct(n, v, path)
	case reflect.Slice:
		if n.Kind != yamlv3.SequenceNode {
			return errAt(n, path, "want a list, got %s", describe(n))
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			if err := d.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.String:
		if n.Kind != yamlv3.ScalarNode || n.ShortTag() != "!!str" {
			return errAt(n, path, "want a string, got %s", describe(n))
		}
		v.SetString(n.Value)
		return nil
	case reflect.Int:
		i, err := strconv.ParseInt(n.Value, 0, 64)
		if n.Kind != yamlv3.ScalarNode || n.ShortTag() != "!!int" || err != nil {
			return errAt(n, path, "want a whole number, got %s", describe(n))
		}
		v.SetInt(i)
		return nil
	case reflect.Bool:
		if n.Kind != yamlv3.ScalarNode || n.ShortTag() != "!!bool" {
			return errAt(n, path, "want true or false, got %s", describe(n))
		}
		var b bool
		if err := n.Decode(&b); err != nil {
			return errAt(n, path, "want true or false, got %s", describe(n))
		}
		v.SetBool(b)
		return nil
	}
	return errAt(n, path, "cannot be set in the file")
}

// decodeStruct decodes a mapping into the struct v, by its fields' json
// names. Unknown and repeated keys are errors at the key.
func (d *nodeDecoder) decodeStruct(n *yamlv3.Node, v reflect.Value, path string) error {
	if n.Kind != yamlv3.MappingNode {
		return errAt(n, path, "want a mapping of keys to values, got %s", describe(n))
	}
	fields := map[string]int{}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && name != "" && name != "-" {
			fields[name] = i
		}
	}
	seen := map[string]*yamlv3.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		at := k.Value
		if path != "" {
			at = path + "." + k.Value
		}
		idx, ok := fields[k.Value]
		if k.Kind != yamlv3.ScalarNode || !ok {
			return errAt(k, "", "unknown key %s: check its spelling and place (exporter --help lists the settings; docs/exporter.md shows the file)", at)
		}
		if first, dup := seen[k.Value]; dup {
			return errAt(k, at, "given twice (first on line %d)", first.Line)
		}
		seen[k.Value] = k
		if err := d.decode(val, v.Field(idx), at); err != nil {
			return err
		}
	}
	return nil
}

// decodeDuration reads a Go duration string ("5s", "1m30s").
func decodeDuration(n *yamlv3.Node, v reflect.Value, path string) error {
	if n.Kind != yamlv3.ScalarNode || n.ShortTag() != "!!str" {
		return errAt(n, path, "want a duration like 10s or 1m, got %s", describe(n))
	}
	dur, err := time.ParseDuration(n.Value)
	if err != nil {
		return errAt(n, path, "invalid duration %q (want e.g. \"5s\", \"1m\")", n.Value)
	}
	v.Set(reflect.ValueOf(Duration{dur}))
	return nil
}

// describe names a node's kind and value for messages.
func describe(n *yamlv3.Node) string {
	switch n.Kind {
	case yamlv3.MappingNode:
		return "a mapping"
	case yamlv3.SequenceNode:
		return "a list"
	}
	switch n.ShortTag() {
	case "!!int", "!!float":
		return "a number " + n.Value
	case "!!bool":
		return n.Value
	case "!!str":
		return fmt.Sprintf("a string %q", n.Value)
	}
	return fmt.Sprintf("%q", n.Value)
}

// syntaxError restates a YAML syntax error with the position where the
// problem starts. The YAML library reports a parser error (one it finds
// after a construct began) on the zero-based line of that construct's
// start; an unclosed flow collection ([a, b or {a: b) is named at its
// opening bracket, found here, since the library only notices it lines
// later.
func syntaxError(b []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if strings.Contains(msg, "did not find expected") {
		for _, pair := range [][2]string{{"[", "]"}, {"{", "}"}} {
			if line, col, ok := unclosedFlow(b, pair[0][0]); ok {
				return fmt.Errorf("line %d, column %d: %q is never closed: add %q after its last item (not valid YAML)", line, col, pair[0], pair[1])
			}
		}
	}
	if m := lineOf.FindStringSubmatch(msg); m != nil && strings.Contains(msg, "did not find expected") {
		n, _ := strconv.Atoi(m[1])
		msg = fmt.Sprintf("line %d: %s", n+1, msg[len(m[0]):])
	}
	return errors.New(msg + " (not valid YAML)")
}

var lineOf = regexp.MustCompile(`^line (\d+): `)

// unclosedFlow returns the position (1-based) of the first flow collection
// opened with open that is not closed: the brackets of flow collections
// outside quotes and comments, where a value starts (after "key: ", "- ",
// at a line's start, or inside another flow collection).
func unclosedFlow(b []byte, open byte) (line, col int, ok bool) {
	type pos struct {
		c         byte
		line, col int
	}
	var stack []pos
	line, col = 1, 0
	var quote byte
	valueStart := true // at a place where a flow collection may start
	for i := 0; i < len(b); i++ {
		c := b[i]
		col++
		switch {
		case c == '\n':
			line, col = line+1, 0
			valueStart = true
			continue
		case quote != 0:
			if c == quote && !(quote == '"' && i > 0 && b[i-1] == '\\') {
				quote = 0
			}
			continue
		case c == '#' && (i == 0 || b[i-1] == ' ' || b[i-1] == '\t' || b[i-1] == '\n'):
			for i+1 < len(b) && b[i+1] != '\n' {
				i++
			}
			continue
		case c == ' ' || c == '\t':
			continue
		}
		switch {
		case (c == '[' || c == '{') && (valueStart || len(stack) > 0):
			stack = append(stack, pos{c, line, col})
			valueStart = true
			continue
		case (c == ']' || c == '}') && len(stack) > 0:
			stack = stack[:len(stack)-1]
		case (c == '\'' || c == '"') && (valueStart || len(stack) > 0):
			quote = c
		case c == ',' && len(stack) > 0:
			valueStart = true
			continue
		case c == ':' || c == '-':
			if i+1 == len(b) || b[i+1] == ' ' || b[i+1] == '\n' || (len(stack) > 0 && b[i+1] == ',') {
				valueStart = true
				continue
			}
		}
		valueStart = false
	}
	for _, p := range stack {
		if p.c == open {
			return p.line, p.col, true
		}
	}
	return 0, 0, false
}
