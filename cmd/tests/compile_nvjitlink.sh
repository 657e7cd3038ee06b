# cmd/tests/compile_nvjitlink.sh -- cubins made in process by the CUDA
# toolkit's libnvJitLink (`gpucc compile --cubin-with`): its cubin is an
# executable ELF for the target's processor, its resources are reported as
# ptxas's are, its version is a key option of its own (so its entries and
# ptxas's never share a key), auto takes it when found and falls back to
# ptxas when it is not ($GPUCC_NVJITLINK naming a missing file), a PTX it
# rejects is one line naming module and target, a processor it does not
# know gives PTX only with one warning (a hit too), PTX with an undefined variable gets
# ptxas's cubin, a launch-bounded kernel calling a template function that
# an unbounded one calls too builds as it does with ptxas, --no-cubin runs
# neither, `cache prune` judges the option,
# and a compile whose every key hits never opens the library.  Skipped,
# with the reason, without the CUDA toolkit's ptxas and libnvJitLink.
. "$SRCROOT/cmd/tests/lib.sh"

K=$TESTDATA/kernels
cuda=${CUDA_PATH:-/usr/local/cuda}
[ -x "$cuda/bin/ptxas" ] || skip "no ptxas in $cuda (no CUDA toolkit)"
ls "$cuda"/lib64/libnvJitLink.so* >/dev/null 2>&1 || skip "no libnvJitLink in $cuda/lib64"
command -v python3 >/dev/null || fail "python3 is needed to read --json output"
command -v llvm-readelf-19 >/dev/null || fail "llvm-readelf-19 is missing (scripts/setup installs it)"
unset GPUCC_NVJITLINK
version=$("$cuda/bin/ptxas" --version | sed -n 's/.*, V\([0-9.]*\).*/\1/p')
[ -n "$version" ] || fail "ptxas --version gave no version"

# key_of JSON: the key of the run's one result.  option NAME IMAGE JSON:
# the value of option NAME in that entry of IMAGE ("-" when it has none).
key_of() { python3 -c 'import json,sys; [r] = json.load(open(sys.argv[1]))["results"]; print(r["key"])' "$1"; }
option() {
	"$GPUCC" show "$2" "$(key_of "$3")" > show.txt || fail "show $2 failed"
	v=$(sed -n "s/^ *$1=//p" show.txt)
	echo "${v:--}"
}

# ---- auto (the default) and nvjitlink: libnvJitLink's cubin -----------------------
expect_exit 0 "$GPUCC" compile --no-cache "$K/nvptx/multi.ll" -t sm_90 -o jit.gpucc --json
cp out jit.json
[ "$(option nvjitlink jit.gpucc jit.json)" = "$version" ] || fail "auto: no nvjitlink=$version option"
[ "$(option ptxas jit.gpucc jit.json)" = "$version" ] || fail "auto: no ptxas=$version option (its fallback)"
jit_key=$(key_of jit.json)
"$GPUCC" cat jit.gpucc "$jit_key" --part cubin > jit.cubin || fail "no cubin from libnvJitLink"
llvm-readelf-19 -h jit.cubin > jit.elf || fail "llvm-readelf cannot read libnvJitLink's cubin"
assert_grep "Type: *EXEC (Executable file)" jit.elf
assert_grep "Machine: *NVIDIA CUDA architecture" jit.elf
# e_flags carry the processor (0x5a = 90) in bits 8..15, as ptxas's do.
flags=$(sed -n 's/^ *Flags: *0x\([0-9a-fA-F]*\).*/\1/p' jit.elf)
[ $(( (0x$flags >> 8) & 0xff )) -eq 90 ] || fail "the cubin's e_flags 0x$flags do not name sm_90"
# The driver loads it as ptxas's (pack refuses a relocatable cubin).
expect_exit 0 "$GPUCC" pack -o packed.gpucc --module "$K/nvptx/multi.ll" --target sm_90:ptx78 \
	--kernel scale --cubin jit.cubin
# Resources come from its "ptxas info" lines.
python3 - jit.json <<'PY' || fail "libnvJitLink's resources are missing"
import json, sys
[r] = json.load(open(sys.argv[1]))["results"]
for k in r["kernels"]:
    assert k["registers"] > 0, r
assert [k["shared_bytes"] for k in r["kernels"] if k["name"] == "reverse_block"] == [1024], r
PY
expect_exit 0 "$GPUCC" compile --no-cache "$K/nvptx/multi.ll" -t sm_90 --cubin-with nvjitlink --json
cmp -s <(key_of out) <(echo "$jit_key") || fail "--cubin-with nvjitlink keys other than auto"

