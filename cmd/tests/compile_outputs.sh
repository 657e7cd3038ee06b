# cmd/tests/compile_outputs.sh -- what `gpucc compile` produces is accepted by
# the device tools (ptxas: compile_outputs_ptxas.sh): every code object
# shows the expected kernels and target in `llvm-readelf-19 --notes`, the
# code object version option works (4, 5 and 6, on each backend), the
# example package compiles for both vendors in one run, and the CUDA driver's
# system calls (printf, malloc, free, assert) are externals for NVIDIA
# targets that never make a cubin relocatable.
. "$SRCROOT/cmd/tests/lib.sh"

K=$TESTDATA/kernels
command -v python3 >/dev/null || fail "python3 is needed to read --json output"

# ---- AMD: code objects through llvm-readelf --------------------------------------
command -v llvm-readelf-19 >/dev/null || fail "llvm-readelf-19 is missing (scripts/setup installs it)"
expect_exit 0 "$GPUCC" compile --no-cache -j2 -o amd.gpucc --json \
	"$K/amdgpu/vector_add.ll" "$K/amdgpu/multi.ll" "$K/amdgpu/math.ll" -t gfx90a -t gfx942:xnack-
cp out amd.json
[ "$(result_keys amd.json gfx | wc -l)" -eq 6 ] || fail "expected 6 AMD entries"
while read -r key module kernels; do
	"$GPUCC" cat amd.gpucc "$key" --part hsaco > k.hsaco || fail "cat $key"
	llvm-readelf-19 --notes k.hsaco > notes || fail "llvm-readelf rejects the code object of $module"
	target=$(python3 -c "import json,sys; print([r['target'] for r in json.load(open('amd.json'))['results'] if r.get('key') == sys.argv[1]][0])" "$key")
	case $target in
	gfx90a) assert_grep "amdhsa.target: *'\\?amdgcn-amd-amdhsa--gfx90a'\\?$" notes ;;
	gfx942:xnack-) assert_grep "amdhsa.target: *'\\?amdgcn-amd-amdhsa--gfx942:xnack-'\\?$" notes ;;
	esac
	assert_grep "amdhsa.version:" notes
	# Code object v4 by default: version [ 1, 1 ] (v5 is [ 1, 2 ]).
	grep -A3 "amdhsa.version:" notes | grep -q -- "- 1$" || fail "$module: not code object v4"
	for k in $(echo "$kernels" | tr , ' '); do
		assert_grep "\.name: *$k$" notes
		assert_grep "\.symbol: *$k\.kd$" notes
	done
done < <(result_keys amd.json gfx)

expect_exit 0 "$GPUCC" compile --no-cache --code-object 5 -o v5.gpucc --json "$K/amdgpu/vector_add.ll" -t gfx90a
key=$(result_keys out gfx | cut -d' ' -f1)
"$GPUCC" cat v5.gpucc "$key" --part hsaco > v5.hsaco
llvm-readelf-19 --notes v5.hsaco | grep -A3 "amdhsa.version:" | grep -q -- "- 2$" || fail "--code-object 5 did not give v5"
# Code object v6 (what clang-22 writes by default), from each backend: the
# ELF header's ABI version 4 (v4's is 2, v5's 3), v5's device library ABI.
for llvm in 19 22; do
	if ! has_llvm $llvm; then
		skip_block "--code-object 6 with LLVM $llvm (this build has no LLVM $llvm backend)"
		continue
	fi
	expect_exit 0 "$GPUCC" compile --no-cache --llvm $llvm --code-object 6 -o v6.gpucc --json \
		"$K/amdgpu/math.ll" -t gfx90a
	key=$(result_keys out gfx | cut -d' ' -f1)
	"$GPUCC" cat v6.gpucc "$key" --part hsaco > v6.hsaco
	llvm-readelf-19 -h v6.hsaco | grep -q "ABI Version: *4$" || fail "--code-object 6 did not give v6 (LLVM $llvm)"
	expect_exit 0 "$GPUCC" show v6.gpucc "$key" --json
	assert_grep '"code-object": *"6"' out
	assert_grep '"oclc_abi_version_500.bc"' out
done
expect_exit 129 "$GPUCC" compile --no-cache --code-object 7 "$K/amdgpu/vector_add.ll" -t gfx90a
assert_grep "^gpucc compile: bad code object version '7': expected 4, 5 or 6 " err

# ---- -O0 compiles only the library code the module reaches --------------------------
# Nothing optimises at -O0, so every library function the link pulled in was
# compiled (36 KB of libdevice in the PTX; LLVM 19's AMDGPU backend crashed
# on the unused ROCm ones: exit 139), unless the backend deletes what nothing
# reaches.
# The module's own code stays as written: its unused helper too.
# only_o0_entry IMAGE PART OUTFILE: the payload of the image's one entry
only_o0_entry() {
	"$GPUCC" cat "$1" "$("$GPUCC" list "$1" | awk 'NR == 2 { print $1 }')" --part "$2" > "$3" ||
		fail "$1: no $2"
}
cat > amd_sin.ll <<'EOF'
target triple = "amdgcn-amd-amdhsa"
declare float @__ocml_sin_f32(float)
declare float @__ocml_cos_f32(float)
define amdgpu_kernel void @k(ptr addrspace(1) %p) {
  %x = load float, ptr addrspace(1) %p
  %s = call float @__ocml_sin_f32(float %x)
  store float %s, ptr addrspace(1) %p
  ret void
}
EOF
sed -e "/__ocml_sin_f32/d" -e "s/store float %s/store float %x/" amd_sin.ll > amd_none.ll
# amd_o0_funcs M: compile M.ll at -O0 for gfx90a; the functions of its
# code object in M.funcs.
amd_o0_funcs() {
	expect_exit 0 "$GPUCC" compile --no-cache -O0 "$1.ll" -t gfx90a -o "$1.gpucc"
	only_o0_entry "$1.gpucc" hsaco "$1.hsaco"
	llvm-readelf-19 -s "$1.hsaco" | awk '$4 == "FUNC" { print $8 }' | sort -u > "$1.funcs"
}
for m in amd_sin amd_none; do
	amd_o0_funcs "$m"
