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
			[]string{`line 1, column 15: maxResources: want a whole number, got a string "lots"`}},
		{"string for a boolean", "canary:\n  enabled: maybe\n",
			[]string{`line 2, column 12: canary.enabled: want true or false, got a string "maybe"`}},
		{"bad duration", "canary:\n  interval: 5 seconds\n",
			[]string{`line 2, column 13: canary.interval: invalid duration "5 seconds"`}},
		{"not YAML", "canary: [\n",
			[]string{`line 1, column 9: "[" is never closed`, "(not valid YAML)"}},
		// the cases of issue #29: the old decoder named the wrong key or line
		{"number for a duration after another duration", "probeInterval: 5s\ncanary: {interval: 10}\n",
			[]string{`line 2, column 20: canary.interval: want a duration like 10s or 1m, got a number 10`}},
		{"number for a duration, alone", "canary: {interval: 10}\n",
			[]string{`line 1, column 20: canary.interval: want a duration like 10s or 1m, got a number 10`}},
		{"unclosed list on line 4", "probeInterval: 5s\nlogLevel: info\nresources:\n  - [configmaps\n  - pods\n",
			[]string{`line 4, column 5: "[" is never closed: add "]"`}},
		{"unclosed mapping", "resources:\n  - pods\n  - {name: events, space: e\ncanary:\n  interval: 5s\n",
			[]string{`line 3, column 5: "{" is never closed: add "}"`}},
		{"a key given twice", "logLevel: info\nprobeInterval: 5s\nlogLevel: debug\n",
			[]string{`line 3, column 1: logLevel: given twice (first on line 1)`}},
		{"a list where a mapping belongs", "canary: [configmaps]\n",
			[]string{`line 1, column 9: canary: want a mapping of keys to values, got a list`}},
		{"a float for a whole number", "totalShards: 1.5\n",
			[]string{`line 1, column 14: totalShards: want a whole number, got a number 1.5`}},
		{"a number for a resource", "resources:\n  - pods\n  - 7\n",
			[]string{`line 3, column 5: resources[1]: want a resource name such as pods or deployments.apps, got a number 7`}},
		{"bad indentation", "canary:\n  interval: 5s\n deadline: 60s\n",
			[]string{"line 3", "(not valid YAML)"}},
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
