# cmd/tests/compile_llvm_backends.sh -- one backend per LLVM major, chosen
# per job.  IR that clang-19 and clang-22 make in the test from small CUDA
# and HIP sources: clang-22's bitcode (which LLVM 19 cannot read) goes to
# LLVM 22 by default and is refused, one line naming its producer, where
# only LLVM 19 may compile it; sm_100 and sm_120 give cubins (CUDA 13's
# ptxas or libnvJitLink), gfx950 and gfx942 code objects; --llvm 19 pins
# LLVM 19 (its entries say so, and their keys differ); one image holds
# LLVM 19 entries beside LLVM 22 ones, and devices --image picks from it;
# a run whose every key hits loads no LLVM.  Skipped, saying why, without
# LLVM 22's backend or clang-22; the LLVM 19 parts without LLVM 19's.
. "$SRCROOT/cmd/tests/lib.sh"

command -v python3 >/dev/null || fail "python3 is needed to read --json output"
command -v llvm-config-22 >/dev/null || skip "LLVM 22 is not installed (llvm-22-dev)"
command -v clang-22 >/dev/null || skip "clang-22 is not installed"
config=$BUILDDIR/gpucc_build_config.h
if grep -q "GPUCC_BUILD_LLVM_BACKENDS" "$config" && ! grep -q "GPUCC_BUILD_LLVM_BACKENDS.*{22," "$config"; then
	skip "this build has no LLVM 22 backend (meson option llvm_majors)"
fi
has_llvm 22 || fail "LLVM 22 is installed, but gpucc --version lists no backend of it"
"$GPUCC" --version >version.txt
assert_grep "^  LLVM 22\.[0-9.]*$" version.txt
# compile -h lists the backends and what each knows.
expect_exit 0 "$GPUCC" compile -h
assert_grep "^  LLVM 22\.[0-9.]*$" out
awk '/^  LLVM 22/ { on = 1 } on' out >llvm22.txt
for p in sm_100 sm_100a sm_100f sm_103 sm_110 sm_120f sm_121 gfx950 gfx1153 gfx1250 gfx1251; do
	grep -q " $p\( \|$\)" llvm22.txt || fail "compile -h: LLVM 22 does not list $p"
done

entry_llvm() { # IMAGE TARGET-PREFIX: the LLVM version of its entry for that target
	"$GPUCC" list --json "$1" | python3 -c '
import json, subprocess, sys
keys = [e["key"] for e in json.load(sys.stdin) if e["target"].split(":")[0] == sys.argv[2]]
assert len(keys) == 1, keys
show = subprocess.run([sys.argv[3], "show", "--json", sys.argv[1], keys[0]], capture_output=True,
                      text=True, check=True).stdout
print(json.loads(show)["llvm_version"])' "$1" "$2" "$GPUCC"
}

# ---- CUDA: clang-22's IR, per processor ------------------------------------------------
cat >scale.cu <<'EOF'
extern "C" __attribute__((global)) void scale(float *x, float a, int n)
{
	int i = __nvvm_read_ptx_sreg_ctaid_x() * __nvvm_read_ptx_sreg_ntid_x() +
	        __nvvm_read_ptx_sreg_tid_x();
	if (i < n)
		x[i] *= a;
}
EOF
for sm in 90 100 120; do
	clang-22 -x cuda --cuda-device-only --cuda-gpu-arch=sm_$sm -nocudalib -nocudainc -O2 \
		-Wno-unknown-cuda-version -emit-llvm -c scale.cu -o cu22_$sm.bc 2>clang.err ||
		fail "clang-22 -x cuda sm_$sm: $(cat clang.err)"
