# cmd/tests/fault_io.sh -- write failures (docs/design.md invariants 4 and 7):
# every command that writes (merge, delta, snapshot, extract, embed, cache
# import, compile into a cache and into an image) run with ENOSPC and EIO
# injected at several points of its writes (cmd/tests/faultshim.c, an
# LD_PRELOAD library: write, fsync, rename, create, close ... fail from the
# Nth call on, for paths matching a pattern).  Each run either fails with
# exit 1 and one line naming the file and the system's error text, leaving
# the old output as it was and no temporary file; or, when the failed call
# was one whose failure is harmless (closing an input), succeeds with exactly
# the output of a clean run.  Caches stay valid (`gpucc cache verify`) and
# keep every entry they had; a compile whose cache fails still succeeds, with
# one warning.  extract --force, failed once at each of its renames and
# links, leaves the directory exactly as it was; extract killed (SIGKILL) at
# each of its calls leaves no temporary file.  Then the same through
# RLIMIT_FSIZE, and a real full disk on a small tmpfs when this user may
# mount one.
. "$SRCROOT/cmd/tests/lib.sh"
. "$SRCROOT/cmd/tests/algebra_helpers.sh"

[ -n "${FAULTSHIM:-}" ] && [ -f "$FAULTSHIM" ] || skip "the fault shim (FAULTSHIM) is not built"
# Under AddressSanitizer its runtime must come first in the preload list.
preload=$FAULTSHIM
asan=$(ldd "$GPUCC" | awk '/libasan/ {print $3}')
[ -z "$asan" ] || preload="$asan:$FAULTSHIM"
kernels=$TESTDATA/kernels

# shim ERRNO AFTER PATTERN CMD...: run CMD with faults from the AFTER-th
# matching call on (ERRNO 0: none, only counting into ./calls); stdout and
# stderr in ./out ./err, exit status in $rc.
shim() {
	local errno=$1 after=$2 pattern=$3; shift 3
	rm -f calls
	GPUCC_FAULT_ERRNO=$errno GPUCC_FAULT_AFTER=$after GPUCC_FAULT_PATH=$pattern \
	GPUCC_FAULT_LOG=$TEST_DIR/calls LD_PRELOAD=$preload "$@" >out 2>err
	rc=$?
}
# points N: a few distinct call numbers spread over 0..N-1, first and last included.
points() { printf '%s\n' 0 $(($1 / 4)) $(($1 / 2)) $(($1 * 3 / 4)) $(($1 - 1)) | sort -nu; }
errtext() { case $1 in ENOSPC) echo "No space left on device" ;; EIO) echo "Input/output error" ;; esac; }
no_temporaries() {
	local left
	left=$(find "$@" \( -name '.*.tmp.*' -o -name '.*.gpucc.new.*' -o -name '.gpucc-extract.*' -o -path '*/v1/tmp/*' \) 2>/dev/null)
	[ -z "$left" ] || fail "temporary files left behind: $left"
}
# the shim works here (it sees this process's writes)
make_image a.gpucc A 0 12 v0 20000
make_image b.gpucc B 0 12 v0 20000
make_image z.gpucc Z 0 6 v0 20000 --zstd
shim 0 0 '*' "$GPUCC" merge a.gpucc -o probe.gpucc
[ "$rc" = 0 ] && grep -Eq '^p?write(64)? ' calls || skip "LD_PRELOAD of the fault shim does not take effect here"

failures=0 harmless=0
# check_one_failure OUT ERRNO: the run failed as it must: exit 1, one line
# naming OUT (a path starting so, in quotes) and the error's text.
check_one_failure() {
	[ "$rc" = 1 ] || { cat err >&2; fail "exited $rc, expected 1 (fault $2 on '$1')"; }
	assert_one_line err
	assert_grep "'$1" err
	assert_grep "$(errtext "$2")" err
	failures=$((failures + 1))
}

# faulted_output NAME CMD...: CMD writes the file NAME, which exists already
# (old.NAME keeps its old bytes).  Every fault at every point leaves NAME as
# it was, or succeeds with the bytes of a clean run (want.NAME).
faulted_output() {
	local name=$1 e p n; shift
	cp "$name" "old.$name"
	"$@" >/dev/null 2>&1 || fail "clean run of '$*' failed"
	cp "$name" "want.$name"
	cp "old.$name" "$name"
	shim 0 0 "*$name*" "$@"
	cp "old.$name" "$name"
	n=$(wc -l < calls)
	[ "$n" -gt 2 ] || fail "'$*' made only $n calls on $name"
	for e in ENOSPC EIO; do
		for p in $(points "$n"); do
			shim "$e" "$p" "*$name*" "$@"
			if [ "$rc" = 0 ]; then
				assert_same "$name" "want.$name"
				harmless=$((harmless + 1))
			else
				check_one_failure "$name" "$e"
				assert_same "$name" "old.$name"
			fi
			no_temporaries .
			cp "old.$name" "$name"
		done
	done
}

