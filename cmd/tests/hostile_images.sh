# cmd/tests/hostile_images.sh -- every command that reads images, on every
# hostile image of testdata/hostile/make_hostile_images.py (issue 6), and
# the limits that bound what reading costs (formats/image.md, "Limits").
#
# For each image and each of verify, list, show, cat, extract, merge, delta
# (the image as source, and as base), snapshot, cache import and stats
# (text and --json):
#   - the exit code follows from the stage that meets the defect (the
#     generator's cases.tsv; 3 for bad input, 0 where the command does not
#     read what is damaged); delta's BASE, none of whose payloads is read,
#     is checked whole (formats/image.md, "Reading", step 6), which for an
#     uncompressed image depends on its length too (see base_code);
#   - a failure prints nothing on stdout and exactly one line on stderr,
#     "gpucc CMD: ..." naming the image and matching the defect;
#   - nothing changes outside the command's output directory, no output
#     file or temporary file is left after a failure, the cache holds only
#     entries that verify, and the inputs keep their checksums;
#   - memory stays bounded: each command runs under `prlimit --as` and its
#     peak RSS (GNU time) stays under MAX_RSS_KB (not in sanitizer builds,
#     whose shadow memory makes both meaningless).
. "$SRCROOT/cmd/tests/lib.sh"

command -v python3 >/dev/null || skip "python3 is needed to make the fixtures"
MAX_RSS_KB=$((64 * 1024))     # peak resident memory of any one command
MAX_AS=$((1024 * 1024 * 1024)) # address space of any one command

# Layout: inputs in in/, each command's outputs in res/, bookkeeping in t/
# (and expect_exit's ./out and ./err).
unset GPUCC_IMAGE_LIMITS
mkdir in res t
expect_exit 0 "$GPUCC" pack -o in/good.gpucc "$TESTDATA/example/pack.json"
python3 "$TESTDATA/hostile/make_hostile_images.py" in/good.gpucc in/hostile ||
	fail "making the fixtures failed"
[ "$(wc -l < in/hostile/cases.tsv)" -ge 90 ] || fail "too few fixtures: $(wc -l < in/hostile/cases.tsv)"
: > t/empty.keys
expect_exit 0 "$GPUCC" snapshot --keys t/empty.keys -o in/empty.snap
echo '{"entries": []}' > t/empty.json
expect_exit 0 "$GPUCC" pack -o in/empty.gpucc t/empty.json

