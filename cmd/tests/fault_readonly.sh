# cmd/tests/fault_readonly.sh -- a cache that cannot be written (docs/design.md
# invariant 7): `chmod -R a-w` run by an unprivileged user (root ignores
# permissions, so the commands run as nobody through setpriv), and a
# read-only bind mount run by root.  Either way `gpucc compile` succeeds with
# the same image as without a cache, hits what the cache holds, prints
# exactly one warning line naming the cache and why, and changes nothing in
# the cache; every read command works on it; writing commands fail in one
# line.  Needs the LLVM backend for compiling: without it, that part is
# skipped with a note.
. "$SRCROOT/cmd/tests/lib.sh"

kernels=$TESTDATA/kernels
cache=$TEST_DIR/cache
expect_exit 0 "$GPUCC" compile "$kernels/nvptx/vector_add.ll" --target sm_90 --cache "$cache"
have_backend=1
if grep -q "unavailable\|cannot load" err; then
	have_backend=0
	skip_block "the compile part (no LLVM backend)"
fi
mods="$kernels/nvptx/vector_add.ll $kernels/nvptx/math.ll $kernels/amdgpu/math.ll"
# shellcheck disable=SC2086
expect_exit 0 "$GPUCC" compile $mods --target sm_90 --target gfx90a --no-cache -o want.gpucc
"$GPUCC" snapshot "$cache" -o before.snap >/dev/null 2>&1 || fail "cannot snapshot the cache"
key=$("$GPUCC" snapshot --show "$cache" | cut -c1-64)
(cd "$cache" && find . -printf '%p %s %T@\n' | sort) > before.files

# check_untouched: the cache holds the same files, of the same size and time.
check_untouched() {
	(cd "$cache" && find . -printf '%p %s %T@\n' | sort) > after.files
	cmp -s before.files after.files || { diff before.files after.files >&2; fail "$1 changed the cache"; }
}

# check_readonly RUN: RUN CMD... runs CMD against the read-only cache.
check_readonly() {
	local run=$1 why=$2 out=$TEST_DIR/out-$1
	rm -rf "$out"; mkdir "$out"; chmod a+rwx "$out"
	if [ "$have_backend" = 1 ]; then
		# shellcheck disable=SC2086
		"$run" "$GPUCC" compile $mods --target sm_90 --target gfx90a --cache "$cache" \
			-o "$out/k.gpucc" >out 2>err || { cat err >&2; fail "$run: compile with a read-only cache failed"; }
		assert_one_line err
		assert_grep "^gpucc compile: warning: .*'$cache' is read-only ($why)" err
		assert_same "$out/k.gpucc" want.gpucc
		# --json says what hit: the cached entry did
		"$run" "$GPUCC" compile $mods --target sm_90 --target gfx90a --cache "$cache" --json \
			>out 2>err || fail "$run: compile --json with a read-only cache failed"
		assert_grep '"hits":1,' out
		assert_one_line err
		check_untouched "$run: compile"
	fi
	"$run" "$GPUCC" cache lookup --cache "$cache" "$key" >out 2>err || fail "$run: lookup failed"
	assert_grep "^hit" out
	"$run" "$GPUCC" cache verify --cache "$cache" >out 2>err || { cat err >&2; fail "$run: cache verify failed"; }
	assert_grep ": ok (1 entry," out
	"$run" "$GPUCC" cache stats --cache "$cache" >out 2>err || fail "$run: stats failed"
	"$run" "$GPUCC" snapshot "$cache" -o "$out/s.snap" >out 2>err || fail "$run: snapshot failed"
	assert_same "$out/s.snap" before.snap
	"$run" "$GPUCC" merge -q "$cache" -o "$out/m.gpucc" >out 2>err || fail "$run: merge from it failed"
	"$run" "$GPUCC" cat "$cache/v1/${key:0:2}/$key.gpucc" "$key" --part ptx >out 2>err ||
		fail "$run: cat of an entry failed"
	"$run" "$GPUCC" cache import --cache "$cache" "$out/m.gpucc" >out 2>err &&
		fail "$run: import into a read-only cache succeeded"
	assert_one_line err
	assert_grep "read-only" err
	"$run" "$GPUCC" cache gc --cache "$cache" >out 2>err && fail "$run: gc of a read-only cache succeeded"
	assert_one_line err
	check_untouched "$run: reading"
}

# ---- chmod -R a-w, as an unprivileged user
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
if [ "$(id -u)" != 0 ]; then
	chmod -R a-w "$cache"
	as_user() { "$@"; }
	check_readonly as_user "Permission denied"
	chmod -R u+w "$cache"
elif as_nobody true 2>/dev/null && as_nobody test -x "$GPUCC" && as_nobody test -r "$kernels/nvptx/math.ll"; then
	chmod a+rx "$TEST_DIR"
	chmod -R a-w "$cache"
	check_readonly as_nobody "Permission denied"
	chmod -R u+w "$cache"
else
	skip_block "a cache made read-only by chmod (root, and gpucc cannot run as nobody)"
fi

# ---- a read-only bind mount, as root
if can_mount "a cache on a read-only bind mount"; then
	ro_mount() {
		unshare -m sh -c 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && exec "$@"' \
			"$cache" "$@"
	}
	check_readonly ro_mount "Read-only file system"
fi
echo ok
