# cmd/tests/compile_sources_pch.sh -- the precompiled prelude of CUDA and
# HIP units (docs/compile.md, "The precompiled prelude") never changes a
# unit's IR, hence its key: the results of runs with it are held against
# --no-pch runs of the same units.  The units: PolyBench-like kernels
# written for this test (testdata/polybench_cuda/: no inline assembly, so
# they keep the PCH's IR) for sm_75, sm_80, sm_90 and sm_90a (the CUDA
# conformance suite's processors but sm_80's two siblings), and the CUDA
# conformance units (CUB, Thrust, cooperative groups: inline assembly, no
# PCH) for sm_90a only, with the PCH only (the slowest units to parse,
# compiled as --no-pch compiles them), a
# unit whose IR made with the PCH names the prelude's inline assembly
# (made again without it); the HIP conformance units for one processor of
# each family the HIP conformance suite builds (gfx90a, gfx942, gfx1030,
# gfx1100, gfx1201), with the extended prelude (and with clang-22
# for gfx950), units with a #define first beside ones with the runtime
# first, and a planted runtime header whose extra definitions the probe
# catches (the plain prelude instead).  Groups of fewer than four units
# make none.  The direct-mode records are those of
# compiles without the PCH.  Then the runtime headers themselves change: a
# copied toolkit whose cuda_runtime.h a unit's IR depends on, edited
# between runs (same size, same mtime) gives the IR of the edited header,
# and a header changed right after clang made the PCH (clang refuses that
# PCH) is a PCH made again, never an error.  Dry runs (-n): clang runs,
# LLVM does not.  Last, the PCH as a record of the cache: a later run
# reads it, a touched or edited header or a corrupted PCH makes a new one,
# verify, gc, prune and clear handle it.
. "$SRCROOT/cmd/tests/lib.sh"

command -v clang-19 >/dev/null || skip "clang-19 is not installed: sources need it (scripts/setup installs it)"
command -v python3 >/dev/null || skip "python3 reads --json output"
CUDA=${CUDA_PATH:-/usr/local/cuda}
[ -f "$CUDA/include/cuda_runtime.h" ] || skip "no CUDA toolkit headers in $CUDA/include: CUDA sources need them"
export TMPDIR=$TEST_DIR/tmp
mkdir -p "$TMPDIR"

# with_pch NAME ARGS...: `compile -n --json ARGS` (the PCH where it
# applies), into NAME.with.json, and the units that read the PCH, one
# "UNIT TARGET" a line, into NAME.pch.
with_pch() {
	local name=$1; shift
	expect_exit 0 "$GPUCC" compile --no-cache -n --json "$@"
	cp out "$name.with.json"
	python3 - "$name" <<'PY' || fail "$name: a job did not miss (above)"
import json, sys
name = sys.argv[1]
with open(name + ".pch", "w") as f:
    for r in sorted(json.load(open(name + ".with.json"))["results"], key=lambda r: (r["module"], r["target"])):
        assert r["status"] == "miss", r
        if "prelude precompiled" in r["source"]:
            print(r["module"].rsplit("/", 1)[-1], r["target"], file=f)
PY
}

# same_as_without_pch NAME ARGS...: with_pch, then the same without the
# PCH; every (unit, target) has one key in both.
same_as_without_pch() {
	local name=$1; shift
	with_pch "$name" "$@"
	expect_exit 0 "$GPUCC" compile --no-cache -n --json --no-pch "$@"
	cp out "$name.without.json"
	python3 - "$name" <<'PY' || fail "$name: a unit's key differs with the precompiled prelude (above)"
import json, sys
name = sys.argv[1]
def results(path):
    out = {}
    for r in json.load(open(path))["results"]:
        assert r["status"] == "miss", r
        out[(r["module"].rsplit("/", 1)[-1], r["target"])] = (r["key"], r["source"])
    return out
w, wo = results(name + ".with.json"), results(name + ".without.json")
bad = False
if w.keys() != wo.keys():
    print("different jobs:", sorted(w), sorted(wo), file=sys.stderr)
    bad = True
for job in sorted(w):
    if job in wo and w[job][0] != wo[job][0]:
        print(f"{job}: {w[job][0]} with the PCH, {wo[job][0]} without", file=sys.stderr)
        bad = True
    if "prelude precompiled" in wo.get(job, ("", ""))[1]:
        print(f"{job}: --no-pch used a PCH: {wo[job][1]}", file=sys.stderr)
        bad = True
sys.exit(1 if bad else 0)
PY
}
pch_count() { wc -l < "$1.pch"; }

