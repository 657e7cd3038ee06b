# cmd/tests/cache_cli.sh -- the cache commands at their edges: `gpucc cache`
# without a subcommand or with -h, caches that are missing, files or cannot
# be created, bounds and settings that are not sizes, gc locks another user
# created, and two imports racing with one key and different contents.
. "$SRCROOT/cmd/tests/lib.sh"
. "$SRCROOT/cmd/tests/algebra_helpers.sh"

# ---- gpucc cache, -h, --help: the list of subcommands
for h in -h --help; do
	expect_exit 0 "$GPUCC" cache $h
	for sub in stats import gc prune clear lookup verify; do
		assert_grep "gpucc cache $sub " out
	done
	[ ! -s err ] || fail "'gpucc cache $h' wrote to stderr"
done
cp out help.out
expect_exit 0 "$GPUCC" help cache
assert_same out help.out
expect_exit 129 "$GPUCC" cache
assert_one_line err
assert_grep "^gpucc cache: missing subcommand (see 'gpucc cache -h')$" err
expect_exit 129 "$GPUCC" cache frobnicate
assert_grep "^gpucc cache: unknown subcommand 'frobnicate'" err

# ---- a cache that is a file, or missing
touch plain
GPUCC_CACHE_DIR=$TEST_DIR/plain expect_exit 3 "$GPUCC" cache stats
assert_one_line err
assert_grep "cache '$TEST_DIR/plain' is not a directory" err
# verify, stats, gc, clear and prune of a directory named by --cache that
# does not exist: an error, neither "ok" nor a new directory (gc and clear
# made one); the default cache not made yet is an empty one
for sub in verify stats gc clear prune; do
	expect_exit 2 "$GPUCC" cache $sub --cache "$TEST_DIR/typo"
	assert_one_line err
	assert_grep "^gpucc cache $sub: cache '$TEST_DIR/typo' does not exist" err
	assert_no_file typo
done
for sub in verify stats; do
	GPUCC_CACHE_DIR=$TEST_DIR/unused expect_exit 0 "$GPUCC" cache $sub
	assert_no_file unused
done
# a directory that holds other things but no v1/ is no cache: refused (3)
# and left as it was (gc and clear wrote a cache into it, stats and verify
# reported an empty cache); an empty one is an empty cache
mkdir notcache && echo precious > notcache/file
for sub in verify stats gc clear prune lookup; do
	arg= miss=0; [ $sub = lookup ] && arg=$(printf '%064d' 0) miss=2
	expect_exit 3 "$GPUCC" cache $sub --cache notcache $arg
	assert_one_line err
	assert_grep "^gpucc cache $sub: 'notcache' is a directory but not a gpucc cache (no v1/ in it)$" err
	[ "$(ls -A notcache)" = file ] || fail "cache $sub wrote into a directory that is no cache: $(ls -A notcache)"
	mkdir -p empty
	expect_exit $miss "$GPUCC" cache $sub --cache empty $arg
	rm -rf empty
done
rm -rf notcache
# gc --save configures a cache, which may be new: it creates the directory
expect_exit 0 "$GPUCC" cache gc --cache "$TEST_DIR/new" --max-size 1G --save
assert_grep "^max-size = 1073741824$" new/config
rm -rf new

# ---- an empty --cache is a usage error, never the default cache: a script
# passing an unset variable must not clear the user's own cache
mkdir -p home/.cache/gpucc/v1/ab
touch home/.cache/gpucc/v1/ab/keep
for sub in clear gc stats verify prune import lookup; do
	arg=; case $sub in import) arg=plain ;; lookup) arg=$(printf '%064d' 0) ;; esac
	HOME=$TEST_DIR/home expect_exit 129 "$GPUCC" cache $sub --cache '' $arg
	assert_one_line err
	assert_grep "^gpucc cache $sub: --cache needs a directory, not '' (see 'gpucc cache $sub -h')$" err
