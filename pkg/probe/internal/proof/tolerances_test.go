package proof

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTolerancesDocumented keeps the table of docs/simulation.md's "The
// proof's tolerances" and the package's constants in step: every
// tolerance (a package-level constant whose value is an integer or a
// duration of package time) has its row, naming its file and its value;
// every row names a tolerance; and every test a row says pins it exists.
func TestTolerancesDocumented(t *testing.T) {
	code := tolerances(t)
	rows := toleranceRows(t)
	tests := testNames(t, ".", "../..", "../../../../test/sim")
	for _, name := range slices.Sorted(maps.Keys(code)) {
		c := code[name]
		row, ok := rows[name]
		if !ok {
			t.Errorf("%s (%s, %s): no row in docs/simulation.md's tolerances", name, c.file, c.value)
			continue
		}
		delete(rows, name)
		if row.file != c.file || row.value != c.value {
			t.Errorf("docs/simulation.md: row %s says %s, %s; the code: %s, %s", name, row.file, row.value, c.file, c.value)
		}
		for _, m := range regexp.MustCompile("`(Test[A-Za-z0-9_]+)`").FindAllStringSubmatch(row.pinnedBy, -1) {
			if !tests[m[1]] {
				t.Errorf("docs/simulation.md: row %s is pinned by %s, which no test file of proof, probe or test/sim defines", name, m[1])
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(rows)) {
		t.Errorf("docs/simulation.md: row %s names no tolerance of the package", name)
	}
}

// tolerance is where a constant is declared and its value as the table
// writes it ("2 s", "10 min", "16").
type tolerance struct{ file, value string }

// tolerances returns the package's tolerances by name, from its source.
func tolerances(t *testing.T) map[string]tolerance {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]tolerance{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i >= len(vs.Values) {
						continue // iota's repetition: an enumeration
					}
					if v, ok := tableValue(vs.Values[i]); ok {
						out[name.Name] = tolerance{file: f, value: v}
					}
				}
			}
		}
	}
	return out
}

// tableValue returns a constant's value as the table writes it, if it is
// a tolerance: an integer literal, or one times a unit of package time.
func tableValue(e ast.Expr) (string, bool) {
	n, unit, ok := evaluate(e)
	if !ok {
		return "", false
	}
	d := time.Duration(n) * unit
	switch {
	case unit == 0:
		return strconv.FormatInt(n, 10), true
	case d%time.Minute == 0:
		return fmt.Sprintf("%d min", d/time.Minute), true
	case d%time.Second == 0:
		return fmt.Sprintf("%d s", d/time.Second), true
	}
	return d.String(), true
}

// evaluate returns n and unit of an expression n, time.Unit or n *
// time.Unit (unit 0: a plain integer).
func evaluate(e ast.Expr) (n int64, unit time.Duration, ok bool) {
	units := map[string]time.Duration{"Millisecond": time.Millisecond, "Second": time.Second, "Minute": time.Minute, "Hour": time.Hour}
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.INT {
			return 0, 0, false
		}
		n, err := strconv.ParseInt(e.Value, 0, 64)
		return n, 0, err == nil
	case *ast.SelectorExpr:
		if pkg, ok := e.X.(*ast.Ident); ok && pkg.Name == "time" && units[e.Sel.Name] != 0 {
			return 1, units[e.Sel.Name], true
		}
	case *ast.BinaryExpr:
		a, ua, okA := evaluate(e.X)
		b, ub, okB := evaluate(e.Y)
		if e.Op == token.MUL && okA && okB && (ua == 0 || ub == 0) {
			return a * b, ua + ub, true
		}
	}
	return 0, 0, false
}

// toleranceRow is a row of the table: | `name` (`file.go`) | value |
// derives from | pinned by |.
type toleranceRow struct{ file, value, pinnedBy string }

// toleranceRows returns the rows of the table in docs/simulation.md's
// section "The proof's tolerances", by the constant they name.
func toleranceRows(t *testing.T) map[string]toleranceRow {
	t.Helper()
	b, err := os.ReadFile("../../../../docs/simulation.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## The proof's tolerances\n")
	if !ok {
		t.Fatal(`docs/simulation.md has no section "## The proof's tolerances"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	first := regexp.MustCompile("^`([A-Za-z]+)` \\(`([a-z]+\\.go)`\\)$")
	rows := map[string]toleranceRow{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| --- |") || strings.HasPrefix(line, "| tolerance |") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 4 {
			t.Errorf("docs/simulation.md: tolerance row of %d cells, want 4: %s", len(cells), line)
			continue
		}
		m := first.FindStringSubmatch(cells[0])
		if m == nil {
			t.Errorf("docs/simulation.md: tolerance row does not begin | `name` (`file.go`) |: %s", line)
			continue
		}
		rows[m[1]] = toleranceRow{file: m[2], value: cells[1], pinnedBy: cells[3]}
	}
	return rows
}

// testNames returns the names of the tests the test files of dirs define.
func testNames(t *testing.T, dirs ...string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range regexp.MustCompile(`\nfunc (Test\w+)\(t \*testing\.T\)`).FindAllStringSubmatch(string(b), -1) {
				names[m[1]] = true
			}
		}
	}
	return names
}