# ---- images, snapshots, objects: merge (-o naming an input too), delta,
# snapshot, embed
expect_exit 0 "$GPUCC" merge b.gpucc -o m.gpucc
faulted_output m.gpucc "$GPUCC" merge -q a.gpucc m.gpucc -o m.gpucc
expect_exit 0 "$GPUCC" snapshot b.gpucc -o base.snap
expect_exit 0 "$GPUCC" merge b.gpucc -o d.gpucc
faulted_output d.gpucc "$GPUCC" delta -q m.gpucc --since base.snap -o d.gpucc
expect_exit 0 "$GPUCC" snapshot b.gpucc -o s.snap
faulted_output s.snap "$GPUCC" snapshot a.gpucc -o s.snap
expect_exit 0 "$GPUCC" embed b.gpucc -o e.o --symbol pkg_image
faulted_output e.o "$GPUCC" embed a.gpucc -o e.o --symbol pkg_image
assert_verifies m.gpucc d.gpucc
# The temporary file is flushed itself before its rename (the directory's
# fsync after the rename does not make its bytes durable): its own fsync
# failing, and no other call, fails the command and keeps the old output.
cp m.gpucc old.m.gpucc
GPUCC_FAULT_OPS=fsync shim EIO 0 "$TEST_DIR/.m.gpucc.tmp.*" "$GPUCC" merge -q a.gpucc b.gpucc -o m.gpucc
[ "$(grep -c '^fsync ' calls)" -eq 1 ] || { cat calls >&2; fail "merge did not fsync its temporary file once"; }
check_one_failure m.gpucc EIO
assert_same m.gpucc old.m.gpucc
no_temporaries .
# Large enough (8 MiB of payloads) that merge copies on several threads
# (lib/image/image_writer_plain.c): a fault in any of them fails the whole merge.
make_image big1.gpucc P 0 40 v0 110000
make_image big2.gpucc Q 0 40 v0 110000
expect_exit 0 "$GPUCC" merge big1.gpucc -o big.gpucc
faulted_output big.gpucc "$GPUCC" merge -q big1.gpucc big2.gpucc -o big.gpucc
assert_verifies big.gpucc
# Compressed through libarchive, zstd on worker threads.
expect_exit 0 "$GPUCC" merge b.gpucc --zstd -o mz.gpucc
faulted_output mz.gpucc "$GPUCC" merge -q --zstd=9 a.gpucc z.gpucc big1.gpucc -o mz.gpucc
assert_verifies big.gpucc mz.gpucc

# ---- extract --force: all or nothing.  x-old holds the files of a2 (a's
# keys, so a's file names, with other payloads) less two, which the run
# creates, and a file of its own.  A fault at any point fails the run and
# leaves x exactly as it was (the replaced files back, the created ones
# gone, nothing else), or is harmless and leaves exactly what a clean run
# does.  One fault per run (GPUCC_FAULT_COUNT=1): the rollback's own renames
# must be able to succeed.  Every rename and link is failed once, then
# every kind of call at a few points.
make_image a2.gpucc A 0 12 v1 20000
expect_exit 0 "$GPUCC" extract -q a.gpucc -C want-a
expect_exit 0 "$GPUCC" extract -q a2.gpucc -C x-old
rm -f $(find x-old -type f | sort | sed -n '1p;7p')
echo "not from the image" > x-old/unrelated
cp -r want-a want-x && cp x-old/unrelated want-x/
# faulted_extract OPS ERRNO AFTER: one fault, then the checks above.
faulted_extract() {
	rm -rf x && cp -a x-old x
	GPUCC_FAULT_OPS=$1 GPUCC_FAULT_COUNT=1 shim "$2" "$3" '*/x/*' "$GPUCC" extract -q --force a.gpucc -C x
	if [ "$rc" = 0 ]; then
		diff -r x want-x >&2 || fail "extract --force with $2 at $1 call $3 succeeded, with other files"
		harmless=$((harmless + 1))
	else
		check_one_failure x/ "$2"
		diff -r x x-old >&2 || fail "extract --force failed ($2 at $1 call $3) and did not leave the directory as it was"
	fi
}
rm -rf x && cp -a x-old x
GPUCC_FAULT_OPS=rename,link shim 0 0 '*/x/*' "$GPUCC" extract -q --force a.gpucc -C x
n=$(wc -l < calls)
[ "$n" -ge 12 ] || fail "extract --force made only $n renames and links"
backups_failed=0
for p in $(seq 0 $((n - 1))); do
	faulted_extract rename,link EIO "$p"
	grep -q "^gpucc extract: cannot back up 'x/[^']*' to replace it: " err &&
		backups_failed=$((backups_failed + 1))
