# rvsync-slo — build, test and generate. `make help` lists the targets.

SHELL := /bin/bash
.DEFAULT_GOAL := help

K8S_VERSION  ?= v1.37.2
ETCD_VERSION ?= v3.7.3
HELM_VERSION ?= v3.22.0
STATICCHECK_VERSION ?= v0.8.2
# The Prometheus Operator API whose CRDs (ServiceMonitor, PrometheusRule)
# the test cluster serves, so the chart installs at its defaults.
OPERATOR_VERSION ?= v0.95.2
# The Prometheus Operator whose Alertmanager configuration generation
# (pkg/alertmanager) the chart's AlertmanagerConfig is tested through
# (hack/tools/operator-amconfig): v0.88.0, the newest whose
# pkg/client module the Go module proxy serves here (v0.94.1's is not).
OPERATOR_AMCONFIG_VERSION ?= v0.88.0
# Prometheus with Kubernetes service discovery (Debian's is built without),
# for the real cluster's scrape; module version v0.316.0 is Prometheus 3.16.0.
PROMETHEUS_VERSION ?= v3.16.0
# Thanos (sidecar, query) for the fleet test: two clusters behind one
# Thanos Query. v0.42.4 is the newest whose go.mod asks for no newer Go
# than the toolchain here (v0.42.5 wants go 1.26.10).
THANOS_VERSION ?= v0.42.4
# sloth, whose rules for the same three SLOs `make bench-prometheus`
# evaluates beside the shipped ones (hack/tools/sloth).
SLOTH_VERSION ?= v0.16.0

BIN          := $(CURDIR)/bin
# Built tools (the control plane, helm, Prometheus, the release tools) are
# cached outside the checkout, by name and version, so a clean clone reuses
# a kube-apiserver built yesterday; `make clean-cache` removes them. Each
# builds under a lock on its directory (two checkouts may share the cache)
# into a temporary path, moved into place only when whole. A tool's
# recipe changed without a new version needs `make clean-cache`.
TOOLS        ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/rvsync-slo
K8S_BIN      := $(TOOLS)/k8s-$(K8S_VERSION)
APISERVER    := $(K8S_BIN)/kube-apiserver
# The node and the rest of the control plane, for the real cluster
# (internal/testing/cluster): built in the same `go build` as kube-apiserver.
K8S_NODE     := $(addprefix $(K8S_BIN)/,kube-controller-manager kube-scheduler kube-proxy kubelet)
KUBECTL      := $(K8S_BIN)/kubectl
OPERATOR_CRDS := $(TOOLS)/prometheus-operator-$(OPERATOR_VERSION)/crds
PROMETHEUS   := $(TOOLS)/prometheus-$(PROMETHEUS_VERSION)/prometheus
ETCD         := $(TOOLS)/etcd-$(ETCD_VERSION)/etcd
HELM         := $(TOOLS)/helm-$(HELM_VERSION)/helm
OPERATOR_AMCONFIG := $(TOOLS)/operator-amconfig-$(OPERATOR_AMCONFIG_VERSION)/operator-amconfig
# As helm's own release build: without these, `helm template` and `helm lint`
# assume Kubernetes v1.20 (the chart requires >= 1.34); helm v3.22.0 builds
# with client-go v0.37 (hack/tools/helm/go.mod).
HELM_KUBE_VERSION_FLAGS := $(foreach p,pkg/chartutil pkg/lint/rules,-X helm.sh/helm/v3/$(p).k8sVersionMajor=1 -X helm.sh/helm/v3/$(p).k8sVersionMinor=37)
STATICCHECK  := $(TOOLS)/staticcheck-$(STATICCHECK_VERSION)/staticcheck
THANOS       := $(TOOLS)/thanos-$(THANOS_VERSION)/thanos
SLOTH        := $(TOOLS)/sloth-$(SLOTH_VERSION)/sloth
MODULE       := github.com/rvsync-slo/rvsync-slo
VERSION      ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION     ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS      := -X main.version=$(VERSION) -X main.revision=$(REVISION)
TEST_TIMEOUT ?= 60m
# Tests that need real components (kube-apiserver, etcd, helm, Prometheus,
# promtool, the cluster) are in files built only with this tag; every target
# that runs them passes it, test-unit does not (testenv.RequireIntegration).
INTEGRATION  := -tags integration

# A comma inside a $(call) argument.
, := ,
# $(call tool_build,what,command writing $@.tmp): build a cached tool under a
# lock on its directory, skipped when another make built it meanwhile, moved
# into place only when whole.
tool_build = mkdir -p $(dir $@) && flock $(dir $@).lock sh -c 'test -e $@ || { echo ">> building $(1)" && $(2) && mv $@.tmp $@; }'