# ---- ptxas: another key, and the entry says so ------------------------------------
expect_exit 0 "$GPUCC" compile --no-cache "$K/nvptx/multi.ll" -t sm_90 --cubin-with ptxas -o ptxas.gpucc --json
cp out ptxas.json
[ "$(option nvjitlink ptxas.gpucc ptxas.json)" = "-" ] || fail "--cubin-with ptxas keyed an nvjitlink option"
[ "$(option ptxas ptxas.gpucc ptxas.json)" = "$version" ] || fail "--cubin-with ptxas: no ptxas option"
[ "$(key_of ptxas.json)" != "$jit_key" ] || fail "ptxas's and libnvJitLink's entries share a key"
"$GPUCC" cat ptxas.gpucc "$(key_of ptxas.json)" --part cubin > ptxas.cubin || fail "no cubin from ptxas"
# Both kinds in one cache: each run hits its own.
expect_exit 0 "$GPUCC" compile --cache c "$K/nvptx/multi.ll" -t sm_90 --cubin-with ptxas --json
expect_exit 0 "$GPUCC" compile --cache c "$K/nvptx/multi.ll" -t sm_90 --json
assert_grep '"status": *"compiled"' out
expect_exit 0 "$GPUCC" compile --cache c "$K/nvptx/multi.ll" -t sm_90 --cubin-with ptxas --json
assert_grep '"status": *"hit"' out

# ---- no library: auto falls back to ptxas; nvjitlink fails, one line --------------
GPUCC_NVJITLINK=$PWD/missing/libnvJitLink.so expect_exit 0 "$GPUCC" compile --no-cache \
	"$K/nvptx/multi.ll" -t sm_90 --json
cp out fallback.json
[ "$(key_of fallback.json)" = "$(key_of ptxas.json)" ] || fail "without libnvJitLink, auto is not ptxas's key"
GPUCC_NVJITLINK=$PWD/missing/libnvJitLink.so expect_exit 6 "$GPUCC" compile --no-cache \
	"$K/nvptx/multi.ll" -t sm_90 --cubin-with nvjitlink
assert_one_line err
assert_grep "multi.ll: sm_90:ptx78: no libnvJitLink was found" err
# A file that is no libnvJitLink: no version, so auto does without it.
head -c 4096 /dev/zero > fake.so
GPUCC_NVJITLINK=$PWD/fake.so expect_exit 0 "$GPUCC" compile --no-cache "$K/nvptx/multi.ll" -t sm_90 --json
[ "$(key_of out)" = "$(key_of ptxas.json)" ] || fail "a fake libnvJitLink changed auto's key"
GPUCC_NVJITLINK=$PWD/fake.so expect_exit 6 "$GPUCC" compile --no-cache "$K/nvptx/multi.ll" -t sm_90 \
	--cubin-with nvjitlink
assert_one_line err
assert_grep "fake.so' names no version" err
expect_exit 129 "$GPUCC" compile --no-cache "$K/nvptx/multi.ll" -t sm_90 --cubin-with nvcc
assert_grep "bad cubin tool 'nvcc'" err

# ---- --no-cubin runs neither ------------------------------------------------------
expect_exit 0 "$GPUCC" compile --no-cache "$K/nvptx/multi.ll" -t sm_90 --no-cubin --cubin-with nvjitlink \
	-o ptx.gpucc --json
cp out ptx.json
[ "$(option nvjitlink ptx.gpucc ptx.json)" = "-" ] && [ "$(option ptxas ptx.gpucc ptx.json)" = "none" ] ||
	fail "--no-cubin keyed a cubin tool"
"$GPUCC" list ptx.gpucc > list.txt
assert_no_grep "cubin" list.txt

# ---- PTX it rejects: one line -----------------------------------------------------
cat > bad_asm.ll <<'EOF'
target triple = "nvptx64-nvidia-cuda"
define ptx_kernel void @k(ptr addrspace(1) %p) {
  call void asm sideeffect "bogus.instruction.gpucc;", ""()
  ret void
}
EOF
expect_exit 5 "$GPUCC" compile --no-cache bad_asm.ll -t sm_90 --cubin-with nvjitlink
assert_one_line err
assert_grep "^gpucc compile: error: bad_asm.ll: sm_90:ptx[0-9]*: nvJitLink failed: .*Unknown modifier '.instruction'" err
expect_exit 5 "$GPUCC" compile --no-cache --verbose bad_asm.ll -t sm_90 --cubin-with nvjitlink
assert_grep "bad_asm.ll: sm_90:ptx[0-9]*: nvJitLink: .*Unknown modifier" err

# ---- a processor it does not know: PTX only, one warning ---------------------------
expect_exit 0 "$GPUCC" compile --no-cache "$K/nvptx/vector_add.ll" -t sm_70 --cubin-with nvjitlink -o old.gpucc
assert_one_line err
assert_grep "warning: .*vector_add.ll: sm_70:ptx[0-9]*: nvJitLink $version does not compile for this target (-arch=sm_70: unsupported architecture): PTX only" err
"$GPUCC" list old.gpucc > list.txt
assert_no_grep "cubin" list.txt
# A hit says so again, as its compile did (the warning is kept beside the
# entry in the cache).
expect_exit 0 "$GPUCC" compile --cache old-cache "$K/nvptx/vector_add.ll" -t sm_70 --cubin-with nvjitlink
cp err old.err
expect_exit 0 "$GPUCC" compile --cache old-cache "$K/nvptx/vector_add.ll" -t sm_70 --cubin-with nvjitlink --json
assert_grep '"status": *"hit"' out
assert_one_line err
assert_same old.err err