done
# The producer is read without LLVM; default: the newest backend that reads it.
expect_exit 0 "$GPUCC" compile --no-cache cu22_90.bc -t sm_90 -o cu90.gpucc
case $(entry_llvm cu90.gpucc sm_90) in 22.*) ;; *) fail "clang-22's sm_90 bitcode was not compiled by LLVM 22" ;; esac
# Never converted down: pinned to LLVM 19, one line naming the producer.
if has_llvm 19; then
	expect_exit 3 "$GPUCC" compile --no-cache --llvm 19 cu22_90.bc -t sm_90
	assert_one_line err
	assert_grep "^gpucc compile: error: cu22_90.bc: sm_90:ptx[0-9]*: the module, bitcode written by 'LLVM22\.[0-9.]*', needs LLVM 22 or later, and LLVM 19 was asked for$" err
	# A module newer than every backend present: LLVM 19's alone.
	GPUCC_BACKEND=$BUILDDIR/lib/backend_llvm/libgpucc-llvm19.so \
		expect_exit 3 "$GPUCC" compile --no-cache cu22_90.bc -t sm_90
	assert_one_line err
	assert_grep "the module, bitcode written by 'LLVM22\.[0-9.]*', needs LLVM 22 or later, and this gpucc has LLVM 19 " err
	# A target no backend present knows: one line saying which LLVM it needs.
	GPUCC_BACKEND=$BUILDDIR/lib/backend_llvm/libgpucc-llvm19.so \
		expect_exit 3 "$GPUCC" compile --no-cache cu22_100.bc -t sm_100
	assert_one_line err
	assert_grep "^gpucc compile: 'sm_100' needs LLVM 20 or later, and this gpucc has LLVM 19 " err
	expect_exit 3 "$GPUCC" compile --no-cache --llvm 19 cu22_100.bc -t sm_120
	assert_grep "^gpucc compile: 'sm_120' needs LLVM 20 or later, and LLVM 19 was asked for$" err
fi
expect_exit 3 "$GPUCC" compile --no-cache --llvm 21 cu22_90.bc -t sm_90
assert_grep "^gpucc compile: LLVM 21 was asked for, and this gpucc has .*LLVM 22$" err
expect_exit 129 "$GPUCC" compile --no-cache --llvm x cu22_90.bc -t sm_90
assert_grep "bad LLVM major 'x'" err

# Blackwell: cubins for sm_100 and sm_120, each module for its processor.
expect_exit 0 "$GPUCC" compile --no-cache cu22_100.bc cu22_120.bc -t sm_100 -t sm_120 -o bw.gpucc --json
python3 - out <<'PY' || fail "sm_100/sm_120: $(cat out)"
import json, sys
d = json.load(open(sys.argv[1]))
done = sorted(r["target"] for r in d["results"] if r["status"] == "compiled")
assert done == ["sm_100:ptx88", "sm_120:ptx88"] or done == ["sm_100:ptx86", "sm_120:ptx87"], d
PY
PTXAS=${CUDA_PATH:-/usr/local/cuda}/bin/ptxas
if [ -x "$PTXAS" ]; then
	"$GPUCC" list bw.gpucc >list.txt
	for sm in 100 120; do
		grep -q "sm_$sm:ptx[0-9]*  *ptx:[0-9]* cubin:[0-9]*  *scale$" list.txt ||
			fail "no cubin for sm_$sm: $(cat list.txt)"
	done
else
	skip_block "cubins of both LLVMs (no ptxas at $PTXAS)"
fi

# ---- HIP: clang-22's IR for gfx950 and gfx942 --------------------------------------------
cat >axpy.hip <<'EOF'
extern "C" __attribute__((global)) void axpy(float *y, const float *x, float a, int n)
{
	int i = __builtin_amdgcn_workgroup_id_x() * 256 + __builtin_amdgcn_workitem_id_x();
	if (i < n)
		y[i] += a * x[i];
}
EOF
for gfx in gfx950 gfx942; do
	clang-22 -x hip --cuda-device-only --offload-arch=$gfx -nogpulib -nogpuinc -O2 \
		-emit-llvm -c axpy.hip -o hip22_$gfx.bc 2>clang.err ||
		fail "clang-22 -x hip $gfx: $(cat clang.err)"
done
expect_exit 0 "$GPUCC" compile --no-cache hip22_gfx950.bc hip22_gfx942.bc -t gfx950 -t gfx942 -o mi.gpucc --json
python3 - out <<'PY' || fail "gfx950/gfx942: $(cat out)"
import json, sys
d = json.load(open(sys.argv[1]))
done = sorted(r["target"] for r in d["results"] if r["status"] == "compiled")
assert done == ["gfx942", "gfx950"], d
PY
"$GPUCC" list mi.gpucc >list.txt
for gfx in gfx950 gfx942; do
	grep -q "$gfx  *hsaco:[0-9]*  *axpy$" list.txt || fail "no code object for $gfx: $(cat list.txt)"
