# cmd/tests/compile_source_units.sh -- what a run says of its source units
# (clang-19 run by gpucc):
#   - a unit of host code only (no kernel: clang's own build of it has no
#     device code) is a warning naming it, and adds nothing; the run's other
#     units compile, exit 0; a run in which no unit has a kernel fails, one
#     line, exit 5.
. "$SRCROOT/cmd/tests/lib.sh"

command -v clang-19 >/dev/null || skip "clang-19 is not installed: sources need it"
command -v ld.lld-19 >/dev/null || skip "ld.lld-19 is not installed (lld-19)"
[ -f /usr/include/hip/hip_runtime.h ] || skip "HIP headers are not installed (libamdhip64-dev)"
[ -f /usr/lib/x86_64-linux-gnu/amdgcn/bitcode/ocml.bc ] ||
	skip "the ROCm device libraries are not installed (rocm-device-libs)"
export TMPDIR=$TEST_DIR/tmp
mkdir -p "$TMPDIR"

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

# CUDA alike (no toolkit needed: neither unit includes anything).
expect_exit 0 "$GPUCC" compile --no-cache host.cu kern.cu -t sm_75
assert_one_line err
assert_grep "^gpucc compile: warning: host.cu: sm_75[:a-z0-9]*: the source defines no kernel (host code only): it adds nothing$" err
expect_exit 5 "$GPUCC" compile --no-cache host.cu -t sm_75
assert_one_line err
assert_grep "^gpucc compile: error: host.cu: sm_75[:a-z0-9]*: no kernels: " err
# A module of IR without kernels stays an error, whatever else the run holds.
printf 'target triple = "amdgcn-amd-amdhsa"\ndefine void @f() {\n  ret void\n}\n' >nokernel.ll
expect_exit 5 "$GPUCC" compile --no-cache nokernel.ll kern.hip -t gfx90a
assert_grep "^gpucc compile: error: nokernel.ll: gfx90a: no kernels: the module defines no amdgpu_kernel function$" err
[ -z "$(ls "$TMPDIR")" ] || fail "left $(ls "$TMPDIR") in TMPDIR"
