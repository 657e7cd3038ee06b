# cmd/tests/algebra_conflicts.sh -- one key with different contents: merge,
# delta and import fail naming the key and both sources (exit 4) and write
# nothing; --on-conflict=first|last choose; identical duplicates collapse.
. "$SRCROOT/cmd/tests/lib.sh"
. "$SRCROOT/cmd/tests/algebra_helpers.sh"

make_image A.gpucc K 0 4 v1
make_image A2.gpucc K 0 4 v1        # identical to A
make_image B.gpucc K 2 4 v2         # K-2, K-3 conflict with A
key2=$("$GPUCC" snapshot --show B.gpucc | cut -c1-64 | sort | head -1)

# merge: fails, names a conflicting key and both inputs, writes nothing
expect_exit 4 "$GPUCC" merge A.gpucc B.gpucc -o out.gpucc
assert_one_line err
assert_grep "conflict: key [0-9a-f]\{64\} has different contents in 'A.gpucc' and 'B.gpucc'" err
assert_no_file out.gpucc
ls -a | grep -q '\.tmp\.' && fail "temporary files left behind"
expect_exit 4 "$GPUCC" merge B.gpucc A.gpucc -o out.gpucc
assert_grep "in 'B.gpucc' and 'A.gpucc'" err
# an existing output is left as it was
cp A.gpucc keep.gpucc
expect_exit 4 "$GPUCC" merge keep.gpucc B.gpucc -o keep.gpucc
assert_same keep.gpucc A.gpucc

# identical duplicates collapse silently
expect_exit 0 "$GPUCC" merge A.gpucc A2.gpucc -o AA.gpucc
assert_no_grep "warning" err
assert_same AA.gpucc A.gpucc

# first and last choose; each conflict is reported
expect_exit 0 "$GPUCC" merge A.gpucc B.gpucc --on-conflict=first -o first.gpucc
[ "$(grep -c 'warning: conflict' err)" -eq 2 ] || fail "two conflicts should be reported"
expect_exit 0 "$GPUCC" merge A.gpucc B.gpucc --on-conflict=last -o last.gpucc
# -q leaves out the summary, not the conflicts (-h said "print nothing")
for cmd in "merge A.gpucc B.gpucc --on-conflict=first -o q.gpucc" \
	"delta B.gpucc --since A.gpucc --on-conflict=last -o q.gpucc"; do
	expect_exit 0 $GPUCC $cmd -q
	[ "$(wc -l < err)" -eq 2 ] && [ "$(grep -c 'warning: conflict' err)" -eq 2 ] ||
		{ cat err >&2; fail "$cmd -q should print its two conflicts and nothing else"; }
	expect_exit 0 $GPUCC ${cmd%% *} -h
	assert_grep "^  -q, --quiet .*no summary line on success (warnings, such as conflicts" out
done
make_image A01.gpucc K 0 2 v1
make_image B2345.gpucc K 2 4 v2
make_image A23.gpucc K 2 2 v1
make_image B45.gpucc K 4 2 v2
expect_exit 0 "$GPUCC" merge A01.gpucc B2345.gpucc -o want_last.gpucc
assert_same last.gpucc want_last.gpucc
expect_exit 0 "$GPUCC" merge A.gpucc B45.gpucc -o want_first.gpucc
assert_same first.gpucc want_first.gpucc
expect_exit 129 "$GPUCC" merge A.gpucc B.gpucc --on-conflict=newest -o x.gpucc
assert_no_file x.gpucc

# delta: a key in both with other contents is reported, not dropped
expect_exit 0 "$GPUCC" snapshot A.gpucc -o A.snap
expect_exit 4 "$GPUCC" delta B.gpucc --since A.snap -o d.gpucc
assert_grep "conflict: key [0-9a-f]\{64\} has different contents in 'A.snap' and 'B.gpucc'" err
assert_no_file d.gpucc
expect_exit 0 "$GPUCC" delta B.gpucc --since A.snap --on-conflict=last -o d.gpucc
[ "$(keys_of d.gpucc | wc -l)" -eq 4 ] || fail "--on-conflict=last takes the conflicting entries too"
expect_exit 0 "$GPUCC" delta B.gpucc --since A.snap --on-conflict=first -o d.gpucc
[ "$(keys_of d.gpucc | wc -l)" -eq 2 ] || fail "--on-conflict=first leaves them out"
assert_grep "warning: conflict" err

