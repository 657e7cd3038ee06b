# cmd/tests/algebra_bad_input.sh -- bad inputs to snapshot, delta and merge:
# corrupt, truncated and wrong-version snapshots, missing inputs, an
# unwritable output directory, bad key lists.  Each is a one-line error, a
# non-zero exit and nothing written.
. "$SRCROOT/cmd/tests/lib.sh"
. "$SRCROOT/cmd/tests/algebra_helpers.sh"

make_image A.gpucc Q 0 3
expect_exit 0 "$GPUCC" snapshot A.gpucc -o good.snap

no_output() {
	assert_one_line err
	assert_no_file out.gpucc
	assert_no_file out.snap
	ls -a | grep -q '\.tmp\.' && fail "temporary files left behind"
	return 0
}

# truncated
head -c 100 good.snap > trunc.snap
expect_exit 3 "$GPUCC" delta A.gpucc --since trunc.snap -o out.gpucc
assert_grep "trunc.snap': snapshot of 3 keys must be 256 bytes, not 100 (truncated)" err
no_output
head -c 20 good.snap > short.snap
expect_exit 3 "$GPUCC" snapshot --show short.snap
# short.snap starts with the magic, so it is a truncated snapshot, not an image
assert_grep "truncated snapshot" err
no_output
# ... and so is one cut inside the magic, as a source of every command
head -c 7 good.snap > tiny.snap
expect_exit 3 "$GPUCC" delta A.gpucc --since tiny.snap -o out.gpucc
assert_one_line err
assert_grep "tiny.snap': truncated snapshot (7 bytes" err
no_output
# corrupt: one flipped bit in an item
python3 -c 'import sys; b=bytearray(open("good.snap","rb").read()); b[40]^=1; open("flip.snap","wb").write(b)'
expect_exit 3 "$GPUCC" delta A.gpucc --since flip.snap -o out.gpucc
assert_grep "flip.snap': snapshot checksum mismatch" err
no_output
# a snapshot that shrinks or grows while it is read (strace makes a read
# find the end early, or one more byte past the size it had): one line,
# exit 1; it used to say "Input/output error", or take the prefix
if have strace "a snapshot that shrinks or grows while it is read"; then
	no_leak_check strace -o /dev/null -P good.snap -e trace=read -e inject=read:retval=0:when=2 \
		"$GPUCC" delta A.gpucc --since good.snap -o out.gpucc >out 2>err
	[ $? -eq 1 ] || fail "a snapshot that shrank was not refused"
	grep -v '^strace:' err > err1 && mv err1 err
	assert_one_line err
	assert_grep "good.snap': snapshot changed while being read (shorter than its 256 bytes" err
	no_output
	no_leak_check strace -o /dev/null -P good.snap -e trace=read -e inject=read:retval=1:when=3 \
		"$GPUCC" snapshot --show good.snap >out 2>err
	[ $? -eq 1 ] || fail "a snapshot that grew was not refused"
	grep -v '^strace:' err > err1 && mv err1 err
	assert_one_line err
	assert_grep "good.snap': snapshot changed while being read (longer than its 256 bytes" err
	[ ! -s out ] || fail "a snapshot that grew was shown"
	no_output
fi
# another version
python3 -c 'import sys; b=bytearray(open("good.snap","rb").read()); b[16]=9; open("v9.snap","wb").write(b)'
expect_exit 3 "$GPUCC" snapshot --show v9.snap
assert_grep "v9.snap': snapshot format version 9, this gpucc reads version 1" err
no_output
# trailing bytes
cat good.snap good.snap > twice.snap
expect_exit 3 "$GPUCC" merge A.gpucc twice.snap -o out.gpucc
assert_grep "trailing bytes" err
no_output
# a snapshot where an image must be
expect_exit 3 "$GPUCC" merge A.gpucc good.snap -o out.gpucc
assert_grep "good.snap' is a snapshot" err
no_output
# garbage that is neither
printf 'hello, world\n' > junk.snap
expect_exit 3 "$GPUCC" delta A.gpucc --since junk.snap -o out.gpucc
no_output

