package readme

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"unicode"
)

// mdLink matches a Markdown link's target.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// anchor is the GitHub anchor of a heading's text.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestLocalLinksResolve: every relative link of the READMEs, CONTRIBUTING.md
// and docs/*.md names a file of the repository and, with #anchor, a
// heading of it (the README's sections moved to docs/ in issue #40).
func TestLocalLinksResolve(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(root, "README.md"), filepath.Join(root, "CONTRIBUTING.md"), filepath.Join(root, "charts", "rvsync-slo", "README.md"))
	anchors := map[string]map[string]bool{}
	headings := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := map[string]bool{}
		b, _ := os.ReadFile(path)
		inCode := false
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "```") {
				inCode = !inCode
			}
			if h, ok := strings.CutPrefix(strings.TrimLeft(l, "#"), " "); ok && !inCode && strings.HasPrefix(l, "#") {
				a[anchor(h)] = true
			}
		}
		anchors[path] = a
		return a
	}
	n := 0
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			path, frag, _ := strings.Cut(target, "#")
			dest := p
			if path != "" {
				dest = filepath.Join(filepath.Dir(p), path)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link %s: no such file", rel, target)
					continue
				}
			}
			if frag != "" && strings.HasSuffix(dest, ".md") && !headings(dest)[frag] {
				t.Errorf("%s: link %s: no heading with that anchor", rel, target)
			}
		}
	}
	if n < 20 {
		t.Errorf("found %d relative links: the extraction is broken", n)
	}
}
