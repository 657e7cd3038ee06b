# cmd/tests/algebra_identities.sh -- the cache algebra, byte for byte:
#   delta(A, snapshot(A)) is empty;
#   merge(B, delta(A, snapshot(B))) holds exactly A u B (and is merge(A, B));
#   merge is commutative and associative, compressed inputs or not;
#   import then snapshot of a cache equals the snapshot of the image;
#   identical entries under other module names keep the smallest;
#   -o may name an input; delta from a cache; snapshot text round trip.
. "$SRCROOT/cmd/tests/lib.sh"
. "$SRCROOT/cmd/tests/algebra_helpers.sh"

make_image A.gpucc E 0 12          # E-0 .. E-11
make_image B.gpucc E 8 10          # E-8 .. E-17: overlaps A in E-8 .. E-11
make_image C.gpucc F 0 7
make_image Cz.gpucc F 0 7 v0 300 --zstd

# delta(A, snapshot(A)) is a valid empty image
expect_exit 0 "$GPUCC" snapshot A.gpucc -o A.snap
expect_exit 0 "$GPUCC" delta A.gpucc --since A.snap -o empty.gpucc
assert_verifies empty.gpucc
[ "$(keys_of empty.gpucc | wc -l)" -eq 0 ] || fail "delta(A, snapshot(A)) is not empty"
# and against the image itself as base
expect_exit 0 "$GPUCC" delta A.gpucc --since A.gpucc -o empty2.gpucc
assert_same empty.gpucc empty2.gpucc
# An empty cache is a source like any other: its snapshot is empty, a
# merge or delta of it is the empty image.
mkdir emptycache
expect_exit 0 "$GPUCC" snapshot emptycache -o emptycache.snap
expect_exit 0 "$GPUCC" merge emptycache -o empty3.gpucc
assert_same empty.gpucc empty3.gpucc
expect_exit 0 "$GPUCC" delta emptycache --since A.snap -o empty4.gpucc
assert_same empty.gpucc empty4.gpucc
# So is an empty directory (a CI job's cache after mkdir -p), as compile,
# merge --into and cache import take it; reading it creates nothing in it.
mkdir emptydir
expect_exit 0 "$GPUCC" snapshot emptydir -o emptydir.snap
assert_same emptycache.snap emptydir.snap
expect_exit 0 "$GPUCC" merge emptydir -o empty5.gpucc
assert_same empty.gpucc empty5.gpucc
expect_exit 0 "$GPUCC" delta emptydir --since A.snap -o empty6.gpucc
assert_same empty.gpucc empty6.gpucc
expect_exit 0 "$GPUCC" delta A.gpucc --since emptydir -o A-since-emptydir.gpucc
expect_exit 0 "$GPUCC" merge A.gpucc -o A-merged.gpucc
assert_same A-merged.gpucc A-since-emptydir.gpucc
[ -z "$(ls -A emptydir)" ] || fail "reading an empty directory as a cache wrote into it"

# merge(B, delta(A, snapshot(B))) == A u B == merge(A, B)
expect_exit 0 "$GPUCC" snapshot B.gpucc -o B.snap
expect_exit 0 "$GPUCC" delta A.gpucc --since B.snap -o dA.gpucc
[ "$(keys_of dA.gpucc | wc -l)" -eq 8 ] || fail "delta(A, snapshot(B)) should hold E-0..E-7"
expect_exit 0 "$GPUCC" merge B.gpucc dA.gpucc -o BdA.gpucc
expect_exit 0 "$GPUCC" merge A.gpucc B.gpucc -o AB.gpucc
assert_same BdA.gpucc AB.gpucc
(keys_of A.gpucc; keys_of B.gpucc) | sort -u > union.keys
keys_of AB.gpucc > AB.keys
assert_same union.keys AB.keys
[ "$(wc -l < AB.keys)" -eq 18 ] || fail "A u B should hold 18 entries"
assert_verifies AB.gpucc dA.gpucc
# a compressed SOURCE or BASE gives the same delta, and --zstd only
# compresses it
expect_exit 0 "$GPUCC" merge B.gpucc --zstd=3 -o Bz.gpucc
expect_exit 0 "$GPUCC" merge A.gpucc --zstd=3 -o Az.gpucc
for src in A Az; do
	for base in B.snap B.gpucc Bz.gpucc; do
		expect_exit 0 "$GPUCC" delta $src.gpucc --since $base -o d.gpucc
		assert_same d.gpucc dA.gpucc
	done