# ---- the IR with the PCH is the IR without it ------------------------------------
targets="-t sm_75 -t sm_80 -t sm_90 -t sm_90a"
# shellcheck disable=SC2086
same_as_without_pch polybench $targets "$TESTDATA"/polybench_cuda/*.cu "$TESTDATA"/conformance/cuda/kernels.cu
# Every one of them read the PCH: 5 units (the CUDA conformance suite's
# kernels.cu among them) x 4 targets.
[ "$(pch_count polybench)" = 20 ] || { cat polybench.pch >&2; fail "the PolyBench-like units did not all read the PCH"; }

with_pch conformance -t sm_90a "$TESTDATA"/conformance/cuda/*.cu "$TESTDATA"/polybench_cuda/*.cu
# Their CUB, Thrust and cooperative groups code is inline assembly, whose
# IR a PCH changes: they do not read it, though the other units of the
# run do (a group of five).  Compiled the way --no-pch compiles them, they
# are not run again with it (seconds of clang each): the keys of the units
# that read the PCH are held against --no-pch above, and rotate.cu below
# is inline assembly that a unit's text does not show, made again without
# the PCH and held against --no-pch.
[ "$(pch_count conformance)" = 5 ] || { cat conformance.pch >&2; fail "the units without inline assembly did not read the PCH"; }
for unit in cub_block thrust_device cooperative_groups; do
	! grep -q "^$unit.cu " conformance.pch || fail "$unit.cu kept IR made with the PCH"
done
# Inline assembly the unit's text does not show, from the prelude itself
# (clang's __funnelshift_l): IR made with the PCH, found to name srcloc,
# and made again without it.
cat > rotate.cu <<'CU'
__global__ void rotate(unsigned *out, unsigned s) { out[threadIdx.x] = __funnelshift_l(out[threadIdx.x], out[0], s); }
CU
same_as_without_pch rotate -t sm_80 rotate.cu "$TESTDATA"/polybench_cuda/*.cu
[ "$(pch_count rotate)" = 4 ] && ! grep -q "^rotate.cu " rotate.pch ||
	{ cat rotate.pch >&2; fail "rotate.cu kept IR made with the PCH, or a PolyBench-like unit read none"; }

# HIP: every conformance unit for a processor of each family the HIP
# conformance suite builds (cmd/tests/conformance_hip.sh; gfx1101 and
# gfx1200 are the same families as gfx1100 and gfx1201), with its
# options.  Each begins with `#include <hip/hip_runtime.h>`: the extended
# prelude, whose PCH holds that header too.  The PCH's unit redeclares the
# four definitions of HIP's wrapper and runtime header, which a PCH would
# otherwise have the unit emit in another order.
if [ -f /usr/include/hip/hip_runtime.h ]; then
	# runtime_first N: N small HIP units, runtime_firstI.hip, with the
	# runtime's include their first directive (after comments).
	runtime_first() {
		local i
		for i in $(seq "$1"); do
			cat > "runtime_first$i.hip" <<HIP
/* A kernel. */
// Its runtime first:
#include <hip/hip_runtime.h>
#include <cassert>
__global__ void checked$i(float *x) { assert(x); x[threadIdx.x] = $i.0f; }
HIP
		done
	}
	runtime_first 4
	hip_targets="-t gfx90a -t gfx942 -t gfx1030 -t gfx1100 -t gfx1201"
	# shellcheck disable=SC2086
	same_as_without_pch hip -std=c++17 --code-object 5 $hip_targets "$TESTDATA"/conformance/hip/*.hip \
		runtime_first1.hip
	[ "$(pch_count hip)" = 20 ] || { cat hip.pch >&2; fail "the HIP units did not all read the PCH"; }
	[ "$(grep -o 'prelude precompiled with hip/hip_runtime.h' hip.with.json | wc -l)" = 20 ] ||
		fail "the HIP units did not all read the extended prelude"
	# clang-22, for a target only LLVM 22 knows: the same cure holds.  The
	# unit clang-22 compiles with Debian's HIP headers (rocPRIM's and
	# rocRAND's half-precision code calls builtins clang 20 removed, as in
	# cmd/tests/conformance_llvm22.sh), with three small units: fewer than
	# four units make no PCH.
	if command -v clang-22 >/dev/null; then
		same_as_without_pch hip22 -std=c++17 --code-object 5 -t gfx950 \
			"$TESTDATA"/conformance/hip/kernels.hip runtime_first[123].hip
		[ "$(grep -o 'prelude precompiled with hip/hip_runtime.h' hip22.with.json | wc -l)" = 4 ] ||
			{ cat hip22.with.json >&2; fail "clang-22's HIP units did not all read the extended prelude"; }
	else
		skip_block "HIP with clang-22 (clang-22 is not installed)"
	fi
	# A unit with anything but comments before the include reads the plain
	# prelude, beside units that read the extended one.
	for i in 1 2 3 4; do
		cat > "define_first$i.hip" <<HIP
#define SCALE $i.0f
#include <hip/hip_runtime.h>
__global__ void scale$i(float *x) { x[threadIdx.x] *= SCALE; }
HIP
	done
	same_as_without_pch mixed -t gfx90a define_first[1-4].hip runtime_first[1-4].hip
	python3 - <<'PY' || fail "the units did not read the preludes their first lines ask for (above)"
import json
notes = {r["module"].rsplit("/", 1)[-1]: r["source"] for r in json.load(open("mixed.with.json"))["results"]}
assert len(notes) == 8, notes
for unit, note in notes.items():
    assert "prelude precompiled" in note, (unit, note)
    assert ("with hip/hip_runtime.h" in note) == unit.startswith("runtime_first"), (unit, note)
PY
	# A HIP whose runtime header defines more C functions every unit emits
	# (here in reverse name order, which a PCH would swap): the extended
	# prelude's probe finds its IR changed, and the units read the plain
	# prelude instead (the keys still those of compiles without a PCH).
	mkdir -p guard/hip
	cat > guard/hip/hip_runtime.h <<'H'
#pragma once
#include_next <hip/hip_runtime.h>
extern "C" {
__device__ __attribute__((weak)) void zz_defined_first(void) {}
__device__ __attribute__((weak)) void aa_defined_second(void) {}
}
H
	same_as_without_pch guard -t gfx90a -I guard runtime_first[1-4].hip
	[ "$(pch_count guard)" = 4 ] || fail "the guarded HIP units did not read the plain prelude"
	! grep -q 'with hip/hip_runtime.h' guard.with.json ||
		fail "a PCH whose probe changed its IR was used"
else
	skip_block "the HIP case (no HIP headers in /usr/include/hip)"
fi

# ---- the records are those of compiles without the PCH ------------------------
# (clang lists the PCH's headers before the unit): the same files and
# places, as a set.  Without the directories above the places and the
# counts, which include them: the working directory's stamp moved between
# the runs, and a directory changed within the clock's tick of clang's
# start is not listed (its places are, alone, before the others).
record_lines() { grep -v '^dir ' "$1" | sed 's/^\(entry [0-9a-f]*\) [0-9]*$/\1/' | sort; }
expect_exit 0 "$GPUCC" compile --cache records-with -t sm_80 "$TESTDATA"/polybench_cuda/*.cu --json
assert_grep "prelude precompiled" out
expect_exit 0 "$GPUCC" compile --cache records-without --no-pch -t sm_80 "$TESTDATA"/polybench_cuda/*.cu
records=$(cd records-with/v1/sources && find . -name '*.record' | sort)
[ "$(echo "$records" | wc -l)" = 4 ] || fail "expected 4 records, got: $records"
# same_records WITH WITHOUT: the caches' source records, as sets.
same_records() {
	local r
	for r in $(cd "$1/v1/sources" && find . -name '*.record' | sort); do
		[ -f "$2/v1/sources/$r" ] || fail "no record $r without the PCH"
		record_lines "$1/v1/sources/$r" > with.record
		record_lines "$2/v1/sources/$r" > without.record
		assert_same with.record without.record
	done
}
same_records records-with records-without
# HIP's extended prelude: the runtime's headers, read from the PCH, are
# listed as a compile without it lists them.
if [ -f /usr/include/hip/hip_runtime.h ]; then
	expect_exit 0 "$GPUCC" compile --cache hip-records-with -t gfx90a runtime_first[1-4].hip --json
	assert_grep "prelude precompiled with hip/hip_runtime.h" out
	expect_exit 0 "$GPUCC" compile --cache hip-records-without --no-pch -t gfx90a runtime_first[1-4].hip
	[ "$(find hip-records-with/v1/sources -name '*.record' | wc -l)" = 4 ] || fail "expected 4 HIP records"
	same_records hip-records-with hip-records-without
	# (A header the PCH holds, listed with its digest: read, not a place
	# found empty.)
	grep -v '^0\{64\} ' "$(find hip-records-with/v1/sources -name '*.record' | head -1)" |
		grep -q '/hip/amd_detail/amd_device_functions.h$' ||
		fail "the HIP record does not list a runtime header the PCH read"
else
	skip_block "HIP's records with the extended prelude (no HIP headers in /usr/include/hip)"
fi

# ---- a changed runtime header --------------------------------------------------
# A toolkit of links to the real one but for include/cuda_runtime.h, a
# copy ending in a macro the unit's IR shows.
mkdir -p toolkit/include
for f in "$CUDA"/*; do [ "${f##*/}" = include ] || ln -s "$f" toolkit/; done
for f in "$CUDA"/include/*; do [ "${f##*/}" = cuda_runtime.h ] || ln -s "$f" toolkit/include/; done
cp "$CUDA/include/cuda_runtime.h" toolkit/include/cuda_runtime.h
printf '\n#define GPUCC_PCH_PROBE 1.5f\n' >> toolkit/include/cuda_runtime.h
touch -r "$CUDA/include/cuda_runtime.h" toolkit/include/cuda_runtime.h
cat > probe.cu <<'CU'
__global__ void probe(float *out) { *out = GPUCC_PCH_PROBE; }
CU
# Three more units: a run makes a PCH only for a prelude four units share.
for i in 1 2 3; do
	echo "__global__ void partner$i(float *out) { *out = $i.0f; }" > "partner$i.cu"
