# embed_outputs: what a package author meets with `gpucc embed` beyond the
# round trip (embed_roundtrip.sh).  Inputs that are not images -- a FIFO
# (refused at once, not waited on), a directory, an empty file, a snapshot,
# a name too long to open -- exit 3 with one line naming the file and its
# defect.  An output that
# names the image (-o or --header) and a header naming the object exit 129
# and leave every file as it was; a header that cannot be written leaves no
# object either (both are written before either is published).  An output
# that cannot be created (in /proc, under a file, in a directory that is
# not writable, a name too long) is refused before the image is read, in
# one line that says truly why.  Symbols
# the header could not declare in C or C++ (keywords, reserved names, names
# <stdint.h> declares or reserves) exit
# 129; the header compiles as C and C++.  The object is deterministic, is
# byte for byte the one llc-19 writes for the same two globals with the
# image in place of their zeros (small and large images, x86_64 and
# aarch64, any alignment), links into a PIE and a shared library without
# text relocations or an executable stack, and the image opens from the
# shared library at run time.  Embedding a 64 MiB image takes less than
# half its size more memory than a small one.
. "$SRCROOT/cmd/tests/lib.sh"
command -v cc >/dev/null || skip "no C compiler"

expect_exit 0 "$GPUCC" pack -o image.gpucc "$TESTDATA/example/pack.json"
cp image.gpucc image.orig

# ---- inputs that are not images
mkfifo fifo
expect_exit 3 timeout 20 "$GPUCC" embed fifo -o bad.o --symbol x
assert_one_line err
assert_grep "'fifo' is a FIFO, socket or device, not a gpucc image" err
mkdir dir
expect_exit 3 "$GPUCC" embed dir -o bad.o --symbol x
assert_grep "'dir' is a directory, not a gpucc image" err
: >empty
expect_exit 3 "$GPUCC" embed empty -o bad.o --symbol x
assert_grep "'empty' is empty, not a gpucc image" err
# A name too long to open is a bad input too, said on one line.
expect_exit 3 "$GPUCC" embed "$(printf '%05000d' 0)" -o bad.o --symbol x
assert_one_line err
assert_grep "^gpucc embed: cannot open '0*\\.\\.\\.': File name too long (the name has 5000 bytes)$" err
expect_exit 0 "$GPUCC" snapshot image.gpucc -o keys.snap
expect_exit 3 "$GPUCC" embed keys.snap -o bad.o --symbol x
assert_one_line err
assert_grep "'keys.snap' is a gpucc snapshot, not an image" err
assert_no_file bad.o

# ---- outputs that would replace the image, or each other
expect_exit 129 "$GPUCC" embed image.gpucc -o image.gpucc --symbol x
assert_one_line err
assert_grep "'image.gpucc' is the image being embedded: write the object elsewhere" err
expect_exit 129 "$GPUCC" embed image.gpucc -o ok.o --symbol x --header ./image.gpucc
assert_grep "'./image.gpucc' is the image being embedded: write the header elsewhere" err
ln image.gpucc linked.gpucc
expect_exit 129 "$GPUCC" embed image.gpucc -o linked.gpucc --symbol x
assert_same image.gpucc image.orig
assert_no_file ok.o
expect_exit 129 "$GPUCC" embed image.gpucc -o same.out --symbol x --header ./same.out
assert_one_line err
assert_grep "the header './same.out' and the object 'same.out' are the same file" err
assert_no_file same.out
expect_exit 0 "$GPUCC" embed image.gpucc -o old.o --symbol x --header old.h
cp old.o old.o.orig
cp old.h old.h.orig
expect_exit 129 "$GPUCC" embed image.gpucc -o old.o --symbol y --header old.o
assert_same old.o old.o.orig
# The header cannot be written: the object is not published either.
expect_exit 2 "$GPUCC" embed image.gpucc -o new.o --symbol x --header missing-dir/new.h
assert_one_line err
assert_grep "missing-dir/new.h" err
assert_no_file new.o
expect_exit 2 "$GPUCC" embed image.gpucc -o old.o --symbol y --header missing-dir/new.h
assert_same old.o old.o.orig
assert_same old.h old.h.orig
[ -z "$(find . -name '.*.tmp.*')" ] || fail "temporary files left behind"
assert_same image.gpucc image.orig

# -h's usage line names every option (--align was missing).
expect_exit 0 "$GPUCC" embed -h
assert_grep "^usage: gpucc embed IMAGE -o OBJ --symbol NAME .*\\[--align BYTES\\]$" out

