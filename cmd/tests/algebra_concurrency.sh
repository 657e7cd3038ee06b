# cmd/tests/algebra_concurrency.sh -- many gpucc processes on one cache and
# one image at once (concurrency is normal): 8 imports into one cache, 8
# merges into one image (-o naming an input, so each must see the others'
# results), and lookups counting hits, all concurrently.  Afterwards every
# entry is present, everything verifies, and no count is lost.  Run for
# several rounds so that interleavings vary.  Then gc runs among importers
# and readers.
. "$SRCROOT/cmd/tests/lib.sh"
. "$SRCROOT/cmd/tests/algebra_helpers.sh"

N=8
for i in $(seq 0 $((N - 1))); do
	# overlapping ranges: neighbours share 5 identical entries
	make_image "X$i.gpucc" S $((i * 15)) 20
done
make_image pre.gpucc S 0 5
expect_exit 0 "$GPUCC" merge X*.gpucc -o want.gpucc
expect_exit 0 "$GPUCC" snapshot want.gpucc -o want.snap
"$GPUCC" snapshot --show pre.gpucc | cut -c1-64 > pre.keys

for round in 1 2 3; do
	cache="$TEST_DIR/cache$round"
	expect_exit 0 "$GPUCC" cache import --cache "$cache" pre.gpucc
	expect_exit 0 "$GPUCC" delta X0.gpucc --since X0.gpucc -o acc.gpucc   # empty
	pids=""
	for i in $(seq 0 $((N - 1))); do
		"$GPUCC" cache import -q --cache "$cache" "X$i.gpucc" 2>"imp$i.err" &
		pids="$pids $!"
		"$GPUCC" merge -q acc.gpucc "X$i.gpucc" -o acc.gpucc 2>"mrg$i.err" &
		pids="$pids $!"
	done
	for i in 1 2 3 4; do
		# pre's keys were imported before: every lookup is a hit
		"$GPUCC" cache lookup -q --cache "$cache" $(cat pre.keys) 2>"look$i.err" &
		pids="$pids $!"
	done
	failed=0
	for p in $pids; do
		wait "$p" || failed=$((failed + 1))
	done
	[ "$failed" -eq 0 ] || { cat ./*.err >&2; fail "round $round: $failed processes failed"; }

	# the image holds every entry of every merge: none was lost
	assert_same acc.gpucc want.gpucc
	assert_verifies acc.gpucc
	# the cache holds every entry, each verifies as a hit
	expect_exit 0 "$GPUCC" snapshot "$cache" -o cache.snap
	assert_same cache.snap want.snap
	expect_exit 0 "$GPUCC" cache lookup --cache "$cache" $(keys_of want.gpucc)
	assert_no_grep "warning" err
	# 4 processes x 5 hits, plus the check just made: no counter update lost
	expect_exit 0 "$GPUCC" cache stats --json --cache "$cache"
	hits=$((4 * 5 + $(keys_of want.gpucc | wc -l)))
	assert_grep "\"hits\": $hits, \"misses\": 0" out
	ls -a | grep -q '\.tmp\.' && fail "temporary files left behind"
	ls -a | grep -q '\.lock$' && fail "a merge left its lock file behind"
	[ -z "$(find "$cache" -name '.*.tmp.*')" ] || fail "temporary files left in the cache"
done
# The lock is the output's, not its directory's: while one merge into
# held.gpucc waits for the lock (held here by flock(1)), a merge into
# another file of the directory goes ahead.
if have flock "a merge waits for its output's lock, not its directory's"; then
	(exec 9>.held.gpucc.lock && flock 9 && exec sleep 30) >/dev/null 2>&1 &
	holder=$!
	while flock -n .held.gpucc.lock true; do sleep 0.1; done
	timeout 2 "$GPUCC" merge -q X0.gpucc -o held.gpucc
	[ $? -eq 124 ] || fail "a merge into held.gpucc did not wait for its lock"
	assert_no_file held.gpucc
	timeout 20 "$GPUCC" merge -q X0.gpucc -o free.gpucc || fail "a merge into free.gpucc waited for held.gpucc's lock"
	kill "$holder"
	wait "$holder" 2>/dev/null
	expect_exit 0 "$GPUCC" merge -q X0.gpucc -o held.gpucc
	assert_no_file .held.gpucc.lock
fi

# gc while others import and look up: nothing fails, nothing is torn.  What
# survives depends on timing, so only its soundness is checked.
cache="$TEST_DIR/gc-cache"
expect_exit 0 "$GPUCC" cache import -q --cache "$cache" pre.gpucc
pids=""
for i in 0 1 2 3; do
	"$GPUCC" cache import -q --cache "$cache" "X$i.gpucc" 2>"gimp$i.err" &
	pids="$pids $!"
	"$GPUCC" cache gc -q --cache "$cache" --max-size 20k 2>"ggc$i.err" &
	pids="$pids $!"
	"$GPUCC" cache lookup -q --cache "$cache" $(cat pre.keys) 2>"glook$i.err" &
	pids="$pids $!"   # hits or misses (exit 2), never a failure
done
# snapshots and deltas of the cache meanwhile: each succeeds, and holds
# only entries that some import put there (formats/snapshot.md)
for i in 0 1; do
	for k in 1 2 3; do
		"$GPUCC" snapshot -q "$cache" -o "gs$i.$k.snap" &&
			"$GPUCC" delta -q "$cache" --since pre.gpucc -o "gd$i.$k.gpucc" || exit 1
	done 2>"gsnap$i.err" &
	pids="$pids $!"
done
for p in $pids; do wait "$p" || [ $? -eq 2 ] || fail "a process failed during gc: $(cat ./g*.err)"; done
cat ./g*.err > g.all
assert_no_grep "corrupt" g.all
assert_no_grep "unreadable" g.all
keys_of want.gpucc > want.keys
for f in gs*.snap gd*.gpucc; do
	keys_of "$f" > got.keys
	[ -z "$(comm -23 got.keys want.keys)" ] || fail "'$f' holds keys no import put in the cache"
done
for f in gd*.gpucc; do
	assert_verifies "$f"
	[ -z "$(keys_of "$f" | comm -12 - pre.keys)" ] || fail "'$f' holds keys of its base"
done
"$GPUCC" cache lookup --cache "$cache" $(keys_of want.gpucc) >out 2>err
assert_no_grep "warning" err
expect_exit 0 "$GPUCC" snapshot "$cache" -o gc.snap
echo ok