done
CUDA_PATH=$TEST_DIR/toolkit same_as_without_pch before -t sm_80 probe.cu partner[123].cu
[ "$(pch_count before)" = 4 ] || fail "probe.cu did not read the PCH"
# The same size and modification time: only the bytes differ.
sed -i 's/GPUCC_PCH_PROBE 1.5f/GPUCC_PCH_PROBE 2.5f/' toolkit/include/cuda_runtime.h
touch -r "$CUDA/include/cuda_runtime.h" toolkit/include/cuda_runtime.h
CUDA_PATH=$TEST_DIR/toolkit same_as_without_pch after -t sm_80 probe.cu partner[123].cu
[ "$(pch_count after)" = 4 ] || fail "probe.cu did not read the PCH after the header changed"
python3 - <<'PY' || fail "the edited runtime header gave the key of the old one"
import json
key = lambda run: {r["module"]: r["key"] for r in json.load(open(run + ".with.json"))["results"]}
a, b = key("before"), key("after")
assert a["probe.cu"] != b["probe.cu"] and a["partner1.cu"] == b["partner1.cu"], (a, b)
PY

# A prelude fewer than four units of the run share gets no PCH: with its
# probe, it would cost more parses of the prelude than it saves.
same_as_without_pch alone -t sm_80 probe.cu -DGPUCC_PCH_PROBE=1.0f
[ "$(pch_count alone)" = 0 ] || fail "a run of one unit made a PCH"
same_as_without_pch three -t sm_80 probe.cu partner[12].cu -DGPUCC_PCH_PROBE=1.0f
[ "$(pch_count three)" = 0 ] || fail "a run of three units made a PCH"