done
assert_grep "^__ocml_sin_f32$" amd_sin.funcs
assert_no_grep "^__ocml_cos\|^__ockl_" amd_sin.funcs
[ "$(wc -l < amd_sin.funcs)" -lt 10 ] || fail "-O0 code object holds $(wc -l < amd_sin.funcs) functions"
[ "$(cat amd_none.funcs)" = k ] || fail "-O0 code object of a module calling no library function: $(cat amd_none.funcs)"
# The module's own local functions that no kernel reaches are compiled as
# written, and what they call from the library with them (LLVM 19 crashed
# on them as on the library's: exit 139, the other jobs of the run lost).
cat > amd_own.ll <<'EOF'
target triple = "amdgcn-amd-amdhsa"
declare float @__ocml_cos_f32(float)
define internal float @own_cos(float %x) {
  %c = call float @__ocml_cos_f32(float %x)
  ret float %c
}
define private void @own_ping(i32 %n) {
  call void @own_pong(i32 %n)
  ret void
}
define internal void @own_pong(i32 %n) {
  call void @own_ping(i32 %n)
  ret void
}
define amdgpu_kernel void @k(ptr addrspace(1) %p) {
  store float 1.0, ptr addrspace(1) %p
  ret void
}
EOF
amd_o0_funcs amd_own
# own_ping is private: LLVM 19 lists it in the symbol table, LLVM 22 as a
# local label only; own_pong, which calls it, is there with either.
for f in k own_cos own_pong __ocml_cos_f32; do
	assert_grep "^$f\$" amd_own.funcs
done

LIBDEVICE=${CUDA_PATH:-/usr/local/cuda}/nvvm/libdevice/libdevice.10.bc
if [ -f "$LIBDEVICE" ]; then
	cat > nv_sin.ll <<'EOF'
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"
declare float @__nv_sinf(float)
declare float @__nv_cosf(float)
define internal void @unused_helper() {
  ret void
}
define ptx_kernel void @k(ptr addrspace(1) %p) {
  %x = load float, ptr addrspace(1) %p
  %s = call float @__nv_sinf(float %x)
  store float %s, ptr addrspace(1) %p
  ret void
}
EOF
	sed -e "/__nv_sinf/d" -e "s/store float %s/store float %x/" nv_sin.ll > nv_none.ll
	for m in nv_sin nv_none; do
		expect_exit 0 "$GPUCC" compile --no-cache --no-cubin -O0 "$m.ll" -t sm_90 -o "$m.gpucc"
		only_o0_entry "$m.gpucc" ptx "$m.ptx"
		# Functions the PTX defines (not .extern declarations).
		sed -n 's/^\(\.visible \|\.weak \)\?\.func *\(([^)]*)\)\? *\([A-Za-z_$][A-Za-z0-9_$]*\)(.*$/\3/p' \
			"$m.ptx" > "$m.funcs"
		[ "$(cat "$m.funcs")" = unused_helper ] ||
			fail "-O0 PTX of $m.ll defines functions the module does not: $(tr '\n' ' ' < "$m.funcs")"
	done
	assert_grep "^\.visible \.entry k(" nv_sin.ptx
else
	skip_block "-O0 PTX with libdevice (no CUDA toolkit here)"
fi

# ---- the example package, both vendors in one run ----------------------------------
expect_exit 0 "$GPUCC" compile --no-cache "$TESTDATA"/example/kernels/*.ll --target sm_90 --target gfx90a -o example.gpucc --json
python3 - out <<'PY' || fail "the example run is wrong"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["failed"] == 0 and d["compiled"] == 4 and d["skipped"] == 4, d
PY
expect_exit 0 "$GPUCC" verify example.gpucc

# ---- NVIDIA: the CUDA driver's system calls -----------------------------------------
# printf, malloc, free and assert's __assertfail are externals the driver binds
# at load (AMD targets refuse them: compile_bad.sh), and so is a variable
# nothing defines.
expect_exit 0 "$GPUCC" compile --no-cache "$K/driver_calls.ll" -t sm_90 -o calls.gpucc --json
cp out calls.json
python3 - calls.json <<'PY' || fail "driver_calls.ll: wrong externals"
import json, sys
[r] = json.load(open(sys.argv[1]))["results"]
assert r["status"] == "compiled", r
assert r["externals"] == ["__assertfail", "free", "limit", "malloc", "vprintf"], r
PY
calls_key=$(result_keys calls.json sm_90 | cut -d' ' -f1)
"$GPUCC" cat calls.gpucc "$calls_key" --part ptx > calls.ptx
assert_grep "^\.extern \.func *(\.param \.b32 func_retval0) vprintf$" calls.ptx
