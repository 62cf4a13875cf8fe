package probe

import "time"

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func sec(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
