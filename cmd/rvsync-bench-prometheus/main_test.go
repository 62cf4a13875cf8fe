package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFlagsSayWhatIsWrong: each bad flag is one error naming the flag and
// what it wants.
func TestFlagsSayWhatIsWrong(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "tool")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	good := func() options {
		return options{days: 30, scrape: 30 * time.Second, eval: time.Hour, warmup: 4 * time.Minute, repeats: 20,
			prometheus: bin, sloth: bin, dashboards: "../../charts/rvsync-slo/files/dashboards"}
	}
	o := good()
	if err := o.parse("50,200"); err != nil || len(o.resources) != 2 || o.resources[1] != 200 {
		t.Fatalf("good flags: %v, resources %v", err, o.resources)
	}
	for _, c := range []struct {
		resources, want string
		change          func(*options)
	}{
		{"50,x", "-resources", nil},
		{"0", "-resources", nil},
		{"50", "-days", func(o *options) { o.days = 0 }},
		{"50", "-eval", func(o *options) { o.eval = time.Second }},
		{"50", "-warmup", func(o *options) { o.warmup = time.Minute }}, // below the budget groups' 2m30s
		{"50", "-repeats", func(o *options) { o.repeats = 0 }},
		{"50", "-dashboards", func(o *options) { o.dashboards = "/nonexistent" }},
	} {
		o := good()
		if c.change != nil {
			c.change(&o)
		}
		err := o.parse(c.resources)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("resources %q, %s: error %v, want one line starting with %s", c.resources, c.want, err, c.want)
		}
	}
}