# ---- outputs that cannot be created: one line saying truly why, naming
# the output, and nothing written
expect_exit 129 "$GPUCC" embed image.gpucc -o /proc/x.o --symbol x
assert_one_line err
assert_grep "^gpucc embed: -o '/proc/x.o' is in /proc, where only the kernel makes files" err
# A directory where the object goes is bad input (3), as for every output,
# whether it exists or only its name says so (it blamed a missing directory)
for out in dir dir/ newdir/ newdir/. ..; do
	expect_exit 3 "$GPUCC" embed image.gpucc -o "$out" --symbol x
	assert_one_line err
	assert_grep "^gpucc embed: '$out' \(is a directory, not a file name\|names a directory, not a file\): give the output's file name$" err
	expect_exit 3 "$GPUCC" embed image.gpucc -o x.o --header "$out" --symbol x
done
assert_no_file newdir
expect_exit 2 "$GPUCC" embed image.gpucc -o image.gpucc/x.o --symbol x
assert_one_line err
assert_grep "^gpucc embed: cannot create 'image.gpucc/x.o': 'image.gpucc' is not a directory$" err
expect_exit 2 "$GPUCC" embed image.gpucc -o new.o --symbol x --header empty/x/new.h
assert_grep "^gpucc embed: cannot create 'empty/x/new.h': a component of 'empty/x' is not a directory$" err
expect_exit 3 "$GPUCC" embed image.gpucc -o "$(printf '%0250d' 0).o" --symbol x
assert_one_line err
assert_grep "^gpucc embed: cannot create '0*\\.o': File name too long (the name has 252 bytes, and the temporary file written beside it 281)$" err
expect_exit 2 "$GPUCC" embed image.gpucc -o "$(printf 'new\nline')/x.o" --symbol x
assert_one_line err
assert_grep "^gpucc embed: cannot create 'new\\\\nline/x.o': its directory does not exist$" err
# A directory that exists but is not writable: as root, permissions do not
# stop a write, but sysfs does.
if [ "$(id -u)" != 0 ]; then
	mkdir ro && chmod a-w ro
	expect_exit 1 "$GPUCC" embed image.gpucc -o ro/x.o --symbol x
	assert_grep "^gpucc embed: cannot create 'ro/x.o': its directory 'ro' is not writable (Permission denied)$" err
elif [ -d /sys/kernel ]; then
	expect_exit 1 "$GPUCC" embed image.gpucc -o /sys/kernel/x.o --symbol x
	assert_one_line err
	assert_grep "^gpucc embed: cannot create '/sys/kernel/x.o': its directory '/sys/kernel' \\(is not writable (Permission denied)\\|is on a read-only file system\\)$" err
else
	skip_block "embed -o into a directory that is not writable (root, and no /sys/kernel)"
fi
assert_no_file new.o
[ -z "$(find . -name '.*.tmp.*')" ] || fail "temporary files left behind"

# ---- symbols the header could not declare
for symbol in int class static_assert _image __image image_ image__data; do
	expect_exit 129 "$GPUCC" embed image.gpucc -o bad.o --symbol "$symbol" --header bad.h
	assert_one_line err
	assert_grep "symbol '$symbol' is" err
done
# The header includes <stdint.h>: a name it declares (uint64_t, SIZE_MAX)
# or reserves for later (int*_t, uint*_t; INT*/UINT* ending _MAX, _MIN,
# _WIDTH, _C) could not be declared beside it.
for symbol in uint64_t int8_t intptr_t uintmax_t int_fast16_t int24_t SIZE_MAX WCHAR_MIN \
	PTRDIFF_MAX SIG_ATOMIC_MAX WINT_MIN SIZE_WIDTH INT64_C UINTMAX_C INT8_MAX UINT128_WIDTH; do
	expect_exit 129 "$GPUCC" embed image.gpucc -o bad.o --symbol "$symbol" --header bad.h
	assert_one_line err
	assert_grep "^gpucc embed: symbol '$symbol' is declared or reserved by <stdint.h>" err
done
# NAME_size is the size of image NAME: a NAME ending in _size could be
# another embed's size symbol, and the two objects would not link together.
for symbol in image_size x_size; do
	expect_exit 129 "$GPUCC" embed image.gpucc -o bad.o --symbol "$symbol" --header bad.h
	assert_one_line err
	assert_grep "^gpucc embed: symbol '$symbol' ends in '_size'" err
