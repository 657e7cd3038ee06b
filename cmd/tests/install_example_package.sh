# install_example_package: `meson install` into a temporary destination
# gives gpucc, libgpucc (shared and static), the public headers, gpucc.pc,
# the LLVM backend module, a man page per command and bash completion; the
# example package (testdata/example-package) then builds against that
# install -- one gpucc compile of its HIP and CUDA sources, then gpucc
# embed; with Meson (pkg-config and PATH) and with CMake (find_package,
# gpucc_add_image, gpucc_embed), into the same image -- and starts: it
# resolves its kernel per target, and reports that no GPU is present on a
# machine without one.  As a packager would check: the
# installed gpucc carries libgpucc (linked statically) and compiles from
# where it was staged (its backend found relative to it), the shared
# library has a SONAME and exports exactly the public API, each
# header compiles alone in C and C++, gpucc.pc links libgpucc.a, the man
# pages are clean roff with an EXIT STATUS, completion completes; and the
# example links statically, and rebuilds its image when a kernel or a
# header it includes changes (the dependency file), and only then.
. "$SRCROOT/cmd/tests/lib.sh"
command -v meson >/dev/null && command -v pkg-config >/dev/null || skip "no meson or pkg-config"
command -v clang-19 >/dev/null || skip "no clang-19: the example package's kernels are HIP and CUDA sources (scripts/setup installs clang-19)"
"$GPUCC" --version | grep -q "LLVM none" && skip "built without the LLVM backend"

dest=$TEST_DIR/inst
meson install -C "$BUILDDIR" --destdir "$dest" --no-rebuild --quiet >install.log 2>&1 ||
	{ cat install.log >&2; fail "meson install failed"; }
pc=$(find "$dest" -name gpucc.pc | head -1)
[ -n "$pc" ] || fail "gpucc.pc not installed"
libdir=$(dirname "$(dirname "$pc")")
bindir=$(dirname "$(find "$dest" -path '*/bin/gpucc' | head -1)")
share=$(find "$dest" -type d -name share | head -1)
assert_file "$bindir/gpucc"
assert_file "$libdir/libgpucc.a"
[ -e "$libdir/libgpucc.so" ] || fail "libgpucc.so not installed"
for module in "$BUILDDIR"/lib/backend_llvm/libgpucc-llvm*.so; do # each LLVM's backend
	major=${module##*/libgpucc-llvm}
	major=${major%.so}
	assert_file "$libdir/gpucc/libgpucc-llvm$major.so"
	assert_file "$libdir/gpucc/gpucc-compile-worker-$major"
done
assert_file "$libdir/cmake/gpucc/gpucc-config.cmake"
assert_file "$libdir/cmake/gpucc/gpucc-config-version.cmake"
for h in gpucc.h gpucc/common.h gpucc/image.h gpucc/runtime.h gpucc/compile.h; do
	[ -n "$(find "$dest" -path "*/include/$h")" ] || fail "header $h not installed"
done
assert_file "$share/bash-completion/completions/gpucc"
bash -n "$share/bash-completion/completions/gpucc" || fail "the completion script does not parse"

# The installed gpucc finds its LLVM backend relative to itself: staged
# under $dest, not in the configured prefix, it runs and compiles (a fresh
# cache: every key misses) without help.
env -u LD_LIBRARY_PATH -u GPUCC_BACKEND "$bindir/gpucc" compile "$TESTDATA/example/kernels/saxpy.amdgpu.ll" \
	-t gfx90a --cache relocated-cache -o relocated.gpucc >relocated.log 2>&1 ||
	{ cat relocated.log >&2; fail "the installed gpucc does not compile from where it was installed"; }
# The SONAME names the ABI: major.minor while the version is 0.x, whose
# minor releases may break it (0.3.0 did), as libgit2's does.
version=$("$GPUCC" --version | sed -n '1s/^gpucc //p')
case $version in
0.*) soname=libgpucc.so.$(echo "$version" | cut -d. -f1,2) ;;
*) soname=libgpucc.so.$(echo "$version" | cut -d. -f1) ;;
esac
if have readelf "the installed library's soname"; then
	readelf -d "$bindir/gpucc" >dynamic.txt
	assert_no_grep 'libgpucc' dynamic.txt
	assert_no_grep 'R.*PATH' dynamic.txt
	readelf -d "$libdir/libgpucc.so" >dynamic.txt
	assert_grep "SONAME.*\\[$soname\\]" dynamic.txt
	[ -L "$libdir/libgpucc.so" ] && [ -L "$libdir/$soname" ] || fail "libgpucc.so and $soname should be links"
