# install_example_package: `meson install` into a temporary destination
# gives gpucc, libgpucc (shared and static), the public headers, gpucc.pc,
# the LLVM backend module, a man page per command and bash completion; the
# example package (testdata/example-package) then builds against that
# install through pkg-config and PATH -- snapshot, compile, delta, embed --
# and starts: it resolves its kernel per target, and reports that no GPU is
# present on a machine without one.
. "$SRCROOT/cmd/tests/lib.sh"
command -v meson >/dev/null && command -v pkg-config >/dev/null || skip "no meson or pkg-config"
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
assert_file "$libdir/gpucc/libgpucc-llvm.so"
for h in gpucc.h gpucc/common.h gpucc/image.h gpucc/runtime.h gpucc/compile.h; do
	[ -n "$(find "$dest" -path "*/include/$h")" ] || fail "header $h not installed"
done
assert_file "$share/bash-completion/completions/gpucc"
bash -n "$share/bash-completion/completions/gpucc" || fail "the completion script does not parse"

# One man page per command of `gpucc help`, and gpucc(1).
"$GPUCC" help | sed -n '/^commands:/,/^$/p' | sed -n 's/^  \([a-z][a-z ]*[a-z]\)  .*/\1/p' |
	grep -v '^help$' | while read -r c; do
		page="$share/man/man1/gpucc-$(echo "$c" | tr ' ' '-').1"
		[ -f "$page" ] || { echo "missing $page" >&2; exit 1; }
	done || fail "a command has no man page (cmd/man/meson.build)"
assert_file "$share/man/man1/gpucc.1"
grep -q '^\.SH OPTIONS' "$share/man/man1/gpucc-embed.1" || fail "gpucc-embed.1 has no OPTIONS"
grep -q 'symbol' "$share/man/man1/gpucc-embed.1" || fail "gpucc-embed.1 lacks the -h text"

# The example package, against the install only.
export PATH="$bindir:$PATH" PKG_CONFIG_PATH="$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest"
export LD_LIBRARY_PATH="$libdir"
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
echo ok