done
expect_exit 0 "$GPUCC" delta Az.gpucc --since Bz.gpucc --zstd -o dz.gpucc
keys_of dz.gpucc > dz.keys
keys_of dA.gpucc > dA.keys
assert_same dz.keys dA.keys
assert_verifies dz.gpucc
expect_exit 0 "$GPUCC" delta Az.gpucc --since Az.gpucc -o d.gpucc
assert_same d.gpucc empty.gpucc

# commutativity and associativity, with a compressed input in the mix
expect_exit 0 "$GPUCC" merge B.gpucc A.gpucc -o BA.gpucc
assert_same AB.gpucc BA.gpucc
expect_exit 0 "$GPUCC" merge A.gpucc B.gpucc C.gpucc -o ABC.gpucc
expect_exit 0 "$GPUCC" merge AB.gpucc C.gpucc -o AB_C.gpucc
expect_exit 0 "$GPUCC" merge B.gpucc C.gpucc -o BC.gpucc
expect_exit 0 "$GPUCC" merge A.gpucc BC.gpucc -o A_BC.gpucc
expect_exit 0 "$GPUCC" merge Cz.gpucc BA.gpucc -o CzBA.gpucc
expect_exit 0 "$GPUCC" merge C.gpucc A.gpucc B.gpucc A.gpucc -o CABA.gpucc
for f in AB_C A_BC CzBA CABA; do
	assert_same ABC.gpucc $f.gpucc
done
# a compressed output holds the same entries, and its bytes are deterministic too
expect_exit 0 "$GPUCC" merge A.gpucc B.gpucc C.gpucc --zstd=5 -o ABCz.gpucc
expect_exit 0 "$GPUCC" merge Cz.gpucc B.gpucc A.gpucc --zstd=5 -o CzBAz.gpucc
assert_same ABCz.gpucc CzBAz.gpucc
head -c 4 ABCz.gpucc | od -An -tx1 | grep -q "28 b5 2f fd" || fail "--zstd output is not zstd"
keys_of ABCz.gpucc > z.keys
keys_of ABC.gpucc > p.keys
assert_same z.keys p.keys
assert_verifies ABCz.gpucc
# a merge of one image is that image's entries, rewritten canonically
expect_exit 0 "$GPUCC" merge AB.gpucc -o AB2.gpucc
assert_same AB.gpucc AB2.gpucc

# One entry built from modules of other file names (CI jobs that named the
# source differently): the copies collapse to the smallest name whatever
# the order, into an image or into a cache.
echo "module" > m.ll
printf '.version 7.8\n// one\n' > one.ptx
for n in b a c; do
	expect_exit 0 "$GPUCC" pack -o N$n.gpucc -m m.ll --module-name $n.ll -t sm_90 -k k --ptx one.ptx
done
expect_exit 0 "$GPUCC" merge Nb.gpucc Na.gpucc Nc.gpucc -o Nbac.gpucc
assert_grep "2 duplicates" err
# Counts of one are singular ("1 inputs", "1 duplicates" before).
expect_exit 0 "$GPUCC" merge Na.gpucc -o N1.gpucc
assert_grep "^gpucc merge: 1 entry from 1 input: 1 in the output, 0 duplicates, 0 conflicts$" err
expect_exit 0 "$GPUCC" merge Na.gpucc Nb.gpucc -o N1.gpucc
assert_grep "^gpucc merge: 2 entries from 2 inputs: 1 in the output, 1 duplicate, 0 conflicts$" err
expect_exit 0 "$GPUCC" delta Na.gpucc --since Nb.gpucc -o N1.gpucc
assert_grep "^gpucc delta: 0 new entries of 1; written to 'N1.gpucc'$" err
expect_exit 0 "$GPUCC" delta Na.gpucc --since A.gpucc -o N1.gpucc
assert_grep "^gpucc delta: 1 new entry of 1; written to 'N1.gpucc'$" err
rm N1.gpucc
expect_exit 0 "$GPUCC" merge Nc.gpucc Nb.gpucc Na.gpucc -o Ncba.gpucc
assert_same Nbac.gpucc Na.gpucc
assert_same Ncba.gpucc Na.gpucc
expect_exit 0 "$GPUCC" merge Nc.gpucc Nb.gpucc Na.gpucc --into Ncache
expect_exit 0 "$GPUCC" merge Ncache -o Nfromcache.gpucc
assert_same Nfromcache.gpucc Na.gpucc
# Two caches, each holding the entry under its own name: merged into each
# other either way, and merged from in either order, they give the smallest
# name (a cache kept the name it held first, so the bytes followed the order)
for n in b a; do
	expect_exit 0 "$GPUCC" cache import -q --cache Ncache$n N$n.gpucc
	cp -r Ncache$n Ninto$n