fi

# libgpucc.so exports exactly the functions the headers declare GPUCC_API.
if have nm "what libgpucc.so exports"; then
	nm -D --defined-only "$libdir/libgpucc.so" | awk '{ print $3 }' |
		grep -v '^_' | sort >exported.txt # toolchain symbols (__bss_start, sanitizers)
	inc=$(dirname "$(find "$dest" -path '*/include/gpucc.h' | head -1)")
	cat "$inc"/gpucc/*.h | tr '\n' ' ' | sed 's/GPUCC_API/\n&/g' |
		sed -n 's/^GPUCC_API [^(]*[ *]\(gpucc_[a-z0-9_]*\) *(.*/\1/p' | sort -u >declared.txt
	[ "$(wc -l <declared.txt)" -gt 100 ] || fail "found only $(wc -l <declared.txt) GPUCC_API declarations"
	diff declared.txt exported.txt >exports.diff || { cat exports.diff >&2; fail "libgpucc.so's exports differ from the public headers (< declared only, > exported only)"; }
fi

# Each public header compiles alone, as C99 and as C++, pedantically.
inc=$(dirname "$(find "$dest" -path '*/include/gpucc.h' | head -1)")
for h in gpucc.h gpucc/version.h gpucc/common.h gpucc/image.h gpucc/cache.h gpucc/snapshot.h gpucc/compile.h gpucc/runtime.h; do
	printf '#include <%s>\nint main(void) { return 0; }\n' "$h" >header.c
	cc -std=c99 -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$inc" header.c 2>header.err ||
		{ cat header.err >&2; fail "$h does not compile alone as C99"; }
	if have c++ "$h compiled alone as C++"; then
		c++ -x c++ -std=c++11 -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$inc" header.c 2>header.err ||
			{ cat header.err >&2; fail "$h does not compile alone as C++11"; }
	fi
done
grep -q '^#define GPUCC_VERSION "'"$("$GPUCC" --version | sed -n '1s/^gpucc //p')"'"' "$inc/gpucc/version.h" ||
	fail "GPUCC_VERSION in gpucc/version.h is not the version gpucc reports"

# Completion, as bash calls it: `gpucc cache pr<TAB>`, `gpucc cache prune --ol<TAB>`.
complete_words() {
	PATH="$bindir:$PATH" bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _gpucc; echo "${COMPREPLY[*]}"' \
		_ "$share/bash-completion/completions/gpucc" "$@"
}
[ "$(complete_words gpucc cache pr)" = prune ] || fail "gpucc cache pr<TAB> gives '$(complete_words gpucc cache pr)', not prune"
[ "$(complete_words gpucc cache prune --ol)" = --older-than ] || fail "gpucc cache prune --ol<TAB> does not give --older-than"
[ "$(complete_words gpucc help cache pr)" = prune ] || fail "gpucc help cache pr<TAB> does not give prune"
# An option's value completes as -h names it: DIR a directory, IMAGE a file,
# TARGET nothing.
mkdir -p compdir.d && : >compdir.f
[ "$(complete_words gpucc extract x.gpucc -C compdir)" = compdir.d ] || fail "extract -C compdir<TAB> does not give only the directory"
[ "$(complete_words gpucc merge --into compdir)" = compdir.d ] || fail "merge --into compdir<TAB> does not give only the directory"
[ "$(complete_words gpucc list compdir | tr " " "\n" | sort | tr "\n" " ")" = "compdir.d compdir.f " ] || fail "list compdir<TAB> does not give both"
[ -z "$(complete_words gpucc compile -t compdir)" ] || fail "compile -t<TAB> completes file names"

# One man page per command of `gpucc help`, and gpucc(1).
"$GPUCC" help | sed -n '/^commands:/,/^$/p' | sed -n 's/^  \([a-z][a-z ]*[a-z]\)  .*/\1/p' |
	grep -v '^help$' | while read -r c; do
		page="$share/man/man1/gpucc-$(echo "$c" | tr ' ' '-').1"
		[ -f "$page" ] || { echo "missing $page" >&2; exit 1; }
	done || fail "a command has no man page (cmd/man/meson.build)"
