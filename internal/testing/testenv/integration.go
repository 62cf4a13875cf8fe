//go:build integration

package testenv

// integration: this build holds the tests that need real components (go
// test -tags integration, as `make test` runs).
const integration = true