# An input cut short whose entries another input holds, identical: merge
# took each of them from the first input that has it and never read the
# cut one, so a corrupt input passed (exit 0).  Now it is refused however
# little of it is read -- an uncompressed one by its length, a compressed
# one by reading it to its end -- by merge (-o and --into), delta (as
# SOURCE, and as BASE, of an image or a snapshot: a BASE image was only
# read to its manifest, so one cut after it passed) and cache import: one
# line naming it, exit 3, nothing written.
make_image W.gpucc Q 0 6                     # holds all of A.gpucc, and more
cut_after_manifest() {
	local at
	at=$(python3 -c 'import sys, tarfile; print(next(m.offset for m in tarfile.open(sys.argv[1]).getmembers() if m.name.startswith("payloads/")))' "$1")
	head -c "$at" "$1" > "$2"
}
cut_after_manifest A.gpucc cutA.gpucc
head -c $(($(stat -c %s A.gpucc) - 1024)) A.gpucc > noend.gpucc  # no end-of-archive marker
# Compressed: big incompressible payloads, so that opening reads the
# manifest, not the end.
python3 - <<'PY' || fail "cannot make the spec"
import json, os, hashlib
entries = []
for i in range(4):
    open(f"rand{i}", "wb").write(os.urandom(200000))
    entries.append({"module": f"r{i}.ll", "module_sha256": hashlib.sha256(b"r%d" % i).hexdigest(),
                    "options": {}, "kernels": [f"k{i}"], "target": "sm_90", "ptx": f"rand{i}"})
json.dump({"entries": entries}, open("rand.json", "w"))
PY
expect_exit 0 "$GPUCC" pack -o R.gpucc rand.json
expect_exit 0 "$GPUCC" pack --zstd -o Rz.gpucc rand.json
head -c $(($(stat -c %s Rz.gpucc) * 2 / 3)) Rz.gpucc > cutRz.gpucc
expect_exit 0 "$GPUCC" list cutRz.gpucc   # its manifest is whole
rm -f rand? rand.json
for pair in "W.gpucc cutA.gpucc" "W.gpucc noend.gpucc" "R.gpucc cutRz.gpucc"; do
	set -- $pair
	expect_exit 0 "$GPUCC" snapshot "$1" -o whole.snap
	for cmd in "merge $1 $2 -o out.gpucc" "merge $2 $1 -o out.gpucc" \
		"delta $2 --since $1 -o out.gpucc" "delta $1 --since $2 -o out.gpucc" \
		"delta whole.snap --since $2 -o out.snap" "merge $1 $2 --into cut.cache" \
		"cache import --cache cut.cache $1 $2"; do
		expect_exit 3 $GPUCC $cmd
		assert_grep "^gpucc [a-z ]*: '$2': .*truncated" err
		no_output
	done
	rm -rf cut.cache
done
# ... and whole, the same inputs pass
expect_exit 0 "$GPUCC" merge W.gpucc A.gpucc -o out.gpucc
expect_exit 0 "$GPUCC" merge R.gpucc Rz.gpucc -o out.gpucc
expect_exit 0 "$GPUCC" delta Rz.gpucc --since R.gpucc -o out.gpucc
assert_grep ": 0 new entries of 4" err
expect_exit 0 "$GPUCC" delta R.gpucc --since Rz.gpucc -o out.gpucc
assert_grep ": 0 new entries of 4" err
expect_exit 0 "$GPUCC" delta whole.snap --since Rz.gpucc -o out.snap
rm -f out.gpucc out.snap whole.snap W.gpucc cutA.gpucc noend.gpucc R.gpucc Rz.gpucc cutRz.gpucc

# missing inputs
expect_exit 2 "$GPUCC" merge A.gpucc missing.gpucc -o out.gpucc
assert_grep "missing.gpucc" err
no_output
# Inputs are opened on several threads; of several bad ones, the first on
# the command line is reported, every time.
for run in 1 2 3 4; do
	expect_exit 2 "$GPUCC" merge A.gpucc A.gpucc missing.gpucc twice.snap A.gpucc -o out.gpucc
	assert_one_line err
	assert_grep "missing.gpucc" err
	expect_exit 3 "$GPUCC" merge A.gpucc twice.snap A.gpucc missing.gpucc -o out.gpucc
	assert_one_line err
	assert_grep "twice.snap': .*trailing bytes" err
	expect_exit 2 "$GPUCC" cache import --cache c A.gpucc missing.gpucc junk.snap A.gpucc
	assert_one_line err
	assert_grep "missing.gpucc" err
done
no_output
expect_exit 2 "$GPUCC" delta A.gpucc --since missing.snap -o out.gpucc
assert_grep "missing.snap" err
no_output
expect_exit 2 "$GPUCC" snapshot missing.gpucc -o out.snap
no_output
expect_exit 2 "$GPUCC" snapshot --keys missing.txt -o out.snap
no_output
expect_exit 2 "$GPUCC" cache import --cache c missing.gpucc
assert_one_line err
# a directory that is not a cache (an empty one is an empty cache:
# algebra_identities)
mkdir notacache
: > notacache/notes.txt
expect_exit 3 "$GPUCC" snapshot notacache -o out.snap
assert_grep "not a gpucc cache" err
no_output