# Tests find the control plane and helm through these (and, run by hand
# without make, in RVSYNC_TOOLS: internal/testing/process.Binary).
export RVSYNC_TOOLS          := $(TOOLS)
export RVSYNC_KUBE_APISERVER := $(APISERVER)
export RVSYNC_ETCD           := $(ETCD)
export RVSYNC_HELM           := $(HELM)
export RVSYNC_OPERATOR_CRDS  := $(OPERATOR_CRDS)
export RVSYNC_OPERATOR_AMCONFIG := $(OPERATOR_AMCONFIG)
export RVSYNC_PROMETHEUS     := $(PROMETHEUS)
export RVSYNC_THANOS         := $(THANOS)
export RVSYNC_SLOTH          := $(SLOTH)

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-13s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build the exporter and the generator into bin/.
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/exporter ./cmd/exporter
	go build -o $(BIN)/rvsync-gen ./cmd/rvsync-gen

.PHONY: testbin
testbin: $(APISERVER) $(K8S_NODE) $(ETCD) $(HELM) $(OPERATOR_CRDS) $(OPERATOR_AMCONFIG) $(PROMETHEUS) ## Build kube-apiserver, the node (kubelet, kube-proxy, controller-manager, scheduler), etcd, helm, the operator CRDs and its Alertmanager configuration generator, and Prometheus with Kubernetes discovery from the Go module proxy into the tool cache (TOOLS, by version).

# Each tool builds in its own module under hack/tools so its dependencies
# never enter the main go.mod.
k8s_ldflags = -s -w \
	-X k8s.io/component-base/version.gitVersion=$(1) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(1))) \
	-X k8s.io/component-base/version.gitTreeState=clean
K8S_LDFLAGS := $(call k8s_ldflags,$(K8S_VERSION))
# One Kubernetes build at a time (each takes most of the machine's memory
# and both cores): CI starts the version matrix's API servers beside testbin.
# The lock is the cache's, so two checkouts wait for each other too; the
# binaries are built into .tmp/ and moved into place only when whole, and a
# build that finds them all there (another make built them) does nothing.
k8s_build = mkdir -p $(K8S_BIN) && cd hack/tools/kubernetes && flock $(TOOLS)/.kubernetes-build.lock sh -c \
	'$(foreach b,$(1),test -e $(K8S_BIN)/$(b) &&) exit 0; CGO_ENABLED=0 go build -trimpath -ldflags "$(K8S_LDFLAGS)" -o $(K8S_BIN)/.tmp/ $(addprefix k8s.io/kubernetes/cmd/,$(1)) && mv $(addprefix $(K8S_BIN)/.tmp/,$(1)) $(K8S_BIN)/'

# One `go build` for all of them: the compiler shares their common packages
# and keeps both cores busy, so the node costs ~3 min on top of
# kube-apiserver's cold ~6-8 min instead of a second pass over the tree.
$(APISERVER) $(K8S_NODE) &:
	@echo ">> building kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy, kubelet $(K8S_VERSION) (cold: ~10 min on 2 cores)"
	$(call k8s_build,kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet)

# The version matrix (make test-compat): kube-apiserver at the newest patch
# of each minor the Go module proxy serves, oldest first, built like
# K8S_VERSION's in a module of its own (hack/tools/kubernetes-<minor>, with
# the staging replaces of that release) and cached as
# $(TOOLS)/k8s-<version>/kube-apiserver. K8S_VERSION's comes from testbin.
COMPAT_VERSIONS ?= v1.34.4 v1.35.4 v1.36.3 $(K8S_VERSION)
COMPAT_APISERVERS := $(foreach v,$(filter-out $(K8S_VERSION),$(COMPAT_VERSIONS)),$(TOOLS)/k8s-$(v)/kube-apiserver)

$(TOOLS)/k8s-%/kube-apiserver:
	@echo ">> building kube-apiserver $* (cold: ~6-8 min on 2 cores)"
	@mkdir -p $(dir $@)
	cd hack/tools/kubernetes-$(word 1,$(subst ., ,$(*:v%=%))).$(word 2,$(subst ., ,$*)) && \
		flock $(TOOLS)/.kubernetes-build.lock sh -c 'test -x $@ || { CGO_ENABLED=0 go build -trimpath \
		-ldflags "$(call k8s_ldflags,$*)" -o $@.tmp k8s.io/kubernetes/cmd/kube-apiserver && mv $@.tmp $@; }'

.PHONY: apiservers
apiservers: $(COMPAT_APISERVERS) ## Build the version matrix's kube-apiservers (COMPAT_VERSIONS but K8S_VERSION, which testbin builds) into the tool cache, one at a time, cached by version.

