package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// yamlError restates an error of decoding the config file b in YAML terms:
// where it is (line and column, the key's path) and what is wrong, instead
// of the JSON decoder's wording of the YAML-to-JSON path ("error
// unmarshaling JSON: while decoding JSON: json: unknown field").
func yamlError(b []byte, err error) error {
	var root yamlv3.Node
	if perr := yamlv3.Unmarshal(b, &root); perr != nil {
		return errors.New(strings.TrimPrefix(perr.Error(), "yaml: ") + " (not valid YAML)")
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, "json: "); i >= 0 {
		msg = msg[i+len("json: "):]
	}
	msg = strings.TrimPrefix(strings.TrimPrefix(msg, "error unmarshaling JSON: "), "while decoding JSON: ")
	entries := yamlEntries(&root, "")

	if m := unknownField.FindStringSubmatch(msg); m != nil {
		for _, e := range entries {
			if e.key.Value == m[1] {
				return fmt.Errorf("line %d, column %d: unknown key %s: check its spelling and place (exporter --help lists the settings; the README shows the file)", e.key.Line, e.key.Column, e.path)
			}
		}
	}
	if m := wrongType.FindStringSubmatch(msg); m != nil {
		field := m[2][strings.Index(m[2], ".")+1:] // Config.canary.interval → canary.interval
		for _, e := range entries {
			if e.fieldPath == field {
				return fmt.Errorf("line %d, column %d: %s: want %s, got %s %q", e.value.Line, e.value.Column, e.path, article(m[3]), article(m[1]), e.value.Value)
			}
		}
	}
	if m := quotedValue.FindStringSubmatch(msg); m != nil {
		for _, e := range entries {
			if e.value.Kind == yamlv3.ScalarNode && e.value.Value == m[1] {
				return fmt.Errorf("line %d, column %d: %s: %s", e.value.Line, e.value.Column, e.path, msg)
			}
		}
	}
	return errors.New(msg)
}

var (
	unknownField = regexp.MustCompile(`^unknown field "([^"]+)"`)
	wrongType    = regexp.MustCompile(`cannot unmarshal (\w+) into Go struct field (\S+) of type (\S+)`)
	quotedValue  = regexp.MustCompile(`"([^"]+)"`)
)

// article names a JSON or Go type in words.
func article(t string) string {
	switch t {
	case "string":
		return "a string"
	case "number", "int", "float64":
		return "a number"
	case "bool":
		return "true or false"
	case "array":
		return "a list"
	case "object":
		return "a mapping"
	}
	if strings.HasPrefix(t, "[]") {
		return "a list"
	}
	if strings.HasPrefix(t, "*") {
		return article(t[1:])
	}
	return "a " + t
}

// yamlEntry is one key of the file: its path for people (resources[1].space),
// its path as the JSON decoder names struct fields (resources.space), and
// its key and value nodes.
type yamlEntry struct {
	path, fieldPath string
	key, value      *yamlv3.Node
}

func yamlEntries(n *yamlv3.Node, path string) []yamlEntry {
	var out []yamlEntry
	var walk func(n *yamlv3.Node, path, fieldPath string)
	walk = func(n *yamlv3.Node, path, fieldPath string) {
		switch n.Kind {
		case yamlv3.DocumentNode:
			for _, c := range n.Content {
				walk(c, path, fieldPath)
			}
		case yamlv3.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p, fp := k.Value, k.Value
				if path != "" {
					p, fp = path+"."+k.Value, fieldPath+"."+k.Value
				}
				out = append(out, yamlEntry{path: p, fieldPath: fp, key: k, value: v})
				walk(v, p, fp)
			}
		case yamlv3.SequenceNode:
			for i, c := range n.Content {
				walk(c, fmt.Sprintf("%s[%d]", path, i), fieldPath)
			}
		}
	}
	walk(n, path, path)
	return out
}
