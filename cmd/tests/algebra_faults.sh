# cmd/tests/algebra_faults.sh -- faults (outputs old or new, never torn; a cache problem never breaks a build):
#  - SIGKILL in the middle of merge, import and gc leaves the old output
#    intact (or the new one, complete) and the cache valid;
#  - a full disk (RLIMIT_FSIZE; a small tmpfs when we may mount one) gives a
#    one-line error and no partial file;
#  - a read-only cache directory still serves every read command.
# Kill times sweep the run's duration, so whatever the machine's speed some
# land mid-write (counted, by what a killed writer leaves on disk, and
# required); each outcome is checked, none is timing-dependent.
. "$SRCROOT/cmd/tests/lib.sh"
. "$SRCROOT/cmd/tests/algebra_helpers.sh"

make_image big1.gpucc G 0 12 v0 1500000      # ~18 MB each
make_image big2.gpucc G 12 12 v0 1500000
make_image small.gpucc H 0 6
expect_exit 0 "$GPUCC" merge big1.gpucc big2.gpucc small.gpucc -o want.gpucc
expect_exit 0 "$GPUCC" snapshot want.gpucc -o want.snap

# How long a run takes here, to spread the kills over it.
ms_of() {
	local start end
	start=$(date +%s%N)
	"$@" >/dev/null 2>&1
	end=$(date +%s%N)
	echo $(((end - start) / 1000000))
}

# kill_at MS CMD...: start CMD, SIGKILL it after MS milliseconds; killed is
# 1 when the signal ended it (it had not exited by then), else 0.
kill_at() {
	local ms=$1; shift
	"$@" >/dev/null 2>&1 &
	local pid=$!
	sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	[ $? = 137 ] && killed=1 || killed=0
}

# Each loop below sweeps its kills over the run's duration, measured again
# before each sweep, and offsets every other sweep by half a step, until
# enough kills have landed mid-write, by a sign on disk that only a killed
# writer leaves: a temporary file beside the output or in the cache, or a
# gc that evicted some entries and was killed before it was done.  A loaded
# machine (or the sanitizers) moves where the kills land, not whether some
# do; a loop that never lands one fails, naming how many it tried.
# sweep_delay T SWEEP STEP: the delay of kill STEP (0-9) of sweep SWEEP.
sweep_delay() { echo $(($1 * (2 * $3 + $2 % 2) / 20)); }
# cache_temporaries DIR: the temporary files in the cache DIR, by name.
cache_temporaries() {
	find "$1" \( -name '.*.tmp.*' -o -path '*/v1/tmp/*' \) -type f 2>/dev/null | LC_ALL=C sort
}
# cache_entries DIR: how many entries the cache DIR holds.
cache_entries() {
	find "$1/v1" -regextype posix-extended -regex '.*/v1/[0-9a-f]{2}/[0-9a-f]{64}\.gpucc' -type f |
		wc -l
}

# ---- merge killed: out.gpucc is the old image or the new, never torn
cp small.gpucc out.gpucc
cp small.gpucc old.gpucc
kills=0 mid=0 sweep=0
while [ "$mid" -lt 3 ] && [ "$sweep" -lt 6 ]; do
	t=$(ms_of "$GPUCC" merge big1.gpucc big2.gpucc small.gpucc -o probe.gpucc)
	for step in 0 1 2 3 4 5 6 7 8 9; do
		kill_at "$(sweep_delay "$t" "$sweep" "$step")" "$GPUCC" merge out.gpucc big1.gpucc big2.gpucc -o out.gpucc
		kills=$((kills + killed))
		if ls -A | grep -q '^\.out\.gpucc\.tmp\.'; then
			[ "$killed" = 1 ] || fail "a merge that was not killed left its temporary file"
			mid=$((mid + 1))
			# the next write removes it too (below); gone, the next kill's shows
			rm -f .out.gpucc.tmp.*
		fi
		if cmp -s out.gpucc want.gpucc; then
			cp small.gpucc out.gpucc   # completed: start again from the old state
		else
			cmp -s out.gpucc old.gpucc || fail "merge killed after $(sweep_delay "$t" "$sweep" "$step") ms left a torn output"
		fi
	done
	sweep=$((sweep + 1))
