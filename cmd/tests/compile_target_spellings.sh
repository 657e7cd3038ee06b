# cmd/tests/compile_target_spellings.sh -- the target spellings users
# already write, table-tested (lib/compile/compile_session.c, user_spelling; gpucc compile
# -h): CMake's CMAKE_CUDA_ARCHITECTURES values ("90", "90a", "100f";
# "-virtual" for entries of PTX alone, "-real" for entries of a cubin
# alone, also after sm_XY) and `native`, the GPUs the runtimes see:
#   - each maps to the canonical target, which the entry records; a
#     restricted entry's key names its parts (the option "parts"), so that
#     90, 90-virtual and 90-real are three keys and "90-real" with
#     "90-virtual" is "90";
#   - -real fails (exit 6, one line) where no cubin can be made; a suffix
#     after anything but an NVIDIA processor is refused (exit 3);
#   - a source compiled for 90 and then for 90-virtual is not served the
#     first's entry from its direct-mode record;
#   - native takes each device's processor (an AMD device's modes
#     included), through the stand-in runtimes of lib/tests/stub_runtimes.c
#     (no GPU is needed); no GPU is one line, exit 6.
. "$SRCROOT/cmd/tests/lib.sh"

"$GPUCC" --version | grep -q "LLVM none" && skip "built without the LLVM backend"
nv=$TESTDATA/example/kernels/saxpy.nvptx.ll
amd=$TESTDATA/example/kernels/saxpy.amdgpu.ll
cubins=1
CUDA_PATH=${CUDA_PATH:-/usr/local/cuda}
[ -x "$CUDA_PATH/bin/ptxas" ] || command -v ptxas >/dev/null || cubins=

# One entry: "TARGET PARTS KEY" (parts: the payload kinds, space-joined).
entry_of() { # SPELLING...
	local args=()
	for t in "$@"; do args+=(-t "$t"); done
	expect_exit 0 "$GPUCC" compile --cache cache "$nv" "${args[@]}" -o one.gpucc --json
	python3 -c '
import json
r = [x for x in json.load(open("out"))["results"] if x["status"] in ("compiled", "hit")]
assert len(r) == 1, r
print(r[0]["target"], ",".join(p["part"] for p in r[0]["payloads"]), r[0]["key"])' ||
		fail "$*: not one entry: $(cat out)"
}

all=ptx${cubins:+,cubin}
while read -r spelling target parts; do
	[ -n "$cubins" ] || [ "$parts" != cubin ] || continue
	got=$(entry_of $spelling)
	set -- $got
	[ "$1 $2" = "$target $parts" ] || fail "'$spelling' gave $1 with $2, not $target with $parts"
	eval "key_$(echo "$spelling" | tr -c 'a-z0-9\n' _)=$3"
done <<EOF
90 sm_90:ptx78 $all
sm_90 sm_90:ptx78 $all
90a sm_90a:ptx80 $all
90-virtual sm_90:ptx78 ptx
sm_90-virtual sm_90:ptx78 ptx
90-real sm_90:ptx78 cubin
EOF
[ "$key_90" = "$key_sm_90" ] || fail "90 and sm_90 are two keys"
[ "$key_90_virtual" = "$key_sm_90_virtual" ] || fail "90-virtual and sm_90-virtual are two keys"
[ "$key_90" != "$key_90_virtual" ] || fail "90 and 90-virtual are one key"
if [ -n "$cubins" ]; then
	[ "$key_90" != "$key_90_real" ] && [ "$key_90_real" != "$key_90_virtual" ] ||
		fail "90, 90-real and 90-virtual are not three keys"
	set -- $(entry_of 90-real 90-virtual)
	[ "$3" = "$key_90" ] || fail "90-real with 90-virtual is not 90"
	"$GPUCC" show one.gpucc "$3" >show.txt
	assert_no_grep "parts=" show.txt
	set -- $(entry_of 90-virtual)
	"$GPUCC" show one.gpucc "$3" >show.txt
	assert_grep "^  parts=ptx$" show.txt
else
	skip_block "-real: no ptxas here"
fi
if has_llvm 22; then
	set -- $(entry_of 100f)
	case $1 in sm_100f:ptx*) ;; *) fail "100f gave $1" ;; esac
fi

# Refused: exit 3 (a spelling that is no target), 6 (no cubin to be made).
for bad in gfx90a-real 90:ptx80-real 9-virtual x90-real 90b; do
	expect_exit 3 "$GPUCC" compile --cache cache "$nv" -t "$bad" -o bad.gpucc
	assert_one_line err
	assert_grep "'$bad'" err
done
expect_exit 6 "$GPUCC" compile --cache cache "$nv" -t 90-real --no-cubin -o bad.gpucc
assert_one_line err
assert_grep "sm_90-real asks for a cubin alone" err
assert_no_file bad.gpucc

# A source: 90, then 90-virtual, each its own entry (the record's name
# holds the parts).
if command -v clang-19 >/dev/null && [ -f "$CUDA_PATH/include/cuda_runtime.h" ]; then
	printf '__global__ void fill(float *p) { p[threadIdx.x] = 1.0f; }\n' >fill.cu
	settle
	expect_exit 0 "$GPUCC" compile --cache cache fill.cu -t 90 -o full.gpucc
	expect_exit 0 "$GPUCC" compile --cache cache fill.cu -t 90-virtual -o ptx.gpucc --json
	grep -q '"part":"cubin"' out && fail "90-virtual after 90: the record served the entry with a cubin"
	expect_exit 0 "$GPUCC" compile --cache cache fill.cu -t 90-virtual -o ptx.gpucc --explain
	assert_grep "hit: record" out
else
	skip_block "the source case: no clang-19 or CUDA headers"
fi

# native: every device the runtimes see, through the stand-ins.
export GPUCC_HIP_LIBRARY=$STUB_RUNTIMES GPUCC_CUDA_LIBRARY=$STUB_RUNTIMES
STUB_HIP_ARCH=gfx90a:sramecc+:xnack- STUB_CUDA_CC=9.0 \
	expect_exit 0 "$GPUCC" compile --cache cache "$nv" "$amd" -t native -o native.gpucc
"$GPUCC" list native.gpucc | awk 'NR > 1 { print $2 }' | sort >targets.txt
printf 'gfx90a:sramecc+:xnack-\nsm_90:ptx78\n' >want.txt
assert_same want.txt targets.txt
STUB_HIP_ARCH=gfx9999 GPUCC_CUDA_LIBRARY=none expect_exit 6 "$GPUCC" compile --cache cache "$amd" \
	-t native -o none.gpucc
assert_one_line err
assert_grep "knows the processor of no GPU here (gfx9999)" err
GPUCC_HIP_LIBRARY=none GPUCC_CUDA_LIBRARY=none expect_exit 6 "$GPUCC" compile --cache cache "$amd" \
	-t native -o none.gpucc
assert_one_line err
assert_grep "^gpucc compile: --target native: .*disabled by GPUCC_HIP_LIBRARY=none" err
assert_no_file none.gpucc
echo ok