done
expect_exit 0 "$GPUCC" merge Ncacheb Ncachea -o Nba.gpucc
expect_exit 0 "$GPUCC" merge Ncachea Ncacheb -o Nab.gpucc
assert_same Nab.gpucc Nba.gpucc
expect_exit 0 "$GPUCC" merge Ncachea --into Nintob
assert_grep "^gpucc merge: 1 entry from 1 input: 0 new in the cache, 1 duplicate, 0 conflicts$" err
expect_exit 0 "$GPUCC" merge -q Ncacheb --into Nintoa
for n in a b; do
	expect_exit 0 "$GPUCC" merge Ninto$n -o Ninto$n.gpucc
	assert_same Ninto$n.gpucc Na.gpucc
	expect_exit 0 "$GPUCC" cache verify -q --cache Ninto$n
done

# -o naming an input: the update is in place and atomic
cp A.gpucc acc.gpucc
expect_exit 0 "$GPUCC" merge acc.gpucc B.gpucc -o acc.gpucc
assert_same acc.gpucc AB.gpucc
expect_exit 0 "$GPUCC" merge acc.gpucc C.gpucc -o acc.gpucc
assert_same acc.gpucc ABC.gpucc
ls -a | grep -q '\.tmp\.' && fail "temporary files left behind"

# import then snapshot of the cache equals the snapshot of the image
export GPUCC_CACHE_DIR="$TEST_DIR/cache"
expect_exit 0 "$GPUCC" cache import A.gpucc Cz.gpucc B.gpucc
assert_grep "imported 29 entries" out
expect_exit 0 "$GPUCC" snapshot "$GPUCC_CACHE_DIR" -o cache.snap
expect_exit 0 "$GPUCC" snapshot ABC.gpucc -o ABC.snap
assert_same cache.snap ABC.snap
# importing again changes nothing
expect_exit 0 "$GPUCC" cache import ABCz.gpucc
assert_grep "(0 new, 25 already there, 0 conflicts)" out
# merge --into is import
expect_exit 0 "$GPUCC" merge A.gpucc --into "$TEST_DIR/cache2"
expect_exit 0 "$GPUCC" snapshot "$TEST_DIR/cache2" -o cache2.snap
expect_exit 0 "$GPUCC" snapshot A.gpucc -o A.snap
assert_same cache2.snap A.snap

# delta of a cache since a snapshot: the model's workflow
expect_exit 0 "$GPUCC" cache clear
expect_exit 0 "$GPUCC" cache import A.gpucc
expect_exit 0 "$GPUCC" snapshot "$GPUCC_CACHE_DIR" -o before.snap
expect_exit 0 "$GPUCC" cache import C.gpucc          # "the build"
expect_exit 0 "$GPUCC" delta "$GPUCC_CACHE_DIR" --since before.snap -o added.gpucc
expect_exit 0 "$GPUCC" merge C.gpucc -o C2.gpucc
assert_same added.gpucc C2.gpucc
# a merge of a cache and an image is their union
expect_exit 0 "$GPUCC" merge "$GPUCC_CACHE_DIR" B.gpucc -o cacheB.gpucc
expect_exit 0 "$GPUCC" merge ABC.gpucc -o ABC2.gpucc
assert_same cacheB.gpucc ABC2.gpucc

# A cache of more entries than the process may open files: merge, delta
# and import from it still give the bytes the image gives (entries beyond
# half the limit are reopened one at a time as they are copied).
make_image many.gpucc M 0 300 v0 40
expect_exit 0 "$GPUCC" cache import many.gpucc --cache "$TEST_DIR/many"
expect_exit 0 "$GPUCC" merge many.gpucc -o many-want.gpucc
expect_exit 0 "$GPUCC" merge many.gpucc --zstd=1 -o many-wantz.gpucc
(
	ulimit -n 64
	expect_exit 0 "$GPUCC" merge "$TEST_DIR/many" -o many-merged.gpucc
	expect_exit 0 "$GPUCC" merge "$TEST_DIR/many" --zstd=1 -o many-mergedz.gpucc
	expect_exit 0 "$GPUCC" delta "$TEST_DIR/many" --since emptycache.snap -o many-delta.gpucc
	expect_exit 0 "$GPUCC" merge "$TEST_DIR/many" A.gpucc --into "$TEST_DIR/many2"
) || exit 1
assert_same many-want.gpucc many-merged.gpucc
assert_same many-wantz.gpucc many-mergedz.gpucc
assert_same many-want.gpucc many-delta.gpucc
expect_exit 0 "$GPUCC" merge "$TEST_DIR/many2" -o many2.gpucc
expect_exit 0 "$GPUCC" merge many.gpucc A.gpucc -o many2-want.gpucc
assert_same many2-want.gpucc many2.gpucc