# The key and part of the first payload in archive order.
first=$(tar -tf in/good.gpucc | grep '^payloads/' | head -n 1)
part=${first##*.}
"$GPUCC" list in/good.gpucc > t/good.list || fail "list good.gpucc"
key=$(awk -v p="$part" 'index($3, p ":") == 1 { print $1 }' t/good.list)
[ -n "$key" ] || fail "no entry holds the first payload"

# How memory is watched (see the top).
measure=()
if ldd "$GPUCC" | grep -q 'lib[at]san'; then
	echo "sanitizer build: memory bounds not checked"
else
	command -v prlimit >/dev/null && measure+=(prlimit --as=$MAX_AS)
	[ -x /usr/bin/time ] && measure=(/usr/bin/time -f %M -o t/rss "${measure[@]}")
fi

# What the tree outside res/ looks like (names, kinds, sizes, times), and
# the inputs' checksums.  A run must leave the tree as t/tree.before shows
# it; that is taken again only after the script itself changed the tree
# (which removes it), not before each of the ~1,000 runs.  Not "." itself:
# its time changes whenever res/ is made afresh; what appears in it is
# listed on its own line.
outside() {
	find . -mindepth 1 \( -path ./res -o -path ./t -o -path ./out -o -path ./err \) -prune -o \
		-printf '%p %y %s %T@ %l\n' | sort
}
find in -type f -exec sha256sum {} + | sort > t/inputs.before

# run CMD_NAME EXPECTED FILE DEFECT CMD... -- run a command with a fresh
# res/ and check all of the above.
run() {
	local name=$1 want=$2 file=$3 defect=$4
	shift 4
	rm -rf res && mkdir res
	[ -f t/tree.before ] || outside > t/tree.before
	expect_exit "$want" "${measure[@]}" "$@"
	outside > t/tree.after
	cmp -s t/tree.before t/tree.after ||
		fail "'$*' changed files outside res/: $(diff t/tree.before t/tree.after | head -5)"
	if [ -f t/rss ]; then
		local kb
		kb=$(tail -1 t/rss)
		[ "$kb" -le "$MAX_RSS_KB" ] || fail "'$*' peaked at $kb KiB, over $MAX_RSS_KB"
		[ "$kb" -le "${peak_kb:-0}" ] || { peak_kb=$kb; peak_cmd="$*"; }
		rm -f t/rss
	fi
	[ "$want" != 0 ] || return 0
	assert_one_line err
	assert_grep "^gpucc $name: .*'$file'" err
	assert_grep "$defect" err
	[ ! -s out ] || fail "'$*' failed but wrote on stdout"
	local left
	left=$(find res -mindepth 1 ! -type d ! -path 'res/cache/*')
	[ -z "$left" ] || fail "'$*' failed but left: $left"
	if [ -d res/cache ]; then
		# Entries that verified may be published; nothing else.
		find res/cache -name '*.gpucc' | while read -r entry; do
			"$GPUCC" verify -q "$entry" || fail "'$*' left an unverified cache entry $entry"
		done || exit 1
		left=$(find res/cache -path '*/tmp/*' -type f)
		[ -z "$left" ] || fail "'$*' left temporary files: $left"
	fi
}

# The exit code of each command for a defect met at STAGE (cases.tsv).
# stats reads the manifest and builds the payload list from it, so it
# fails at "open" and "payloads" and nowhere else; "payloads" is otherwise
# "first".
code() {
	local cmd=$1 stage=$2
	case $stage:$cmd in
	open:* | payloads:stats) echo 3 ;;
	*:stats) echo 0 ;;
	payloads:*) code "$cmd" first ;;
	*:verify) echo 3 ;;
	index:show | index:cat) echo 3 ;;
	first:cat) echo 3 ;;
	first:* | all:*) case $cmd in extract|merge|delta|import) echo 3 ;; *) echo 0 ;; esac ;;
	write:* | whole:*) case $cmd in merge|delta|import) echo 3 ;; *) echo 0 ;; esac ;;
	*) echo 0 ;;
	esac
}

# The exit code of delta with the image FILE as its BASE, for a defect met
# at STAGE.  The BASE is checked whole and nothing more: a compressed one
# is decompressed to its end-of-archive marker, which meets every defect of
# a member's header or kind ("first", "all": not a digest, which is "write"
# and "verify"'s); an uncompressed one is only measured against the members
# its manifest lists, so it fails at "first" or "all" only when the defect
# leaves it shorter than they take (a link, a device, a FIFO or a sparse
# member holds no data), and then with verify's error.
base_code() {
	local file=$1 stage=$2
	case $stage:$file in
	open:* | payloads:* | whole:*) echo 3 ;;
	first:*.zst.gpucc | all:*.zst.gpucc) echo 3 ;;
	first:* | all:*) if shorter_than_listed "$file"; then echo 3; else echo 0; fi ;;
	*) echo 0 ;;
	esac
}
# Whether the uncompressed image FILE is shorter than the members its
# manifest lists take: each a one-block header and its data padded to
# whole blocks, and one zero block (the head of these images is the
# one-block ustar members of the format member, the index when there is
# one, and the manifest).
shorter_than_listed() {
	python3 - "$1" <<'PY'
import json, sys
b = open(sys.argv[1], "rb").read()
pad = lambda n: (n + 511) // 512 * 512
size = lambda at: int(b[at + 124:at + 136].split(b"\0")[0].strip() or b"0", 8)
at = 512 + pad(size(0))
head = 3 * 512 + pad(size(0)) + pad(size(at))
if b[at:at + 12] == b"manifest.idx":
    at += 512 + pad(size(at))
    head += 512 + pad(size(at))
manifest = json.loads(b[at + 512:at + 512 + size(at)])
payloads = {(p["sha256"], p["part"]): p["size"] for e in manifest["entries"] for p in e["payloads"]}
least = head + sum(512 + pad(n) for n in payloads.values())
sys.exit(0 if len(b) < least else 1)
PY
}