done
echo "merge: $kills of $((sweep * 10)) runs killed, $mid of them mid-write (a run takes ${t} ms)"
[ "$mid" -ge 3 ] || fail "only $mid of $kills killed merges were killed mid-write"
assert_verifies out.gpucc
# leftovers of killed writers are dot-files beside the output, never the output
find . -maxdepth 1 -name 'out.gpucc?*' ! -name '.*' | grep -q . && fail "stray output files"
expect_exit 0 "$GPUCC" merge out.gpucc big1.gpucc big2.gpucc -o out.gpucc
assert_same out.gpucc want.gpucc
# The next write of an output removes what killed writers left beside it,
# with --no-sync too; another output's temporaries stay.
echo partial > .out.gpucc.tmp.999999.1
echo partial > .other.gpucc.tmp.999999.1
expect_exit 0 "$GPUCC" merge --no-sync out.gpucc -o out.gpucc
assert_no_file .out.gpucc.tmp.999999.1
assert_file .other.gpucc.tmp.999999.1
rm .other.gpucc.tmp.999999.1

# ---- import killed: the cache stays valid, no entry is torn.  A kill
# mid-write leaves an entry's temporary file in the cache; an import that
# completed is undone (the cache removed), so that the next has entries to
# write.
export GPUCC_CACHE_DIR="$TEST_DIR/cache"
kills=0 mid=0 sweep=0
while [ "$mid" -lt 3 ] && [ "$sweep" -lt 6 ]; do
	rm -rf probe-cache
	t=$(ms_of "$GPUCC" cache import --cache probe-cache big1.gpucc big2.gpucc)
	for step in 0 1 2 3 4 5 6 7 8 9; do
		cache_temporaries "$GPUCC_CACHE_DIR" > temps.before
		kill_at "$(sweep_delay "$t" "$sweep" "$step")" "$GPUCC" cache import big1.gpucc big2.gpucc
		kills=$((kills + killed))
		cache_temporaries "$GPUCC_CACHE_DIR" > temps.after
		if [ -n "$(LC_ALL=C comm -13 temps.before temps.after)" ]; then
			[ "$killed" = 1 ] || fail "an import that was not killed left temporary files"
			mid=$((mid + 1))
		fi
		"$GPUCC" cache lookup $(keys_of want.gpucc) >look.out 2>look.err
		assert_no_grep "corrupt" look.err
		assert_no_grep "unreadable" look.err
		[ "$killed" = 1 ] || rm -rf "$GPUCC_CACHE_DIR"
	done
	sweep=$((sweep + 1))
done
echo "cache import: $kills of $((sweep * 10)) runs killed, $mid of them mid-write (a run takes ${t} ms)"
[ "$mid" -ge 3 ] || fail "only $mid of $kills killed imports were killed mid-write"
expect_exit 0 "$GPUCC" cache import big1.gpucc big2.gpucc small.gpucc
expect_exit 0 "$GPUCC" snapshot "$GPUCC_CACHE_DIR" -o cache.snap
assert_same cache.snap want.snap
expect_exit 0 "$GPUCC" cache lookup $(keys_of want.gpucc)
assert_no_grep "warning" err

# ---- gc killed: what is left is whole.  A kill mid-way through leaves
# fewer entries than before, more than gc's bound allows; a gc that
# completed is undone (what it evicted imported again).
make_image many.gpucc M 0 300
expect_exit 0 "$GPUCC" cache import many.gpucc
kills=0 mid=0 sweep=0
while [ "$mid" -lt 2 ] && [ "$sweep" -lt 6 ]; do
	rm -rf probe-cache && cp -a "$GPUCC_CACHE_DIR" probe-cache
	t=$(ms_of "$GPUCC" cache gc --cache probe-cache --max-size 100k)
	for step in 0 1 2 3 4 5 6 7 8 9; do
		before=$(cache_entries "$GPUCC_CACHE_DIR")
		kill_at "$(sweep_delay "$t" "$sweep" "$step")" "$GPUCC" cache gc --max-size 100k
		kills=$((kills + killed))
		after=$(cache_entries "$GPUCC_CACHE_DIR")
		[ "$killed" = 1 ] && [ "$after" -lt "$before" ] && mid=$((mid + 1))
		"$GPUCC" cache lookup $(keys_of many.gpucc) >look.out 2>look.err
		assert_no_grep "corrupt" look.err
		if [ "$killed" = 0 ] || [ "$after" -lt $((before / 2)) ]; then
			"$GPUCC" cache import -q many.gpucc || fail "import after a killed gc failed"
		fi
	done
	sweep=$((sweep + 1))
