# cmd/tests/compile_matches_llc.sh -- gpucc drives the backend like the LLVM
# tools: for modules without library calls, its PTX equals what
# `opt-19 -passes='default<O2>' | llc-19` gives for the same target, features
# and optimisation level (llc without its verbose assembly comments, which
# LLVM-C's target machines do not print).
. "$SRCROOT/cmd/tests/lib.sh"

K=$TESTDATA/kernels
for tool in opt-19 llc-19; do
	command -v $tool >/dev/null || fail "$tool is missing (scripts/setup installs it)"
done

for level in 2 3; do
	for module in vector_add multi; do
		for target in "sm_90 +ptx78" "sm_80 +ptx70"; do
			set -- $target
			expect_exit 0 "$GPUCC" compile --no-cache -O$level -o m.gpucc --json "$K/nvptx/$module.ll" -t "$1"
			key=$(python3 -c "import json; print(json.load(open('out'))['results'][0]['key'])")
			"$GPUCC" cat m.gpucc "$key" --part ptx > gpucc.ptx
			opt-19 -mtriple=nvptx64-nvidia-cuda -mcpu="$1" -mattr="$2" -passes="default<O$level>" \
				"$K/nvptx/$module.ll" -o opt.bc || fail "opt-19 failed"
			llc-19 -mtriple=nvptx64-nvidia-cuda -mcpu="$1" -mattr="$2" -O$level -asm-verbose=false opt.bc -o llc.ptx ||
				fail "llc-19 failed"
			if ! cmp -s gpucc.ptx llc.ptx; then
				diff gpucc.ptx llc.ptx | head -20 >&2
				fail "$module -O$level $1: gpucc's PTX differs from opt-19 | llc-19"
			fi
		done
	done
done