done
if have llvm-readelf-22 "the gfx950 and gfx942 code objects' ELF headers"; then
	key=$("$GPUCC" list --json mi.gpucc | python3 -c '
import json, sys
print([e["key"] for e in json.load(sys.stdin) if e["target"] == "gfx950"][0])')
	"$GPUCC" cat mi.gpucc "$key" --part hsaco >gfx950.hsaco
	llvm-readelf-22 --notes gfx950.hsaco >notes.txt
	assert_grep "amdgcn-amd-amdhsa--gfx950" notes.txt
	assert_grep "\.name: *axpy$" notes.txt
fi

# ---- Sources for the new processors: clang-22 runs for them ------------------------------
CUDA_DIR=${CUDA_PATH:-/usr/local/cuda}
if [ -f "$CUDA_DIR/include/cuda_runtime.h" ]; then
	cat >src.cu <<'EOF'
#include <cuda_runtime.h>
__global__ void twice(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] *= 2.0f;
}
EOF
	expect_exit 0 "$GPUCC" compile --cache src src.cu -t sm_100 -t sm_120 -o srccu.gpucc --json
	python3 - out <<'PY' || fail "CUDA source for sm_100, sm_120: $(cat out)"
import json, sys
d = json.load(open(sys.argv[1]))
assert sorted(r["target"].split(":")[0] for r in d["results"] if r["status"] == "compiled") == \
    ["sm_100", "sm_120"], d
PY
	for sm in 100 120; do
		case $(entry_llvm srccu.gpucc sm_$sm) in 22.*) ;; *) fail "sm_$sm from source: not LLVM 22's" ;; esac
	done
	if [ -x "$PTXAS" ]; then
		"$GPUCC" list srccu.gpucc >list.txt
		[ "$(grep -c " cubin:[0-9]*  *_Z5twicePfi$" list.txt)" -eq 2 ] || fail "source cubins: $(cat list.txt)"
	fi
	# Again: the records lead to the entries, no clang and no LLVM run.
	expect_exit 0 "$GPUCC" compile --cache src src.cu -t sm_100 -t sm_120 --json
	assert_grep '"hits":2,.*"llvm_loaded":false' out
else
	skip_block "CUDA sources on both LLVMs (no CUDA toolkit headers in $CUDA_DIR)"
fi
if [ -f /usr/include/hip/hip_runtime.h ]; then
	cat >src.hip <<'EOF'
#include <hip/hip_runtime.h>
__global__ void twice(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] *= 2.0f;
	__syncthreads();
}
EOF
	expect_exit 0 "$GPUCC" compile --cache src src.hip -t gfx950 -t gfx942 -t gfx1250 -o srchip.gpucc --json
	python3 - out <<'PY' || fail "HIP source for gfx950, gfx942, gfx1250: $(cat out)"
import json, sys
d = json.load(open(sys.argv[1]))
assert sorted(r["target"] for r in d["results"] if r["status"] == "compiled") == \
    ["gfx1250", "gfx942", "gfx950"], d
PY
	"$GPUCC" list srchip.gpucc >list.txt
	[ "$(grep -c " hsaco:[0-9]*  *_Z5twicePfi$" list.txt)" -eq 3 ] || fail "source code objects: $(cat list.txt)"
else
	skip_block "HIP sources on both LLVMs (no HIP headers: libamdhip64-dev)"
fi

# ---- LLVM 19 beside LLVM 22 ------------------------------------------------------------
has_llvm 19 || { skip_block "mixed images of LLVM 19 and 22 (no LLVM 19 backend)"; exit 0; }
have clang-19 "mixed images of LLVM 19 and 22" || exit 0
clang-19 -x cuda --cuda-device-only --cuda-gpu-arch=sm_80 -nocudalib -nocudainc -O2 \
	-Wno-unknown-cuda-version -emit-llvm -c scale.cu -o cu19_80.bc 2>clang.err ||
	fail "clang-19 -x cuda: $(cat clang.err)"
clang-19 -x hip --cuda-device-only --offload-arch=gfx90a -nogpulib -nogpuinc -O2 \
	-emit-llvm -c axpy.hip -o hip19_gfx90a.bc 2>clang.err || fail "clang-19 -x hip: $(cat clang.err)"
