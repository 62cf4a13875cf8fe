package proof

import (
	"cmp"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/util/resourceversion"
)

func TestParseRV(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, false},
		{"1", 1, true},
		{"123456789", 123456789, true},
		{"18446744073709551615", 18446744073709551615, true}, // max uint64
		{"18446744073709551616", 0, false},                   // overflows uint64
		{"99999999999999999999", 0, false},
		{"123456789012345678901", 0, false}, // 21 digits
		{"", 0, false},
		{"01", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"12a", 0, false},
		{"abc", 0, false},
		{"1.5", 0, false},
		{" 1", 0, false},
		{"MTIz", 0, false}, // opaque token from an aggregated API
	} {
		got, ok := ParseRV(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseRV(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// FuzzParseRV checks ParseRV against strconv and agrees with apimachinery's
// CompareResourceVersion wherever both accept the input.
func FuzzParseRV(f *testing.F) {
	for _, s := range []string{"0", "1", "007", "18446744073709551615", "18446744073709551616", "", "-5", "x1"} {
		f.Add(s, "2")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		v, ok := ParseRV(a)
		if ok {
			if back := strconv.FormatUint(v, 10); back != a {
				t.Fatalf("ParseRV(%q) = %d, which formats as %q", a, v, back)
			}
		} else if u, err := strconv.ParseUint(a, 10, 64); err == nil && u > 0 && strconv.FormatUint(u, 10) == a {
			t.Fatalf("ParseRV(%q) rejected a canonical uint64", a)
		}
		w, okB := ParseRV(b)
		if ok && okB {
			want, err := resourceversion.CompareResourceVersion(a, b)
			if err != nil {
				t.Fatalf("ParseRV accepts %q and %q but apimachinery says %v", a, b, err)
			}
			if got := cmp.Compare(v, w); got != want {
				t.Fatalf("ParseRV orders %q, %q as %d; apimachinery says %d", a, b, got, want)
			}
		}
	})
}

func BenchmarkParseRV(b *testing.B) {
	rvs := []string{"1", "4711", "123456789", "18446744073709551615"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, ok := ParseRV(rvs[i%len(rvs)]); !ok {
			b.Fatal("not parsed")
		}
	}
}