done
# so are compile's --cache (it used to compile into the default cache) and
# merge's --into (it merged into it)
echo 'target triple = "nvptx64-nvidia-cuda"' >empty.ll
HOME=$TEST_DIR/home expect_exit 129 "$GPUCC" compile --cache '' -t sm_90 empty.ll
assert_grep "^gpucc compile: --cache needs a directory, not '' (see 'gpucc compile -h')$" err
HOME=$TEST_DIR/home expect_exit 129 "$GPUCC" merge --into '' plain
assert_grep "^gpucc merge: --into needs a directory, not '' (see 'gpucc merge -h')$" err
assert_file home/.cache/gpucc/v1/ab/keep
[ "$(find home -type f | wc -l)" = 1 ] || fail "an empty --cache or --into wrote into the default cache: $(find home -type f)"
rm -f empty.ll
# an empty GPUCC_CACHE_DIR counts as unset, as does an XDG_CACHE_HOME that
# is not absolute (the XDG base directory rules)
GPUCC_CACHE_DIR= XDG_CACHE_HOME=rel HOME=$TEST_DIR/home expect_exit 0 "$GPUCC" cache stats
assert_grep "^cache directory   $TEST_DIR/home/.cache/gpucc$" out
# ... and a HOME that is not absolute is ignored the same way: it made a
# cache under the working directory, wherever the command ran
mkdir -p relhome
HOME=relhome XDG_CACHE_HOME= GPUCC_CACHE_DIR= expect_exit 2 "$GPUCC" cache gc --max-size 1G --save
assert_one_line err
HOME=relhome XDG_CACHE_HOME=rel GPUCC_CACHE_DIR= expect_exit 2 "$GPUCC" cache stats
assert_one_line err
assert_grep "^gpucc cache stats: no cache directory: set GPUCC_CACHE_DIR, or an absolute XDG_CACHE_HOME or HOME (HOME is not an absolute path)$" err
[ -z "$(ls -A relhome)" ] || fail "a relative HOME was used for the cache: $(find relhome)"
HOME=$TEST_DIR/relhome XDG_CACHE_HOME=rel expect_exit 0 "$GPUCC" cache stats
assert_grep "^cache directory   $TEST_DIR/relhome/.cache/gpucc$" out

# ---- lookup makes no cache: a --cache that does not exist is an error, the
# default cache not made yet a miss
key0=$(printf '%064d' 0)
expect_exit 2 "$GPUCC" cache lookup --cache "$TEST_DIR/typo" "$key0"
assert_one_line err
assert_grep "^gpucc cache lookup: cache '$TEST_DIR/typo' does not exist" err
assert_no_file typo
GPUCC_CACHE_DIR=$TEST_DIR/unused expect_exit 2 "$GPUCC" cache lookup "$key0"
assert_grep "^miss $key0$" out
assert_no_file unused
# nor does it make one of a directory that holds none (a mistyped --cache
# ~/src got v1/, stats and stats.lock written into it): named by --cache,
# such a directory is refused (below); as the default cache, every key misses
mkdir notcache && echo notes > notcache/notes.txt
GPUCC_CACHE_DIR=$TEST_DIR/notcache expect_exit 2 "$GPUCC" cache lookup "$key0"
assert_grep "^miss $key0$" out
[ ! -s err ] || fail "a lookup in a directory that is no cache warned: $(cat err)"
[ "$(ls -A notcache)" = notes.txt ] || fail "a lookup wrote into a directory that is no cache: $(ls -A notcache)"
rm -rf notcache

# ---- a size that is not one names the option it came from
for bad in 1.5G -1 '' '5 G' 99999999999T 99999999999999999999999 1iB; do
	expect_exit 129 "$GPUCC" cache gc --max-size "$bad" --cache typo
	assert_one_line err
	assert_grep "^gpucc cache gc: --max-size: .*'$bad' is" err
done
assert_no_file typo

# ---- a bound of 0 would keep nothing (ccache reads 0 as "no limit"): --save
# refuses it, and a config or environment setting it is ignored with a warning
expect_exit 129 "$GPUCC" cache gc --max-size 0 --save --cache zero
assert_one_line err
assert_grep "^gpucc cache gc: --max-size '0' --save: a bound of 0 would keep no entry" err
assert_no_file zero
mkdir -p zero/v1
echo 'max-size = 0' > zero/config
expect_exit 0 "$GPUCC" cache stats --cache zero
assert_grep "^max size          5.0 GiB$" out
assert_grep "warning: .*zero/config', line 1: max-size 0 ignored" err
rm zero/config
make_image Z.gpucc Z 0 6
GPUCC_CACHE_MAX_SIZE=0 expect_exit 0 "$GPUCC" cache import -q --cache zero Z.gpucc
assert_grep "warning: GPUCC_CACHE_MAX_SIZE=0 ignored" err
expect_exit 0 "$GPUCC" cache stats --json --cache zero
python3 -c 'import json; d=json.load(open("out")); assert d["entries"] == 6, d' ||
	fail "GPUCC_CACHE_MAX_SIZE=0 dropped what was imported"
# (gc --max-size 0 without --save evicts everything, as it says)
expect_exit 0 "$GPUCC" cache gc --max-size 0 --cache zero
assert_grep "^removed 6 entries" out

# ---- sizes just below a unit print as the unit, not "1024.0 KiB"
for size in 1023:"1023 bytes" 1024:"1.0 KiB" 1048524:"1023.9 KiB" 1048525:"1.0 MiB" \
		1048575:"1.0 MiB" 1073741823:"1.0 GiB"; do
	expect_exit 0 "$GPUCC" cache gc -q --cache sz --max-size "${size%%:*}" --save
	expect_exit 0 "$GPUCC" cache stats --cache sz
	assert_grep "^max size          ${size#*:}$" out
done