# A FIFO, a device or a pipe as SOURCE or BASE: refused at once, naming it
# (it used to block in open() on a FIFO without a writer, and a pipe lost
# the bytes read to tell a snapshot from an image: "not a gpucc image").
mkfifo in.fifo
for cmd in "snapshot in.fifo -o out.snap" "snapshot --show in.fifo" \
	"delta A.gpucc --since in.fifo -o out.gpucc" "delta in.fifo --since good.snap -o out.gpucc" \
	"merge A.gpucc in.fifo -o out.gpucc" "snapshot /dev/null -o out.snap" \
	"cache import --cache imp in.fifo"; do
	expect_exit 3 timeout 10 $GPUCC $cmd
	assert_one_line err
	# (the reason names no command: cache import read it too)
	assert_grep "'[^']*' is not a regular file (images and snapshots are read from files, caches from directories)$" err
	no_output
done
expect_exit 3 "$GPUCC" snapshot <(cat A.gpucc) -o out.snap
assert_grep "is not a regular file" err
no_output
# ... but a key list may come from anywhere
expect_exit 0 "$GPUCC" snapshot --keys /dev/null -o nothing.snap
"$GPUCC" snapshot --show good.snap | "$GPUCC" snapshot --keys - -o fromstdin.snap 2>err ||
	fail "--keys - failed: $(cat err)"
assert_same good.snap fromstdin.snap
rm -f nothing.snap fromstdin.snap

# -o naming an input of snapshot or delta (by any spelling) is refused: the
# output holds less than the input, so the input would be lost.
cp A.gpucc keepA.gpucc
cp good.snap keep.snap
expect_exit 129 "$GPUCC" snapshot keepA.gpucc -o ./keepA.gpucc
assert_one_line err
assert_grep "names the SOURCE" err
expect_exit 129 "$GPUCC" delta keepA.gpucc --since keep.snap -o keepA.gpucc
assert_grep "names the SOURCE" err
expect_exit 129 "$GPUCC" delta keepA.gpucc --since keep.snap -o "$TEST_DIR/keep.snap"
assert_grep "names the BASE" err
expect_exit 129 "$GPUCC" delta keep.snap --since good.snap -o keep.snap
assert_same keepA.gpucc A.gpucc
assert_same keep.snap good.snap
no_output
"$GPUCC" snapshot --show good.snap > keep.txt
cp keep.txt keep2.txt
expect_exit 129 "$GPUCC" snapshot --keys keep.txt -o keep.txt
assert_grep "names the key list" err
expect_exit 129 "$GPUCC" snapshot --keys - -o keep.txt < keep.txt
assert_same keep.txt keep2.txt
rm keep.txt keep2.txt
# the delta of a snapshot is a snapshot: --zstd cannot apply (it was ignored)
expect_exit 129 "$GPUCC" delta keep.snap --since good.snap --zstd -o out.snap
assert_grep "the delta of snapshot 'keep.snap' is a snapshot" err
no_output

# bad key lists
printf 'nothex\n' > bad.txt
expect_exit 3 "$GPUCC" snapshot --keys bad.txt -o out.snap
assert_grep "bad.txt' line 1" err
no_output
"$GPUCC" snapshot --show good.snap > keys.txt
k=$(head -1 keys.txt | cut -c1-64)
echo "$k 0000000000000000000000000000000000000000000000000000000000000000" >> keys.txt
expect_exit 4 "$GPUCC" snapshot --keys keys.txt -o out.snap
assert_grep "appears twice with different contents" err
no_output

# an output directory that does not exist, or cannot be written
expect_exit 2 "$GPUCC" merge A.gpucc -o nodir/out.gpucc
assert_one_line err
assert_no_file nodir
expect_exit 2 "$GPUCC" delta A.gpucc --since good.snap -o nodir/out.gpucc
assert_one_line err
expect_exit 2 "$GPUCC" snapshot A.gpucc -o nodir/out.snap
assert_one_line err
# an output that is not a file: refused, never replaced (as root the rename
# would put a file where /dev/null was)
mkfifo fifo
for out in /dev/null fifo; do
	expect_exit 3 "$GPUCC" merge A.gpucc -o $out
	assert_one_line err
	assert_grep "'$out' is not a regular file" err