cases=0
while IFS=$'\t' read -r base stage defect; do
	f=in/hostile/$base
	c() { code "$1" "$stage"; }
	run verify "$(c verify)" "$f" "$defect" "$GPUCC" verify "$f"
	run list "$(c list)" "$f" "$defect" "$GPUCC" list "$f"
	run show "$(c show)" "$f" "$defect" "$GPUCC" show "$f" "$key"
	run cat "$(c cat)" "$f" "$defect" "$GPUCC" cat "$f" "$key" --part "$part"
	run extract "$(c extract)" "$f" "$defect" "$GPUCC" extract "$f" -C res/x
	run merge "$(c merge)" "$f" "$defect" "$GPUCC" merge "$f" -o res/merged.gpucc
	run delta "$(c delta)" "$f" "$defect" "$GPUCC" delta "$f" --since in/empty.snap -o res/delta.gpucc
	run delta "$(base_code "$f" "$stage")" "$f" "$defect" "$GPUCC" delta in/empty.gpucc --since "$f" -o res/delta.gpucc
	run snapshot "$(c list)" "$f" "$defect" "$GPUCC" snapshot "$f" -o res/snap
	run "cache import" "$(c import)" "$f" "$defect" "$GPUCC" cache import "$f" --cache res/cache
	run stats "$(c stats)" "$f" "$defect" "$GPUCC" stats "$f"
	run stats "$(c stats)" "$f" "$defect" "$GPUCC" stats --json "$f"
	cases=$((cases + 1))
done < in/hostile/cases.tsv

# A compression bomb is refused however it is reached: reading the payload
# after it means expanding it too.
bomb=in/hostile/bomb-payload.zst.gpucc
other=$(awk -v k="$key" '$1 != k && NR > 1 { print $1; exit }' t/good.list)
other_part=$(awk -v k="$other" '$1 == k { sub(/:.*/, "", $3); print $3 }' t/good.list)
run cat 3 "$bomb" "refused.*GPUCC_IMAGE_LIMITS" "$GPUCC" cat "$bomb" "$other" --part "$other_part"

# ---- limits ----------------------------------------------------------------
# A real, highly compressible image: 64 MiB of zeros as one payload, packed at
# zstd level 19 into a few KiB (over 10,000-fold).
head -c $((64 << 20)) /dev/zero > t/zeros.ptx
cat > t/zeros.json <<'EOF'
{"entries": [{"module_file": "zeros.ptx", "target": "sm_90:ptx78", "options": {},
  "kernels": [{"name": "k"}], "ptx": "zeros.ptx"}]}
EOF
expect_exit 0 "$GPUCC" pack --zstd=19 -o in/zeros.gpucc t/zeros.json
rm t/zeros.ptx t/tree.before
find in -type f -exec sha256sum {} + | sort > t/inputs.before
# Refused at the default, naming the limit and how to raise it ...
run verify 3 in/zeros.gpucc "more than 1000-fold.*GPUCC_IMAGE_LIMITS=ratio=N" \
	"$GPUCC" verify in/zeros.gpucc
# ... accepted when it is raised (or turned off) ...
export GPUCC_IMAGE_LIMITS=ratio=100000
expect_exit 0 "$GPUCC" verify in/zeros.gpucc
expect_exit 0 "$GPUCC" extract in/zeros.gpucc -C res/zeros
export GPUCC_IMAGE_LIMITS=ratio=0
expect_exit 0 "$GPUCC" verify in/zeros.gpucc
# ... and the expanded size has its own bound.
export GPUCC_IMAGE_LIMITS=ratio=0,expanded=32M
run verify 3 in/zeros.gpucc "more than 32 MiB when decompressed.*GPUCC_IMAGE_LIMITS=expanded=SIZE" \
	"$GPUCC" verify in/zeros.gpucc
export GPUCC_IMAGE_LIMITS=ratio=0,expanded=80M
expect_exit 0 "$GPUCC" verify in/zeros.gpucc
# The manifest's bound, for every reader.
export GPUCC_IMAGE_LIMITS=manifest=1K
for cmd in verify list; do
	run $cmd 3 in/good.gpucc "manifest.json' is [0-9]* bytes, more than the limit of 1 KiB.*manifest=SIZE" \
		"$GPUCC" $cmd in/good.gpucc