# ---- bounds past INT64_MAX are refused when parsed
mkdir -p big/v1
expect_exit 129 "$GPUCC" cache gc --max-size 8388608T --save --cache big
assert_one_line err
assert_grep "'8388608T' is too large" err
assert_no_file big/config

# ---- settings that are not sizes are reported, not taken for bytes
printf 'max-size = 5 GiB\nmax_size = 1G\n' > big/config
expect_exit 0 "$GPUCC" cache stats --cache big
assert_grep "^max size          5.0 GiB$" out
assert_grep "^gpucc cache stats: warning: .*big/config', line 1: .*'5 GiB' is not a size" err
assert_grep "^gpucc cache stats: warning: .*big/config', line 2: unknown setting 'max_size'" err
[ "$(wc -l < err)" = 2 ] || fail "expected two warnings"
rm big/config
GPUCC_CACHE_MAX_SIZE=5X expect_exit 0 "$GPUCC" cache stats --cache big
assert_one_line err
assert_grep "GPUCC_CACHE_MAX_SIZE.*'5X' is not a size" err
# a config longer than 4 KiB (comments) was read up to 4095 bytes: a setting
# past that was ignored, one across it cut short ("20000000000000" became a
# bound of 2 bytes, and every insert emptied the cache)
for n in 62 80; do
	{ for i in $(seq 1 $n); do echo "# line $i of a long comment about why this cache is big ......"; done
	  echo "max-size = 20000000000000"; } > big/config
	expect_exit 0 "$GPUCC" cache stats --cache big
	assert_grep "^max size          18.2 TiB$" out
	[ ! -s err ] || fail "a long config warned: $(cat err)"
done
# gc --save sets the bound and keeps the rest of the file: it replaced the
# whole config, comments and all
printf '# team bound: see the wiki\nmax-size = 2G  # was 1G\n\n  max-size=3G\n# end\n' > big/config
expect_exit 0 "$GPUCC" cache gc -q --cache big --max-size 4G --save
printf '# team bound: see the wiki\nmax-size = 4294967296\n\n# end\n' > want
assert_same big/config want
printf '# no bound yet' > big/config
expect_exit 0 "$GPUCC" cache gc -q --cache big --max-size 5M --save
printf '# no bound yet\nmax-size = 5242880\n' > want
assert_same big/config want
expect_exit 0 "$GPUCC" cache stats --cache big
assert_grep "^max size          5.0 MiB$" out
[ ! -s err ] || fail "a config gc --save wrote warned: $(cat err)"
# past 64 KiB, the file is ignored whole, and says so
{ head -c 70000 /dev/zero | tr '\0' '#'; echo; echo "max-size = 20000000000000"; } > big/config
expect_exit 0 "$GPUCC" cache stats --cache big
assert_grep "^max size          5.0 GiB$" out
assert_one_line err
assert_grep "^gpucc cache stats: warning: 'big/config' is longer than 64 KiB, its settings are ignored$" err
rm big/config

# ---- a gc lock that cannot be used is reported by the insert that needs gc
make_image E.gpucc E 0 8
expect_exit 0 "$GPUCC" cache gc -q --cache lk --max-size 1k --save
rm lk/gc.lock && mkdir lk/gc.lock
expect_exit 0 "$GPUCC" cache import -q --cache lk E.gpucc
assert_one_line err
assert_grep "^gpucc cache import: warning: .*gc.lock" err
rmdir lk/gc.lock