# snapshots: text round trip and delta of snapshots
expect_exit 0 "$GPUCC" snapshot --show ABC.snap
cp out ABC.txt
[ "$(wc -l < ABC.txt)" -eq 25 ] || fail "--show should print 25 lines"
sort -r ABC.txt > shuffled.txt
expect_exit 0 "$GPUCC" snapshot --keys shuffled.txt -o ABC2.snap
assert_same ABC.snap ABC2.snap
expect_exit 0 "$GPUCC" delta ABC.snap --since A.snap -o new.snap
expect_exit 0 "$GPUCC" snapshot --show new.snap
[ "$(wc -l < out)" -eq 13 ] || fail "ABC minus A should be 13 keys"
expect_exit 0 "$GPUCC" snapshot --show --json new.snap
python3 -c 'import json,sys; d=json.load(open("out")); assert d["count"]==13 and len(d["items"])==13' ||
	fail "--json output is wrong"
# --show with -o prints and writes (-h said "instead of writing one")
expect_exit 0 "$GPUCC" snapshot ABC.snap --show -o ABC3.snap
assert_same out ABC.txt
assert_same ABC3.snap ABC.snap
expect_exit 0 "$GPUCC" snapshot -h
assert_grep "^      --show .*on stdout; with -o, write it too" out

# A big snapshot is shown, copied and used as a base in memory for one copy
# of it (64 bytes a key), not three (the read, a copy, a sorting buffer).
python3 -c '
import hashlib, sys
with open("big.txt", "w") as f:
    for i in range(200000):
        d = hashlib.sha256(str(i).encode()).hexdigest()
        f.write(d + " " + d + "\n")'
expect_exit 0 "$GPUCC" snapshot -q --keys big.txt -o big.snap
if [ -z "$SANITIZE_CFLAGS" ]; then
	size_kib=$(($(wc -c < big.snap) / 1024))
	for cmd in "snapshot --show big.snap" "snapshot --show --json big.snap" \
		"snapshot -q big.snap -o big2.snap" "delta -q A.gpucc --since big.snap -o d-big.gpucc"; do
		kib=$(peak_rss_kib "$GPUCC" $cmd) || exit 1
		[ "$kib" -lt $((size_kib * 3 / 2 + 8192)) ] ||
			fail "'gpucc $cmd' peaked at $kib KiB for a $size_kib KiB snapshot"
	done
	assert_same big.snap big2.snap
	[ "$(keys_of d-big.gpucc | wc -l)" -eq 12 ] || fail "no key of A is in big.snap"
else
	skip_block "a big snapshot's peak memory (under the sanitizers RSS is their shadow memory)"
fi

