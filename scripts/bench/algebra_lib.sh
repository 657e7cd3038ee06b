# scripts/bench/algebra_lib.sh -- sourced by the cache-algebra benchmarks
# (cache-merge, cache-snapshot, cache-lookup) after harness.sh.
#
#   bench_three NAME GOALS -n gpucc CMD -n PEER CMD [-n PEER CMD]...
#       one hyperfine run timing gpucc's command (the first) and each peer
#       side by side; prints one Markdown row per peer: means, the ratio
#       gpucc/peer and its goal.  GOALS: comma-separated "<= X" per peer,
#       "-" for a peer shown for information.  BENCH_PREPARE: hyperfine
#       --prepare command.
#   peak_rss_mib CMD...   run CMD once; print its peak RSS in MiB
#   make_entries DIR COUNT SIZE PREFIX [text]   a pack spec in DIR/spec.json
#       of COUNT entries with SIZE random payload bytes each (with "text":
#       random PTX-like lines, which compress about 5:1 as PTX does); keys
#       from PREFIX-i
#   make_deltas COUNT ENTRIES SIZE [text]   COUNT images $WORK/dNN.gpucc
#       sharing ENTRIES entries of SIZE payload bytes (make_entries, keys
#       jobNN-i); sets $inputs to their paths
bench_three() {
	name=$1 goals=$2; shift 2
	json="$WORK/hyperfine.json"
	hyperfine --style none --warmup "${BENCH_WARMUP:-1}" --runs "${BENCH_RUNS:-5}" \
		${BENCH_PREPARE:+--prepare "$BENCH_PREPARE"} --export-json "$json" "$@" >/dev/null
	python3 - "$json" "$name" "$goals" <<'PY' | tee -a "$BENCH_RESULTS"
import json, sys
results = json.load(open(sys.argv[1]))["results"]
name, goals = sys.argv[2], sys.argv[3].split(",")
ours = results[0]
for r, goal in zip(results[1:], goals):
    ratio = ours["mean"] / r["mean"]
    if goal.strip() == "-":
        met, goal = None, "(information)"
    else:
        op, bound = goal.split()
        met = ratio <= float(bound) if op == "<=" else ratio >= float(bound)
    sd = lambda x: (x["stddev"] or 0) * 1000  # None for a single run
    print(f"| {name} (vs `{r['command']}`) | {ours['mean']*1000:.0f} ± {sd(ours):.0f} | "
          f"{r['mean']*1000:.0f} ± {sd(r):.0f} | {ratio:.3f} | {goal} | {'-' if met is None else 'yes' if met else 'NO'} |")
PY
}

peak_rss_mib() {
	python3 - "$@" <<'PY'
import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.1f}")
PY
}

make_entries() {
	python3 - "$@" <<'PY'
import hashlib, json, os, random, sys
d, n, size, prefix = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
text = len(sys.argv) > 5 and sys.argv[5] == "text"
ops = ["add.s32", "mul.lo.s32", "ld.global.f32", "st.global.f32", "fma.rn.f32",
       "setp.lt.s32", "mov.u32", "cvta.to.global.u64"]
def ptx_like(rng):
    lines, length = [], 0
    while length < size:
        line = f"\t{rng.choice(ops)} \t%r{rng.randint(1, 60)}, %r{rng.randint(1, 60)}, {rng.randint(0, 4096)};\n"
        lines.append(line)
        length += len(line)
    return "".join(lines).encode()[:size]
os.makedirs(f"{d}/p", exist_ok=True)
entries = []
for i in range(n):
    ident = f"{prefix}-{i}"
    p = f"p/{i}"
    with open(f"{d}/{p}", "wb") as f:
        f.write(ptx_like(random.Random(ident)) if text else os.urandom(size))
    entries.append({"module": ident + ".ll", "module_sha256": hashlib.sha256(ident.encode()).hexdigest(),
                    "target": "sm_90", "kernels": [f"k{i}"], "ptx": p})
json.dump({"entries": entries}, open(f"{d}/spec.json", "w"))
PY
}

make_deltas() {
	md_count=$1 md_entries=$2 md_size=$3 md_kind=${4:-}
	md_per=$(( (md_entries + md_count - 1) / md_count ))
	md_i=0
	while [ "$md_i" -lt "$md_count" ]; do
		md_n=$md_per
		[ $(( (md_i + 1) * md_per )) -le "$md_entries" ] || md_n=$(( md_entries - md_i * md_per ))
		make_entries "$WORK/gen" "$md_n" "$md_size" "job$md_i" $md_kind
		"$GPUCC" pack -o "$WORK/d$(printf %02d "$md_i").gpucc" "$WORK/gen/spec.json" >/dev/null
		rm -rf "$WORK/gen"
		md_i=$((md_i + 1))
	done
	inputs=$(ls "$WORK"/d*.gpucc | tr '\n' ' ')
	echo "inputs: $md_count deltas, $md_entries entries, $(du -ch $inputs | tail -1 | cut -f1)" >&2
}