# ---- as another user: a gc lock that user may only read, a cache it
# cannot create
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
if [ "$(id -u)" = 0 ] && as_nobody true 2>/dev/null && as_nobody test -x "$GPUCC"; then
	chmod a+rx "$TEST_DIR"
	make_image F.gpucc F 0 4
	expect_exit 0 "$GPUCC" cache import -q --cache shared F.gpucc
	bound=$(( $(stat -c %s shared/v1/*/*.gpucc | head -1) * 3 ))
	expect_exit 0 "$GPUCC" cache gc -q --cache shared --max-size "$bound" --save
	expect_exit 0 "$GPUCC" cache gc -q --cache shared   # (creates gc.lock, 0644)
	find shared -type d -exec chmod 777 {} +
	chmod a+r E.gpucc
	as_nobody "$GPUCC" cache import -q --cache shared E.gpucc >out 2>err ||
		{ cat err >&2; fail "import as another user failed"; }
	[ ! -s err ] || { cat err >&2; fail "import as another user warned"; }
	"$GPUCC" cache stats --json --cache shared > stats.json
	python3 -c 'import json,sys; s=json.load(open("stats.json")); sys.exit(s["bytes"] > s["max_bytes"])' ||
		fail "gc did not run for a user who may only read gc.lock: $(cat stats.json)"

	mkdir -m 555 locked
	as_nobody "$GPUCC" cache gc --max-size 1G --save --cache "$TEST_DIR/locked/sub/cache" >out 2>err
	[ $? = 1 ] || fail "creating a cache without permission did not exit 1"
	assert_one_line err
	assert_grep "cannot create cache '$TEST_DIR/locked/sub/cache': Permission denied" err
else
	skip_block "another user in a shared cache, and a cache it may not create (needs root and setpriv to run gpucc as nobody)"
fi

# ---- a cache this user may not search (mode 000, or its v1/): one line that
# names it, for every subcommand (it was a warning about its config, then an
# error about v1/00; lookup warned twice and exited 2)
unprivileged=
if [ "$(id -u)" != 0 ]; then
	unprivileged=env
elif as_nobody true 2>/dev/null && as_nobody test -x "$GPUCC"; then
	unprivileged=as_nobody
fi
if [ -n "$unprivileged" ]; then
	chmod a+rx "$TEST_DIR"
	make_image N.gpucc N 0 2
	chmod a+r N.gpucc
	mkdir -m 000 closed
	mkdir -p closedv1/v1 && chmod 777 closedv1 && chmod 000 closedv1/v1
	for cache in closed closedv1; do
		for sub in stats "stats --json" "stats --reset" verify gc clear "prune -n" \
				"lookup $key0" "import N.gpucc"; do
			$unprivileged "$GPUCC" cache $sub --cache "$TEST_DIR/$cache" >out 2>err
			rc=$?
			[ $rc = 1 ] || { cat err >&2; fail "cache $sub of a cache '$cache' no one may read exited $rc, not 1"; }
			assert_one_line err
			assert_grep "^gpucc cache ${sub%% *}: cannot read cache '$TEST_DIR/$cache'.*: Permission denied$" err
			[ ! -s out ] || fail "cache $sub of an unreadable cache printed: $(cat out)"
		done
	done
	chmod 755 closed closedv1/v1
	# stats --reset of a cache this user may not write: one line, nothing
	# printed (it printed the numbers, then failed to zero them)
	expect_exit 0 "$GPUCC" cache import -q --cache ro N.gpucc
	expect_exit 2 "$GPUCC" cache lookup --cache ro "$key0"
	chmod -R a+rX,a-w ro
	for json in "" --json; do
		$unprivileged "$GPUCC" cache stats --reset $json --cache "$TEST_DIR/ro" >out 2>err
		rc=$?
		[ $rc = 1 ] || { cat err >&2; fail "stats --reset $json of a read-only cache exited $rc, not 1"; }
		assert_one_line err
		assert_grep "^gpucc cache stats: cannot reset the counters of cache '$TEST_DIR/ro': it is read-only$" err
		[ ! -s out ] || fail "stats --reset $json of a read-only cache printed: $(cat out)"
	done
	# every refusal says what failed and why ("cache 'X' is read-only" did
	# neither for gc --save; gc and clear did not say why)
	for sub in "gc:cannot gc" "clear:cannot clear" "gc --max-size 1M --save:cannot save the bound of" \
			"import N.gpucc:cannot write to"; do
		$unprivileged "$GPUCC" cache ${sub%%:*} --cache "$TEST_DIR/ro" >out 2>err
		rc=$?
		[ $rc = 1 ] || { cat err >&2; fail "cache ${sub%%:*} of a read-only cache exited $rc, not 1"; }
		assert_one_line err
		assert_grep "^gpucc cache ${sub%%[ :]*}: ${sub#*:} cache '$TEST_DIR/ro': it is read-only (Permission denied)$" err
	done
	chmod -R u+w ro
	expect_exit 0 "$GPUCC" cache stats --cache ro
	assert_grep "^misses            1$" out

	# clear and gc --max-size 0 of a cache one of whose shards this user
	# may not write (another user's): the other entries go, and the
	# entries left make it exit 1 with one line saying how many and naming
	# the first and why (both exited 0 and left them, unsaid)
	make_image S.gpucc S 0 12
	for sub in clear "gc --max-size 0"; do
		rm -rf stuck
		expect_exit 0 "$GPUCC" cache import -q --cache stuck S.gpucc
		chmod -R a+rwX stuck
		shard=$(ls -d stuck/v1/??/ | head -1)
		held=$(ls "$shard" | wc -l)
		chmod 755 "$shard"
		[ "$(id -u)" = 0 ] || chmod 555 "$shard"
		$unprivileged "$GPUCC" cache $sub --cache "$TEST_DIR/stuck" >out 2>err
		rc=$?
		chmod 755 "$shard"
		[ $rc = 1 ] || { cat err >&2; fail "cache $sub leaving entries it could not remove exited $rc, not 1"; }
		assert_one_line err
		assert_grep "^gpucc cache ${sub%% *}: cache '$TEST_DIR/stuck': $held entr[a-z]* could not be removed; the first, '$TEST_DIR/$shard[0-9a-f]*\.gpucc': Permission denied$" err
		[ "$(find stuck/v1 -name '*.gpucc' | wc -l)" = "$held" ] ||
			fail "cache $sub left other entries than those it could not remove: $(find stuck/v1 -name '*.gpucc')"
	done
else
	skip_block "a cache this user may not search (gpucc cannot run as an unprivileged user here)"
fi

# ---- import: again adds nothing; a corrupt image stops at its bad entry,
# and what went in before it is whole; stats and verify write nothing
make_image I.gpucc I 0 6
expect_exit 0 "$GPUCC" cache import --cache imp I.gpucc
assert_grep "^imported 6 entries into 'imp' (6 new, 0 already there, 0 conflicts)$" out
expect_exit 0 "$GPUCC" cache import --cache imp I.gpucc
assert_grep "^imported 6 entries into 'imp' (0 new, 6 already there, 0 conflicts)$" out
# One file given twice, by the same path or a hard link, is read once (it
# counted 12 entries, 6 of them "already there"); a copy is another file,
# whose entries are already there.
ln I.gpucc Ilink.gpucc
expect_exit 0 "$GPUCC" cache import --cache twice I.gpucc I.gpucc ./Ilink.gpucc
assert_grep "^imported 6 entries into 'twice' (6 new, 0 already there, 0 conflicts)$" out
cp I.gpucc Icopy.gpucc
expect_exit 0 "$GPUCC" cache import --cache twice2 I.gpucc Icopy.gpucc
assert_grep "^imported 12 entries into 'twice2' (6 new, 6 already there, 0 conflicts)$" out
rm -f Ilink.gpucc Icopy.gpucc
python3 - I.gpucc Ibad.gpucc <<'PY' || fail "cannot corrupt the image"
import sys
d = bytearray(open(sys.argv[1], "rb").read())
name = d.find(b"payloads/", d.find(b"payloads/") + 1)   # the second payload
d[name - name % 512 + 512 + 7] ^= 0xff                  # a byte of its data
open(sys.argv[2], "wb").write(d)
PY
expect_exit 3 "$GPUCC" verify Ibad.gpucc
expect_exit 3 "$GPUCC" cache import --cache impbad Ibad.gpucc
assert_one_line err
assert_grep "SHA-256 digest mismatch" err
expect_exit 0 "$GPUCC" cache verify --cache impbad
expect_exit 0 "$GPUCC" cache stats --json --cache impbad
python3 -c 'import json; d=json.load(open("out")); assert d["entries"] < 6, d' ||
	fail "a corrupt image was imported whole"
(cd imp && find . -printf '%p %s %T@\n' | sort) > imp.before
expect_exit 0 "$GPUCC" cache stats --cache imp
expect_exit 0 "$GPUCC" cache stats --json --cache imp
python3 -c 'import json; d=json.load(open("out")); assert sorted(d) == sorted(["directory", "entries", "bytes", "max_bytes", "hits", "misses", "corrupt", "reset_time", "remote"]), d' ||
	fail "cache stats --json is not the documented object"
expect_exit 0 "$GPUCC" cache verify --cache imp --json
(cd imp && find . -printf '%p %s %T@\n' | sort) > imp.after
assert_same imp.before imp.after

# ---- stats --reset zeroes only counters it has printed: not when standard
# output cannot be written
expect_exit 0 "$GPUCC" cache import -q --cache rs I.gpucc
expect_exit 2 "$GPUCC" cache lookup --cache rs "$key0"
if [ -w /dev/full ]; then
	"$GPUCC" cache stats --reset --cache rs >/dev/full 2>err
	rc=$?
	[ $rc = 1 ] || fail "stats --reset to /dev/full exited $rc, not 1"
	assert_one_line err
	assert_grep "^gpucc cache stats: cannot write to standard output: the counters were not reset$" err
	expect_exit 0 "$GPUCC" cache stats --cache rs
	assert_grep "^misses            1$" out
	# (counters count from the cache's first use until a reset: not "never")
	assert_grep "^counting since    first use (never reset)$" out
	expect_exit 0 "$GPUCC" cache stats --reset --cache rs
	assert_grep "^misses            1$" out
	expect_exit 0 "$GPUCC" cache stats --cache rs
	assert_grep "^misses            0$" out
	assert_grep "^counting since    20[0-9][0-9]-[01][0-9]-[0-3][0-9] [0-9:]* UTC$" out
fi

# ---- a count of one is singular in every message ("1 entries", "1 bytes"
# were printed); --json keeps its names
make_image one.gpucc One 0 1
make_image one2.gpucc One 0 1 v1
expect_exit 0 "$GPUCC" cache import --cache one one.gpucc
assert_grep "^imported 1 entry into 'one' (1 new, 0 already there, 0 conflicts)$" out
expect_exit 0 "$GPUCC" cache import --cache one --on-conflict=first one2.gpucc
assert_grep "^imported 1 entry into 'one' (0 new, 0 already there, 1 conflict)$" out
onefile=$(ls one/v1/*/*.gpucc)
touch "$(dirname "$onefile")/.left.tmp.1.1"
expect_exit 0 "$GPUCC" cache verify --cache one
assert_grep "^one: ok (1 entry, [0-9]* bytes, 1 temporary file)$" out
expect_exit 0 "$GPUCC" cache prune -n --cache one
assert_grep "^would remove 1 entry (.*); 0 entries (0 bytes) would stay$" out
expect_exit 0 "$GPUCC" cache gc --cache one --max-size 0
assert_grep "^removed 1 entry (.*); 0 entries (0 bytes) left; removed 1 temporary file left by killed processes$" out
expect_exit 0 "$GPUCC" cache gc -q --cache one --max-size 1 --save
expect_exit 0 "$GPUCC" cache stats --cache one
assert_grep "^max size          1 byte$" out
expect_exit 0 "$GPUCC" cache stats --cache one --json
assert_grep '"max_bytes": 1,' out
cp one.gpucc "$onefile"
printf 'X' | dd of="$onefile" bs=1 seek=2000 conv=notrunc 2>/dev/null
expect_exit 3 "$GPUCC" cache verify --cache one
assert_grep "^gpucc cache verify: cache 'one': 1 corrupt entry$" err

# ---- verify names a corrupt entry and removes nothing; a lookup removes it
bad=$(ls imp/v1/*/*.gpucc | head -1)
badkey=$(basename "$bad" .gpucc)
printf 'X' | dd of="$bad" bs=1 seek=2000 conv=notrunc 2>/dev/null
expect_exit 3 "$GPUCC" cache verify --cache imp
assert_grep "^gpucc cache verify: '$bad': " err
assert_file "$bad"
expect_exit 2 "$GPUCC" cache lookup --cache imp "$badkey"
assert_grep "^miss $badkey$" out
assert_grep "warning: cache entry '$bad' is corrupt" err
assert_no_file "$bad"
expect_exit 0 "$GPUCC" cache verify --cache imp

# ---- two imports of one key with different contents, racing: one of them
# reports the conflict; one that succeeds finds all its entries in the cache
make_image A.gpucc R 0 40 vA
make_image B.gpucc R 0 40 vB
"$GPUCC" snapshot --show A.gpucc > A.snap
"$GPUCC" snapshot --show B.gpucc > B.snap
for round in $(seq 1 12); do
	rm -rf race
	"$GPUCC" cache import -q --cache race A.gpucc 2>a.err & pa=$!
	"$GPUCC" cache import -q --cache race B.gpucc 2>b.err & pb=$!
	wait $pa; ra=$?
	wait $pb; rb=$?
	[ "$ra" = 4 ] || [ "$rb" = 4 ] ||
		fail "round $round: racing conflicting imports exited $ra and $rb, no conflict reported"
	"$GPUCC" snapshot --show race > race.snap
	[ "$ra" != 0 ] || cmp -s race.snap A.snap || fail "round $round: A's import succeeded, but the cache lost its entries"
	[ "$rb" != 0 ] || cmp -s race.snap B.snap || fail "round $round: B's import succeeded, but the cache lost its entries"
	for f in a.err b.err; do
		[ ! -s $f ] || { assert_one_line $f; assert_grep "conflict: key" $f; }
	done
	expect_exit 0 "$GPUCC" cache verify --cache race
	assert_grep "ok (.* entries, .* bytes, 0 temporary files)" out
done

# A control character in the cache's name is escaped in text output, as
# image names are: each report stays one row.
odd=$'odd\ncache'
expect_exit 0 "$GPUCC" cache import --cache "$odd" A.gpucc
assert_one_line out
assert_grep "^imported [0-9]* entr[a-z]* into 'odd\\\\ncache' (" out
expect_exit 0 "$GPUCC" cache verify --cache "$odd"
assert_one_line out
assert_grep '^odd\\ncache: ok (' out
expect_exit 0 "$GPUCC" cache stats --cache "$odd"
assert_grep '^cache directory   odd\\ncache$' out
expect_exit 0 "$GPUCC" cache stats --json --cache "$odd"
python3 -c 'import json,sys; s=json.load(open("out")); assert s["directory"].endswith(sys.argv[1]), s' "$odd" ||
	fail "stats --json changed the cache's name"
# libgpucc's warnings and errors spell it so too, whatever the control
# character (a warning ran over two lines, an error made the newline a
# space, and both let an escape sequence reach the terminal raw).
for spelt in 'odd\ncache' 'odd\x1bcache' 'odd\tcache'; do
	odd=$(printf "$spelt")
	mkdir -p "$odd/v1"
	echo 'max-size = 0' > "$odd/config"
	expect_exit 0 "$GPUCC" cache stats --cache "$odd"
	assert_one_line err
	grep -q -F "gpucc cache stats: warning: '$spelt/config', line 1: max-size 0 ignored" err ||
		fail "the warning did not spell '$spelt': $(cat -A err)"
	rm -r "$odd"
	printf 'not a cache\n' > "$odd"
	expect_exit 3 "$GPUCC" cache import --cache "$odd" A.gpucc
	assert_one_line err
	grep -q -F "gpucc cache import: cache '$spelt' is not a directory" err ||
		fail "the error did not spell '$spelt': $(cat -A err)"
	tr -d '\n' < err | LC_ALL=C grep -q '[[:cntrl:]]' && fail "a control character was printed: $(cat -A err)"
	rm "$odd"
	# The command's own messages, and its lines about libgpucc's reports.
	expect_exit 2 "$GPUCC" cache stats --cache "$odd"
	assert_one_line err
	grep -q -F "gpucc cache stats: cache '$spelt' does not exist" err ||
		fail "the error did not spell '$spelt': $(cat -A err)"
	expect_exit 0 "$GPUCC" cache import -q --cache "$odd" A.gpucc
	set -- "$odd"/v1/*/*.gpucc
	printf 'X' | dd of="$1" bs=1 seek=200 conv=notrunc 2>/dev/null
	expect_exit 3 "$GPUCC" cache verify --cache "$odd"
	[ "$(wc -l < err)" = 2 ] || fail "one corrupt entry should be two lines: $(cat -A err)"
	[ "$(grep -o -F "'$spelt/v1/" err | wc -l)" = 1 ] ||
		fail "verify did not name the corrupt entry once, spelt: $(cat -A err)"
	grep -q -F "gpucc cache verify: cache '$spelt': 1 corrupt entry" err ||
		fail "verify did not spell '$spelt': $(cat -A err)"
	tr -d '\n' < err | LC_ALL=C grep -q '[[:cntrl:]]' && fail "a control character was printed: $(cat -A err)"
	rm -r "$odd"
done
# ---- a FIFO, symbolic link or directory where the cache keeps a file is
# refused without being read or followed: a FIFO under an entry's name (or
# as stats, config or compile-toolchain) blocked a lookup, and so a compile,
# for ever; a link was followed wherever it led, and counted by no gc
make_image P.gpucc P 0 4
expect_exit 0 "$GPUCC" cache import -q --cache fifo P.gpucc
set -- $(keys_of P.gpucc)
pfile() { echo "fifo/v1/$(printf %.2s "$1")/$1.gpucc"; }
cp "$(pfile "$2")" linked.gpucc
rm "$(pfile "$1")" "$(pfile "$2")" "$(pfile "$3")"
mkfifo "$(pfile "$1")"
ln -s "$TEST_DIR/linked.gpucc" "$(pfile "$2")"
mkdir "$(pfile "$3")"
expect_exit 3 timeout 20 "$GPUCC" cache verify --cache fifo
assert_grep "^gpucc cache verify: '$(pfile "$1")' is a FIFO, not a cache entry$" err
assert_grep "^gpucc cache verify: '$(pfile "$2")' is a symbolic link, not a cache entry$" err
assert_grep "^gpucc cache verify: '$(pfile "$3")' is a directory, not a cache entry$" err
assert_grep "^gpucc cache verify: cache 'fifo': 3 corrupt entries$" err
expect_exit 2 timeout 20 "$GPUCC" cache lookup --cache fifo "$1" "$2" "$3" "$4"
printf 'miss %s\nmiss %s\nmiss %s\nhit  %s\n' "$1" "$2" "$3" "$4" > want
assert_same out want
[ "$(grep -c "warning: cache entry '.*' is corrupt, treated as a miss: '.*' is a .*, not a cache entry$" err)" = 3 ] ||
	fail "lookup did not report the three: $(cat err)"
[ ! -e "$(pfile "$1")" ] && [ ! -L "$(pfile "$2")" ] || fail "lookup kept a FIFO or a link"
assert_file linked.gpucc
rmdir "$(pfile "$3")"
expect_exit 0 timeout 20 "$GPUCC" cache import --cache fifo P.gpucc
assert_grep "(3 new, 1 already there, 0 conflicts)" out
expect_exit 0 timeout 20 "$GPUCC" cache stats --cache fifo
assert_grep "^misses            3$" out
assert_grep "^corrupt entries   3$" out
mv fifo/stats stats.saved
mkfifo fifo/stats fifo/config fifo/compile-toolchain
expect_exit 0 timeout 20 "$GPUCC" cache lookup --cache fifo "$1"
assert_grep "^gpucc cache lookup: warning: cannot read 'fifo/config', its settings are ignored: not a regular file$" err
assert_grep "^gpucc cache lookup: warning: cannot save cache counters: 'fifo/stats' is not a regular file" err
[ "$(wc -l < err)" = 2 ] || fail "expected two warnings: $(cat err)"
expect_exit 0 timeout 20 "$GPUCC" cache stats --cache fifo
assert_grep "^hits              0$" out
if "$GPUCC" compile --no-cache --no-cubin -t sm_90 "$TESTDATA/kernels/nvptx/vector_add.ll" >/dev/null 2>&1; then
	expect_exit 0 timeout 60 "$GPUCC" compile --cache fifo --no-cubin -t sm_90 "$TESTDATA/kernels/nvptx/vector_add.ll" -o fifo.out.gpucc
else
	skip_block "the compile part of the FIFO case (this gpucc cannot compile)"
fi
rm fifo/stats fifo/config fifo/compile-toolchain
# ---- a file where the layout has a directory (v1/, a shard, v1/tmp) makes
# every insert there fail and every lookup miss: verify said "ok"
make_image L.gpucc L 0 3
expect_exit 0 "$GPUCC" cache import -q --cache lay L.gpucc
set -- $(keys_of L.gpucc)
shard=$(printf %.2s "$1")
rm -r "lay/v1/$shard" && echo x > "lay/v1/$shard"
expect_exit 3 "$GPUCC" cache verify --cache lay
assert_grep "^gpucc cache verify: 'lay/v1/$shard' is not a directory: no entry whose key starts with $shard can be stored$" err
assert_grep "^gpucc cache verify: cache 'lay': 0 corrupt entries, 1 file where a directory belongs$" err
[ "$(wc -l < err)" = 2 ] || fail "expected two lines: $(cat err)"
expect_exit 3 "$GPUCC" cache verify --json --cache lay
assert_grep '"ok": false, .*"corrupt": 1,' out
mkdir lay2 && echo x > lay2/v1
expect_exit 3 "$GPUCC" cache verify --cache lay2
assert_grep "^gpucc cache verify: 'lay2/v1' is not a directory: no entry can be stored$" err
# ---- RLIMIT_FSIZE (ulimit -f) with SIGXFSZ at its default: a write past
# it killed gpucc (exit 153, a core, a temporary left), a compile too when
# only its cache entry passed the limit; now it fails as a full disk does
make_image X.gpucc X 0 2 v0 20000
( trap - XFSZ; ulimit -f 8; exec "$GPUCC" cache import --cache fsz X.gpucc ) >out 2>err
rc=$?
[ $rc = 1 ] || { cat err >&2; fail "an import past ulimit -f exited $rc, not 1"; }
assert_one_line err
assert_grep "^gpucc cache import: cannot insert into cache 'fsz': cannot write 'fsz/v1/.*\.gpucc': File too large$" err
expect_exit 0 "$GPUCC" cache verify --cache fsz
assert_grep "^fsz: ok (0 entries, 0 bytes, 0 temporary files)$" out
if "$GPUCC" compile --no-cache --no-cubin -t sm_90 "$TESTDATA/kernels/nvptx/vector_add.ll" >/dev/null 2>&1; then
	( trap - XFSZ; ulimit -f 4; exec "$GPUCC" compile --cache fsz --no-cubin -t sm_90 \
		"$TESTDATA/kernels/nvptx/vector_add.ll" ) >out 2>err
	rc=$?
	[ $rc = 0 ] || { cat err >&2; fail "a compile whose cache entry passed ulimit -f exited $rc, not 0"; }
	assert_one_line err
	assert_grep "warning: .*: not cached: cannot insert into cache 'fsz': .*: File too large" err
	expect_exit 0 "$GPUCC" cache stats --cache fsz
	assert_grep "^misses            1$" out
fi
# ---- what counts as use for gc (formats/cache.md): a lookup's hit and an
# import of an entry already there; the oldest of the rest go first
make_image U.gpucc U 0 8
make_image U1.gpucc U 1 1
expect_exit 0 "$GPUCC" cache import -q --cache use U.gpucc
ufile() { echo "use/v1/$(printf %.2s "$1")/$1.gpucc"; }
again=$(keys_of U1.gpucc)
keys_of U.gpucc | grep -v "^$again$" > U.keys   # the other 7, made older in this order
i=0
for k in $again $(cat U.keys); do touch -d "@$((1000000000 + i))" "$(ufile "$k")"; i=$((i + 1)); done
hit=$(sed -n 1p U.keys) newest=$(sed -n 7p U.keys) next=$(sed -n 6p U.keys)
expect_exit 0 "$GPUCC" cache lookup -q --cache use "$hit"
expect_exit 0 "$GPUCC" cache import --cache use U1.gpucc
assert_grep "(0 new, 1 already there, 0 conflicts)" out
bound=0
for k in $hit $again $newest $next; do bound=$((bound + $(stat -c %s "$(ufile "$k")"))); done
expect_exit 0 "$GPUCC" cache gc --cache use --max-size $bound
assert_grep "^removed 4 entries" out
for k in $hit $again $newest $next; do [ -f "$(ufile "$k")" ] || fail "gc evicted $k"; done
echo ok