expect_exit 0 "$GPUCC" compile --cache c --llvm 19 cu19_80.bc hip19_gfx90a.bc -t sm_80 -t gfx90a -o old.gpucc
expect_exit 0 "$GPUCC" compile --cache c cu22_100.bc hip22_gfx950.bc -t sm_100 -t gfx950 -o new.gpucc
expect_exit 0 "$GPUCC" merge old.gpucc new.gpucc -o both.gpucc
for t in sm_80 gfx90a; do
	case $(entry_llvm both.gpucc $t) in 19.*) ;; *) fail "$t: not LLVM 19's entry" ;; esac
done
for t in sm_100 gfx950; do
	case $(entry_llvm both.gpucc $t) in 22.*) ;; *) fail "$t: not LLVM 22's entry" ;; esac
done
# Each kernel is one vendor's: the other's devices have no fit (exit 2).
expect_exit 2 "$GPUCC" devices --image both.gpucc --target sm_80 --target sm_100 \
	--target gfx90a:sramecc+:xnack- --target gfx950:sramecc+:xnack-
# (a cubin where ptxas is, else PTX)
assert_grep "^  scale  [0-9a-f]*  sm_80:ptx[0-9]*  *\(cubin  exact\|ptx  *fallback\)$" out
assert_grep "^  scale  [0-9a-f]*  sm_100:ptx[0-9]*  *\(cubin  exact\|ptx  *fallback\)$" out
assert_grep "^  axpy   [0-9a-f]*  gfx90a  *hsaco  fallback$" out
assert_grep "^  axpy   [0-9a-f]*  gfx950  *hsaco  fallback$" out
# devices --json says which LLVM makes native code for each device: the
# newest that knows it (gfx941: LLVM 19, which LLVM 21 dropped), none for
# a processor no LLVM knows.
expect_exit 2 "$GPUCC" devices --json --image both.gpucc --target sm_100 --target gfx941 --target sm_91
python3 -c '
import json
d = json.load(open("out"))["devices"]
llvm = [x["llvm"] for x in d]
assert llvm[0].startswith("22.") and llvm[1].startswith("19.") and llvm[2] is None, llvm
' || fail "devices --json: the LLVM of each device: $(cat out)"
# The same module and target under each LLVM: two keys.
expect_exit 0 "$GPUCC" compile --no-cache --llvm 19 cu19_80.bc -t sm_80 -o k19.gpucc
expect_exit 0 "$GPUCC" compile --no-cache cu19_80.bc -t sm_80 -o k22.gpucc
[ "$("$GPUCC" list k19.gpucc | awk 'NR == 2 { print $1 }')" != \
  "$("$GPUCC" list k22.gpucc | awk 'NR == 2 { print $1 }')" ] || fail "LLVM 19 and 22 gave one key"
# A source's direct-mode record leads to its backend's entry only: built by
# default (LLVM 22), then pinned to LLVM 19, the second run is LLVM 19's
# entry (a record of the first must not serve it), and each hits its own.
if [ -f /usr/include/hip/hip_runtime.h ]; then
	cp axpy.hip src19.hip
	settle
	for pin in "" "--llvm 19" "" "--llvm 19"; do
		# shellcheck disable=SC2086
		expect_exit 0 "$GPUCC" compile --cache c src19.hip -t gfx90a $pin -o "src${pin:+19}.gpucc"
	done
	case $(entry_llvm src.gpucc gfx90a) in 22.*) ;; *) fail "a source's default entry is not LLVM 22's" ;; esac
	case $(entry_llvm src19.gpucc gfx90a) in
	19.*) ;; *) fail "a source pinned to LLVM 19 was served LLVM $(entry_llvm src19.gpucc gfx90a)'s entry" ;;
	esac
	expect_exit 0 "$GPUCC" compile --cache c src19.hip -t gfx90a --llvm 19 --explain
	assert_grep "hit: record" out
else
	skip_block "a source's record leads to its own backend's entry (no HIP headers: libamdhip64-dev)"
fi
# Every key hits: no LLVM loaded, by either backend.
expect_exit 0 "$GPUCC" compile --cache c --llvm 19 cu19_80.bc hip19_gfx90a.bc -t sm_80 -t gfx90a --json
assert_grep '"hits":2,.*"llvm_loaded":false' out
expect_exit 0 "$GPUCC" compile --cache c cu22_100.bc hip22_gfx950.bc -t sm_100 -t gfx950 --json
assert_grep '"hits":2,.*"llvm_loaded":false' out
exit 0