# A cache as the source of merge, delta and import: the growth of peak RSS
# from 1,000 to 4,000 entries stays under 2 KiB an entry, whether the
# entries keep their descriptors or are parked (measured without
# MALLOC_PERTURB_, which touches every byte malloc hands out and so measures
# what is allocated, not what is used).  It was about 3.4 KiB: each entry
# kept its 256 KiB read-ahead window, a page of it touched, a 1 KiB arena
# and an array of eight entries for its manifest of one.
if [ -z "$SANITIZE_CFLAGS" ]; then
	make_image M1k.gpucc M 0 1000 v0 64
	make_image M4k.gpucc M 0 4000 v0 64
	expect_exit 0 "$GPUCC" merge -q M1k.gpucc --into Mcache1k
	expect_exit 0 "$GPUCC" merge -q M4k.gpucc --into Mcache4k
	for files in "$(ulimit -n)" 1024; do
		for cmd in "merge -q Mcache@ -o Mout.gpucc" "delta -q Mcache@ --since A.snap -o Mout.gpucc" \
			"merge -q Mcache@ --into Mimport@"; do
			small=$(ulimit -n $files && peak_kib env -u MALLOC_PERTURB_ "$GPUCC" ${cmd//@/1k})
			large=$(ulimit -n $files && peak_kib env -u MALLOC_PERTURB_ "$GPUCC" ${cmd//@/4k})
			per_entry=$(( (large - small) * 1024 / 3000 ))
			[ "$per_entry" -le 2048 ] ||
				fail "'gpucc $cmd' (open files $files) holds $per_entry bytes an entry (peaks $small and $large KiB)"
			rm -rf Mout.gpucc Mimport1k Mimport4k
		done
	done
	expect_exit 0 "$GPUCC" merge -q Mcache4k -o Mout.gpucc
	assert_same Mout.gpucc M4k.gpucc
	rm -rf M1k.gpucc M4k.gpucc Mcache1k Mcache4k Mout.gpucc
fi

# --no-sync changes durability, not bytes: the same image, and (where strace
# can tell) no fsync at all, where the default flushes the output.
expect_exit 0 "$GPUCC" merge --no-sync A.gpucc B.gpucc -o AB-nosync.gpucc
assert_same AB.gpucc AB-nosync.gpucc
expect_exit 0 "$GPUCC" delta --no-sync A.gpucc --since B.gpucc -o dAB-nosync.gpucc
expect_exit 0 "$GPUCC" delta A.gpucc --since B.gpucc -o dAB.gpucc
assert_same dAB.gpucc dAB-nosync.gpucc
if have strace "merge's fsyncs and their order, and none with --no-sync"; then
	no_leak_check strace -f -e trace=fsync,fdatasync -o synced.trace \
		"$GPUCC" merge -q A.gpucc B.gpucc -o AB-synced.gpucc || fail "merge under strace failed"
	assert_grep "fsync" synced.trace
	# In order: the temporary file's own fsync, its rename over the output,
	# then the directory's fsync (which makes the rename durable).
	no_leak_check strace -f -y -e trace=fsync,fdatasync,rename,renameat,renameat2 -o order.trace \
		"$GPUCC" merge -q A.gpucc B.gpucc -o AB-ordered.gpucc || fail "merge under strace failed"
	python3 - "$(pwd -P)" <<'PY' || { cat order.trace >&2; fail "merge's output was not made durable in order (above)"; }
import re, sys
d = sys.argv[1]
calls = [l for l in open("order.trace") if "sync(" in l or "rename" in l]
def first(pattern, after=-1):
    for i, l in enumerate(calls):
        if i > after and re.search(pattern, l):
            return i
    sys.exit("no call matching %s after call %d" % (pattern, after))
temp = first(r"f(data)?sync\(\d+<%s/\.AB-ordered\.gpucc\.tmp\.[^>]*>\)\s+= 0" % re.escape(d))
moved = first(r"rename.*\.AB-ordered\.gpucc\.tmp\..*AB-ordered\.gpucc\"", temp)
first(r"fsync\(\d+<%s>\)\s+= 0" % re.escape(d), moved)
PY
	no_leak_check strace -f -e trace=fsync,fdatasync -o unsynced.trace \
		"$GPUCC" merge -q --no-sync A.gpucc B.gpucc -o AB-unsynced.gpucc ||
		fail "merge --no-sync under strace failed"
	assert_no_grep "sync(" unsynced.trace
fi

# delta's BASE may be a cache, and its SOURCE a snapshot (formats/snapshot.md);
# -h said BASE was "a snapshot or an image" and SOURCE never a snapshot.
make_image base.gpucc D 0 2
make_image more.gpucc D 0 3
expect_exit 0 "$GPUCC" merge base.gpucc --into base-cache
expect_exit 0 "$GPUCC" delta more.gpucc --since base-cache -o d.gpucc
[ "$(keys_of d.gpucc | wc -l)" -eq 1 ] || fail "the delta since a cache should hold 1 entry"
expect_exit 0 "$GPUCC" snapshot more.gpucc -o more.snap
expect_exit 0 "$GPUCC" delta more.snap --since base-cache -o d.snap
expect_exit 0 "$GPUCC" snapshot --show d.snap
[ "$(wc -l < out)" -eq 1 ] || fail "the delta of a snapshot should be a snapshot of 1 key"
expect_exit 0 "$GPUCC" delta -h
tr '\n' ' ' < out | grep -q "BASE a snapshot, an image or a cache" ||
	{ cat out >&2; fail "delta -h does not say BASE may be a cache"; }
assert_grep "Of a snapshot SOURCE the delta is" out
assert_grep "the snapshot, image or cache whose keys to leave out" out
echo ok