done
[ "$backups_failed" -gt 0 ] || fail "no extract --force failed to back up a file it replaces"
rm -rf x && cp -a x-old x
shim 0 0 '*/x/*' "$GPUCC" extract -q --force a.gpucc -C x
n=$(wc -l < calls)
for e in ENOSPC EIO; do
	for p in $(points "$n"); do
		faulted_extract "" "$e" "$p"
	done
done
# A fault that persists fails the rollback's renames too: then each name
# holds its old file or the whole new one, and each old file not put back is
# kept under a backup name, so that none is lost.
rm -rf x && cp -a x-old x
GPUCC_FAULT_OPS=rename shim EIO 3 '*/x/*' "$GPUCC" extract -q --force a.gpucc -C x
check_one_failure x/ EIO
kept=0
for f in x-old/*; do
	f=${f#x-old/}
	cmp -s "x/$f" "x-old/$f" && continue
	cmp -s "x/$f" "want-x/$f" || fail "extract left a torn '$f'"
	for b in x/.gpucc-extract.*; do
		cmp -s "$b" "x-old/$f" && kept=$((kept + 1)) && continue 2
	done
	fail "extract --force lost the old '$f'"
done
[ "$kept" = 3 ] || fail "expected 3 old files under backup names, found $kept"

# ---- extract killed (kill -9, from the shim) at each of its file system
# calls: no temporary file remains, every file there is a whole one of the
# image, and the next extract succeeds.  Over existing files with --force,
# a kill before the renames leaves the directory exactly as it was.
rm -rf k && mkdir k
shim 0 0 '*/k/*' "$GPUCC" extract -q a.gpucc -C k
n=$(wc -l < calls)
for p in $(seq 0 $((n - 1))); do
	rm -rf k && mkdir k
	shim SIGKILL "$p" '*/k/*' "$GPUCC" extract -q a.gpucc -C k
	[ "$rc" = 137 ] || { cat err >&2; fail "extract was not killed at call $p: exited $rc"; }
	for f in $(ls -A k); do
		cmp -s "k/$f" "want-a/$f" || fail "extract killed at call $p left '$f'"
	done
	expect_exit 0 "$GPUCC" extract -q --force a.gpucc -C k
	diff -r k want-a >&2 || fail "extract after one killed at call $p"
done
rm -rf x && cp -a x-old x
GPUCC_FAULT_OPS=create,write,fsync shim 0 0 '*/x/*' "$GPUCC" extract -q --force a.gpucc -C x
n=$(wc -l < calls)
for p in $(points "$n"); do
	rm -rf x && cp -a x-old x
	GPUCC_FAULT_OPS=create,write,fsync shim SIGKILL "$p" '*/x/*' "$GPUCC" extract -q --force a.gpucc -C x
	[ "$rc" = 137 ] || { cat err >&2; fail "extract --force was not killed at call $p: exited $rc"; }
	diff -r x x-old >&2 || fail "extract --force killed at call $p changed the directory"
	expect_exit 0 "$GPUCC" extract -q --force a.gpucc -C x
	diff -r x want-x >&2 || fail "extract --force after one killed at call $p"
done

# ---- extract where unnamed temporary files (O_TMPFILE) are not supported:
# named ones instead, and the same files
GPUCC_FAULT_OPS=create GPUCC_FAULT_COUNT=1 shim 95 0 '*/t/*' "$GPUCC" extract -q a.gpucc -C t
[ "$rc" = 0 ] || { cat err >&2; fail "extract without O_TMPFILE exited $rc"; }
assert_grep "^create 0 .*/t/ 95$" calls
assert_grep "^create 1 .*/t/\.gpucc-extract\." calls
diff -r t want-a >&2 || fail "extract without O_TMPFILE wrote other files"

# ---- cache import: entries there stay, the cache verifies, no leftovers
expect_exit 0 "$GPUCC" cache import -q --cache base-cache b.gpucc
cp -r base-cache cache
shim 0 0 '*/cache/*' "$GPUCC" cache import -q --cache cache a.gpucc z.gpucc
n=$(wc -l < calls)
keys_of b.gpucc > b.keys
for e in ENOSPC EIO; do
	for p in $(points "$n"); do
		rm -rf cache && cp -r base-cache cache
		shim "$e" "$p" '*/cache/*' "$GPUCC" cache import -q --cache cache a.gpucc z.gpucc
		if [ "$rc" = 0 ]; then
			harmless=$((harmless + 1))
		else
			check_one_failure cache "$e"
		fi
		expect_exit 0 "$GPUCC" cache verify --cache cache
		"$GPUCC" snapshot --show cache | cut -c1-64 | sort > cache.keys
		[ -z "$(comm -23 b.keys cache.keys)" ] || fail "import under $e lost entries the cache had"
		no_temporaries cache
	done