done
# Names of the C standard library, and main: beside the program's own
# <stdio.h> or <errno.h> the header would not compile (NULL, errno, EOF are
# macros; size_t, FILE types), or the object would replace the library's
# definition (malloc) or the program's entry point.  They were accepted.
for symbol in main NULL errno size_t FILE EOF stdout malloc printf memcpy sin sinf \
	offsetof va_list jmp_buf thrd_create atomic_int CHAR_BIT EXIT_SUCCESS I; do
	expect_exit 129 "$GPUCC" embed image.gpucc -o bad.o --symbol "$symbol" --header bad.h
	assert_one_line err
	assert_grep "^gpucc embed: symbol '$symbol' is \(a name the C standard library declares\|the program's entry point\)" err
done
# Names that only look alike are fine, beside the standard headers too.
for symbol in int_kernels uint_data Integer_t INT8_image SIZE image_sizes size mains null \
	Errno file_t; do
	expect_exit 0 "$GPUCC" embed image.gpucc -o alike.o --symbol "$symbol" --header alike.h
	printf '#include <errno.h>\n#include <math.h>\n#include <stddef.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include "alike.h"\nunsigned long f(void) { return (unsigned long)%s_size; }\n' \
		"$symbol" >alike.c
	cc -std=c99 -Wall -Werror -c alike.c -o alike_c.o || fail "the header for '$symbol' does not compile"
done
rm -f alike.o alike.h alike.c alike_c.o
expect_exit 129 "$GPUCC" embed image.gpucc -o bad.o --symbol "$(printf 'x%.0s' $(seq 4096))"
assert_grep "is not a C identifier of at most 200 characters" err
[ "$(wc -c <err)" -lt 300 ] || fail "the message for a 4 KB symbol repeats all of it"
for symbol in '' 'a-b' 9lives; do
	expect_exit 129 "$GPUCC" embed image.gpucc -o bad.o --symbol "$symbol"
	assert_grep "not a C identifier" err
done
assert_no_file bad.o
assert_no_file bad.h

# ---- the header, in C and C++; the object, twice the same
expect_exit 0 "$GPUCC" embed image.gpucc -o pkg.o --symbol Pkg_kernels2 --header pkg.h
expect_exit 0 "$GPUCC" embed image.gpucc -o again.o --symbol Pkg_kernels2 --header again.h
assert_same pkg.o again.o
assert_same pkg.h again.h
printf '#include "pkg.h"\n#include "pkg.h"\nunsigned long f(void) { return (unsigned long)Pkg_kernels2_size + Pkg_kernels2[0]; }\n' >use.c
cc -std=c99 -pedantic -Wall -Wextra -Werror -c use.c -o use_c.o || fail "the header does not compile as C"
if have c++ "the header compiled as C++"; then
	cp use.c use.cc
	c++ -std=c++11 -pedantic -Wall -Wextra -Werror -c use.cc -o use_cc.o ||
		fail "the header does not compile as C++"
fi

