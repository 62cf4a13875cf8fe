package testenv

import (
	"context"
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

// UntilDeadline returns a context that ends a minute before the test
// binary's deadline (go test -timeout; the gate's TEST_TIMEOUT), or never
// when it has none, and at the test's cleanup: for a wait whose length
// depends on what else runs on the machine (another gate's cluster holding
// the machine-wide lock), which a fixed bound tuned on a quiet machine
// would cut short. The minute leaves the test time to say what it waited
// for and to clean up, rather than ending in the binary's panic.
func UntilDeadline(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	if deadline, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(context.Background(), deadline.Add(-time.Minute))
	}
	t.Cleanup(cancel)
	return ctx
}
