# shellcheck shell=bash
# stages.sh: time named stages of a run and print them as a table, so the
# budget of the gate (make test) and of CI (.ci/run) shows in every run.
# Source it, set STAGES to a file, then:
#
#   stage NAME COMMAND...    runs COMMAND, appends "NAME<TAB>seconds<TAB>rc"
#                            to $STAGES, returns COMMAND's status (run it
#                            with & for a stage beside others)
#   stage_table [TITLE]      prints the stages in the order they ended,
#                            and the run's wall time since STAGES_START
#
# Stages that run side by side overlap: their seconds add up to more than
# the wall time.

STAGES_START=${STAGES_START:-$(date +%s)}

stage() {
	local name=$1 start rc
	shift
	start=$(date +%s)
	echo ">> [$(date +%H:%M:%S)] $name"
	"$@"
	rc=$?
	printf '%s\t%s\t%s\n' "$name" "$(($(date +%s) - start))" "$rc" >>"$STAGES"
	echo ">> [$(date +%H:%M:%S)] $name: $( [ "$rc" = 0 ] && echo ok || echo "FAILED ($rc)") in $(($(date +%s) - start))s"
	return "$rc"
}

stage_table() {
	echo "== ${1:-stages} (wall $(($(date +%s) - STAGES_START))s; side-by-side stages overlap)"
	awk -F '\t' '{printf "  %-46s %6ss  %s\n", $1, $2, ($3 == 0 ? "ok" : "FAILED")}' "$STAGES"
}
