# scripts/bench/harness.sh -- sourced by the benchmarks.  Times gpucc and the
# tool a user would otherwise reach for side by side, in interleaved rounds
# of hyperfine runs, and prints the ratio gpucc/peer with the goal it is
# held to.
#
#   bench_setup                     build gpucc (release) and make $WORK
#   bench_pair NAME GOAL GPUCC_CMD PEER_CMD
#   bench_pair_direct NAME GOAL GPUCC_CMD PEER_CMD
#       The same without a shell, for commands of a few milliseconds.
#       BENCH_PREPARE (a shell command), when set, runs before each timed
#       run of GPUCC_CMD, untimed (hyperfine --prepare).
#   bench_in_process NAME GOAL GPUCC_MS PEER_CMD
#       The same row for a library call timed inside its own process
#       (GPUCC_MS, the mean of many calls) against a command.
#       GOAL is "<= X" or ">= X" on the ratio mean(gpucc)/mean(peer), or
#       "-" for a comparison reported without a goal.
#       Prints one Markdown table row; appends it to $BENCH_RESULTS.
#
# Environment: BENCH_RUNS (default 10), BENCH_ROUNDS (default: BENCH_RUNS, at
# most 10), BUILD_DIR (default build-bench),
# BENCH_RESULTS (default $WORK/results.md), BENCH_GPUCC (a gpucc to measure
# as it is: no setup, no build; the list and algebra benchmarks only).
set -eu
BENCH_ROOT=$(cd "$(dirname "$0")/../.." && pwd)

bench_setup() {
	if [ -n "${BENCH_GPUCC:-}" ]; then
		# A gpucc built elsewhere, e.g. scripts/device-check's install on
		# a machine that cannot build: nothing is set up or built.
		GPUCC=$BENCH_GPUCC
		BUILD=$(dirname "$(dirname "$GPUCC")")
	else
		"$BENCH_ROOT/scripts/setup"
		BUILD=${BUILD_DIR:-$BENCH_ROOT/build-bench}
		[ -f "$BUILD/build.ninja" ] || meson setup "$BUILD" "$BENCH_ROOT" -Dbuildtype=release >/dev/null
		ninja -C "$BUILD" >/dev/null
		BUILD=$(cd "$BUILD" && pwd) # benchmarks change directory
		GPUCC="$BUILD/cmd/gpucc"
	fi
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpucc-bench.XXXXXX")
	trap 'rm -rf "$WORK"' EXIT
	BENCH_RESULTS=${BENCH_RESULTS:-$WORK/results.md}
	export GPUCC WORK BENCH_RESULTS
	echo "| benchmark | gpucc (ms) | peer (ms) | ratio gpucc/peer | goal | met |"
	echo "|---|---|---|---|---|---|"
}

bench_pair() {
	name=$1 goal=$2 ours=$3 peer=$4
	# Interleaved: BENCH_ROUNDS rounds (default: one per run, at most 10)
	# of a few runs each, the two sides in turn and the first side
	# alternating, so that the machine's drift over minutes (±15% here)
	# falls on both sides alike instead of on whichever ran second.
	runs=${BENCH_RUNS:-10}
	rounds=${BENCH_ROUNDS:-$((runs < 10 ? runs : 10))}
	per=$(((runs + rounds - 1) / rounds))
	round=0 jsons=""
	while [ "$round" -lt "$rounds" ]; do
		json="$WORK/hyperfine.$round.json"
		# BENCH_PREPARE goes with gpucc's command: hyperfine pairs the
		# --prepare options with the commands in order.
		if [ $((round % 2)) = 0 ]; then
			set -- -n gpucc "$ours" -n peer "$peer"
			[ -z "${BENCH_PREPARE:-}" ] || set -- --prepare "$BENCH_PREPARE" --prepare true "$@"
		else
			set -- -n peer "$peer" -n gpucc "$ours"
			[ -z "${BENCH_PREPARE:-}" ] || set -- --prepare true --prepare "$BENCH_PREPARE" "$@"
		fi
		# shellcheck disable=SC2086
		hyperfine --style none --warmup $((round == 0 ? 2 : 0)) --runs "$per" \
			${BENCH_NO_SHELL:+-N} --export-json "$json" "$@" >/dev/null 2>&1
		jsons="$jsons $json"
		round=$((round + 1))
	done
	# shellcheck disable=SC2086
	bench_row "$name" "$goal" "$peer" "" $jsons
}

# bench_pair_direct: bench_pair with each command run without a shell
# (hyperfine -N), for commands of a few milliseconds, below what hyperfine
# can subtract a shell's start from; they may use no shell syntax.
bench_pair_direct() {
	BENCH_NO_SHELL=1 bench_pair "$@"
}

bench_in_process() {
	name=$1 goal=$2 ours_ms=$3 peer=$4
	json="$WORK/hyperfine.json"
	hyperfine --style none --warmup 2 --runs "${BENCH_RUNS:-10}" \
		--export-json "$json" -n peer "$peer" >/dev/null
	bench_row "$name" "$goal" "$peer" "$ours_ms" "$json"
}

# bench_row NAME GOAL PEER_CMD GPUCC_MS|"" HYPERFINE_JSON...: the means of
# every run in the JSON files (rounds of one comparison).
bench_row() {
	python3 - "$@" <<'PY' | tee -a "$BENCH_RESULTS"
import json, sys
name, goal, peer, fixed = sys.argv[1:5]
times = {}
for path in sys.argv[5:]:
    for r in json.load(open(path))["results"]:
        times.setdefault(r["command"], []).extend(r["times"])
mean = lambda name: sum(times[name]) / len(times[name])
ours = float(fixed) / 1000 if fixed else mean("gpucc")
theirs = mean("peer")
ratio = ours / theirs
if goal == "-":
    met = "-"
else:
    op, bound = goal.split()
    ok = ratio <= float(bound) if op == "<=" else ratio >= float(bound)
    met = "yes" if ok else "NO"
print(f"| {name} (vs `{peer.split()[0]}`) | {ours*1000:.{3 if ours < 1e-3 else 1}f} | {theirs*1000:.1f} | {ratio:.3f} | {goal} | {met} |")
PY
}
