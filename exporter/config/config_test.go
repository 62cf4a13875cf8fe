package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name    string
		mutate  func(*Config)
		wantErr string // substring; "" means valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"custom resources", func(c *Config) { c.Resources = []ResourceConfig{{Name: "widgets.example.com", Space: "aggregated"}} }, ""},
		{"empty name", func(c *Config) { c.Resources = []ResourceConfig{{Name: ""}} }, "resources[0]: empty resource name"},
		{"wildcard", func(c *Config) { c.Resources = []ResourceConfig{{Name: "*"}} }, "no wildcards"},
		{"kind not plural", func(c *Config) { c.Resources = []ResourceConfig{{Name: "Deployment"}} }, "lower-case plural.group"},
		{"duplicate", func(c *Config) { c.Resources = []ResourceConfig{{Name: "pods"}, {Name: "pods"}} }, `resources[1]: "pods" listed twice`},
		{"too many", func(c *Config) {
			c.MaxResources = 2
			c.Resources = []ResourceConfig{{Name: "a"}, {Name: "b"}, {Name: "c"}}
		}, "more than maxResources=2"},
		{"negative max", func(c *Config) { c.MaxResources = -1 }, "maxResources -1: must be positive"},
		{"tiny interval", func(c *Config) { c.ProbeInterval.Duration = time.Millisecond }, "probeInterval 1ms: must be at least 100ms"},
		{"log level", func(c *Config) { c.LogLevel = "loud" }, `logLevel "loud"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var cfg Config
			cfg.Defaults()
			c.mutate(&cfg)
			err := cfg.Validate()
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("error %v; want one containing %q", err, c.wantErr)
			}
		})
	}
}

func TestLoadFile(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		wantErr    string
		check      func(*testing.T, Config)
	}{
		{"names and objects", "probeInterval: 2s\nresources:\n- pods\n- name: events\n  space: events-etcd\n", "", func(t *testing.T, c Config) {
			if c.ProbeInterval.Duration != 2*time.Second || len(c.Resources) != 2 || c.Resources[1].Space != "events-etcd" {
				t.Errorf("loaded %+v", c)
			}
		}},
		{"unknown key", "probeIntervall: 2s\n", `line 1, column 1: unknown key probeIntervall`, nil},
		{"unknown resource key", "resources:\n- name: pods\n  spaec: x\n", `line 3, column 3: unknown key resources[0].spaec`, nil},
		{"bad duration", "probeInterval: soon\n", `invalid duration "soon"`, nil},
		{"wrong type", "maxResources: many\n", "maxResources", nil},
		{"not yaml", "resources: [\n", "config file", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(p, []byte(c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := LoadFile(p)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v; want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, cfg)
		})
	}
}

// FuzzLoadFile: any input either loads and validates or fails with an error,
// never a panic.
func FuzzLoadFile(f *testing.F) {
	for _, s := range []string{"resources: [pods]\n", "probeInterval: 1s\n", "resources:\n- name: x\n  space: y\n", "{", "maxResources: -3"} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, in string) {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(in), 0o600); err != nil {
			t.Fatal(err)
		}
		if c, err := LoadFile(p); err == nil {
			c.Defaults()
			_ = c.Validate()
		}
	})
}
