# cmd/tests/compile_outputs_ptxas.sh -- what `gpucc compile` makes for
# NVIDIA targets is accepted by ptxas (skipped, whole, without the CUDA
# toolkit): every PTX assembles and names its kernels, a cubin comes with
# each, libdevice is linked and internalised, ptxas's resources reach the
# summary, and a cubin is always executable, externals or not.
. "$SRCROOT/cmd/tests/lib.sh"

K=$TESTDATA/kernels
command -v python3 >/dev/null || fail "python3 is needed to read --json output"
PTXAS=${CUDA_PATH:-/usr/local/cuda}/bin/ptxas
[ -x "$PTXAS" ] || PTXAS=$(command -v ptxas || true)
[ -n "$PTXAS" ] && [ -x "$PTXAS" ] || skip "no ptxas (CUDA toolkit) here"

expect_exit 0 "$GPUCC" compile --no-cache -j2 -o nv.gpucc --json \
	"$K/nvptx/vector_add.ll" "$K/nvptx/multi.ll" "$K/nvptx/math.ll" -t sm_90 -t sm_80:ptx78
cp out nv.json
[ "$(result_keys nv.json sm_ | wc -l)" -eq 6 ] || fail "expected 6 NVIDIA entries"
while read -r key module kernels; do
	"$GPUCC" cat nv.gpucc "$key" --part ptx > k.ptx || fail "cat $key"
	arch=$(sed -n 's/^\.target \(sm_[0-9a]*\).*/\1/p' k.ptx)
	"$PTXAS" -arch="$arch" k.ptx -o k.cubin 2> ptxas.err || { cat ptxas.err >&2; fail "ptxas rejects the PTX of $module"; }
	for k in $(echo "$kernels" | tr , ' '); do
		grep -q "^\.visible \.entry $k(" k.ptx || fail "$module: no .entry $k"
	done
	"$GPUCC" cat nv.gpucc "$key" --part cubin > k2.cubin || fail "$module: no cubin"
done < <(result_keys nv.json sm_)
# libdevice was linked and internalised: the PTX stays small and has no __nv_ calls.
key=$(result_keys nv.json sm_90 | awk '$2 == "math.ll" { print $1 }')
"$GPUCC" cat nv.gpucc "$key" --part ptx > math.ptx
[ "$(wc -c < math.ptx)" -lt 60000 ] || fail "math.ll's PTX is $(wc -c < math.ptx) bytes: libdevice not internalised"
assert_no_grep "call.*__nv_" math.ptx
# Resources from ptxas -v are in the summary.
python3 - nv.json <<'PY' || fail "ptxas resources missing"
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    for k in r["kernels"]:
        assert k["registers"] > 0, r
    if r["module"].endswith("multi.ll"):
        assert [k["shared_bytes"] for k in r["kernels"] if k["name"] == "reverse_block"] == [1024], r
PY
# A cubin is always an executable image, what the PTX JIT makes of the same
# PTX, which cuModuleLoadData loads; externals do not make it relocatable
# (ptxas -c), which only cuLink* would load.
expect_exit 0 "$GPUCC" compile --no-cache "$K/driver_calls.ll" -t sm_90 -o calls.gpucc --json
calls_key=$(result_keys out sm_90 | cut -d' ' -f1)
"$GPUCC" cat calls.gpucc "$calls_key" --part cubin > calls.cubin || fail "driver_calls.ll: no cubin"
llvm-readelf-19 -h calls.cubin > calls.elf || fail "llvm-readelf cannot read the cubin"
assert_grep "Type: *EXEC (Executable file)" calls.elf
assert_grep "Unresolved extern variable 'limit'" err