done
[ -c /dev/null ] || fail "/dev/null is no longer a device"
[ -p fifo ] || fail "the FIFO was replaced"
expect_exit 3 "$GPUCC" snapshot A.gpucc -o /dev/null
# A process's stream as -o: no image can reach a stream by a rename, so
# these are refused (129) before anything is read.  /dev/stdout, a link to
# /proc/self/fd/1, was replaced by a regular file (as root; exit 0 and
# nothing on stdout), and -o - made a file named '-'.  out.link stands in for
# /dev/stdout, whose replacement would break the machine.
ln -s /proc/self/fd/1 out.link
for cmd in "merge A.gpucc" "delta A.gpucc --since good.snap" "snapshot A.gpucc"; do
	for out in out.link - /dev/fd/1 /proc/self/fd/1; do
		expect_exit 129 $GPUCC $cmd -o $out
		assert_one_line err
		[ ! -s out ] || fail "'$cmd -o $out' wrote on stdout"
	done
	assert_grep "'/proc/self/fd/1' names a process's stream, not a file" err
done
[ -L out.link ] || fail "out.link was replaced"
assert_no_file ./-
expect_exit 129 "$GPUCC" merge A.gpucc -o -
assert_grep "^gpucc merge: -o -: standard output is not supported" err
mkdir ro
chmod a-w ro
if not_root "merge into a directory that is not writable"; then
	expect_exit 1 "$GPUCC" merge A.gpucc -o ro/out.gpucc
	assert_one_line err
	assert_grep "ro/out.gpucc" err
	[ -z "$(ls -A ro)" ] || fail "something was written in ro/"
fi
# An output that cannot be created is refused before any input is read
# (trunc.snap, a bad input, is never reached), in one line that says truly
# why, as compile's and embed's are: a file on the path was 'its directory
# does not exist' (merge: exit 1, 'cannot lock'), and a directory that is
# not writable was found only after the work.
long=$(printf '%0250d' 0)
for cmd in "merge trunc.snap" "delta trunc.snap --since good.snap" "snapshot trunc.snap" \
	"pack trunc.snap"; do
	name=${cmd%% *}
	expect_exit 2 $GPUCC $cmd -o A.gpucc/out
	assert_one_line err
	assert_grep "^gpucc $name: cannot create 'A.gpucc/out': 'A.gpucc' is not a directory$" err
	expect_exit 2 $GPUCC $cmd -o nodir/out
	assert_grep "^gpucc $name: cannot create 'nodir/out': its directory does not exist$" err
	expect_exit 2 $GPUCC $cmd -o A.gpucc/x/out
	assert_grep "^gpucc $name: cannot create 'A.gpucc/x/out': a component of 'A.gpucc/x' is not a directory$" err
	# A directory where the output goes is bad input (3) in every command
	# (compile and embed said 129), whether it exists or only its name
	# says so (merge -o newdir/ blamed a missing directory).
	expect_exit 3 $GPUCC $cmd -o newdir/
	assert_one_line err
	assert_grep "^gpucc $name: 'newdir/' names a directory, not a file: give the output's file name$" err
	assert_no_file newdir
	expect_exit 3 $GPUCC $cmd -o ro
	assert_one_line err
	assert_grep "^gpucc $name: 'ro' is a directory, not a file name: give the output's file name$" err
	expect_exit 3 $GPUCC $cmd -o "$long"
	assert_one_line err
	assert_grep "^gpucc $name: cannot create '0*': File name too long (the name has 250 bytes" err
	expect_exit 129 $GPUCC $cmd -o /proc/x.out
	assert_grep "^gpucc $name: -o '/proc/x.out' is in /proc, where only the kernel makes files" err
	if [ "$(id -u)" != 0 ]; then
		expect_exit 1 $GPUCC $cmd -o ro/out
		assert_grep "^gpucc $name: cannot create 'ro/out': its directory 'ro' is not writable (Permission denied)$" err
	elif [ -d /sys/kernel ]; then
		expect_exit 1 $GPUCC $cmd -o /sys/kernel/x.out
		assert_one_line err
		assert_grep "^gpucc $name: cannot create '/sys/kernel/x.out': its directory '/sys/kernel' \\(is not writable (Permission denied)\\|is on a read-only file system\\)$" err
	else
		skip_block "$name -o into a directory that is not writable (root, and no /sys/kernel)"
	fi
	no_output
done

# standard output closed or full: one line that says so, as with --json
# (the text form said "cannot write snapshot text", not where)
expect_exit 0 "$GPUCC" snapshot A.gpucc -o showme.snap
for json in "" --json; do
	"$GPUCC" snapshot --show showme.snap $json >&- 2>err && fail "--show $json to a closed stdout succeeded"
	assert_one_line err
	assert_grep "^gpucc snapshot: cannot write to standard output: Bad file descriptor$" err
	if [ -w /dev/full ]; then
		"$GPUCC" snapshot --show showme.snap $json >/dev/full 2>err && fail "--show $json to a full disk succeeded"
		assert_one_line err
		assert_grep "^gpucc snapshot: cannot write to standard output: No space left on device$" err
	fi