done
echo "cache gc: $kills of $((sweep * 10)) runs killed, $mid of them mid-way (a run takes ${t} ms)"
[ "$mid" -ge 2 ] || fail "only $mid of $kills killed gc runs were killed mid-way"
expect_exit 0 "$GPUCC" cache stats
expect_exit 0 "$GPUCC" cache gc --max-size 100k
expect_exit 0 "$GPUCC" cache stats --json
python3 -c 'import json; d=json.load(open("out")); assert d["bytes"] <= 100*1024, d' || fail "gc did not reach its bound"

# ---- full disk: RLIMIT_FSIZE (SIGXFSZ ignored, so writes fail with EFBIG)
rm -f out.gpucc .out.gpucc.tmp.*   # the killed merges' leftovers
( trap '' XFSZ; ulimit -f 2048; exec "$GPUCC" merge big1.gpucc big2.gpucc -o out.gpucc ) >out 2>err
rc=$?
[ "$rc" -eq 1 ] || fail "merge past RLIMIT_FSIZE exited $rc, expected 1"
assert_one_line err
assert_grep "out.gpucc" err
assert_no_file out.gpucc
ls -a | grep -q '\.out\.gpucc\.tmp\.' && fail "partial temporary file left behind"
( trap '' XFSZ; ulimit -f 1000; exec "$GPUCC" cache import --cache fcache big1.gpucc ) >out 2>err
[ $? -eq 1 ] || fail "import past RLIMIT_FSIZE should fail"
assert_one_line err
[ -z "$(find fcache -name '.*.tmp.*')" ] || fail "partial files left in the cache"
# ... and a real ENOSPC on a small tmpfs, when this user may mount one
if can_mount "merge onto a full tmpfs (a real ENOSPC)"; then
	mkdir small-fs
	unshare -m sh -c 'mount -t tmpfs -o size=4m tmpfs small-fs &&
		"$0" merge big1.gpucc -o small-fs/out.gpucc >out 2>err; echo $? > rc;
		ls -A small-fs > left' "$GPUCC"
	[ "$(cat rc)" = 1 ] || { cat err >&2; fail "merge onto a full tmpfs exited $(cat rc)"; }
	assert_one_line err
	assert_grep "No space left on device" err
	[ -z "$(cat left)" ] || fail "files left on the full file system: $(cat left)"
fi

# ---- more inputs than open files: ulimit -n 64 (soft and hard, so that
# cmd_raise_file_limit cannot help).  Every input used to stay open for the
# whole run: 303 inputs under a hard limit of 256 failed with "Too many open
# files".  Now inputs beyond half the limit hold no descriptor between
# reads.  1,000 inputs: one image 600 times, then twelve images (three
# compressed) in turn, so that every entry but the first image's is read
# from an input opened late; the output is the unconstrained run's, byte for
# byte, into an image (plain and zstd) or a cache.
many=()
for i in $(seq 0 11); do
	if [ $((i % 4)) = 3 ]; then make_image "many$i.gpucc" M$i 0 5 v0 300 --zstd
	else make_image "many$i.gpucc" M$i 0 5; fi