done
run merge 3 in/good.gpucc "more than the limit of 1 KiB" "$GPUCC" merge in/good.gpucc -o res/m.gpucc
export GPUCC_IMAGE_LIMITS=manifest=0
expect_exit 0 "$GPUCC" verify in/good.gpucc
# A malformed setting is an error, not silently the default.
for bad in bogus=1 ratio=x manifest; do
	export GPUCC_IMAGE_LIMITS=$bad
	expect_exit 3 "$GPUCC" list in/good.gpucc
	assert_one_line err
	assert_grep "GPUCC_IMAGE_LIMITS: " err
done
unset GPUCC_IMAGE_LIMITS

# ---- what may follow the end-of-archive marker -------------------------------------
# Zero bytes only (the hostile cases above give verify anything else): tar
# pads an archive to a whole record with zeros, and an image that tar or
# Python's tarfile remade from the same members verifies.
(cat in/good.gpucc && head -c 9216 /dev/zero) > t/padded.gpucc
expect_exit 0 "$GPUCC" verify t/padded.gpucc
python3 - in/good.gpucc t/retarred.gpucc <<'PY' || fail "cannot remake the image with tarfile"
import sys, tarfile
with tarfile.open(sys.argv[1]) as src, tarfile.open(sys.argv[2], "w", format=tarfile.PAX_FORMAT) as out:
    for info in src.getmembers():
        out.addfile(info, src.extractfile(info))
PY
[ $(($(stat -c %s t/retarred.gpucc) % 10240)) = 0 ] || fail "tarfile did not pad to a record"
expect_exit 0 "$GPUCC" verify t/retarred.gpucc
rm t/padded.gpucc t/retarred.gpucc

# ---- hostile output directories ------------------------------------------------
# Links planted where outputs go are replaced, never written through.
echo "keep me" > victim
"$GPUCC" extract in/good.gpucc -C probe -q || fail "extract good.gpucc"
mkdir planted
for name in $(ls probe); do ln -s ../victim "planted/$name"; done
"$GPUCC" extract in/good.gpucc -C planted 2>/dev/null && fail "extract overwrote files without --force"
[ "$(cat victim)" = "keep me" ] || fail "extract wrote through a planted link"
expect_exit 0 "$GPUCC" extract --force in/good.gpucc -C planted -q
[ "$(cat victim)" = "keep me" ] || fail "extract wrote through a planted link"
[ -z "$(find planted -type l)" ] || fail "extract left the planted links"
for name in $(ls probe); do assert_same "probe/$name" "planted/$name"; done
ln -s ../victim planted/merged.gpucc
ln -s ../victim planted/snap
expect_exit 0 "$GPUCC" merge in/good.gpucc -o planted/merged.gpucc
expect_exit 0 "$GPUCC" snapshot in/good.gpucc -o planted/snap
[ "$(cat victim)" = "keep me" ] || fail "an output was written through a planted link"

# Inputs unmodified; nothing escaped.
find in -type f -exec sha256sum {} + | sort > t/inputs.after
assert_same t/inputs.before t/inputs.after
assert_no_file /tmp/gpucc-hostile-escaped
assert_no_file escaped.ptx
assert_no_file ../escaped.ptx
# --json output stays JSON whatever the image's name: bytes that are not
# UTF-8 become U+FFFD, control characters \u escapes, valid UTF-8 stays.
weird=$'t/bad\xff\x01n\xc3\xa9\xed\xa0\x80.gpucc'
cp in/good.gpucc "$weird"
expect_exit 0 "$GPUCC" stats --json "$weird"
python3 -c '
import json, sys
name = json.load(open(sys.argv[1]))["image"]
assert name == "t/bad\ufffd\x01n\xe9\ufffd\ufffd\ufffd.gpucc", ascii(name)
' out || fail "stats --json: not JSON, or the name is wrong: $(cat out)"
rm "$weird"

echo "ok: $cases hostile images, 12 commands each${peak_kb:+; peak RSS $peak_kb KiB ($peak_cmd)}"