done

# usage errors
# An empty value of a path option is a usage error, as --into '' was: -o ''
# was taken for a file name (exit 3) and --since '' for a missing file
# (exit 2) -- a script's unset variable, not a path.
for cmd in "merge A.gpucc -o" "merge A.gpucc --into" "delta A.gpucc --since good.snap -o" \
	"delta A.gpucc -o out.gpucc --since" "cache import A.gpucc --cache"; do
	expect_exit 129 $GPUCC $cmd ''
	assert_one_line err
	assert_grep "^gpucc [a-z ]*: -[-a-z]* needs a [a-z ,]*, not '' (see 'gpucc [a-z ]* -h')$" err
	no_output
done
expect_exit 129 "$GPUCC" merge A.gpucc
expect_exit 129 "$GPUCC" merge A.gpucc -o x.gpucc --into c
expect_exit 129 "$GPUCC" delta A.gpucc -o out.gpucc
expect_exit 129 "$GPUCC" merge A.gpucc --zstd=99 -o out.gpucc
# An option that decides what is written, given twice, must say one thing:
# a bad value followed by a good one, or fail then last, was settled by the
# last one given
expect_exit 129 "$GPUCC" merge A.gpucc --zstd=99 --zstd=3 -o out.gpucc
expect_exit 129 "$GPUCC" merge A.gpucc --zstd --zstd=19 -o out.gpucc
assert_one_line err
assert_grep "^gpucc merge: --zstd and --zstd=19 disagree" err
expect_exit 129 "$GPUCC" merge A.gpucc --on-conflict=bogus --on-conflict=first -o out.gpucc
expect_exit 129 "$GPUCC" merge A.gpucc --on-conflict=fail --on-conflict last -o out.gpucc
assert_one_line err
assert_grep "^gpucc merge: --on-conflict=fail and --on-conflict=last disagree" err
expect_exit 129 "$GPUCC" delta A.gpucc --since good.snap --on-conflict=first --on-conflict=last -o out.gpucc
expect_exit 129 "$GPUCC" cache import --cache c A.gpucc --on-conflict=last --on-conflict=first
assert_no_file c
expect_exit 0 "$GPUCC" merge A.gpucc --on-conflict=first --on-conflict first --zstd=5 --zstd=5 -q -o twice.gpucc
rm twice.gpucc
expect_exit 129 "$GPUCC" snapshot A.gpucc
no_output
# A cache where an image is expected: said so.
expect_exit 0 "$GPUCC" cache import A.gpucc --cache dircache -q
expect_exit 3 "$GPUCC" verify dircache
assert_one_line err
assert_grep "'dircache' is a gpucc cache, not an image$" err
mkdir plaindir
expect_exit 3 "$GPUCC" list plaindir
assert_grep "'plaindir' is a directory, not an image" err
# An input whose name is too long to open is a bad input (3), as in
# compile and embed, said on one line with the name cut and its length:
# these exited 1, a failure of the machine, for a defect of the name given.
long=$(printf 'a%.0s' $(seq 5000))
for cmd in "list $long" "show $long 00" "cat --part ptx $long 00" "verify $long" "stats $long" \
	"extract $long" "merge $long -o out.gpucc" "delta $long --since good.snap -o out.gpucc" \
	"delta A.gpucc --since $long -o out.gpucc" "snapshot $long -o out.snap" \
	"snapshot --show $long" "cache import $long --cache c" "snapshot --keys $long -o out.snap" \
	"pack -o out.gpucc $long"; do
	expect_exit 3 $GPUCC $cmd
	assert_one_line err
	assert_grep "^gpucc [a-z ]*: cannot open 'a*\\.\\.\\.': File name too long (the name has 5000 bytes)$" err
	no_output
done
assert_no_file c
# extract -C '' (a script's unset $DIR) is a usage error, as an empty -o
# is: it extracted into the current directory.
before=$(ls -A | grep -vx 'out\|err')
expect_exit 129 "$GPUCC" extract A.gpucc -C ''
assert_one_line err
assert_grep "^gpucc extract: -C needs a directory, not '' (see 'gpucc extract -h')$" err
[ "$(ls -A | grep -vx 'out\|err')" = "$before" ] || fail "extract -C '' wrote files"
echo ok