assert_file "$share/man/man1/gpucc.1"
grep -q '^\.SH OPTIONS' "$share/man/man1/gpucc-embed.1" || fail "gpucc-embed.1 has no OPTIONS"
grep -q 'symbol' "$share/man/man1/gpucc-embed.1" || fail "gpucc-embed.1 lacks the -h text"
for page in "$share"/man/man1/*.1; do
	for section in NAME SYNOPSIS DESCRIPTION OPTIONS 'EXIT STATUS'; do
		grep -q "^\.SH $section\$" "$page" || fail "$(basename "$page") has no $section section"
	done
done
if have groff "the man pages' roff"; then
	for page in "$share"/man/man1/*.1; do
		groff -man -ww -z "$page" 2>groff.err && [ ! -s groff.err ] ||
			{ cat groff.err >&2; fail "$(basename "$page"): groff warns"; }
	done
fi

# The example package, against the install only.
export PATH="$bindir:$PATH" PKG_CONFIG_PATH="$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest"
export LD_LIBRARY_PATH="$libdir"

# gpucc.pc: the version gpucc reports; for a static link, libgpucc.a's own
# needs (threads, libdl) and not libarchive or libcrypto, which libgpucc
# dlopen()s: their .pc files would drag in libraries that are not even
# installed.
[ "$(pkg-config --modversion gpucc)" = "$("$GPUCC" --version | sed -n '1s/^gpucc //p')" ] ||
	fail "gpucc.pc's version is not gpucc's"
pkg-config --print-requires-private gpucc >requires.txt
assert_no_grep 'libarchive' requires.txt
assert_no_grep 'libcrypto' requires.txt
pkg-config --static --libs gpucc >static-libs.txt || fail "pkg-config --static --libs gpucc failed"
assert_grep '-lpthread\|-ldl' static-libs.txt
assert_no_grep '-larchive' static-libs.txt
assert_no_grep '-lcrypto' static-libs.txt
meson setup ex "$SRCROOT/testdata/example-package" -Db_sanitize="${SANITIZE:-none}" -Db_lundef=false >setup.log 2>&1 ||
	{ tail -30 setup.log >&2; fail "the example package does not configure"; }
ninja -C ex >build.log 2>&1 || { tail -30 build.log >&2; fail "the example package does not build"; }
"$GPUCC" list ex/saxpy.gpucc >list.txt
assert_grep "sm_90" list.txt
assert_grep "gfx90a" list.txt

expect_exit 0 ex/example-saxpy --target gfx90a
assert_grep "kernels ready in .* saxpy for gfx90a: gfx90a hsaco" out
expect_exit 0 ex/example-saxpy --target sm_90
assert_grep "kernels ready in .* saxpy for sm_90: sm_90:ptx78" out
expect_exit 1 ex/example-saxpy --target gfx942
assert_grep "runs on gfx942: the image has" err
expect_exit 0 ex/example-saxpy
if grep -q "no GPU present" out; then
	assert_grep "no GPU found" out
else
	assert_grep "kernels ready in .* saxpy loaded on" out
fi
# The path the image avoids: compiling in process at start-up, for a named
# target, or for the GPU present and loading the result there.
expect_exit 0 ex/example-saxpy --compile-at-startup sm_90
assert_grep "kernels ready in .* saxpy compiled at start-up for sm_90" out
expect_exit 0 ex/example-saxpy --compile-at-startup device
if grep -q "no GPU present" out; then
	assert_grep "no GPU found" out
else
	assert_grep "kernels ready in .* saxpy compiled at start-up and loaded on" out
fi
# docs/design.md invariant 8, as the dynamic loader reports it: choosing and
# reading the kernel for a named target loads neither LLVM, nor a GPU
# runtime, nor libarchive (the image is uncompressed); asking for the GPU
# loads its runtime and still no LLVM.
loaded_libraries() { LD_DEBUG=libs "$@" 2>&1 >/dev/null | sed -n 's/.*calling init: //p'; }
loaded_libraries ex/example-saxpy --target gfx90a >loaded.txt
assert_grep 'libgpucc' loaded.txt
assert_no_grep 'libLLVM\|libgpucc-llvm\|libamdhip64\|libcuda\|libarchive' loaded.txt
loaded_libraries ex/example-saxpy >loaded.txt
assert_no_grep 'libLLVM\|libgpucc-llvm\|libarchive' loaded.txt
# Timed from process start when the caller says when that was (scripts/demo).
SAXPY_START_NS=$(date +%s%N) expect_exit 0 ex/example-saxpy --target gfx90a
assert_grep "kernels ready in .* ms from process start (.* ms of it in main): saxpy for gfx90a" out

# Linked statically (pkg-config --static): no libgpucc.so needed to start.
meson setup ex-static "$SRCROOT/testdata/example-package" -Dstatic_gpucc=true \
	-Db_sanitize="${SANITIZE:-none}" -Db_lundef=false >setup.log 2>&1 ||
	{ tail -30 setup.log >&2; fail "the example package does not configure with static_gpucc"; }
ninja -C ex-static >build.log 2>&1 || { tail -30 build.log >&2; fail "the example package does not link libgpucc.a"; }
if have readelf "the static example's dynamic section"; then
	readelf -d ex-static/example-saxpy >dynamic.txt
	assert_no_grep 'libgpucc' dynamic.txt
fi
env -u LD_LIBRARY_PATH ex-static/example-saxpy --target sm_90 >out 2>err ||
	{ cat err >&2; fail "the statically linked example does not start"; }
assert_grep "kernels ready in .* saxpy for sm_90: sm_90:ptx78" out
loaded_libraries env -u LD_LIBRARY_PATH ex-static/example-saxpy --target sm_90 >loaded.txt
assert_no_grep 'libgpucc\|libLLVM\|libamdhip64\|libcuda\|libarchive' loaded.txt

# A package for one vendor's GPUs: gpu_targets of AMD targets only embeds
# the AMD module alone (compile refuses an NVIDIA module in a run with no
# NVIDIA target), and the NVIDIA target is then cleanly not there.
meson setup ex-amd "$SRCROOT/testdata/example-package" -Dgpu_targets=gfx942 \
	-Db_sanitize="${SANITIZE:-none}" -Db_lundef=false >setup.log 2>&1 ||
	{ tail -30 setup.log >&2; fail "the example package does not configure for gfx942 alone"; }
ninja -C ex-amd >build.log 2>&1 || { tail -30 build.log >&2; fail "the example package does not build for gfx942 alone"; }
expect_exit 0 ex-amd/example-saxpy --target gfx942
assert_grep "kernels ready in .* saxpy for gfx942: gfx942 hsaco" out
expect_exit 1 ex-amd/example-saxpy --target sm_90
assert_grep "the image has no NVIDIA code" err

# The image steps re-run when a kernel changes, and only then.
cp -R "$SRCROOT/testdata/example-package" pkg
meson setup ex-edit pkg -Db_sanitize="${SANITIZE:-none}" -Db_lundef=false >setup.log 2>&1 ||
	{ tail -30 setup.log >&2; fail "the copied example package does not configure"; }
ninja -C ex-edit >build.log 2>&1 || { tail -30 build.log >&2; fail "the copied example package does not build"; }
cp ex-edit/saxpy.gpucc before.gpucc
ninja -C ex-edit >build.log 2>&1
assert_grep "no work to do" build.log
printf 'extern "C" __global__ void other(float *y) { y[0] = 1.0f; }\n' >>pkg/kernels/saxpy.hip
ninja -C ex-edit >build.log 2>&1 || { tail -30 build.log >&2; fail "the example does not rebuild"; }
assert_grep "saxpy-kernels" build.log
cmp -s before.gpucc ex-edit/saxpy.gpucc && fail "a changed kernel left the embedded image as it was"
"$GPUCC" list before.gpucc | grep gfx90a >before.txt
"$GPUCC" list ex-edit/saxpy.gpucc | grep gfx90a >after.txt
cmp -s before.txt after.txt && fail "a changed kernel kept its key"
# ... and when a header the kernels include changes (gpucc compile's
# dependency file, through meson's depfile:), and only then.
ninja -C ex-edit >build.log 2>&1
assert_grep "no work to do" build.log
cp ex-edit/saxpy.gpucc before.gpucc
sleep 1 # ninja compares modification times: a second apart on any file system
sed -i 's/a \* x + y/a * x + y + 0.0f/' pkg/kernels/saxpy_op.h
grep -q '0.0f' pkg/kernels/saxpy_op.h || fail "the header edit did not take"
ninja -C ex-edit >build.log 2>&1 || { tail -30 build.log >&2; fail "the example does not rebuild after a header edit"; }
assert_grep "saxpy-kernels" build.log
cmp -s before.gpucc ex-edit/saxpy.gpucc && fail "a changed header left the embedded image as it was"
ninja -C ex-edit >build.log 2>&1
assert_grep "no work to do" build.log

# The same package with CMake, through find_package(gpucc): gpucc_add_image
# runs gpucc compile with its dependency file, gpucc_embed gpucc embed; the
# image is the Meson build's, byte for byte.
if have cmake "the example package built with CMake"; then
	cmake_dir=$libdir/cmake/gpucc
	# The sanitizers of the build under test, as b_sanitize gives the Meson
	# builds above (a program linking an ASan libgpucc must link ASan).
	cmake -S "$SRCROOT/testdata/example-package" -B cm -DGPU_TARGETS="sm_90:ptx78;gfx90a" \
		-Dgpucc_DIR="$cmake_dir" -DCMAKE_C_FLAGS="$SANITIZE_CFLAGS" \
		>cmake.log 2>&1 || { tail -30 cmake.log >&2; fail "the example package does not configure with CMake"; }
	cmake --build cm >cmake-build.log 2>&1 || { tail -30 cmake-build.log >&2; fail "the example package does not build with CMake"; }
	assert_grep "gpucc compile: saxpy_image for" cmake-build.log
	assert_same ex/saxpy.gpucc cm/saxpy.gpucc
	assert_file cm/saxpy.gpucc.d
	expect_exit 0 cm/example-saxpy --target gfx90a
	assert_grep "kernels ready in .* saxpy for gfx90a: gfx90a hsaco" out
	expect_exit 0 cm/example-saxpy --target sm_90
	assert_grep "kernels ready in .* saxpy for sm_90: sm_90:ptx78" out
	cmake --build cm >cmake-build.log 2>&1 || fail "the CMake build does not rebuild"
	assert_no_grep "gpucc compile" cmake-build.log
	# A header edit rebuilds the image through CMake's DEPFILE, and only
	# then; gpucc::gpucc_static links libgpucc.a.
	cmake -S pkg -B cm-edit -DGPU_TARGETS="sm_90:ptx78;gfx90a" -DSTATIC_GPUCC=ON \
		-Dgpucc_DIR="$cmake_dir" -DCMAKE_C_FLAGS="$SANITIZE_CFLAGS" >cmake.log 2>&1 ||
		{ tail -30 cmake.log >&2; fail "the copied package does not configure with CMake"; }
	cmake --build cm-edit >cmake-build.log 2>&1 || { tail -30 cmake-build.log >&2; fail "the copied package does not build with CMake"; }
	if have readelf "the CMake build's dynamic section"; then
		readelf -d cm-edit/example-saxpy >dynamic.txt
		assert_no_grep 'libgpucc' dynamic.txt
	fi
	cp cm-edit/saxpy.gpucc before.gpucc
	sleep 1
	sed -i 's/ + 0.0f/ + 0.0f + 0.0f/' pkg/kernels/saxpy_op.h
	cmake --build cm-edit >cmake-build.log 2>&1 || { tail -30 cmake-build.log >&2; fail "the CMake build does not rebuild after a header edit"; }
	assert_grep "gpucc compile" cmake-build.log
	cmp -s before.gpucc cm-edit/saxpy.gpucc && fail "CMake: a changed header left the image as it was"
	cmake --build cm-edit >cmake-build.log 2>&1
	assert_no_grep "gpucc compile" cmake-build.log
	# TARGETS left out: CMAKE_HIP_ARCHITECTURES (for HIP sources) names
	# them; a version the install is not is refused by find_package.
	mkdir -p tiny
	cp "$SRCROOT/testdata/example-package/kernels/saxpy.hip" "$SRCROOT/testdata/example-package/kernels/saxpy_op.h" tiny/
	cat >tiny/CMakeLists.txt <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(tiny LANGUAGES C)
find_package(gpucc ${WANT} REQUIRED)
gpucc_add_image(tiny_image SOURCES saxpy.hip CACHE gpucc-cache)
EOF
	cmake -S tiny -B tiny-build -DWANT=0.4 -DCMAKE_HIP_ARCHITECTURES=gfx942 -Dgpucc_DIR="$cmake_dir" \
		>cmake.log 2>&1 || { tail -30 cmake.log >&2; fail "CMake: TARGETS from CMAKE_HIP_ARCHITECTURES"; }
	cmake --build tiny-build >cmake-build.log 2>&1 || { tail -30 cmake-build.log >&2; fail "CMake: the tiny image does not build"; }
	"$GPUCC" list tiny-build/tiny_image.gpucc >list.txt
	assert_grep "gfx942" list.txt
	cmake -S tiny -B tiny-old -DWANT=9.0 -Dgpucc_DIR="$cmake_dir" >cmake.log 2>&1 &&
		fail "CMake: find_package(gpucc 9.0) took gpucc $version"
	assert_grep "version" cmake.log
fi
echo ok
