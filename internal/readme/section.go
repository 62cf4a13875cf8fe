package readme

import (
	"bytes"
	"os"
)

// WriteSection replaces the generated section of the Markdown file at path,
// from the line begin to the line end, with text (which carries both
// markers); it creates the file, under the title "# Benchmarks", or appends
// the section, when the file has none. The benchmarks write their figures
// into docs/benchmarks.md with it.
func WriteSection(path, begin, end, text string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	var out []byte
	i, j := bytes.Index(old, []byte(begin)), bytes.Index(old, []byte(end))
	switch {
	case i >= 0 && j > i:
		rest := bytes.TrimPrefix(old[j+len(end):], []byte("\n"))
		out = append(append(append([]byte{}, old[:i]...), text...), rest...)
	case len(old) > 0:
		out = append(append(old, '\n'), text...)
	default:
		out = []byte("# Benchmarks\n\n" + text)
	}
	return os.WriteFile(path, out, 0o644)
}