# ---- the object's layout, read back by readelf (binutils), llc-19 or not:
# ELF64 little-endian relocatable for the triple's machine, seven sections
# (the image's aligned as asked, NAME_size's, a non-executable stack),
# NAME and NAME_size global, default-visible objects of the right sizes,
# aarch64's $d mapping symbols, no relocations; the image's bytes at the
# section's offset and NAME_size holding their count.
if command -v readelf >/dev/null; then
	n=$(stat -c %s image.gpucc)
	for triple in x86_64-pc-linux-gnu aarch64-unknown-linux-gnu; do
		case $triple in
		x86_64*) machine="Advanced Micro Devices X86-64" locals=2 ;;
		*) machine=AArch64 locals=4 ;;
		esac
		for align in 1 64 4096; do
			expect_exit 0 "$GPUCC" embed image.gpucc -o layout.o --symbol pkg_image \
				--target-triple "$triple" --align "$align"
			readelf -hSsrW layout.o >layout.txt || fail "readelf cannot read the object"
			for line in "Class: *ELF64$" "Data: *2's complement, little endian$" \
				"OS/ABI: *UNIX - System V$" "Type: *REL (Relocatable file)$" \
				"Machine: *$machine$" "Flags: *0x0$" "Number of program headers: *0$" \
				"Number of section headers: *7$" "There are no relocations in this file"; do
				assert_grep "$line" layout.txt
			done
			# each section: name type size flags link info alignment (the
			# string and symbol tables' sizes vary with the names)
			sed -n 's/^ *\[ *\([0-9]*\)\] /\1 /p' layout.txt | tr -s ' ' | awk '
				$1 > 0 { f = NF == 11 ? $8 : "-"; size = ($3 == "STRTAB" || $3 == "SYMTAB") ? "-" : $6
				         print $2, $3, size, f, $(NF-2), $(NF-1), $NF }' >sections.got
			printf '%s\n' ".strtab STRTAB - - 0 0 1" ".text PROGBITS 000000 AX 0 0 4" \
				".rodata.gpucc PROGBITS $(printf %06x "$n") A 0 0 $align" \
				".rodata PROGBITS 000008 A 0 0 8" ".note.GNU-stack PROGBITS 000000 - 0 0 1" \
				".symtab SYMTAB - - 1 $locals 8" >sections.want
			diff sections.want sections.got >&2 || fail "embed --target-triple $triple --align $align: sections differ"
			sed -n '/^Symbol table/,$p' layout.txt | sed -n 's/^ *[0-9]*: //p' | tr -s ' ' |
				sed 's/ $//' >symbols.got
			{
				echo "0000000000000000 0 NOTYPE LOCAL DEFAULT UND"
				echo "0000000000000000 0 FILE LOCAL DEFAULT ABS gpucc-embed"
				if [ "$locals" = 4 ]; then
					echo "0000000000000000 0 NOTYPE LOCAL DEFAULT 3 \$d"
					echo "0000000000000000 0 NOTYPE LOCAL DEFAULT 4 \$d"
				fi
				echo "0000000000000000 $n OBJECT GLOBAL DEFAULT 3 pkg_image"
				echo "0000000000000000 8 OBJECT GLOBAL DEFAULT 4 pkg_image_size"
			} >symbols.want
			diff symbols.want symbols.got >&2 || fail "embed --target-triple $triple --align $align: symbols differ"
			offset=$((16#$(sed -n 's/^ *\[ *3\] .rodata.gpucc *PROGBITS *[0-9a-f]* \([0-9a-f]*\) .*/\1/p' layout.txt)))
			[ $((offset % align)) = 0 ] || fail "the image's section at $offset is not aligned to $align"
			tail -c +$((offset + 1)) layout.o | head -c "$n" | cmp -s - image.gpucc ||
				fail "the image's bytes are not at its section's offset"
			at=$((16#$(sed -n 's/^ *\[ *4\] .rodata *PROGBITS *[0-9a-f]* \([0-9a-f]*\) .*/\1/p' layout.txt)))
			[ "$(tail -c +$((at + 1)) layout.o | head -c 8 | od -An -tu8 | tr -d ' ')" = "$n" ] ||
				fail "pkg_image_size does not hold $n"
		done
	done
	rm -f layout.o layout.txt sections.got sections.want symbols.got symbols.want
fi

# ---- the object is LLVM's: what llc-19 writes for the same globals, the
# image's bytes in place of the zeros.  gpucc lays the object out itself
# (lib/embed/embed_elf.c), for any size without holding the image: the
# images here are small and large, for both triples and alignments up to
# the largest.
if have llc-19 "the object against what llc-19 writes"; then
	head -c 300000 /dev/urandom > grown.ptx
	cat > grown.json <<'EOF2'
{"entries": [{"module": "r.ll", "module_sha256": "0000000000000000000000000000000000000000000000000000000000000001",
  "options": {}, "kernels": ["k"], "target": "sm_90", "ptx": "grown.ptx"}]}
EOF2
	expect_exit 0 "$GPUCC" pack -o grown.gpucc grown.json
	for image in image.gpucc grown.gpucc; do
		n=$(stat -c %s "$image")
		for triple in x86_64-pc-linux-gnu aarch64-unknown-linux-gnu; do
			for align in 1 64 4096; do
				expect_exit 0 "$GPUCC" embed "$image" -o got.o --symbol pkg_image \
					--target-triple "$triple" --align "$align"
				printf '%s\n' 'source_filename = "gpucc-embed"' \
					"@pkg_image = constant [$n x i8] zeroinitializer, section \".rodata.gpucc\", align $align" \
					"@pkg_image_size = constant i64 $n, align 8" > want.ll
				llc-19 -O0 -filetype=obj -relocation-model=pic -mtriple="$triple" want.ll -o want.o ||
					fail "llc-19 cannot emit want.ll"
				python3 - "$image" got.o want.o <<'PY' || fail "embed $image ($triple, --align $align): not llc-19's object"
import sys
image, got, want = (open(p, "rb").read() for p in sys.argv[1:])
at = got.find(image)
assert at > 0 and want[at:at + len(image)] == bytes(len(image)), "the image is not where llc-19 has its zeros"
assert got == want[:at] + image + want[at + len(image):]
PY
			done
		done
	done
	rm -f grown.ptx grown.json grown.gpucc got.o want.o want.ll
fi

# ---- memory: a 64 MiB image is not held in memory at all (it was: in a
# mapping, an LLVM constant, LLVM's output and a copy of that, 4x in all;
# then the mapping, given back after the check, and LLVM's output buffer
# of zeros and its copy, 2x): it is checked and copied through bounded
# buffers, and LLVM emits a few KiB for it.  Under the sanitizers RSS
# measures their shadow memory instead.
if [ "${SANITIZE:-none}" = none ]; then
	cp "$TESTDATA/example/saxpy.nvptx.ll" .
	python3 - <<'PY' || fail "cannot write the big payload"
import json
with open("big.ptx", "w") as f:
    f.write("// a PTX payload of 64 MiB\n" + ("// " + "x" * 124 + "\n") * (1 << 19))
json.dump({"entries": [{"module_file": "saxpy.nvptx.ll", "target": "sm_90:ptx78",
                        "options": {"opt-level": "2"}, "ptx": "big.ptx",
                        "kernels": [{"name": "saxpy", "registers": 1, "shared_bytes": 0,
                                     "scratch_bytes": 0}]}]}, open("big.json", "w"))
PY
	expect_exit 0 "$GPUCC" pack -o big.gpucc big.json
	rm big.ptx
	# peak RSS in MiB of embedding IMAGE
	peak() {
		local kib
		kib=$(peak_rss_kib "$GPUCC" embed "$1" -o peak.o --symbol big) || exit 1
		echo $((kib / 1024))
	}
	small=$(peak image.gpucc) || exit 1
	large=$(peak big.gpucc) || exit 1
	echo "peak RSS: $small MiB for a small image, $large MiB for 64 MiB"
	[ $((large - small)) -lt 32 ] ||
		fail "embedding a 64 MiB image takes $((large - small)) MiB more than a small one"
	expect_exit 0 "$GPUCC" embed big.gpucc -o big.o --symbol big
	# the image's bytes sit in the object whole (readelf gives large sizes in hex)
	python3 - big.gpucc big.o <<'PY' || fail "big.o does not hold the image's bytes"
import sys
image, obj = (open(p, "rb").read() for p in sys.argv[1:])
assert obj.find(image) > 0
PY
	rm -f big.gpucc big.o peak.o
else
	skip_block "embedding a 64 MiB image in bounded memory (under the sanitizers RSS is their shadow memory)"
fi

# ---- linking: a PIE and a shared library, the image opened from the latter
have readelf "an embedded image linked into a PIE and a shared library" || { echo ok; exit 0; }
expect_exit 0 "$GPUCC" embed image.gpucc -o embedded.o --symbol embedded_image --header embedded.h
cc -shared -fPIC -o libembedded.so embedded.o || fail "the object does not link into a shared library"
cc -std=c11 -fPIE -pie $SANITIZE_CFLAGS -I. -I"$SRCROOT/lib/include" -I"$BUILDDIR/lib/include" -o from_shared \
	"$SRCROOT/cmd/tests/embed_roundtrip.c" -L. -lembedded -Wl,-rpath,"$TEST_DIR" \
	-L"$BUILDDIR/lib" -lgpucc -Wl,-rpath,"$BUILDDIR/lib" 2>cc.err ||
	{ cat cc.err >&2; fail "a program using the shared library does not link"; }
cc -std=c11 -fPIE -pie $SANITIZE_CFLAGS -I. -I"$SRCROOT/lib/include" -I"$BUILDDIR/lib/include" -o from_pie \
	"$SRCROOT/cmd/tests/embed_roundtrip.c" embedded.o \
	-L"$BUILDDIR/lib" -lgpucc -Wl,-rpath,"$BUILDDIR/lib" 2>cc.err ||
	{ cat cc.err >&2; fail "the object does not link into a PIE"; }
for program in from_shared from_pie; do
	expect_exit 0 "./$program" back.gpucc
	assert_same image.gpucc back.gpucc
done
for linked in libembedded.so from_pie; do
	readelf -dW "$linked" >dynamic.txt
	assert_no_grep TEXTREL dynamic.txt
	readelf -lW "$linked" >segments.txt
	assert_grep "GNU_STACK .* RW " segments.txt
	assert_no_grep "GNU_STACK .* RWE " segments.txt
done
readelf -SW embedded.o >sections.txt
assert_grep "\.rodata\.gpucc .* A .* 64$" sections.txt
assert_grep "\.note\.GNU-stack" sections.txt
echo ok
