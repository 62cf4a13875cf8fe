#!/usr/bin/env bash
# test-gate.sh: `make test`, the gate. One honest proof of every
# capability, in its shortest form, on the 2-core machine: the release dry
# run beside the fast tier under -race, then the real-component tests (the
# critical path: most of their time is waiting on real timers, pages and
# windows) with the simulation's budget, its race budget and pkg/ on a real
# API server under -race beside them, niced. What the gate shortens, `make
# test-soak` runs at full length.
#
# Run by the Makefile, which exports the tools' paths (RVSYNC_*), BIN and
# TEST_TIMEOUT. Each stage writes its log to $BIN/gate/<stage>.log; the
# logs of failed stages are printed at the end, then the stage table.
set -u
cd "$(dirname "$0")/.." || exit 2
bin=${BIN:-$PWD/bin}
logs=$bin/gate
rm -rf "$logs" && mkdir -p "$logs"
STAGES=$logs/stages.tsv
: >"$STAGES"
# shellcheck source=hack/stages.sh
. hack/stages.sh
timeout=${TEST_TIMEOUT:-60m}
module=$(go list -m)
# The real-component tests in two runs side by side: the end-to-end suite,
# whose tests each hold a whole stack and mostly wait on real windows, all
# at once; every other package (but the simulation's, which runs on its own
# budget below) beside it.
e2e=$module/test/e2e
# the longest first (go test starts packages in the order given): each
# holds one of -p's slots for most of the stage, and the short ones
# follow each other in the last
longest="$module/test/sim/conformance $module/exporter $module/alerts"
others="$longest $(go list ./... | grep -v -x -e "$module/test/sim" -e "$e2e" $(printf -- ' -e %s' $longest))"

# log STAGE-FILE COMMAND...: a stage whose output goes to its log
logged() {
	local file=$1
	shift
	"$@" >"$logs/$file.log" 2>&1
}

# 1. The release's artifacts, which the real-cluster test installs, beside
# the fast tier under the race detector.
stage "release dry run" logged release make --no-print-directory release-dry-run &
release=$!
# shellcheck disable=SC2086
stage "fast tier, -race -short" logged race go test -race -short -count=1 $others $e2e &
race=$!
wait "$release"
release_rc=$?

# 2. The real components, and beside them (niced: they fill the cores
# while the real components wait) the simulation's budget in two processes
# (it runs on one processor per process), its race budget, and pkg/'s
# in-process informers on a real API server under -race.
stage "real components: test/e2e" logged e2e go test -v -tags integration -count=1 -parallel 8 -timeout "$timeout" "$e2e" &
e2e_pid=$!
# shellcheck disable=SC2086
stage "real components: the other packages" logged integration go test -v -tags integration -count=1 -p 4 -parallel 4 -timeout "$timeout" $others &
integration=$!
wait "$race"
race_rc=$?
sim_pages=${SIM_PAGE_TESTS:?the Makefile's SIM_PAGE_TESTS: the simulation's page tests}
stage "simulation: page histories" logged sim-pages nice -n 10 go test -count=1 -timeout "$timeout" -run "$sim_pages" ./test/sim &
sim_pages_pid=$!
stage "simulation: histories and corpus" logged sim nice -n 10 go test -count=1 -timeout "$timeout" -skip "$sim_pages" ./test/sim
sim_rc=$?
stage "simulation, -race" logged sim-race nice -n 10 go test -race -count=1 -timeout "$timeout" -run '^TestRandomHistories$' ./test/sim
sim_race_rc=$?
stage "pkg/ on a real API server, -race" logged pkg-race nice -n 10 go test -tags integration -race -count=1 -timeout "$timeout" ./pkg/...
pkg_race_rc=$?
wait "$sim_pages_pid"
sim_pages_rc=$?
wait "$integration"
integration_rc=$?
wait "$e2e_pid"
e2e_rc=$?

failed=0
for s in release:$release_rc race:$race_rc e2e:$e2e_rc integration:$integration_rc sim:$sim_rc sim-pages:$sim_pages_rc sim-race:$sim_race_rc pkg-race:$pkg_race_rc; do
	name=${s%%:*} rc=${s##*:}
	if [ "$rc" != 0 ]; then
		failed=1
		echo "== $name failed ($logs/$name.log):"
		cat "$logs/$name.log"
	else
		# what passed, in a line per package, and the real components'
		# tests of a minute or more (their logs are -v: the seconds of
		# every test are in them)
		grep -E '^(ok|FAIL)|histories \(' "$logs/$name.log" | cut -c1-200
		awk '/^--- PASS: / && $4 ~ /^\(/ {s = substr($4, 2) + 0; if (s >= 60) print "    " $3 " " s "s"}' "$logs/$name.log"
	fi
done
stage_table "make test (the gate)"
exit "$failed"
