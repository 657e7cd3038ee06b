# cmd/tests/compile_source_units.sh -- what a run says of its source units
# (clang-19 run by gpucc):
#   - a unit of host code only (no kernel: clang's own build of it has no
#     device code) is a warning naming it, and adds nothing; the run's other
#     units compile, exit 0; a run in which no unit has a kernel fails, one
#     line, exit 5;
#   - clang's warnings are written once per unit, as clang wrote them, and
#     never cut without saying so; a failure before clang's IR names the
#     target as far as it is known (sm_75, not the default sm_75:ptx63);
#   - a hit replays the warnings of the compile that made its entry, clang's
#     included, as a ccache hit replays the compiler's stderr.
. "$SRCROOT/cmd/tests/lib.sh"

need_hip_sources
CUDA=${CUDA_PATH:-/usr/local/cuda}
cuda=
[ -f "$CUDA/include/cuda_runtime.h" ] && cuda=1

# --- units of host code only ------------------------------------------------
cat >host.hip <<'EOF'
#include <hip/hip_runtime.h>
int twice(int x) { return 2 * x; }
EOF
cat >kern.hip <<'EOF'
#include <hip/hip_runtime.h>
__global__ void fill(int *p) { p[threadIdx.x] = 1; }
EOF
cat >host.cu <<'EOF'
int twice(int x) { return 2 * x; }
EOF
cat >kern.cu <<'EOF'
__global__ void fill(int *p) { p[threadIdx.x] = 1; }
EOF

expect_exit 0 "$GPUCC" compile --no-cache --json -o units.img host.hip kern.hip -t gfx90a -t gfx1030
[ "$(grep -c "warning: host.hip: gfx[0-9a-z]*: the source defines no kernel (host code only): it adds nothing" err)" -eq 2 ] ||
	fail "expected one warning per target for host.hip: $(cat err)"
assert_no_grep "kern.hip" err
python3 - out <<'PY' || fail "--json: $(cat out)"
import json, sys
d = json.load(open(sys.argv[1]))
by = {}
for r in d["results"]:
    by.setdefault(r["module"].rsplit("/", 1)[-1], []).append(r["status"])
assert by == {"host.hip": ["skipped", "skipped"], "kern.hip": ["compiled", "compiled"]}, by
PY
expect_exit 0 "$GPUCC" list --json units.img
python3 - out <<'PY' || fail "the image: $(cat out)"
import json, sys
d = json.load(open(sys.argv[1]))
entries = d["entries"] if isinstance(d, dict) else d
assert len(entries) == 2, entries
assert all("kern.hip" in e["module"] for e in entries), entries
PY

# Alone, a unit without kernels gives nothing: an error, one line.
expect_exit 5 "$GPUCC" compile --no-cache host.hip -t gfx90a
assert_one_line err
assert_grep "^gpucc compile: error: host.hip: gfx90a: no kernels: the source defines none (host code only), and no other unit of the run does$" err

# CUDA alike (gpucc gives clang the toolkit's path, so it needs one).
if [ -n "$cuda" ]; then
	expect_exit 0 "$GPUCC" compile --no-cache host.cu kern.cu -t sm_75
	assert_one_line err
	assert_grep "^gpucc compile: warning: host.cu: sm_75: the source defines no kernel (host code only): it adds nothing$" err
	expect_exit 5 "$GPUCC" compile --no-cache host.cu -t sm_75
	assert_one_line err
	assert_grep "^gpucc compile: error: host.cu: sm_75: no kernels: " err
else
	skip_block "CUDA units of host code only: no CUDA toolkit in '$CUDA'"
fi
# A module of IR without kernels stays an error, whatever else the run holds.
printf 'target triple = "amdgcn-amd-amdhsa"\ndefine void @f() {\n  ret void\n}\n' >nokernel.ll
expect_exit 5 "$GPUCC" compile --no-cache nokernel.ll kern.hip -t gfx90a
assert_grep "^gpucc compile: error: nokernel.ll: gfx90a: no kernels: the module defines no amdgpu_kernel function$" err
[ -z "$(ls "$TMPDIR")" ] || fail "left $(ls "$TMPDIR") in TMPDIR"

# --- clang's words --------------------------------------------------------------
# clang's warnings, alike for every target, are written once per unit, as
# clang wrote them, without its per-target count.
cat >warn.hip <<'HIP'
#include <hip/hip_runtime.h>
#warning "check the tile size"
__global__ void fill(int *p) { p[threadIdx.x] = 1; }
HIP
expect_exit 0 "$GPUCC" compile --no-cache warn.hip -t gfx90a -t gfx1030 -t gfx1100
[ "$(grep -c 'warn.hip:2:2: warning: "check the tile size"' err)" -eq 1 ] ||
	fail "clang's warning not written once: $(cat err)"
assert_no_grep "generated when compiling for" err
# Many warnings are never cut silently: what is left out is counted.
python3 -c 'print("#include <hip/hip_runtime.h>"); [print("#warning \"w%d\"" % i) for i in range(300)]; print("__global__ void fill(int *p) { p[0] = 1; }")' >many.hip
expect_exit 0 "$GPUCC" compile --no-cache many.hip -t gfx90a
assert_grep "warning: \"w0\"" err
assert_grep "([0-9]* more lines of clang's not shown)" err

# A failure before clang's IR names the target as far as it is known: an
# NVIDIA target without a PTX ISA is the processor alone (the PTX ISA is the
# one clang's IR asks for), not the target's default ISA.
cat >broken.cu <<'CU'
__global__ void fill(int *p) { p[0] = undefined_name; }
CU
if [ -n "$cuda" ]; then
	expect_exit 5 "$GPUCC" compile --no-cache broken.cu -t sm_75 -t sm_90:ptx80
	assert_grep "^gpucc compile: error: broken.cu: sm_75: clang-19: broken.cu:1:[0-9]*: error: use of undeclared identifier 'undefined_name'$" err
	assert_grep "^gpucc compile: error: broken.cu: sm_90:ptx80: clang-19: " err
	assert_no_grep "sm_75:ptx" err
else
	skip_block "CUDA sources: no CUDA toolkit in '$CUDA'"
fi

# --- a hit replays what its compile said -------------------------------------
# As a ccache hit replays the compiler's stderr: the second run hits (its
# record: clang does not run) and writes clang's warning all the same, once.
expect_exit 0 "$GPUCC" compile --cache cache warn.hip -t gfx90a -t gfx1030
cp err first.err
expect_exit 0 "$GPUCC" compile --cache cache warn.hip -t gfx90a -t gfx1030 --json
python3 - out <<'PY' || fail "the second run: $(cat out)"
import json, sys
d = json.load(open(sys.argv[1]))
assert [r["status"] for r in d["results"]] == ["hit", "hit"], d["results"]
assert all(r["source"].startswith("hit: ") for r in d["results"]), d["results"]
assert all('warning: "check the tile size"' in r["warnings"] for r in d["results"]), d["results"]
PY
expect_exit 0 "$GPUCC" compile --cache cache warn.hip -t gfx90a -t gfx1030
assert_same first.err err
# The warnings live beside their entries and go with them.
[ "$(find cache/v1 -name '*.warnings' | wc -l)" -eq 2 ] || fail "expected one warnings file per entry"
expect_exit 0 "$GPUCC" cache clear --cache cache
[ -z "$(find cache/v1 -name '*.warnings')" ] || fail "cache clear left warnings behind"
# A unit without warnings stores none.
expect_exit 0 "$GPUCC" compile --cache cache kern.hip -t gfx90a
[ -z "$(find cache/v1 -name '*.warnings')" ] || fail "a compile without warnings stored some"
