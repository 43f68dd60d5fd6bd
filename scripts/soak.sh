#!/usr/bin/env bash
# soak.sh — the long runs of `make soak` and `make fuzz`, one step after
# another; a step that fails does not stop the others. At the end (also
# after Ctrl-C) it prints a table of every step with its status and time,
# and exits non-zero if any step failed.
#
#   scripts/soak.sh        the soak: kill, contention, power loss,
#                          compaction crash and kill runs, then every fuzz target
#   scripts/soak.sh fuzz   every fuzz target only
#   scripts/soak.sh seeds  every seed-taking process test over SOAK_SEEDS
#                          seeds (JSONLSTORE_SEED=1..N; make test runs each
#                          with one fixed seed)
#
# Counts and times come from the environment (the Makefile passes them):
#   FUZZ_TARGETS   "pkg:FuzzName ..." — the one list of fuzz targets; a Fuzz
#                  function in the tree that is not listed fails the run
#   FUZZTIME       per fuzz target (default 2m)
#   SOAK_KILL_ROUNDS (5000) SOAK_LEASE_ROUNDS (10000) SOAK_POWERLOSS_SEEDS (2000)
#   SOAK_COMPACT_CRASH_SEEDS (100) SOAK_COMPACT_KILL_ROUNDS (500)
#   SOAK_RACE_ROUNDS (2000) SOAK_TIMEOUT (go test -timeout per step, 3h)
set -uo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-2m}
TIMEOUT=${SOAK_TIMEOUT:-3h}
: "${FUZZ_TARGETS:?FUZZ_TARGETS is not set (run through make)}"

logs=$(mktemp -d "${TMPDIR:-/tmp}/soak.XXXXXX")
names=() statuses=() times=()
started=$(date +%s)

summary() {
	local failed=0 i
	echo
	echo "== summary ($(( $(date +%s) - started ))s in all; logs in $logs)"
	printf '%-11s  %6s  %s\n' STATUS TIME STEP
	for i in "${!names[@]}"; do
		printf '%-11s  %5ss  %s\n' "${statuses[$i]}" "${times[$i]}" "${names[$i]}"
		[ "${statuses[$i]}" = PASS ] || failed=1
	done
	return $failed
}
trap 'statuses+=(INTERRUPTED); names+=("(interrupted)"); times+=(0); summary; exit 130' INT TERM

# step NAME ENV... -- CMD...: runs CMD with ENV, logs it, and records the
# outcome. A go test that ran no test counts as a failure (NOTESTS): the
# step's -run or -fuzz pattern no longer names anything.
step() {
	local name=$1; shift
	local env=()
	while [ "$1" != -- ]; do env+=("$1"); shift; done
	shift
	local log="$logs/${#names[@]}.log" t0 rc status
	echo "== $name"
	echo "   ${env[*]} $*"
	t0=$(date +%s)
	env "${env[@]}" "$@" 2>&1 | tee "$log" | grep -E '^(--- FAIL|FAIL|ok|PASS|panic|fuzz: elapsed: .*(completed|execs: [0-9]+ .*total)|    [a-z_]+_test\.go:[0-9]+: .*(rounds|seeds|snapshots|sessions))' | tail -n 20
	rc=${PIPESTATUS[0]}
	status=PASS
	if [ "$rc" -ne 0 ]; then
		status=FAIL
	elif grep -q -e 'no tests to run' -e 'no fuzz tests to fuzz' "$log"; then
		status=NOTESTS
	fi
	names+=("$name") statuses+=("$status") times+=($(( $(date +%s) - t0 )))
	echo "   -> $status in ${times[-1]}s"
}

# soak_test NAME ENV PKG TEST: a step that runs the one test TEST of PKG,
# verbose, with ENV (its count of rounds or seeds).
soak_test() {
	step "$1" "$2" -- "$GO" test -count=1 -v -timeout "$TIMEOUT" -run "^$4\$" "$3"
}

