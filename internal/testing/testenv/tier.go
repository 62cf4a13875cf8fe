package testenv

import (
	"os"
	"testing"
	"time"
)

// EnvSoak selects the soak tier: `make test-soak` sets it to 1. Without it
// the real-component tests run in their gate form (`make test`): the same
// kinds of fault, judged the same way, in their shortest honest length.
const EnvSoak = "RVSYNC_SOAK"

// Soak reports whether the tests run at soak length (make test-soak) rather
// than in the gate (make test).
func Soak() bool { return os.Getenv(EnvSoak) == "1" }

// Length returns gate in the gate and soak in the soak: how long a test
// watches a healthy system, or how many times it repeats a fault.
func Length(gate, soak time.Duration) time.Duration {
	if Soak() {
		return soak
	}
	return gate
}

// RequireSoak skips a test that only the soak runs (the HA control plane,
// the fleet, the busy cluster at full length): the gate keeps a shorter
// proof of the same capability, which the test's comment names. The skip
// says how to run it.
func RequireSoak(t testing.TB, gateProof string) {
	t.Helper()
	if !Soak() {
		t.Skipf("soak only (make test-soak, or %s=1); the gate's proof of it: %s", EnvSoak, gateProof)
	}
}
