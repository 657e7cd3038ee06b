# cmd/tests/algebra_ci_example.sh -- runs scripts/ci-example (base snapshot,
# per-target jobs with their own caches and deltas, a final merge) and checks
# the package image: every job's entries, none of the base's, verified; and
# again with one target.
. "$SRCROOT/cmd/tests/lib.sh"

"$GPUCC" compile -h >/dev/null 2>&1 || skip "gpucc compile is not built"
GPUCC="$GPUCC" sh "$SRCROOT/scripts/ci-example" "$TEST_DIR/ci" >out 2>err
rc=$?
if [ "$rc" = 6 ]; then
	skip "the LLVM backend is not available: $(tail -1 err)"
fi
[ "$rc" = 0 ] || { cat out err >&2; fail "scripts/ci-example exited $rc"; }
assert_grep "order-independent: ok" out
pkg="$TEST_DIR/ci/package/package.gpucc"
expect_exit 0 "$GPUCC" verify "$pkg"
expect_exit 0 "$GPUCC" list "$pkg"
# 4 targets x 2 package modules; the shared kernel stays in the base
[ "$(tail -n +2 out | wc -l)" -eq 8 ] || { cat out >&2; fail "the package should hold 8 entries"; }
assert_no_grep "vector_add" out
for t in sm_80 sm_90 gfx90a gfx1030; do
	assert_grep " $t" out
done

# One target (so one vendor, and one delta to merge): the base job compiled
# every vendor's shared module for it (exit 5), and the tree merge took a
# second delta there was none of.
CI_TARGETS=gfx90a GPUCC="$GPUCC" sh "$SRCROOT/scripts/ci-example" "$TEST_DIR/ci1" >out 2>err
rc=$?
[ "$rc" = 0 ] || { cat out err >&2; fail "scripts/ci-example with CI_TARGETS=gfx90a exited $rc"; }
assert_grep "order-independent: ok" out
expect_exit 0 "$GPUCC" list "$TEST_DIR/ci1/package/package.gpucc"
[ "$(tail -n +2 out | wc -l)" -eq 2 ] || { cat out >&2; fail "the package should hold 2 entries"; }
echo ok