# ---- a PCH clang refuses is made again ----------------------------------------------
# A clang that, right after it first makes a PCH, changes a header the PCH
# read (a comment: the IR stays): the unit compiled with that PCH fails
# ("has been modified since the precompiled header was built"), compiles
# again without it, and the next unit makes and reads a new PCH.
cat > clang-touching <<EOF
#!/bin/sh
case "\$*" in
*-emit-pch*)
	clang-19 "\$@" || exit
	echo pch >> "$TEST_DIR/pch-runs"
	if [ ! -e "$TEST_DIR/touched" ]; then
		: > "$TEST_DIR/touched"
		echo '/* changed */' >> "$TEST_DIR/toolkit/include/cuda_runtime.h"
	fi
	exit 0 ;;
esac
exec clang-19 "\$@"
EOF
chmod +x clang-touching
: > pch-runs
CUDA_PATH=$TEST_DIR/toolkit expect_exit 0 "$GPUCC" compile --no-cache -n --json -j1 --clang "$TEST_DIR/clang-touching" \
	-t sm_80 "$TESTDATA"/polybench_cuda/*.cu
cp out refused.with.json
[ "$(wc -l < pch-runs)" = 2 ] || fail "expected the PCH made twice (once refused), got $(wc -l < pch-runs)"
CUDA_PATH=$TEST_DIR/toolkit expect_exit 0 "$GPUCC" compile --no-cache -n --json --no-pch -t sm_80 "$TESTDATA"/polybench_cuda/*.cu
cp out refused.without.json
python3 - <<'PY' || fail "after a refused PCH (above)"
import json
w = {r["module"]: r for r in json.load(open("refused.with.json"))["results"]}
wo = {r["module"]: r for r in json.load(open("refused.without.json"))["results"]}
assert {m: r["key"] for m, r in w.items()} == {m: r["key"] for m, r in wo.items()}, (w, wo)
used = sorted("prelude precompiled" in r["source"] for r in w.values())
# The first unit's PCH was refused; the other three read the new one.
assert used == [False, True, True, True], [r["source"] for r in w.values()]
PY

# ---- the PCH as a record of the cache -----------------------------------------------
# A run with a cache stores its PCH there (v1/pch/); a later run (another
# process) whose units miss reads it instead of making one, and their IR
# is still the IR without it.  Each run compiles fresh copies of the
# PolyBench-like units (a comment apart), so that clang runs for them.
cat > clang-pch-counting <<EOF2
#!/bin/sh
case "\$*" in *-emit-pch*) echo pch >> "$TEST_DIR/pch-made" ;; esac
exec clang-19 "\$@"
EOF2
chmod +x clang-pch-counting
fresh_units() {
	rm -rf "units-$1"; mkdir "units-$1"
	for f in "$TESTDATA"/polybench_cuda/*.cu; do
		{ echo "// $1"; cat "$f"; } > "units-$1/${f##*/}"
	done
}
# cached_run NAME [ENV...]: compile fresh units NAME with the cache
# pch-cache and with --no-pch (no cache); the keys must agree; the
# number of PCHs clang made into made.
cached_run() {
	local name=$1; shift
	fresh_units "$name"
	: > pch-made
	env "$@" "$GPUCC" compile --cache pch-cache --clang "$TEST_DIR/clang-pch-counting" -j1 -t sm_80 \
		-o "$name.img" --json "units-$name"/*.cu > "$name.with.json" 2> "$name.err" ||
		{ cat "$name.err" >&2; fail "$name: the compile with the cache failed"; }
	made=$(wc -l < pch-made)
	env "$@" "$GPUCC" compile --no-cache -n --no-pch -t sm_80 --json "units-$name"/*.cu \
		> "$name.without.json" || fail "$name: the compile without the PCH failed"
	python3 - "$name" <<'PY' || fail "$1: a key differs with the cached PCH (above)"
import json, sys
name = sys.argv[1]
def keys(path):
    return {(r["module"], r["target"]): r["key"] for r in json.load(open(path))["results"]}
w, wo = keys(name + ".with.json"), keys(name + ".without.json")
assert w == wo and len(w) == 4, (w, wo)
PY
}
prelude() { find pch-cache/v1/pch -name "*.$1" | sort; }

cached_run first
[ "$made" = 1 ] || fail "the first run made $made PCHs, expected 1"
[ "$(prelude pch | wc -l)" = 1 ] && [ "$(prelude prelude | wc -l)" = 1 ] ||
	fail "no prelude stored: $(find pch-cache/v1/pch)"
assert_grep "^gpucc-prelude 2$" "$(prelude prelude)"
assert_grep "__clang_cuda_runtime_wrapper.h$" "$(prelude prelude)"
cached_run second
[ "$made" = 0 ] || fail "the second run made $made PCHs instead of reading the cache's"
assert_grep "prelude precompiled" second.with.json
# Their records are written: the files of the PCH's making (its unit, the
# CUDA stubs) lie in the temporary directory of the run that made it, gone,
# and are named where this run has them,
assert_no_grep "not recorded" second.with.json
# and they are the records of compiles without a PCH (clang lists the
# PCH's making's files where they were: the run that made it).
expect_exit 0 "$GPUCC" compile --cache second-nopch --no-pch -t sm_80 -o second-nopch.img units-second/*.cu
# (As sets, as above: the directories' stamps moved between the runs.)
for r in $(cd second-nopch/v1/sources && find . -name '*.record'); do
	[ -f "pch-cache/v1/sources/$r" ] || fail "no record $r with the cache's PCH"
	record_lines "pch-cache/v1/sources/$r" | sed 's/gpucc-backend-[^/]*/TMP/' > with.record
	record_lines "second-nopch/v1/sources/$r" | sed 's/gpucc-backend-[^/]*/TMP/' > without.record
	assert_same with.record without.record
done
# A unit alone in its target makes no PCH, but reads the cache's.
fresh_units lone
: > pch-made
expect_exit 0 "$GPUCC" compile --cache pch-cache --clang "$TEST_DIR/clang-pch-counting" -t sm_80 \
	-o lone.img --json units-lone/gemm.cu
[ "$(wc -l < pch-made)" = 0 ] || fail "a lone unit made a PCH"
assert_grep "prelude precompiled" out

# A toolkit header touched (another mtime, the same bytes): clang refuses
# the cache's PCH, the unit compiles without it, and the next unit makes a
# new one, stored in its place (-j1: which unit reads which PCH is then
# fixed); edited (the same size and mtime, other bytes): the record's
# digests no longer hold, and a new one is made.
cached_run toolkit CUDA_PATH="$TEST_DIR/toolkit"
[ "$made" = 1 ] || fail "the copied toolkit's first run made $made PCHs, expected 1"
record=$(grep -l "toolkit/include/cuda_runtime.h" $(prelude prelude))
cp "${record%.prelude}.pch" toolkit.pch
touch -d '-1 hour' toolkit/include/cuda_runtime.h
cached_run touched CUDA_PATH="$TEST_DIR/toolkit"
[ "$made" = 1 ] || fail "after a header was touched, $made PCHs were made, expected 1"
! cmp -s toolkit.pch "${record%.prelude}.pch" || fail "the refused PCH was not replaced"
cached_run touched-again CUDA_PATH="$TEST_DIR/toolkit"
[ "$made" = 0 ] || fail "the PCH made after the touch was not reused ($made made)"
cp -p toolkit/include/cuda_runtime.h runtime.orig
sed -i 's/GPUCC_PCH_PROBE 2.5f/GPUCC_PCH_PROBE 3.5f/' toolkit/include/cuda_runtime.h
touch -r runtime.orig toolkit/include/cuda_runtime.h
cached_run edited CUDA_PATH="$TEST_DIR/toolkit"
[ "$made" = 1 ] || fail "after a header was edited, $made PCHs were made, expected 1"

# A stored PCH corrupted (the same size and mtime): verify reports it, and
# the next run makes a new one instead of using it, without an error.
pch=$(prelude pch | head -n 1)
for p in $(prelude pch); do grep -q toolkit "${p%.pch}.prelude" || pch=$p; done
cp -p "$pch" pch.orig
printf 'XXXXXXXX' | dd of="$pch" bs=1 seek=4096 conv=notrunc 2>/dev/null
touch -r pch.orig "$pch"
expect_exit 3 "$GPUCC" cache verify --cache pch-cache
assert_grep "precompiled prelude '.*\.pch' is damaged: its SHA-256 is not the one its record holds" err
cached_run corrupted
[ "$made" = 1 ] || fail "a corrupted PCH: $made PCHs made, expected 1"
expect_exit 0 "$GPUCC" cache verify --cache pch-cache

# gc evicts preludes with entries, least recently used first: one unused
# since before every entry was used goes first; clear removes them all.
old=$(grep -l "toolkit/include" $(prelude prelude))
touch -d '-2 days' "$old"
bytes=$(find pch-cache/v1 -path '*/sources' -prune -o -type f \( -name '*.gpucc' -o -path '*/pch/*' \) -printf '%s\n' |
	awk '{ s += $1 } END { print s }')
expect_exit 0 "$GPUCC" cache gc --cache pch-cache --max-size $((bytes - 1))
assert_no_file "$old"
assert_no_file "${old%.prelude}.pch"
[ "$(prelude prelude | wc -l)" = 1 ] || fail "gc removed a prelude used more recently than the oldest"

# prune removes a prelude that can never be read again: here, one not used
# for longer than --older-than (a dry run removes nothing).
kept=$(prelude prelude)
cp -p "$kept" "${kept%.prelude}.pch" .
touch -d '-3 days' "$kept"
expect_exit 0 "$GPUCC" cache prune -n --cache pch-cache --older-than 2d
assert_file "$kept"
expect_exit 0 "$GPUCC" cache prune --cache pch-cache --older-than 2d
assert_no_file "$kept"
assert_no_file "${kept%.prelude}.pch"
# clear removes every prelude.
stem=${kept##*/}; stem=${stem%.prelude}
mkdir -p "${kept%/*}" && cp -p "$stem.prelude" "$stem.pch" "${kept%/*}/"
expect_exit 0 "$GPUCC" cache clear --cache pch-cache
[ -z "$(find pch-cache/v1/pch -type f)" ] || fail "clear left preludes: $(find pch-cache/v1/pch -type f)"
