//go:build !integration

package testenv

// integration: this build is the fast tier's (go test without -tags
// integration, as `make test-unit` runs), which holds no test that needs
// real components.
const integration = false
