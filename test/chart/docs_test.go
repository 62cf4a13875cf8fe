//go:build integration

package chart_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/rvsync-slo/rvsync-slo/internal/testing/chart"
	"github.com/rvsync-slo/rvsync-slo/internal/testing/testenv"
)

// docCommand is a helm command or --set flag of a doc, where it stands.
type docCommand struct {
	where string
	args  []string
}

// codeBlock matches a fenced block.
var codeBlock = regexp.MustCompile("(?ms)^```[a-z]*\n(.*?)^```")

// docCommands returns every helm command of the fenced blocks of a doc
// (continued lines joined, comments dropped, cut at a pipe) and every
// inline code span that is a helm command or a --set flag.
func docCommands(t *testing.T, name, text string) []docCommand {
	t.Helper()
	var out []docCommand
	add := func(where, line string) {
		if !strings.HasPrefix(strings.TrimSpace(line), "helm ") && !strings.HasPrefix(line, "--set") {
			return
		}
		args, err := shellWords(line)
		if err != nil {
			t.Errorf("%s: %q: %v", where, line, err)
			return
		}
		if i := slices.Index(args, "|"); i >= 0 {
			args = args[:i]
		}
		// a command (not a mention such as `helm template` or `--set`)
		switch {
		case len(args) >= 4 && args[0] == "helm" && slices.Contains([]string{"install", "upgrade", "template"}, args[1]),
			strings.HasPrefix(args[0], "--set") && (len(args) == 2 || strings.Contains(args[0], "=")):
			out = append(out, docCommand{where: where, args: args})
		}
	}
	lineOf := func(off int) int { return strings.Count(text[:off], "\n") + 1 }
	for _, m := range codeBlock.FindAllStringSubmatchIndex(text, -1) {
		block := strings.ReplaceAll(text[m[2]:m[3]], "\\\n", " ")
		for i, l := range strings.Split(block, "\n") {
			add(fmt.Sprintf("%s:%d", name, lineOf(m[2])+i), l)
		}
	}
	prose := codeBlock.ReplaceAllStringFunc(text, func(b string) string { return strings.Repeat("\n", strings.Count(b, "\n")) })
	for _, m := range inlineCode.FindAllStringSubmatchIndex(prose, -1) {
		add(fmt.Sprintf("%s:%d", name, lineOf(m[0])), prose[m[2]:m[3]])
	}
	return out
}

// shellWords splits a command line as a POSIX shell does for the quoting
// docs use ('...', "...", \x), dropping a # comment; a lone | is a word.
func shellWords(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	in, quote := false, rune(0)
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case quote == '"':
			switch {
			case r == '"':
				quote = 0
			case r == '\\' && i+1 < len(rs) && strings.ContainsRune(`"\$`+"`", rs[i+1]):
				i++
				w.WriteRune(rs[i])
			default:
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == '\\' && i+1 < len(rs):
			i++
			w.WriteRune(rs[i])
			in = true
		case unicode.IsSpace(r):
			if in {
				words, in = append(words, w.String()), false
				w.Reset()
			}
		case r == '#' && !in:
			i = len(rs)
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed %c", quote)
	}
	if in {
		words = append(words, w.String())
	}
	return words, nil
}

// renderDocCommand renders a doc's helm command against the repository's
// chart: install and upgrade as on a cluster with the Prometheus Operator
// (they ask the cluster, kube-prometheus-stack serves the kinds), template
// exactly as written (no cluster: --api-versions only where the command
// passes it). A bare --set flag renders with the defaults. The chart
// reference, published or local, is the repository's chart, and a
// --version must be the chart's.
func renderDocCommand(t *testing.T, c docCommand, version string) error {
	t.Helper()
	args := c.args
	o := chart.Options{}
	if args[0] == "helm" {
		if len(args) < 4 || !slices.Contains([]string{"install", "upgrade", "template"}, args[1]) {
			return fmt.Errorf("want helm install|upgrade|template RELEASE CHART [flags]")
		}
		o.Release = args[2]
		o.WithoutOperator = args[1] == "template"
		if ref := args[3]; ref != "oci://ghcr.io/rvsync-slo/charts/rvsync-slo" && ref != "./charts/rvsync-slo" {
			return fmt.Errorf("chart %q: want the published oci://ghcr.io/rvsync-slo/charts/rvsync-slo or ./charts/rvsync-slo", ref)
		}
		args = args[4:]
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	var flags []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		next := func() (string, error) {
			if hasValue {
				return value, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("%s without a value", a)
			}
			i++
			return args[i], nil
		}
		switch name {
		case "--reuse-values", "--create-namespace", "--wait", "--atomic":
		case "-n", "--namespace":
			if o.Namespace, err = next(); err != nil {
				return err
			}
		case "--version":
			v, err := next()
			if err != nil {
				return err
			}
			if v != version {
				return fmt.Errorf("--version %s, but the chart is %s", v, version)
			}
		case "--set", "--set-string", "--set-json", "--api-versions":
			v, err := next()
			if err != nil {
				return err
			}
			flags = append(flags, name, v)
		case "-f", "--values":
			f, err := next()
			if err != nil {
				return err
			}
			if _, err := os.Stat(filepath.Join(root, f)); err != nil {
				return fmt.Errorf("-f %s: not a file of the repository", f)
			}
			flags = append(flags, name, filepath.Join(root, f))
		default:
			return fmt.Errorf("flag %s: the test does not know it", a)
		}
	}
	_, err = chart.TemplateArgs(o, flags...)
	return err
}

// TestDocCommandsRender: every helm command and --set flag that the README
// and the runbooks show renders against the chart (issue #29: runbook steps
// named values the schema rejects; a step failed with "at '/resources':
// got array, want object").
func TestDocCommandsRender(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	version, err := chart.Version()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	docs := docFiles(t)
	for _, d := range docs {
		b, err := os.ReadFile(filepath.Join(root, d))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range docCommands(t, d, string(b)) {
			n++
			if err := renderDocCommand(t, c, version); err != nil {
				t.Errorf("%s: %s: %v", c.where, strings.Join(c.args, " "), err)
			}
		}
	}
	if n < 10 {
		t.Errorf("found %d helm commands and --set flags in %v: the extraction is broken", n, docs)
	}
}