done
for i in $(seq 600); do many+=(many0.gpucc); done
while [ ${#many[@]} -lt 1000 ]; do
	for i in $(seq 0 11); do many+=("many$i.gpucc"); done
done
many=("${many[@]:0:1000}")
# [limited] CMD...: CMD with MANY standing for the 1,000 inputs (so that a
# failure names the command, not them), under ulimit -n 64 with "limited".
run_many() {
	local args=() a
	for a in "$@"; do
		if [ "$a" = MANY ]; then args+=("${many[@]}"); else args+=("$a"); fi
	done
	"${args[@]}"
}
limited() { (ulimit -n 64 && run_many "$@"); }
expect_exit 0 run_many "$GPUCC" merge MANY -o many.gpucc
assert_grep " 60 in the output" err
expect_exit 0 run_many "$GPUCC" merge MANY --zstd -o manyz.gpucc
expect_exit 0 limited "$GPUCC" merge MANY -o lim.gpucc
assert_same many.gpucc lim.gpucc
expect_exit 0 limited "$GPUCC" merge MANY --zstd -o limz.gpucc
assert_same manyz.gpucc limz.gpucc
expect_exit 0 limited "$GPUCC" merge MANY --into limcache
# cache import reads a file named twice once (same device and inode), so it
# gets 100 copies of one image besides the twelve: 112 distinct inputs.
copies=()
for i in $(seq 100); do cp many0.gpucc "copy$i.gpucc"; copies+=("copy$i.gpucc"); done
expect_exit 0 bash -c 'ulimit -n 64 && exec "$@"' limited "$GPUCC" cache import --cache limcache2 \
	"${copies[@]}" many{0..11}.gpucc
assert_grep "^imported 560 entries into .*(60 new, 500 already there, 0 conflicts)$" out
expect_exit 0 "$GPUCC" snapshot many.gpucc -o many.snap
expect_exit 0 "$GPUCC" snapshot --keys /dev/null -o empty.snap
for c in limcache limcache2; do
	expect_exit 0 "$GPUCC" snapshot $c -o $c.snap
	assert_same many.snap $c.snap
	# ... and back out of a cache of 60 entries, also over the limit
	expect_exit 0 limited "$GPUCC" delta $c --since empty.snap -o $c.gpucc
	assert_same many.gpucc $c.gpucc
	expect_exit 0 limited "$GPUCC" merge $c -o $c.gpucc
	assert_same many.gpucc $c.gpucc
done
rm -rf many*.gpucc copy*.gpucc lim*.gpucc limcache* many.snap empty.snap

# ---- a read-only cache still serves reads
ro_cache="$TEST_DIR/rocache"
expect_exit 0 "$GPUCC" cache import --cache "$ro_cache" small.gpucc
keys=$(keys_of small.gpucc | tr '\n' ' ')
# run_ro CMD...: run CMD with $ro_cache read-only: a read-only bind mount
# when we are root (permissions do not stop root), chmod otherwise.
run_ro() {
	if [ "$(id -u)" = 0 ]; then
		unshare -m sh -c 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && exec "$@"' \
			"$ro_cache" "$@"
	else
		chmod -R a-w "$ro_cache"
		"$@"; local rc=$?
		chmod -R u+w "$ro_cache"
		return $rc
	fi
}
if [ "$(id -u)" = 0 ] && ! unshare -m true 2>/dev/null; then
	skip_block "a read-only cache serving reads (root without mount namespaces cannot make one)"
else
	run_ro "$GPUCC" cache lookup --cache "$ro_cache" $keys >out 2>err || { cat err >&2; fail "lookup on a read-only cache"; }
	[ "$(grep -c '^hit' out)" -eq 6 ] || fail "lookups on a read-only cache should hit"
	run_ro "$GPUCC" cache stats --cache "$ro_cache" >out 2>err || fail "stats on a read-only cache"
	assert_grep "entries           6" out
	run_ro "$GPUCC" snapshot "$ro_cache" -o ro.snap >out 2>err || fail "snapshot of a read-only cache"
	expect_exit 0 "$GPUCC" snapshot small.gpucc -o small.snap
	assert_same ro.snap small.snap
	run_ro "$GPUCC" delta "$ro_cache" --since want.snap -o rodelta.gpucc >out 2>err || fail "delta of a read-only cache"
	run_ro "$GPUCC" merge "$ro_cache" -o romerge.gpucc >out 2>err || fail "merge from a read-only cache"
	expect_exit 0 "$GPUCC" merge small.gpucc -o small2.gpucc
	assert_same romerge.gpucc small2.gpucc
	run_ro "$GPUCC" cache import --cache "$ro_cache" big1.gpucc >out 2>err && fail "import into a read-only cache succeeded"
	assert_one_line err
	assert_grep "read-only" err
fi
echo ok