# ---- a variable nothing defines: ptxas's whole-program cubin ----------------------
expect_exit 0 "$GPUCC" compile --no-cache "$K/driver_calls.ll" -t sm_90 --cubin-with nvjitlink -o calls.gpucc --json
cp out calls.json
"$GPUCC" cat calls.gpucc "$(key_of calls.json)" --part cubin > calls.cubin || fail "driver_calls.ll: no cubin"
llvm-readelf-19 -h calls.cubin | grep -q "Type: *EXEC" || fail "driver_calls.ll: the cubin is not executable"
assert_grep "nvJitLink: .*Undefined reference to 'limit'.*: the cubin is ptxas's" err

# ---- cache prune judges the nvjitlink option --------------------------------------
expect_exit 0 "$GPUCC" cache prune --cache c --dry-run
assert_no_grep "nvJitLink" out
entry=$(find c -name "$jit_key.gpucc" | head -1)
[ -n "$entry" ] || fail "the libnvJitLink entry is not in the cache"
# With libnvJitLink of another version here, its entries go, ptxas's stay.
# (prune reads the version the library carries, and loads nothing.)
mkdir other && printf 'ELF\0Cuda compilation tools, release 99.9, V99.9.99\0' > other/libnvJitLink.so
GPUCC_NVJITLINK=$PWD/other/libnvJitLink.so expect_exit 0 "$GPUCC" cache prune --cache c --dry-run
assert_grep "made with nvJitLink $version, this toolchain has 99.9.99" out
# Without the library, its entries are not judged: a warning, and they stay.
GPUCC_NVJITLINK= expect_exit 0 "$GPUCC" cache prune --cache c
assert_grep "no libnvJitLink found" err
[ -f "$entry" ] || fail "prune without libnvJitLink removed its entry"

# ---- a launch-bounded kernel calling a template function ----------------------------
# clang emits a template instance linkonce_odr, which PTX spells `.weak .func`
# when left exported; ptxas inside libnvJitLink then compiles it once for
# every caller, and a kernel whose __launch_bounds__ cap its registers (here
# 65536 / (256 * 4) = 64) cannot call it ("max regcount of 64 calls function
# ... with regcount of 254"), where ptxas's whole-program build fits it.
# What ptxas builds, the default path builds too.
if have clang-19 "the launch-bounds case"; then
	cat >bounds.cu <<'CU'
template <typename T>
__device__ __attribute__((noinline)) T heavy(const T *a, int n) {
  T s[96];
#pragma unroll
  for (int i = 0; i < 96; i++) s[i] = a[i * n];
  T r = 0;
#pragma unroll
  for (int i = 0; i < 96; i++) r += s[i] * s[95 - i] * s[(i * 7) % 96];
#pragma unroll
  for (int i = 0; i < 96; i++) r += s[i] / (r + 1.0f);
  return r;
}
__global__ void __launch_bounds__(256, 4) bounded(float *out, const float *a, int n) {
  out[threadIdx.x] = heavy(a + threadIdx.x, n);
}
__global__ void unbounded(float *out, const float *a, int n) {
  out[threadIdx.x] = heavy(a + threadIdx.x, n) * 2;
}
CU
	for level in -O0 -O2; do
		expect_exit 0 "$GPUCC" compile --no-cache $level --cubin-with ptxas bounds.cu -t sm_75
		expect_exit 0 "$GPUCC" compile --no-cache $level bounds.cu -t sm_75 -o bounds.gpucc --json
		python3 - out <<'PY' || fail "bounds.cu $level: $(cat out)"
import json, sys
[r] = json.load(open(sys.argv[1]))["results"]
assert r["status"] == "compiled", r
assert sorted(k["name"] for k in r["kernels"]) == ["_Z7boundedPfPKfi", "_Z9unboundedPfPKfi"], r
PY
		"$GPUCC" cat bounds.gpucc "$(key_of out)" --part cubin > bounds.cubin ||
			fail "bounds.cu $level: no cubin on the default path"
		[ -s bounds.cubin ] || fail "bounds.cu $level: an empty cubin"
	done
fi

# ---- a compile whose every key hits never opens the library ------------------------
if have strace "a compile whose keys all hit never opens libnvJitLink"; then
	expect_exit 0 "$GPUCC" compile --cache c "$K/nvptx/multi.ll" -t sm_90 # hit; memo saved
	no_leak_check strace -f -e trace=open,openat -o hit.trace \
		"$GPUCC" compile --cache c "$K/nvptx/multi.ll" -t sm_90 --json > out 2> err ||
		fail "hit under strace failed"
	assert_grep '"status": *"hit"' out
	grep -q "multi.ll" hit.trace || fail "strace recorded no open of the module"
	grep -q "libnvJitLink" hit.trace && fail "a compile whose keys all hit opened libnvJitLink"
fi
echo "ok"