# kube-apiserver alone, for `make demo` (the grouped build above also
# compiles the node): into the same path, so a later testbin builds only
# the node, and a demo after testbin builds nothing.
.PHONY: kube-apiserver
kube-apiserver: ## Build kube-apiserver alone into the tool cache (what `make demo` needs; testbin builds it with the node).
	@test -x $(APISERVER) || { echo ">> building kube-apiserver $(K8S_VERSION) alone (cold: ~4-10 min on 2 cores)" && $(call k8s_build,kube-apiserver); }

$(KUBECTL):
	@echo ">> building kubectl $(K8S_VERSION)"
	$(call k8s_build,kubectl)

$(OPERATOR_CRDS):
	$(call tool_build,the Prometheus Operator CRDs $(OPERATOR_VERSION) with controller-gen,cd hack/tools/operator-crds && rm -rf $@.tmp && go tool controller-gen \
		crd:crdVersions=v1$(,)maxDescLen=0$(,)allowDangerousTypes=true \
		paths=github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1 \
		output:crd:dir=$@.tmp)

# The operator's own code turning AlertmanagerConfigs into Alertmanager's
# configuration (~2 min cold), for the chart's tests.
$(OPERATOR_AMCONFIG):
	$(call tool_build,operator-amconfig (Prometheus Operator $(OPERATOR_AMCONFIG_VERSION) pkg/alertmanager),cd hack/tools/operator-amconfig && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $@.tmp .)

$(ETCD):
	$(call tool_build,etcd $(ETCD_VERSION) (cold: ~1-3 min on 2 cores),cd hack/tools/etcd && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $@.tmp go.etcd.io/etcd/server/v3)

$(HELM):
	$(call tool_build,helm $(HELM_VERSION),cd hack/tools/helm && CGO_ENABLED=0 go build -trimpath -o $@.tmp \
		-ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) $(HELM_KUBE_VERSION_FLAGS)" helm.sh/helm/v3/cmd/helm)

$(STATICCHECK):
	$(call tool_build,staticcheck $(STATICCHECK_VERSION),cd hack/tools/staticcheck && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $@.tmp honnef.co/go/tools/cmd/staticcheck)

.PHONY: deps
deps: ## Install the Debian packages the tests use (promtool, prometheus, alertmanager) when missing.
	@if ! command -v promtool >/dev/null || ! command -v prometheus-alertmanager >/dev/null; then \
		echo ">> installing Debian packages prometheus prometheus-alertmanager"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus prometheus-alertmanager >/dev/null; \
		systemctl disable --now prometheus prometheus-alertmanager prometheus-node-exporter >/dev/null 2>&1 || true; \
	fi

# Only the kubernetes and file/static discovery compiled in: the other
# mechanisms' cloud SDKs would double the build.
$(PROMETHEUS):
	$(call tool_build,prometheus $(PROMETHEUS_VERSION) with Kubernetes service discovery,cd hack/tools/prometheus && CGO_ENABLED=0 go build -trimpath -tags remove_all_sd$(,)enable_kubernetes_sd \
		-ldflags "-s -w -X github.com/prometheus/common/version.Version=$(PROMETHEUS_VERSION:v%=%)" \
		-o $@.tmp github.com/prometheus/prometheus/cmd/prometheus)

.PHONY: thanos
thanos: $(THANOS) ## Build Thanos (sidecar, query) for the fleet test (make test-soak) into the tool cache.

# hack/tools/thanos repeats Thanos' replace directives (only the main
# module's apply). Tags as Thanos' own release build (.promu.yml): without
# slicelabels its gRPC codec computes garbage sizes for label sets and the
# sidecar panics on Query's first Info call.
$(THANOS):
	$(call tool_build,thanos $(THANOS_VERSION) (cold: ~8 min on 2 cores),cd hack/tools/thanos && CGO_ENABLED=0 go build -trimpath -tags netgo$(,)slicelabels \
		-ldflags "-s -w -X github.com/prometheus/common/version.Version=$(THANOS_VERSION:v%=%)" \
		-o $@.tmp github.com/thanos-io/thanos/cmd/thanos)

.PHONY: sloth
sloth: $(SLOTH) ## Build sloth (the SLO rule generator make bench-prometheus compares with) into the tool cache.

$(SLOTH):
	$(call tool_build,sloth $(SLOTH_VERSION),cd hack/tools/sloth && CGO_ENABLED=0 go build -trimpath \
		-ldflags "-s -w -X github.com/slok/sloth/internal/info.Version=$(SLOTH_VERSION)" -o $@.tmp github.com/slok/sloth/cmd/sloth)

