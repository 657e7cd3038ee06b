# cmd/tests/compile_matches_llc.sh -- gpucc drives the backend like the LLVM
# tools: for modules without library calls, its PTX equals what
# `opt-19 -passes='default<O2>' | llc-19` gives for the same target, features
# and optimisation level (llc without its verbose assembly comments, which
# LLVM-C's target machines do not print), and its AMDGPU code object what
# `opt-19 | llc-19 -filetype=obj | ld.lld-19 -shared` gives.  The modules
# include clang -x cuda's (a weak_odr template kernel, dynamic and static
# shared memory, __constant__, __nvvm_reflect) and AMDGPU LDS with scoped
# atomics.
. "$SRCROOT/cmd/tests/lib.sh"
use_llvm 19 "the comparison is with opt-19 and llc-19"

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
	# clang -x cuda's module asks for sm_80 and PTX 7.0 itself.
	expect_exit 0 "$GPUCC" compile --no-cache -O$level -o c.gpucc --json "$K/nvptx/cuda_clang.ll" -t sm_80
	key=$(python3 -c "import json; print(json.load(open('out'))['results'][0]['key'])")
	"$GPUCC" cat c.gpucc "$key" --part ptx > gpucc.ptx
	opt-19 -mtriple=nvptx64-nvidia-cuda -mcpu=sm_80 -mattr=+ptx70 -passes="default<O$level>" \
		"$K/nvptx/cuda_clang.ll" -o opt.bc || fail "opt-19 failed"
	llc-19 -mtriple=nvptx64-nvidia-cuda -mcpu=sm_80 -mattr=+ptx70 -O$level -asm-verbose=false opt.bc -o llc.ptx ||
		fail "llc-19 failed"
	if ! cmp -s gpucc.ptx llc.ptx; then
		diff gpucc.ptx llc.ptx | head -20 >&2
		fail "cuda_clang -O$level: gpucc's PTX differs from opt-19 | llc-19"
	fi
done

# AMDGPU: the whole code object, linked by ld.lld-19; gpucc's default is
# code object v4.
command -v ld.lld-19 >/dev/null || fail "ld.lld-19 is missing (scripts/setup installs it)"
for level in 2 3; do
	for module in vector_add lds_atomics; do
		expect_exit 0 "$GPUCC" compile --no-cache -O$level -o a.gpucc --json "$K/amdgpu/$module.ll" -t gfx90a
		key=$(python3 -c "import json; print(json.load(open('out'))['results'][0]['key'])")
		"$GPUCC" cat a.gpucc "$key" --part hsaco > gpucc.hsaco
		opt-19 -mtriple=amdgcn-amd-amdhsa -mcpu=gfx90a -passes="default<O$level>" \
			"$K/amdgpu/$module.ll" -o opt.bc || fail "opt-19 failed"
		llc-19 -mtriple=amdgcn-amd-amdhsa -mcpu=gfx90a -O$level -filetype=obj \
			--amdhsa-code-object-version=4 opt.bc -o llc.o || fail "llc-19 failed"
		ld.lld-19 -shared llc.o -o lld.hsaco || fail "ld.lld-19 failed"
		cmp -s gpucc.hsaco lld.hsaco || fail "$module -O$level: gpucc's code object differs from opt-19 | llc-19 | ld.lld-19"
	done
done
