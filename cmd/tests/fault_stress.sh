# cmd/tests/fault_stress.sh -- scripts/stress at test-suite size: 40 kills
# (-9, at random moments) of real compiles, merges, imports and gc, checking
# after each that outputs and the cache verify and nothing published is lost;
# then 16 processes for 8 seconds mixing compile, import, merge, gc,
# snapshot, delta and checked reads on one cache.  The seed is printed, so a
# failure reproduces with `scripts/stress --seed N`.
. "$SRCROOT/cmd/tests/lib.sh"

"$SRCROOT/scripts/stress" --kills 40 --seconds 8 --procs 16 --work "$TEST_DIR/stress" \
	>stress.out 2>&1
rc=$?
cat stress.out
[ "$rc" = 0 ] || fail "scripts/stress failed (exit $rc)"
assert_grep "^stress: ok (seed [0-9]*): (a) .* 10 compile, 10 merge, 10 import, 10 gc" stress.out
assert_grep "nothing lost$" stress.out