.PHONY: cluster-deps
cluster-deps: ## Install the Debian packages the real cluster runs (containerd, runc, CNI plugins, iptables, nftables) when missing.
	@if ! command -v containerd >/dev/null || ! command -v runc >/dev/null || ! test -x /usr/lib/cni/bridge \
		|| ! command -v iptables >/dev/null || ! command -v nft >/dev/null || ! command -v conntrack >/dev/null; then \
		echo ">> installing Debian packages containerd runc containernetworking-plugins iptables nftables conntrack"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq containerd runc containernetworking-plugins iptables nftables conntrack >/dev/null; \
		systemctl disable --now containerd >/dev/null 2>&1 || true; \
	fi

.PHONY: test
test: deps cluster-deps testbin $(SLOTH) release-bins cc ## The gate (the README's test command, what CI runs after verify; ~25 min on 2 cores): the release dry run and the fast tier under -race, then every real-component test in its gate form beside the simulation's budget, its race budget and pkg/ on a real API server under -race; a table of the stages last (hack/test-gate.sh).
	BIN=$(BIN) TEST_TIMEOUT=$(TEST_TIMEOUT) SIM_PAGE_TESTS='$(SIM_PAGE_TESTS)' hack/test-gate.sh

# -race needs cgo, so a C compiler (the machine image has gcc; a bare one
# may not).
.PHONY: cc
cc:
	@command -v gcc >/dev/null || { echo ">> installing Debian packages gcc libc6-dev (cgo, for -race)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev >/dev/null; }

# The simulation runs on one processor per process (its TestMain: a
# history must replay), so its short tier is split in two processes, the
# page histories and the rest: once the race tests are done, both cores
# run it.
SIM_PAGE_TESTS := ^(TestPageCorpus|TestRandomPages)$$

.PHONY: test-unit
test-unit: cc ## The fast tier for every edit: go test -race -short without the integration tag, no control plane, helm or Prometheus; beside it, the simulation's 1,000 histories and its page corpus without -race, in two processes (8x slower under it; make test runs its race budget).
	@mkdir -p $(BIN)
	@go test -short -count=1 -run '$(SIM_PAGE_TESTS)' ./test/sim > $(BIN)/test-unit-sim-pages.log 2>&1 & pages=$$!; \
	go test -short -count=1 -skip '$(SIM_PAGE_TESTS)' ./test/sim > $(BIN)/test-unit-sim.log 2>&1 & sim=$$!; \
	go test -race -short -count=1 $$(go list ./... | grep -v '/test/sim$$'); race=$$?; \
	wait $$sim; simrc=$$?; wait $$pages; pagesrc=$$?; cat $(BIN)/test-unit-sim.log $(BIN)/test-unit-sim-pages.log; \
	[ $$race = 0 ] && [ $$simrc = 0 ] && [ $$pagesrc = 0 ]

SIM_HISTORIES ?= 100000
SIM_DURATION ?= 10m
SIM_PAGES ?= 1000
SIM_PAGE_DURATION ?= 3h
SIM_SEED ?= 1
# SIM_WIDEN: the dimensions the histories draw beyond the default world
# (comma-separated: order, informers, nostart, http1, scopes, selectors,
# lifecycle, restarts, typed, fields, canaries, cutoff; see test/sim/generate.go), or
# all; empty draws the default world only. Each run prints the share of
# histories that drew each.
SIM_WIDEN ?= all

.PHONY: test-sim
test-sim: ## The simulation at length, on both cores (~2 h): SIM_HISTORIES random histories (of at most SIM_DURATION) against every invariant, then SIM_PAGES (of at most SIM_PAGE_DURATION) with the shipped rules judged for false and missed pages, all drawing the dimensions SIM_WIDEN names; prints the seeds of failures and the shares drawn.
	@mkdir -p $(BIN)
	hack/test-sim.sh $(BIN) $(SIM_HISTORIES) $(SIM_DURATION) $(SIM_PAGES) $(SIM_PAGE_DURATION) $(SIM_SEED) '$(SIM_WIDEN)'

# The soak: what the gate shortens, at full length (RVSYNC_SOAK=1,
# testenv.Soak): the busy cluster's 10-minute window on both progress-notify
# intervals, the HA control plane (three API servers: busy, one stalled
# cache, a rolling restart), the real cluster with three API servers (their
# rolling restart behind the kubernetes Service, 50,000 objects under the
# memory limit) and the cluster rig's own test, the fleet behind Thanos,
# and the version matrix. Not in CI: run it before resolving an issue that
# changes a signal, a rule or the chart.
SOAK_TESTS ?= ^(TestHA|TestHABusyCluster|TestFleet|TestCluster|TestClusterPodRuns)$$

.PHONY: test-soak
test-soak: deps cluster-deps testbin thanos apiservers ## The soaks, not in CI (~1.5 h on 2 cores): the HA control plane, the real cluster at full load and the fleet on the newest kube-apiserver, then the version matrix (test-compat) at soak length; logs in bin/soak/.
	@mkdir -p $(BIN)/soak
	set -o pipefail; RVSYNC_SOAK=1 go test $(INTEGRATION) -count=1 -parallel 3 -timeout $(TEST_TIMEOUT) -run '$(SOAK_TESTS)' -v ./test/e2e ./internal/testing/cluster 2>&1 \
		| tee $(BIN)/soak/e2e.log | grep --line-buffered -E '^(=== RUN|--- |    --- |PASS|FAIL|ok|panic)'
	RVSYNC_SOAK=1 $(MAKE) --no-print-directory test-compat

# The tests that exercise the API server's behaviour, run per version by
# test-compat: a stalled watch, a slow API server, restarts and 410s, the
# model's conformance, a busy cluster, restores, etcd leader changes, the
# canary and the whole chain to Alertmanager (in the soak: the busy cluster
# on both progress-notify intervals for 10 minutes).
COMPAT_TESTS ?= ^(TestSteadyChurn|TestStalledWatch|TestListLatency|TestCompactionExpiresWatch|TestWatchConnectionReset|TestCanaryMeasuresWatchDelay|TestCanaryLostOnStall|TestHeadProbeRefusedWhileWatchesStream|TestEtcdRestoreUnderARunningAPIServer|TestConformance|TestBusyCluster|TestEtcdLeaderChanges|TestEndToEnd)$$

.PHONY: test-compat
test-compat: deps testbin apiservers ## Run the server-behaviour tests against every kube-apiserver of COMPAT_VERSIONS (1.34-1.37), one version after the other; logs in bin/compat/<version>.log (about 15 min per version, 25 in the soak).
	@mkdir -p $(BIN)/compat
	@set -o pipefail; failed=""; for v in $(COMPAT_VERSIONS); do \
		echo ">> $$($(TOOLS)/k8s-$$v/kube-apiserver --version): $(COMPAT_TESTS)"; \
		RVSYNC_KUBE_APISERVER=$(TOOLS)/k8s-$$v/kube-apiserver \
			go test $(INTEGRATION) -count=1 -parallel 3 -timeout $(TEST_TIMEOUT) -run '$(COMPAT_TESTS)' -v ./exporter ./test/e2e ./test/sim/conformance 2>&1 \
			| tee $(BIN)/compat/$$v.log | grep --line-buffered -E '^(=== RUN|--- |    --- |PASS|FAIL|ok|panic)' || failed="$$failed $$v"; \
	done; \
	if [ -n "$$failed" ]; then echo "test-compat failed on:$$failed (logs in $(BIN)/compat/)" >&2; exit 1; fi

.PHONY: test-cluster
test-cluster: deps cluster-deps testbin ## Run only the tests in a real single-node cluster (helm install/upgrade/uninstall, a real pod scraped and paging).
	go test $(INTEGRATION) -count=1 -timeout $(TEST_TIMEOUT) -run '^TestCluster' -v ./test/e2e ./internal/testing/cluster

IMAGE_NAME ?= rvsync.local/rvsync-slo:$(VERSION)
# The OCI labels of the image, as the release's (.goreleaser.yaml).
IMAGE_LABELS = $(addprefix -label org.opencontainers.image.,title=rvsync-slo source=https://github.com/rvsync-slo/rvsync-slo \
	version=$(VERSION) revision=$(REVISION) licenses=Apache-2.0)

.PHONY: image
image: ## Write the exporter image as a tarball (bin/images/rvsync-slo.tar) without a registry or Docker: for ctr/docker load/kind load image-archive.
	mkdir -p $(BIN)/images
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(BIN)/images/exporter ./cmd/exporter
	cd hack/tools/image && go run . -binary $(BIN)/images/exporter -name $(IMAGE_NAME) -expose 8080/tcp $(IMAGE_LABELS) -out $(BIN)/images/rvsync-slo.tar
	@echo ">> $(BIN)/images/rvsync-slo.tar is $(IMAGE_NAME)"

# Releases. GoReleaser (.goreleaser.yaml) builds the exporter for
# linux/amd64 and linux/arm64 with the flags of `make image` and packs each
# binary with hack/tools/image as `make image` does; helm packages the chart
# with the same version (Chart.yaml's version = appVersion = the tag without
# its v); syft writes the SBOMs. `make release-dry-run` builds all of it into
# dist/ (a snapshot: unsigned, unpublished) and tests it; the release
# workflow (.github/workflows/release.yml) runs `make release-publish` on a
# tag and signs what it pushed. Each tool builds in its own module under
# hack/tools, cached in the tool cache (TOOLS) by version.
GORELEASER_VERSION ?= v2.15.1
SYFT_VERSION       ?= v1.57.1
ACTIONLINT_VERSION ?= v1.7.12
GORELEASER := $(TOOLS)/goreleaser-$(GORELEASER_VERSION)/goreleaser
SYFT       := $(TOOLS)/syft-$(SYFT_VERSION)/syft
ACTIONLINT := $(TOOLS)/actionlint-$(ACTIONLINT_VERSION)/actionlint
# chart-testing (ct lint, as a chart repository's CI runs it; ct.yaml).
# v3.14.0 is the newest the Go module proxy serves here.
CT_VERSION ?= v3.14.0
CT := $(TOOLS)/ct-$(CT_VERSION)/ct
IMAGE_TOOL := $(CURDIR)/out/image
RELEASE_DIR     := $(CURDIR)/dist
RELEASE_VERSION ?= $(shell sed -n 's/^version: *//p' charts/rvsync-slo/Chart.yaml)
RELEASE_IMAGE   ?= ghcr.io/rvsync-slo/rvsync-slo
RELEASE_CHARTS  ?= oci://ghcr.io/rvsync-slo/charts
# The release tests and the real-cluster test read the artifacts here.
export RVSYNC_RELEASE_DIR := $(RELEASE_DIR)
release_env = PATH="$(dir $(SYFT)):$$PATH" RVSYNC_VERSION=$(RELEASE_VERSION) RVSYNC_REVISION=$(REVISION) RVSYNC_IMAGE_TOOL=$(IMAGE_TOOL) RVSYNC_IMAGE_REPO=$(RELEASE_IMAGE)

$(GORELEASER):
	$(call tool_build,goreleaser $(GORELEASER_VERSION),cd hack/tools/goreleaser && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$(GORELEASER_VERSION:v%=%)" -o $@.tmp github.com/goreleaser/goreleaser/v2)

$(SYFT):
	$(call tool_build,syft $(SYFT_VERSION),cd hack/tools/syft && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$(SYFT_VERSION:v%=%)" -o $@.tmp github.com/anchore/syft/cmd/syft)

$(ACTIONLINT):
	$(call tool_build,actionlint $(ACTIONLINT_VERSION),cd hack/tools/actionlint && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $@.tmp github.com/rhysd/actionlint/cmd/actionlint)

$(CT):
	$(call tool_build,chart-testing (ct) $(CT_VERSION),cd hack/tools/chart-testing && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/helm/chart-testing/v3/ct/cmd.Version=$(CT_VERSION)" -o $@.tmp github.com/helm/chart-testing/v3/ct)

# ct lint runs yamllint (Debian's package) over Chart.yaml and the values
# files, and helm from PATH: this project's, which knows Kubernetes 1.37.
.PHONY: ct-lint
ct-lint: $(CT) $(HELM) ## Lint the chart as chart-testing does (ct lint --config ct.yaml): helm lint and helm template of every ci/*-values.yaml, yamllint of Chart.yaml and the values files.
	@command -v yamllint >/dev/null || { echo ">> installing Debian package yamllint (for ct lint)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq yamllint >/dev/null; }
	PATH="$(dir $(HELM)):$$PATH" $(CT) lint --config ct.yaml

# goreleaser and syft alone (CI builds them beside the control plane).
.PHONY: release-bins
release-bins: $(GORELEASER) $(SYFT)

.PHONY: release-tools
release-tools: $(GORELEASER) $(SYFT) $(HELM) ## Build goreleaser, syft, helm and the image tool.
	cd hack/tools/image && CGO_ENABLED=0 go build -o $(IMAGE_TOOL) .

# The CHANGELOG.md section of the version: the release notes; none fails.
.PHONY: release-check
release-check:
	@test "$$(sed -n 's/^appVersion: *"*\([^"]*\)"*/\1/p' charts/rvsync-slo/Chart.yaml)" = "$(RELEASE_VERSION)" && test "$$(sed -n 's/^version: *//p' charts/rvsync-slo/Chart.yaml)" = "$(RELEASE_VERSION)" \
		|| (echo "release $(RELEASE_VERSION): charts/rvsync-slo/Chart.yaml version and appVersion must both be $(RELEASE_VERSION)" >&2; exit 1)
	@mkdir -p out && awk '/^## /{on = ($$2 == "$(RELEASE_VERSION)"); next} on' CHANGELOG.md > out/release-notes.md
	@test -s out/release-notes.md || (echo "CHANGELOG.md has no section '## $(RELEASE_VERSION)'" >&2; exit 1)

.PHONY: release-dry-run
release-dry-run: release-tools release-check ## Build every release artifact into dist/ as a snapshot (image tarballs for amd64 and arm64, the multi-arch image as an OCI layout, the chart .tgz, SBOMs, checksums) and test them; nothing is signed or pushed.
	$(release_env) $(GORELEASER) release --clean --snapshot --skip=sign --release-notes out/release-notes.md
	$(HELM) package charts/rvsync-slo -d $(RELEASE_DIR)
	$(IMAGE_TOOL) index -layout $(RELEASE_DIR)/images/oci $(RELEASE_DIR)/images/rvsync-slo_$(RELEASE_VERSION)_linux_*.tar
	cd hack/tools/image && go test -count=1 ./...
	RVSYNC_RELEASE_VERSION=$(RELEASE_VERSION) go test $(INTEGRATION) -count=1 -run '^TestReleaseArtifacts$$' -v ./test/release

.PHONY: release-publish
release-publish: release-tools release-check ## (The release workflow, on tag v<version>.) Build as release-dry-run, publish the GitHub release (cosign signs the checksums), push the multi-arch image and the chart; digests in dist/*.digest.
	$(release_env) $(GORELEASER) release --clean --release-notes out/release-notes.md
	$(HELM) package charts/rvsync-slo -d $(RELEASE_DIR)
	$(IMAGE_TOOL) index -layout $(RELEASE_DIR)/images/oci -push $(RELEASE_IMAGE):$(RELEASE_VERSION) $(RELEASE_DIR)/images/rvsync-slo_$(RELEASE_VERSION)_linux_*.tar > $(RELEASE_DIR)/image.digest
	$(HELM) push $(RELEASE_DIR)/rvsync-slo-$(RELEASE_VERSION).tgz $(RELEASE_CHARTS) 2>&1 | tee $(RELEASE_DIR)/chart-push.log
	sed -n 's/^Digest: //p' $(RELEASE_DIR)/chart-push.log > $(RELEASE_DIR)/chart.digest && test -s $(RELEASE_DIR)/chart.digest

.PHONY: cluster
cluster: deps cluster-deps testbin $(KUBECTL) ## Start a real single-node cluster, install the chart into it, print how to reach it with kubectl; Ctrl-C stops it and cleans the host.
	go run ./cmd/rvsync-cluster -kubectl $(KUBECTL)

.PHONY: generate
generate: ## Regenerate rules, dashboards, the Alertmanager routing, the chart README, the README's install section and the metric table (docs/metrics.md).
	go run ./cmd/rvsync-gen

# The developer commands: they drive the test rigs (a local control plane,
# a cluster, the benchmark's load) and are not part of the product.
DEV_COMMANDS := rvsync-demo rvsync-bench rvsync-bench-prometheus rvsync-cluster rvsync-baseline

.PHONY: verify
verify: generate $(STATICCHECK) $(ACTIONLINT) ct-lint ## Check generated files, formatting, vet (with and without the integration tag), staticcheck (with it), the workflows (actionlint), the chart (ct lint), no tracked file over 1 MiB, the dependency direction and module sums (CI runs it).
	git diff --exit-code -- charts README.md docs/alertmanager.yaml docs/metrics.md || (echo "generated files drifted: run make generate and commit" >&2; exit 1)
	@# every clone pulls every tracked file: binaries and large outputs stay
	@# out of git; recordings under a testdata directory are the exception
	@big="$$(git ls-files -z | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk '$$1 > 1048576 && $$2 !~ /(^|\/)testdata\//')"; \
		test -z "$$big" || { echo "$$big"; echo "tracked files over 1 MiB (above): keep them out of git (.gitignore)" >&2; exit 1; }
	@test -z "$$(git ls-files --others --exclude-standard -- charts docs)" || (git ls-files --others --exclude-standard -- charts docs; echo "new generated files are not tracked: git add them" >&2; exit 1)
	test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	go vet ./...
	go vet $(INTEGRATION) ./...
	$(STATICCHECK) $(INTEGRATION) ./...
	$(ACTIONLINT) .github/workflows/*.yml
	@# dependencies point one way: pkg/ is the public ground floor, and the
	@# dashboards read the SLO model, not the rule generator
	@! go list -deps ./pkg/... | grep '^$(MODULE)/' | grep -v '^$(MODULE)/pkg/' || (echo "pkg/ imports a package outside pkg/" >&2; exit 1)
	@! go list -deps ./dashboards | grep -x '$(MODULE)/alerts' || (echo "dashboards imports alerts" >&2; exit 1)
	@# commands never link the testing package (internal/testing/testenv is for
	@# tests only); rvsync-bench-prometheus writes TSDB blocks with
	@# Prometheus' tsdb package, which links it itself
	@! go list -deps ./cmd/... | grep -x '$(MODULE)/internal/testing/testenv' || (echo "a command imports internal/testing/testenv: use internal/testing/controlplane, process, workload, scrape or exporterproc" >&2; exit 1)
	@! go list -deps $$(go list ./cmd/... | grep -v '/rvsync-bench-prometheus$$') | grep -x testing || (echo "a command imports testing: use internal/testing/controlplane, process, workload, scrape or exporterproc, not internal/testing/testenv" >&2; exit 1)
	@# one kind of code per folder: the product (everything but the rigs in
	@# internal/testing/, the suites in test/ and the developer commands
	@# that drive rigs) imports no rig or suite, and no rig imports a suite
	@! go list -deps $$(go list ./... | grep -v -e '^$(MODULE)/internal/testing/' -e '^$(MODULE)/test/' $(foreach c,$(DEV_COMMANDS),-e '^$(MODULE)/cmd/$(c)$$')) \
		| grep -e '^$(MODULE)/internal/testing/' -e '^$(MODULE)/test/' || (echo "a product package imports a test rig (internal/testing/) or suite (test/): move the shared piece into the product, or the importer into internal/testing/" >&2; exit 1)
	@! go list -deps ./internal/testing/... | grep '^$(MODULE)/test/' || (echo "a test rig (internal/testing/) imports a suite (test/)" >&2; exit 1)
	go mod verify

DEMO_FLAGS ?=

# CGO_ENABLED=0 as the exporter's build (testenv.ExporterBinary): the demo
# compiles the packages the exporter then finds in the build cache.
.PHONY: demo
demo: deps $(ETCD) kube-apiserver ## Run the stack locally: etcd, kube-apiserver, a workload, the exporter, Prometheus with the chart's rules, Alertmanager; a live table, faults on s/d/r (DEMO_FLAGS: rvsync-demo's flags, e.g. --fault stall@30s+page).
	@echo ">> building rvsync-demo (cold: ~1-2 min on 2 cores)"
	CGO_ENABLED=0 go run ./cmd/rvsync-demo $(DEMO_FLAGS)

BENCH_FLAGS ?=

.PHONY: bench
# Objects of `make bench` (a third each ConfigMaps, Secrets, Widgets);
# `make bench-large` runs 500,000.
BENCH_OBJECTS ?= 50000
# A kube-state-metrics binary to run side by side (BENCH_KSM=/path); the Go
# module proxy does not serve it, so build it yourself (docs/benchmarks.md).
BENCH_KSM ?=
bench: testbin ## Exporter vs a plain metadata informer (and kube-state-metrics with BENCH_KSM=/path) side by side (BENCH_OBJECTS=50000 objects, 200 and 1,000 updates/s): sync, RSS, B/object, CPU per event, scrape, API requests into docs/benchmarks.md; then the micro-benchmarks. BENCH_FLAGS for other runs.
	go run ./cmd/rvsync-bench -objects $(BENCH_OBJECTS) $(if $(BENCH_KSM),-ksm $(BENCH_KSM)) $(BENCH_FLAGS)
	go test -run '^$$' -bench . -benchmem ./pkg/probe ./pkg/probe/ctrlstale

.PHONY: bench-large
bench-large: ## `make bench` at 500,000 objects (~30 min on 2 cores; needs ~8 GiB free), without the idle API-server phase.
	$(MAKE) bench BENCH_OBJECTS=500000 BENCH_FLAGS="-scale-window 0 $(BENCH_FLAGS)"

.PHONY: bench-prometheus
bench-prometheus: deps testbin $(SLOTH) ## What the shipped rules, series and dashboards cost the user's Prometheus, side by side with sloth's rules for the same SLOs: the real exporter's series per resource, then 30 days of history for 50 and 200 watched resources in a real Prometheus, an hour of evaluation each (~2.5 h on 2 cores) into docs/benchmarks.md. BENCH_PROMETHEUS_FLAGS for other runs.
	go run ./cmd/rvsync-bench-prometheus $(BENCH_PROMETHEUS_FLAGS)

.PHONY: clean-cache
clean-cache: ## Remove the tool cache (TOOLS: the control plane, helm, Prometheus, the release tools); the next build of each starts cold.
	rm -rf $(TOOLS)

.PHONY: clean
clean: ## Remove built binaries (keeps the tool cache).
	rm -f $(BIN)/exporter $(BIN)/rvsync-gen $(BIN)/exporter-test