# import into a cache: conflicts among inputs are found before writing;
# conflicts with the cache name the cache
export GPUCC_CACHE_DIR="$TEST_DIR/cache"
expect_exit 4 "$GPUCC" cache import A.gpucc B.gpucc
assert_grep "'A.gpucc' and 'B.gpucc'" err
expect_exit 0 "$GPUCC" cache stats --json
assert_grep '"entries": 0' out
expect_exit 0 "$GPUCC" cache import A.gpucc
expect_exit 4 "$GPUCC" cache import B.gpucc
assert_grep "cache '$GPUCC_CACHE_DIR'" err
assert_grep "'B.gpucc'" err
# ... before anything is inserted, whatever the order of the inputs
make_image N.gpucc N 0 3
expect_exit 0 "$GPUCC" snapshot "$GPUCC_CACHE_DIR" -o before.snap
expect_exit 4 "$GPUCC" merge N.gpucc B.gpucc --into "$GPUCC_CACHE_DIR"
assert_one_line err
assert_grep "cache '$GPUCC_CACHE_DIR' and 'B.gpucc'" err
expect_exit 0 "$GPUCC" snapshot "$GPUCC_CACHE_DIR" -o after.snap
assert_same before.snap after.snap
# Conflicts among the inputs of a merge into a cache: each reported, and
# the policy chooses as it does for an image.
for policy in first last; do
	expect_exit 0 "$GPUCC" merge A.gpucc B.gpucc --into "into-$policy" --on-conflict=$policy
	[ "$(grep -c "warning: conflict: key [0-9a-f]\{64\} differs in 'A.gpucc' and 'B.gpucc'" err)" -eq 2 ] ||
		{ cat err >&2; fail "merge --into --on-conflict=$policy did not report its two conflicts"; }
	expect_exit 0 "$GPUCC" snapshot "into-$policy" -o "into-$policy.snap"
	expect_exit 0 "$GPUCC" snapshot "$policy.gpucc" -o "image-$policy.snap"
	assert_same "into-$policy.snap" "image-$policy.snap"
done
expect_exit 0 "$GPUCC" cache import --on-conflict=first B.gpucc
assert_grep "warning: conflict: key [0-9a-f]\{64\} differs in '$GPUCC_CACHE_DIR' and 'B.gpucc'; keeping '$GPUCC_CACHE_DIR'$" err
expect_exit 0 "$GPUCC" cache import --on-conflict=last B.gpucc
assert_grep "^imported 4 entries into '$GPUCC_CACHE_DIR' (2 new, 2 already there, 2 conflicts)$" out
expect_exit 0 "$GPUCC" snapshot "$GPUCC_CACHE_DIR" -o c.snap
expect_exit 0 "$GPUCC" snapshot last.gpucc -o last.snap
assert_same c.snap last.snap

# A control character in an input's name is spelt \n, \t or \xHH in the
# warning a policy gives, as in the error without one (libgpucc's): the
# warning printed it raw, over two lines or as an escape sequence.
for spelt in 'odd\nA' 'odd\x1bA' 'odd\tA'; do
	odd=$(printf "$spelt").gpucc
	cp A.gpucc "$odd"
	expect_exit 4 "$GPUCC" merge "$odd" B.gpucc -o x.gpucc
	assert_one_line err
	grep -q -F "has different contents in '$spelt.gpucc' and 'B.gpucc'" err ||
		fail "the conflict error did not spell '$spelt': $(cat -A err)"
	expect_exit 0 "$GPUCC" merge "$odd" B.gpucc --on-conflict=first -o x.gpucc
	[ "$(grep -c '^gpucc merge: warning: conflict: ' err)" -eq 2 ] ||
		fail "two conflicts should be reported: $(cat -A err)"
	grep -v -q '^gpucc merge: ' err && fail "a name broke a message's line: $(cat -A err)"
	grep -q -F "differs in '$spelt.gpucc' and 'B.gpucc'; keeping '$spelt.gpucc'" err ||
		fail "the conflict warning did not spell '$spelt': $(cat -A err)"
	tr -d '\n' < err | LC_ALL=C grep -q '[[:cntrl:]]' && fail "a control character was printed: $(cat -A err)"
	rm "$odd" x.gpucc
done
echo ok