done

# ---- compile: a failing cache never fails the build; a failing image does
set -- "$GPUCC" compile "$kernels/nvptx/vector_add.ll" "$kernels/amdgpu/math.ll" \
	--target sm_90 --target gfx90a -o k.gpucc --cache cc
"$@" >/dev/null 2>err || { cat err >&2; fail "clean compile failed"; }
cp k.gpucc want.k.gpucc
rm -rf cc
shim 0 0 '*/cc/*' "$@"
n=$(wc -l < calls)
for e in ENOSPC EIO; do
	for p in $(points "$n"); do
		rm -rf cc k.gpucc
		shim "$e" "$p" '*/cc/*' "$@"
		[ "$rc" = 0 ] || { cat err >&2; fail "compile failed because its cache did ($e at $p)"; }
		assert_same k.gpucc want.k.gpucc
		[ "$(grep -c warning err)" -le 1 ] || { cat err >&2; fail "more than one warning"; }
		[ ! -s err ] || assert_grep "$(errtext "$e")" err
		expect_exit 0 "$GPUCC" cache verify --cache cc
		no_temporaries cc .
	done
done
rm -rf cc
"$@" >/dev/null 2>&1 || fail "compile to fill the cache failed"
expect_exit 0 "$GPUCC" merge -q b.gpucc -o k.gpucc   # the old image
# every key hits: the image is the only output
faulted_output k.gpucc "$@"
expect_exit 0 "$GPUCC" cache verify --cache cc
[ "$failures" -gt 20 ] || fail "only $failures runs failed: the shim injected too little"

# ---- RLIMIT_FSIZE: writes past it fail with EFBIG (SIGXFSZ ignored)
limited() { ( trap '' XFSZ; ulimit -f "$1"; shift; exec "$@" ) >out 2>err; rc=$?; }
make_image big.gpucc G 0 40 v0 60000
cp s.snap old.s.snap
for run in "delta -q big.gpucc --since base.snap -o d.gpucc" "snapshot big.gpucc -o s.snap" \
           "embed big.gpucc -o e.o --symbol pkg_image" "merge -q big.gpucc -o m.gpucc"; do
	set -- $run
	out=${*: -1}
	[ "$1" = embed ] && out=e.o
	cp "$out" "old.$out" 2>/dev/null
	limited 1 "$GPUCC" "$@"
	[ "$rc" = 1 ] || { cat err >&2; fail "'$run' past RLIMIT_FSIZE exited $rc"; }
	assert_one_line err
	assert_grep "File too large" err
	assert_same "$out" "old.$out"
	no_temporaries .
done
rm -rf cache && cp -r base-cache cache
limited 16 "$GPUCC" cache import -q --cache cache big.gpucc
[ "$rc" = 1 ] || fail "import past RLIMIT_FSIZE exited $rc"
assert_one_line err
expect_exit 0 "$GPUCC" cache verify --cache cache
no_temporaries cache

# ---- a real full disk: a cache on a small tmpfs
if ! can_mount "a cache and a merge on a full tmpfs"; then
	echo "ok ($failures clean failures, $harmless harmless faults)"
	exit 0
fi
mkdir small
unshare -m sh -c '
	mount -t tmpfs -o size=200k tmpfs small || exit 99
	"$0" cache import -q --cache small/cache big.gpucc >import.out 2>import.err; echo $? >import.rc
	"$0" cache verify --cache small/cache >verify.out 2>&1; echo $? >verify.rc
	find small \( -name ".*.tmp.*" -o -name ".*.gpucc.new.*" -o -path "*/v1/tmp/*" \) >left
	"$0" merge -q big.gpucc -o small/out.gpucc >merge.out 2>merge.err; echo $? >merge.rc
	ls -A small >>left' "$GPUCC"
[ $? = 99 ] && skip "cannot mount a tmpfs here"
[ "$(cat import.rc)" = 1 ] || { cat import.err >&2; fail "import onto a full tmpfs exited $(cat import.rc)"; }
assert_one_line import.err
assert_grep "No space left on device" import.err
[ "$(cat verify.rc)" = 0 ] || { cat verify.out >&2; fail "the cache on the full tmpfs does not verify"; }
[ "$(cat merge.rc)" = 1 ] || fail "merge onto a full tmpfs exited $(cat merge.rc)"
assert_one_line merge.err
assert_grep "No space left on device" merge.err
[ "$(cat left)" = cache ] || fail "files left on the full tmpfs: $(cat left)"
echo "ok ($failures clean failures, $harmless harmless faults)"
