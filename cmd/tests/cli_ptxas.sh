# cmd/tests/cli_ptxas.sh -- PTX taken out of an image (by gpucc extract and by
# tar -xf) is accepted as it is by NVIDIA's ptxas, and pack tells the cubins
# ptxas makes with and without -c apart.  Skipped when the CUDA
# toolkit is absent ($CUDA_PATH, /usr/local/cuda, then PATH).
. "$SRCROOT/cmd/tests/lib.sh"

ptxas=
for candidate in ${CUDA_PATH:+"$CUDA_PATH/bin/ptxas"} /usr/local/cuda/bin/ptxas "$(command -v ptxas || true)"; do
	[ -n "$candidate" ] && [ -x "$candidate" ] && { ptxas=$candidate; break; }
done
[ -n "$ptxas" ] || skip "ptxas not found (no CUDA toolkit)"

expect_exit 0 "$GPUCC" pack -o ex.gpucc "$TESTDATA/example/pack.json"
expect_exit 0 "$GPUCC" extract ex.gpucc -C ex -q
ptx=$(ls ex/*.ptx)
[ -n "$ptx" ] || fail "no PTX extracted"
"$ptxas" -arch=sm_90 "$ptx" -o ptxas.cubin > ptxas.log 2>&1 || { cat ptxas.log >&2; fail "ptxas rejected $ptx"; }
[ -s ptxas.cubin ] || fail "ptxas wrote no cubin"
# pack takes the executable cubin and refuses the relocatable one (-c),
# which the CUDA driver does not load.
pack_cubin() { "$GPUCC" pack -o cubin.gpucc --module "$TESTDATA/example/saxpy.nvptx.ll" \
	--target sm_90:ptx78 --kernel saxpy --cubin "$1"; }
expect_exit 0 pack_cubin ptxas.cubin
"$ptxas" -arch=sm_90 -c "$ptx" -o relocatable.cubin > ptxas.log 2>&1 || { cat ptxas.log >&2; fail "ptxas -c failed"; }
expect_exit 3 pack_cubin relocatable.cubin
assert_grep "'relocatable.cubin' is a relocatable cubin, which the CUDA driver does not load" err

mkdir untar && (cd untar && tar -xf ../ex.gpucc) || fail "tar -xf failed"
for f in untar/payloads/*.ptx; do
	"$ptxas" -arch=sm_90 "$f" -o /dev/null 2> ptxas.log || { cat ptxas.log >&2; fail "ptxas rejected $f"; }
done
echo "ok"