# Every Fuzz function in the tree must be in FUZZ_TARGETS.
check_fuzz_list() {
	local missing=() f
	for f in $(grep -rhoE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . | sed 's/^func //' | sort -u); do
		case " $FUZZ_TARGETS " in *":$f "*) ;; *) missing+=("$f") ;; esac
	done
	names+=("fuzz target list complete") times+=(0)
	if [ ${#missing[@]} -gt 0 ]; then
		echo "== fuzz targets not listed in FUZZ_TARGETS (Makefile): ${missing[*]}"
		statuses+=(FAIL)
	else
		statuses+=(PASS)
	fi
}

fuzz_all() {
	check_fuzz_list
	local spec pkg fn
	for spec in $FUZZ_TARGETS; do
		pkg=${spec%%:*} fn=${spec##*:}
		step "fuzz $fn ($pkg, $FUZZTIME)" -- \
			"$GO" test -run '^$' -fuzz "^$fn\$" -fuzztime "$FUZZTIME" -timeout "$TIMEOUT" "$pkg"
	done
}

# seeds_all runs each seed-taking process test once per seed, from one
# race-enabled test binary; a failing seed is printed with the command that
# replays it.
SEED_TESTS="TestHistoryDuringCompaction TestCopyLiveStore TestCopyLiveStoreWithBlobs TestKillDuringAppend TestKillDuringAppendWithBlobs TestReadersRaceHolder TestCompactKilled TestSearchAcrossProcesses TestCreateKilledAfterPublish"
seeds_all() {
	local bin="$logs/jsonlstore.test" n=${SOAK_SEEDS:-500} t
	"$GO" test -c -race -o "$bin" ./jsonlstore/ || { names+=("build jsonlstore.test") statuses+=(FAIL) times+=(0); return; }
	for t in $SEED_TESTS; do
		step "$t over $n seeds" -- bash -c '
			bin=$1 t=$2 n=$3 failed=0
			cd jsonlstore
			for seed in $(seq 1 "$n"); do
				if ! out=$(JSONLSTORE_SEED=$seed "$bin" -test.run "^$t\$" -test.count=1 2>&1); then
					echo "$out" | tail -n 30
					echo "--- FAIL seed $seed: JSONLSTORE_SEED=$seed go test -run ^$t\$ ./jsonlstore/"
					failed=1
				fi
			done
			[ $failed = 0 ] && echo "ok $t: $n seeds"
			exit $failed' _ "$bin" "$t" "$n"
	done
	# The catalog's model test loops its own seeds (40 under the race
	# detector in make test, 300 without it): here as many as the others.
	step "TestCatalogModel over $n seeds" JSONLSTORE_CATALOG_SEEDS="$n" -- \
		"$GO" test -count=1 -timeout "$TIMEOUT" -run '^TestCatalogModel$' ./jsonlstore/
}

case "${1:-soak}" in
seeds)
	seeds_all
	;;
fuzz)
	fuzz_all
	;;
soak)
	soak_test "kill during append: ${SOAK_KILL_ROUNDS:=5000} rounds" JSONLSTORE_KILL_ROUNDS="$SOAK_KILL_ROUNDS" ./jsonlstore/ TestKillDuringAppend
	soak_test "lease contention: ${SOAK_LEASE_ROUNDS:=10000} rounds" FSLEASE_SOAK_ROUNDS="$SOAK_LEASE_ROUNDS" ./fslease/ TestContention
	soak_test "power loss: ${SOAK_POWERLOSS_SEEDS:=2000} seeds" JSONLSTORE_POWERLOSS_SEEDS="$SOAK_POWERLOSS_SEEDS" ./jsonlstore/ TestPowerLoss
	soak_test "compaction crash at every sync point: ${SOAK_COMPACT_CRASH_SEEDS:=100} seeds" JSONLSTORE_COMPACT_CRASH_SEEDS="$SOAK_COMPACT_CRASH_SEEDS" ./jsonlstore/ TestCompactCrashAtEverySyncPoint
	soak_test "compaction killed: ${SOAK_COMPACT_KILL_ROUNDS:=500} rounds" JSONLSTORE_COMPACT_KILL_ROUNDS="$SOAK_COMPACT_KILL_ROUNDS" ./jsonlstore/ TestCompactKilled
	soak_test "readers race the holder: ${SOAK_RACE_ROUNDS:=2000} rounds" JSONLSTORE_RACE_ROUNDS="$SOAK_RACE_ROUNDS" ./jsonlstore/ TestReadersRaceHolder
	fuzz_all
	;;
*)
	echo "usage: $0 [soak|fuzz|seeds]" >&2
	exit 2
	;;
esac
summary
