package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadFileErrorsInYAMLTerms: a bad config file is reported where it is
// wrong (line, column, the key's path) and how, without the JSON decoder's
// wording.
func TestLoadFileErrorsInYAMLTerms(t *testing.T) {
	for _, tt := range []struct {
		name, file string
		want       []string
	}{
		{"misspelt per-resource key", "probeInterval: 5s\nresources:\n  - pods\n  - name: deployments.apps\n    convergance: true\n",
			[]string{"line 5, column 5: unknown key resources[1].convergance"}},
		{"misplaced top-level key", "canary:\n  interval: 5s\n  maxResources: 3\n",
			[]string{"line 3, column 3: unknown key canary.maxResources"}},
		{"string for a number", "maxResources: lots\n",
			[]string{`line 1, column 15: maxResources: want a number, got a string "lots"`}},
		{"string for a boolean", "canary:\n  enabled: maybe\n",
			[]string{`line 2, column 12: canary.enabled: want true or false, got a string "maybe"`}},
		{"bad duration", "canary:\n  interval: 5 seconds\n",
			[]string{`line 2, column 13: canary.interval: invalid duration "5 seconds"`}},
		{"not YAML", "canary: [\n",
			[]string{"line 1", "(not valid YAML)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(f, []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadFile(f)
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range append(tt.want, "config file "+f+": ") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, jargon := range []string{"JSON", "json:", "Go struct", "\n"} {
				if strings.Contains(err.Error(), jargon) {
					t.Errorf("error %q: says %q", err, jargon)
				}
			}
		})
	}
}
