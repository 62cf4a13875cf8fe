package proof

// ParseRV parses a resource version as the integer it is for resources
// served by kube-apiserver from etcd (KEP-5504: comparable integers within a
// resource). It reports false for anything else — an empty string, a
// leading zero (so also "0", which in list options means "any" and is never
// an object's RV), a sign, a non-digit, or a value past uint64 — which
// callers treat as opaque: no lag math, no crash. Extension API servers may
// serve such RVs.
//
// ParseRV does not allocate; it runs for every watch event.
func ParseRV(s string) (uint64, bool) {
	if len(s) == 0 || len(s) > 20 || s[0] == '0' {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false // overflow
		}
		v = v*10 + d
	}
	return v, true
}
