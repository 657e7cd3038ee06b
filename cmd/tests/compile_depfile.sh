# cmd/tests/compile_depfile.sh -- gpucc compile's dependency file
# (--depfile FILE; -MD -MF FILE and -MD alone, as clang spells them):
#   - a make rule naming the image and every file it was made from: the
#     sources, the headers clang read, the files its arguments name (a
#     response file), clang, IR modules, the device libraries, the tools
#     whose versions the keys hold (ld.lld here); each once,
#     sorted, so that two runs write the same bytes;
#   - the same rule on a hit (from the direct-mode record, and from the
#     cache for an IR module) as on the miss before it;
#   - spelt so that make and ninja read it back: a blank as "\ ", '#' as
#     "\#", '$' as "$$";
#   - ninja with deps=gcc reruns the compile when a header changes, and only
#     then (the image then differs), and runs nothing when nothing changed;
#   - published atomically, and only with the image: no -o is a usage
#     error, as are -MF without -MD and two names for it.
. "$SRCROOT/cmd/tests/lib.sh"

need_hip_sources

# The rule's paths, one per line, as make reads them (\ and \# unescaped,
# $$ as $), after checking its target.
rule_paths() { # FILE TARGET
	python3 - "$1" "$2" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
target, _, rest = text.partition(": ")
assert target == sys.argv[2], (target, sys.argv[2])
assert text.endswith("\n") and text.count(": ") >= 1
words = re.findall(r"(?:\\.|\$\$|[^\s\\])+", rest.replace("\\\n", " "))
for w in words:
    print(re.sub(r"\\(.)", r"\1", w).replace("$$", "$"))
EOF
}

mkdir -p src "inc dir#1"
cat >"inc dir#1/op\$x.h" <<'EOF'
static __device__ inline float op(float x) { return 2.0f * x; }
EOF
cat >src/k.hip <<'EOF'
#include <hip/hip_runtime.h>
#include "op$x.h"
extern "C" __global__ void k(float *y) { y[threadIdx.x] = op(y[threadIdx.x]); }
EOF
printf -- '-DSCALE=2\n' >flags.rsp
settle
expect_exit 0 "$GPUCC" compile src/k.hip -I "inc dir#1" --clang-arg=@flags.rsp -t gfx90a \
	--cache cache -o k.gpucc --depfile k.d
rule_paths k.d k.gpucc >miss.txt || fail "k.d is not a make rule: $(cat k.d)"
for want in src/k.hip "inc dir#1/op\$x.h" flags.rsp "$(command -v clang-19)" \
	/usr/lib/x86_64-linux-gnu/amdgcn/bitcode/ocml.bc /usr/include/hip/hip_runtime.h; do
	grep -qxF "$want" miss.txt || fail "the rule does not name '$want': $(cat k.d)"
done
sort -c miss.txt 2>/dev/null || LC_ALL=C sort -c miss.txt || fail "the rule's files are not sorted"
[ "$(sort miss.txt | uniq -d | wc -l)" = 0 ] || fail "the rule names a file twice"
grep -qF 'inc\ dir\#1/op$$x.h' k.d || fail "a blank, '#' or '\$' not escaped: $(grep op k.d)"
ls -a | grep -q '\.tmp\.' && fail "a temporary file was left"

# The same bytes on the hit (the record's files), -MD beside the image.
expect_exit 0 "$GPUCC" compile src/k.hip -I "inc dir#1" --clang-arg=@flags.rsp -t gfx90a \
	--cache cache -o k.gpucc -MD --explain
assert_grep "hit: record" out
assert_same k.d k.gpucc.d
expect_exit 0 "$GPUCC" compile src/k.hip -I "inc dir#1" --clang-arg=@flags.rsp -t gfx90a \
	--cache cache -o k.gpucc -MD -MF other.d
assert_same k.d other.d

# An IR module: the module and the libraries it links, on a miss and a hit.
cp "$TESTDATA/example/kernels/saxpy.amdgpu.ll" m.ll
expect_exit 0 "$GPUCC" compile m.ll -t gfx90a --cache cache -o m.gpucc --depfile m1.d
expect_exit 0 "$GPUCC" compile m.ll -t gfx90a --cache cache -o m.gpucc --depfile m2.d --json
grep -q '"hits":1' out || fail "the module did not hit: $(cat out)"
assert_same m1.d m2.d
rule_paths m1.d m.gpucc >m.txt || fail "m1.d is not a make rule"
grep -qxF m.ll m.txt || fail "the rule does not name the module: $(cat m1.d)"
grep -q 'ld\.lld' m.txt || fail "the rule does not name the ld.lld whose version the key holds: $(cat m1.d)"

# Usage: the rule names the image, so it needs -o; one name for it.
expect_exit 129 "$GPUCC" compile m.ll -t gfx90a --cache cache --depfile x.d
assert_grep "give -o" err
expect_exit 129 "$GPUCC" compile m.ll -t gfx90a --cache cache -o x.gpucc -MF x.d
assert_grep "give -MD too" err
expect_exit 129 "$GPUCC" compile m.ll -t gfx90a --cache cache -o x.gpucc -MD --depfile x.d
expect_exit 129 "$GPUCC" compile m.ll -t gfx90a --cache cache -o x.gpucc --depfile x.gpucc
assert_no_file x.d
assert_no_file x.gpucc
# A failed compile writes neither.
printf 'define void @f() {\n  unreachable\n' >bad.ll
expect_exit 5 "$GPUCC" compile bad.ll -t gfx90a --cache cache -o bad.gpucc --depfile bad.d
assert_no_file bad.d

# ninja, as meson's depfile: and CMake's DEPFILE use it.
if have ninja "ninja reading the depfile"; then
	cat >build.ninja <<EOF
rule gpucc
  command = $GPUCC compile \$in -I "inc dir#1" -t gfx90a --cache cache -o \$out --depfile \$out.d
  depfile = \$out.d
  deps = gcc
build n.gpucc: gpucc src/k.hip
EOF
	ninja >ninja.log 2>&1 || fail "ninja: $(cat ninja.log)"
	cp n.gpucc before.gpucc
	ninja >ninja.log 2>&1 || fail "ninja: $(cat ninja.log)"
	assert_grep "no work to do" ninja.log
	# A header changes: ninja reruns the compile, and the image changes.
	sleep 1 # ninja compares modification times: a second apart on any file system
	sed -i 's/2.0f/3.0f/' "inc dir#1/op\$x.h"
	ninja >ninja.log 2>&1 || fail "ninja: $(cat ninja.log)"
	assert_no_grep "no work to do" ninja.log
	cmp -s before.gpucc n.gpucc && fail "a changed header left the image as it was"
	ninja >ninja.log 2>&1 || fail "ninja: $(cat ninja.log)"
	assert_grep "no work to do" ninja.log
fi
echo ok
