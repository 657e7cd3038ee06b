# embed_roundtrip: `gpucc embed` writes a host object that, linked into a
# program compiled now with cc, gives back the image byte for byte with the
# same entries; the aarch64 object carries the symbols too; bad inputs are
# refused with clear errors and leave no output: a corrupt image (payload
# digests are checked) or one with data after its end (the object would
# carry it: an embedded image is exactly the file's bytes) exits 3, a bad argument (symbol, alignment, a triple
# that is not x86_64/aarch64 Linux ELF) exits 129.
. "$SRCROOT/cmd/tests/lib.sh"
command -v cc >/dev/null || skip "no C compiler"
"$GPUCC" --version | grep -q "LLVM none" && skip "built without the LLVM backend"

expect_exit 0 "$GPUCC" pack -o example.gpucc "$TESTDATA/example/pack.json"
expect_exit 0 "$GPUCC" embed example.gpucc -o embedded.o --symbol embedded_image --header embedded.h
assert_file embedded.o
assert_grep "extern const unsigned char embedded_image\[\];" embedded.h
assert_grep "extern const uint64_t embedded_image_size;" embedded.h

cc -std=c11 -Wall -Werror $SANITIZE_CFLAGS -I. -I"$SRCROOT/lib/include" -I"$BUILDDIR/lib/include" -o roundtrip \
	"$SRCROOT/cmd/tests/embed_roundtrip.c" embedded.o \
	-L"$BUILDDIR/lib" -lgpucc -Wl,-rpath,"$BUILDDIR/lib" 2>cc.err ||
	{ cat cc.err >&2; fail "the round-trip program does not compile and link"; }
expect_exit 0 ./roundtrip back.gpucc
assert_same example.gpucc back.gpucc
"$GPUCC" list --json example.gpucc | python3 -c '
import json, sys
for e in json.load(sys.stdin):
    print(e["key"], e["target"], ",".join(e["kernels"]))' > want
assert_same want out
[ "$(wc -l < out)" -eq 2 ] || fail "expected 2 entries"

# A shared library carries it as well (position-independent object).
cc -shared -o libembedded.so embedded.o || fail "the object does not link into a shared library"

# aarch64: an AArch64 relocatable object with both symbols.
if have llvm-readelf-19 "the AArch64 object's symbols"; then
	expect_exit 0 "$GPUCC" embed example.gpucc -o arm.o --symbol embedded_image \
		--target-triple aarch64-linux-gnu
	llvm-readelf-19 -h -s -S arm.o > arm.txt
	assert_grep "Machine: *AArch64" arm.txt
	assert_grep "Type: *REL" arm.txt
	assert_grep "GLOBAL DEFAULT .* embedded_image$" arm.txt
	assert_grep " 8 OBJECT  GLOBAL DEFAULT .* embedded_image_size$" arm.txt
	size=$(stat -c %s example.gpucc)
	grep -q " $size OBJECT  GLOBAL DEFAULT .* embedded_image$" arm.txt ||
		{ cat arm.txt >&2; fail "embedded_image is not $size bytes"; }
	assert_grep "\.rodata\.gpucc .* A .* 64$" arm.txt
fi

# Bad input: each a clear error, no object left behind.
expect_exit 3 "$GPUCC" embed "$TESTDATA/example/saxpy.nvptx.ll" -o bad.o --symbol x
assert_grep "saxpy.nvptx.ll" err
assert_no_file bad.o
expect_exit 2 "$GPUCC" embed missing.gpucc -o bad.o --symbol x
assert_grep "missing.gpucc" err
expect_exit 129 "$GPUCC" embed example.gpucc -o bad.o --symbol "1-not-c"
assert_grep "not a C identifier" err
# A host triple gpucc cannot target is bad input (3), as an unknown GPU
# target is in every command.
expect_exit 3 "$GPUCC" embed example.gpucc -o bad.o --symbol x --target-triple riscv64-linux-gnu
assert_grep "riscv64" err
# The triple is judged before the image is read through (a typo must not
# wait for a large image's verification): named even on a bad image.
head -c 3000 example.gpucc >truncated.gpucc
expect_exit 3 "$GPUCC" embed truncated.gpucc -o bad.o --symbol x --target-triple riscv64-linux-gnu
assert_grep "riscv64" err
expect_exit 3 "$GPUCC" embed truncated.gpucc -o bad.o --symbol x
rm -f truncated.gpucc
# Mach-O and COFF: refused in one line (LLVM would abort on the section name).
for triple in x86_64-apple-darwin aarch64-apple-macos x86_64-pc-windows-msvc x86_64-unknown-linux-coff; do
	expect_exit 3 "$GPUCC" embed example.gpucc -o bad.o --symbol x --target-triple $triple
	assert_one_line err
	assert_grep "host triple '$triple' is not supported: gpucc embed writes ELF objects for Linux" err
done
# The 32-bit ABIs of those CPUs (x32, ILP32) would give ELF32 objects,
# which gpucc cannot grow in place: it would hold the image in memory
# twice over.  Refused in one line, before the image is read.
for triple in x86_64-pc-linux-gnux32 x86_64-linux-muslx32 aarch64-linux-gnu_ilp32; do
	expect_exit 3 "$GPUCC" embed example.gpucc -o bad.o --symbol x --target-triple $triple
	assert_one_line err
	assert_grep "host triple '$triple' is not supported: .* 32-bit" err
done
# A number as written, in decimal: not a sign (strtoul would wrap
# -18446744073709551552 round to 64), a space or a base prefix.
for align in 3 48 8192 0 -18446744073709551552 -64 +64 ' 64' 0x40 '64 '; do
	expect_exit 129 "$GPUCC" embed example.gpucc -o bad.o --symbol x --align "$align"
	assert_one_line err
	assert_grep "power of two" err
done
expect_exit 0 "$GPUCC" embed example.gpucc -o aligned.o --symbol x --align 4096
assert_no_file bad.o
# A payload's bytes changed under an intact manifest: refused, named, exit 3.
python3 - example.gpucc corrupt.gpucc <<'PY' || fail "cannot make a corrupt image"
import sys
data = bytearray(open(sys.argv[1], "rb").read())
at = data.find(b".visible .entry")
assert at > 0, "no PTX in the image"
data[at + 1] ^= 0x20
open(sys.argv[2], "wb").write(data)
PY
expect_exit 3 "$GPUCC" embed corrupt.gpucc -o bad.o --symbol x
assert_one_line err
assert_grep "corrupt.gpucc" err
assert_no_file bad.o
# Two images concatenated: a tar reader sees the first only.
cat example.gpucc example.gpucc > twice.gpucc
expect_exit 3 "$GPUCC" embed twice.gpucc -o bad.o --symbol x
assert_one_line err
assert_grep "'twice.gpucc': data after the end of the archive, at offset" err
assert_no_file bad.o
expect_exit 129 "$GPUCC" embed example.gpucc --symbol x
expect_exit 129 "$GPUCC" embed example.gpucc -o bad.o
assert_no_file bad.o
echo ok
