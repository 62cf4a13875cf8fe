# rvsync-slo — build, test and generate. `make help` lists the targets.

SHELL := /bin/bash
.DEFAULT_GOAL := help

K8S_VERSION  ?= v1.37.2
ETCD_VERSION ?= v3.7.3
HELM_VERSION ?= v3.22.0
STATICCHECK_VERSION ?= v0.8.2

BIN          := $(CURDIR)/bin
APISERVER    := $(BIN)/k8s-$(K8S_VERSION)/kube-apiserver
ETCD         := $(BIN)/etcd-$(ETCD_VERSION)/etcd
HELM         := $(BIN)/helm-$(HELM_VERSION)/helm
STATICCHECK  := $(BIN)/staticcheck-$(STATICCHECK_VERSION)/staticcheck
MODULE       := github.com/rvsync-slo/rvsync-slo
VERSION      ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION     ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS      := -X main.version=$(VERSION) -X main.revision=$(REVISION)
TEST_TIMEOUT ?= 60m

# Tests find the control plane and helm through these.
export RVSYNC_KUBE_APISERVER := $(APISERVER)
export RVSYNC_ETCD           := $(ETCD)
export RVSYNC_HELM           := $(HELM)

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build the exporter and the generator into bin/.
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/exporter ./cmd/exporter
	go build -o $(BIN)/rvsync-gen ./cmd/rvsync-gen

.PHONY: testbin
testbin: $(APISERVER) $(ETCD) $(HELM) ## Build kube-apiserver, etcd and helm from the Go module proxy into bin/ (cached by version).

# Each tool builds in its own module under hack/tools so its dependencies
# never enter the main go.mod.
$(APISERVER):
	@echo ">> building kube-apiserver $(K8S_VERSION) (cold: ~6-8 min on 2 cores)"
	cd hack/tools/kube-apiserver && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w \
		-X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
		-X k8s.io/component-base/version.gitMajor=1 \
		-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(K8S_VERSION))) \
		-X k8s.io/component-base/version.gitTreeState=clean" \
		-o $@ k8s.io/kubernetes/cmd/kube-apiserver

$(ETCD):
	@echo ">> building etcd $(ETCD_VERSION)"
	cd hack/tools/etcd && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $@ go.etcd.io/etcd/server/v3

$(HELM):
	@echo ">> building helm $(HELM_VERSION)"
	cd hack/tools/helm && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $@ helm.sh/helm/v3/cmd/helm

$(STATICCHECK):
	@echo ">> building staticcheck $(STATICCHECK_VERSION)"
	cd hack/tools/staticcheck && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $@ honnef.co/go/tools/cmd/staticcheck

.PHONY: deps
deps: ## Install the Debian packages the tests use (promtool, prometheus, alertmanager) when missing.
	@if ! command -v promtool >/dev/null || ! command -v prometheus-alertmanager >/dev/null; then \
		echo ">> installing Debian packages prometheus prometheus-alertmanager"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus prometheus-alertmanager >/dev/null; \
		systemctl disable --now prometheus prometheus-alertmanager prometheus-node-exporter >/dev/null 2>&1 || true; \
	fi

.PHONY: test
test: deps testbin ## Run every test against the real control plane, Prometheus and helm (the README's test command).
	go test -count=1 -timeout $(TEST_TIMEOUT) ./...

.PHONY: test-unit
test-unit: ## The fast tier for every edit: go test -short, no control plane, helm or Prometheus (under 3 minutes).
	go test -short -count=1 ./...

.PHONY: generate
generate: ## Regenerate rules, dashboards and the README metric table from the catalog.
	go run ./cmd/rvsync-gen

.PHONY: verify
verify: generate $(STATICCHECK) ## Check generated files, formatting, vet, staticcheck, the dependency direction and module sums (CI runs it).
	git diff --exit-code -- charts README.md || (echo "generated files drifted: run make generate and commit" >&2; exit 1)
	@test -z "$$(git ls-files --others --exclude-standard -- charts)" || (git ls-files --others --exclude-standard -- charts; echo "new generated files are not tracked: git add them" >&2; exit 1)
	test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	go vet ./...
	$(STATICCHECK) ./...
	@# dependencies point one way: pkg/ is the public ground floor, and the
	@# dashboards read the SLO model, not the rule generator
	@! go list -deps ./pkg/... | grep '^$(MODULE)/' | grep -v '^$(MODULE)/pkg/' || (echo "pkg/ imports a package outside pkg/" >&2; exit 1)
	@! go list -deps ./dashboards | grep -x '$(MODULE)/alerts' || (echo "dashboards imports alerts" >&2; exit 1)
	go mod verify

.PHONY: demo
demo: testbin ## Start a local control plane, a workload and the exporter; print a live table (Ctrl-C stops).
	go run ./cmd/rvsync-demo

BENCH_FLAGS ?=

.PHONY: bench
bench: testbin ## Exporter vs a plain metadata informer (50k ConfigMaps, 500 updates/s): CPU, RSS per object, API-server cost into docs/benchmarks.md; then the micro-benchmarks. BENCH_FLAGS for smaller runs.
	go run ./cmd/rvsync-bench $(BENCH_FLAGS)
	go test -run '^$$' -bench . -benchmem ./pkg/probe

.PHONY: clean
clean: ## Remove built binaries (keeps the cached control plane).
	rm -f $(BIN)/exporter $(BIN)/rvsync-gen $(BIN)/exporter-test
