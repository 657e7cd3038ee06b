# runtime_devices: `gpucc devices` without a GPU says why per runtime and
# exits 6, also with --json; commands that do not touch a GPU never map the
# HIP runtime or the CUDA driver, and `gpucc devices` does.
. "$SRCROOT/cmd/tests/lib.sh"

expect_exit 0 "$GPUCC" pack -o example.gpucc "$TESTDATA/example/pack.json"

# What a GPU-less command maps: no libamdhip64, no libcuda.
LD_DEBUG=libs "$GPUCC" list example.gpucc >/dev/null 2>libs.txt || fail "gpucc list failed"
assert_no_grep "libamdhip64" libs.txt
assert_no_grep "libcuda" libs.txt

start=$(date +%s%N)
LD_DEBUG=libs "$GPUCC" devices >out 2>err
rc=$?
took=$(( ($(date +%s%N) - start) / 1000000 ))
if [ "$rc" = 0 ]; then
	echo "this machine has a GPU:"; cat out
	# 2 when some kernel of the image has no fit on some GPU here.
	"$GPUCC" devices --image example.gpucc >out 2>err
	rc=$?
	[ "$rc" = 0 ] || [ "$rc" = 2 ] || { cat err >&2; fail "devices --image exited $rc"; }
	skip "the no-device checks need a machine without a GPU"
fi
[ "$rc" = 6 ] || { cat err >&2; fail "gpucc devices exited $rc, expected 6"; }
[ "$took" -lt 5000 ] || fail "gpucc devices took $took ms without a GPU"
assert_grep "^no GPUs$" out
assert_grep "gpucc devices: no GPU found" err
if [ ! -e /dev/kfd ]; then
	# No amdgpu driver, so no AMD GPU: HIP is not loaded at all.
	assert_grep "HIP runtime: no device: /dev/kfd is absent (no amdgpu driver), so HIP was not loaded" err
	assert_no_grep "libamdhip64" err
fi
hip=/usr/lib/x86_64-linux-gnu/libamdhip64.so.5
if [ -e "$hip" ]; then
	# Named, HIP is loaded on demand and answers for itself.
	GPUCC_HIP_LIBRARY=$hip LD_DEBUG=libs expect_exit 6 "$GPUCC" devices
	assert_grep "hipErrorNoDevice (100)" err
	assert_grep "libamdhip64" err
else
	skip_block "HIP named and loaded on demand (no $hip)"
fi

expect_exit 6 "$GPUCC" devices --json --image example.gpucc
python3 -c 'import json,sys; d=json.load(open("out")); assert d["devices"] == [] and "no GPU found" in d["reason"], d' ||
	fail "--json without a GPU"

GPUCC_HIP_LIBRARY=none GPUCC_CUDA_LIBRARY=none expect_exit 6 "$GPUCC" devices
assert_grep "HIP runtime: disabled by GPUCC_HIP_LIBRARY=none; CUDA driver: disabled by GPUCC_CUDA_LIBRARY=none" err
GPUCC_HIP_LIBRARY=/nonexistent/libamdhip64.so.5 GPUCC_CUDA_LIBRARY=none expect_exit 6 "$GPUCC" devices
assert_grep "HIP runtime: cannot load '/nonexistent/libamdhip64.so.5'" err

# An image without kernels says so, its name spelt as in every message.
echo '{"entries": []}' > empty.json
empty=$(printf 'em\x1bpty').gpucc
expect_exit 0 "$GPUCC" pack -o "$empty" empty.json
expect_exit 0 "$GPUCC" devices --image "$empty" --target sm_90
assert_grep "^  'em\\\\x1bpty\.gpucc' holds no kernels$" out

expect_exit 2 "$GPUCC" devices --image missing.gpucc
expect_exit 129 "$GPUCC" devices extra
echo ok
