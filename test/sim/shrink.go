package sim

import (
	"slices"
	"testing"
	"time"
)

// Shrink returns the smallest history it finds that still breaks the
// invariant rule on resource (the first violation of h, when both are
// ""), to keep as a regression case: it cuts the history short after the
// violation, then drops faults, loads, the background writes, the canary,
// the API servers beyond one and resources nothing refers to, one at a
// time, keeping each cut that still fails, until none does.
func Shrink(t *testing.T, h History, rule, resource string) History {
	return shrink(h, func(c History) (time.Duration, bool) {
		chk, err := RunHistory(t, c)
		if err != nil {
			return 0, false
		}
		for _, v := range chk.Violations {
			if (rule == "" || v.Rule == rule) && (resource == "" || v.Resource == resource) {
				return v.At, true
			}
		}
		return 0, false
	})
}

// shrink is Shrink over any test of a history: fails reports whether a
// history still fails, and when its failure was seen.
func shrink(h History, fails func(History) (time.Duration, bool)) History {
	at, ok := fails(h)
	if !ok {
		return h
	}
	for changed := true; changed; {
		changed = false
		try := func(c History) bool {
			if a, ok := fails(c); ok {
				h, at, changed = c, a, true
				return true
			}
			return false
		}
		// end a minute after the failure
		if end := (at + time.Minute).Truncate(time.Minute); end < h.Duration {
			c := h
			c.Duration = end
			c.Loads = clip(h.Loads, end)
			try(c)
		}
		for i := 0; i < len(h.Faults); {
			c := h
			c.Faults = slices.Delete(slices.Clone(h.Faults), i, i+1)
			if !try(c) {
				i++
			}
		}
		for i := 0; i < len(h.Loads); {
			c := h
			c.Loads = slices.Delete(slices.Clone(h.Loads), i, i+1)
			if !try(c) {
				i++
			}
		}
		if h.Background != 0 {
			c := h
			c.Background = 0
			try(c)
		}
		if h.Setup.Canary != "" {
			c := h
			c.Setup.Canary = ""
			try(c)
		}
		for i := 0; i < len(h.Setup.MoreCanaries); {
			c := h
			c.Setup.MoreCanaries = slices.Delete(slices.Clone(h.Setup.MoreCanaries), i, i+1)
			if !try(c) {
				i++
			}
		}
		if h.Setup.Servers > 1 && !refersToServers(h) {
			c := h
			c.Setup.Servers = 0
			try(c)
		}
		for i := 0; i < len(h.Setup.Resources); {
			if len(h.Setup.Resources) == 1 || refersTo(h, h.Setup.Resources[i].Name()) {
				i++
				continue
			}
			c := h
			c.Setup.Resources = slices.Delete(slices.Clone(h.Setup.Resources), i, i+1)
			if !try(c) {
				i++
			}
		}
	}
	return h
}

// clip ends every load by end.
func clip(loads []Load, end time.Duration) []Load {
	out := make([]Load, 0, len(loads))
	for _, l := range loads {
		if l.Start >= end {
			continue
		}
		l.End = min(l.End, end)
		out = append(out, l)
	}
	return out
}

// refersTo reports whether a load, a fault or the canary of h names the
// resource res.
func refersTo(h History, res string) bool {
	if h.Setup.canaried(res) {
		return true
	}
	for _, l := range h.Loads {
		if l.Resource == res {
			return true
		}
	}
	for _, f := range h.Faults {
		if f.Resource == res {
			return true
		}
	}
	return false
}

// refersToServers reports whether a fault or a pin of h names an API
// server other than the first.
func refersToServers(h History) bool {
	for _, f := range h.Faults {
		if f.Server != 0 {
			return true
		}
	}
	for _, s := range h.Setup.Pins {
		if s != 0 {
			return true
		}
	}
	return false
}
