package chart_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
)

// docFiles are the files whose helm commands and value names must work:
// what a user copies (the READMEs, CONTRIBUTING.md and every page under
// docs/), relative to the repository's root.
func docFiles(t *testing.T) []string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md", "charts/rvsync-slo/README.md", "CONTRIBUTING.md"}
	for _, p := range pages {
		out = append(out, filepath.Join("docs", filepath.Base(p)))
	}
	return out
}

// inlineCode matches a code span.
var inlineCode = regexp.MustCompile("`([^`\n]+)`")

// valuePath matches a code span that reads as a chart value path
// (slo.symptoms.stalledFor); a segment in upper case is a Go name
// (slo.Spec) or a map key (slo.disabledAlerts.RvsyncRelistStorm).
var valuePath = regexp.MustCompile(`^[a-z][A-Za-z0-9]*(\.[a-z][A-Za-z0-9]*)*$`)

// TestDocValueNamesExist: every chart value the README and the runbooks
// name in code (a dotted path under a top-level key of values.yaml) exists
// in values.yaml, and the runbooks never send the reader to top-level
// `resources` (the container's requests and limits) for the watched
// resources (watchedResources).
func TestDocValueNamesExist(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := chart.Dir()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	checked := 0
	docs := docFiles(t)
	for _, d := range docs {
		b, err := os.ReadFile(filepath.Join(root, d))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, m := range inlineCode.FindAllStringSubmatchIndex(text, -1) {
			span := text[m[2]:m[3]]
			where := fmt.Sprintf("%s:%d", d, strings.Count(text[:m[0]], "\n")+1)
			if d == "docs/runbooks.md" && span == "resources" {
				t.Errorf("%s: `resources` are the exporter container's requests and limits; the watched resources are `watchedResources`", where)
			}
			segs := strings.Split(span, ".")
			if !strings.Contains(span, ".") || !valuePath.MatchString(span) || values[segs[0]] == nil {
				continue
			}
			checked++
			if err := lookupValue(values, segs); err != nil {
				t.Errorf("%s: `%s`: %v", where, span, err)
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked %d value names in %v: the extraction is broken", checked, docs)
	}
}

// lookupValue finds a value path in the defaults; below a map whose
// default is empty ({}) any key is a user's own (slo.extraLabels.team).
func lookupValue(values map[string]any, segs []string) error {
	var cur any = values
	for i, s := range segs {
		m, ok := cur.(map[string]any)
		if !ok {
			return fmt.Errorf("%s is not a mapping", strings.Join(segs[:i], "."))
		}
		if len(m) == 0 {
			return nil
		}
		if cur, ok = m[s]; !ok {
			return fmt.Errorf("no value %s in values.yaml", strings.Join(segs[:i+1], "."))
		}
	}
	return nil
}
