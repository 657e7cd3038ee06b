# cmd/tests/hostile_images.sh -- every command that reads images, on every
# hostile image of testdata/hostile/make_hostile_images.py, and
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
#   - memory stays bounded: each command runs with its address space
#     limited to MAX_AS and its peak RSS stays under MAX_RSS_KB (not in
#     sanitizer builds, whose shadow memory makes both meaningless).
# That matrix runs in cmd/tests/hostile_matrix.py, one process for all of
# it; the rest (limits, trailing data, hostile output directories, names)
# here.  This test is in suite 'slow', which scripts/test runs in the
# sanitizer build only, where memory is not watched: memory_bounds.sh
# (HOSTILE_PART=memory) runs the matrix alone, with the bounds, in every
# build but those, and skips there.
. "$SRCROOT/cmd/tests/lib.sh"
part=${HOSTILE_PART:-all}
sanitized=
! ldd "$GPUCC" | grep -q 'lib[at]san' || sanitized=1
[ "$part" = all ] || [ -z "$sanitized" ] ||
	skip "under the sanitizers peak RSS and address space are theirs (shadow memory), not gpucc's"

command -v python3 >/dev/null || skip "python3 is needed to make the fixtures"
MAX_RSS_KB=$((64 * 1024))     # peak resident memory of any one command
unset GLIBC_TUNABLES           # ... with glibc's malloc as users have it (lib.sh)
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
first_part=${first##*.}
"$GPUCC" list in/good.gpucc > t/good.list || fail "list good.gpucc"
key=$(awk -v p="$first_part" 'index($3, p ":") == 1 { print $1 }' t/good.list)
[ -n "$key" ] || fail "no entry holds the first payload"

# The matrix (see the top), memory unwatched under the sanitizers.
find in -type f -exec sha256sum {} + | sort > t/inputs.before
if [ -n "$sanitized" ]; then
	skip_block "the memory bounds of the matrix (under the sanitizers: memory_bounds runs them in a plain build)"
	MAX_RSS_KB=0 MAX_AS=0
fi
python3 "$SRCROOT/cmd/tests/hostile_matrix.py" "$GPUCC" in/hostile/cases.tsv "$key" "$first_part" \
	"$MAX_RSS_KB" "$MAX_AS" > t/matrix || exit 1
read -r cases peak_kb peak_cmd < t/matrix
find in -type f -exec sha256sum {} + | sort > t/inputs.after
assert_same t/inputs.before t/inputs.after
[ "$cases" -ge 90 ] || fail "the matrix ran $cases cases"
if [ "$part" = memory ]; then
	[ -n "$peak_cmd" ] || fail "the matrix measured no peak RSS"
	echo "ok: $cases hostile images, 12 commands each, under ${MAX_AS} bytes of address space and $MAX_RSS_KB KiB of RSS; peak RSS $peak_kb KiB ($peak_cmd)"
	exit 0
fi

# The checks of the matrix, for the few commands below: run NAME EXPECTED
# FILE DEFECT CMD... runs CMD with a fresh res/, then checks its exit code,
# that it changed nothing outside res/ and, when it fails, its one line
# naming FILE and matching DEFECT, and that it left nothing.
outside() {
	find . -mindepth 1 \( -path ./res -o -path ./t -o -path ./out -o -path ./err \) -prune -o \
		-printf '%p %y %s %T@ %l\n' | sort
}
run() {
	local name=$1 want=$2 file=$3 defect=$4
	shift 4
	rm -rf res && mkdir res
	outside > t/tree.before
	expect_exit "$want" "$@"
	outside > t/tree.after
	cmp -s t/tree.before t/tree.after ||
		fail "'$*' changed files outside res/: $(diff t/tree.before t/tree.after | head -5)"
	[ "$want" != 0 ] || return 0
	assert_one_line err
	assert_grep "^gpucc $name: .*'$file'" err
	assert_grep "$defect" err
	[ ! -s out ] || fail "'$*' failed but wrote on stdout"
	[ -z "$(find res -mindepth 1 ! -type d)" ] || fail "'$*' failed but left: $(find res ! -type d)"
}

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
rm t/zeros.ptx
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

# ---- the runtime's readers serve only listed entries --------------------------
# What the matrix asks of show and cat, asked of gpucc_image_open_mapped and
# gpucc_image_open_memory_for_lookup (an embedded image), by key and by
# kernel: an entry hidden from list, or off its line, is never served.
listed() { "$GPUCC" list "$1" 2>/dev/null | awk 'NR > 1 { print $1 }'; }
sm90=$(awk '$2 ~ /^sm_90/ { print $1 }' t/good.list)
"$LOOKUP_PROBE" in/good.gpucc "$sm90" saxpy sm_90 > t/probe || fail "lookup_probe good.gpucc"
[ "$(grep -c ": $sm90[0-9a-f]* sm_90" t/probe)" = 4 ] ||
	fail "the good image's sm_90 entry not served four times: $(cat t/probe)"
for image in index-entry-in-ignored-field index-entry-on-line-in-field manifest-entry-across-lines; do
	"$LOOKUP_PROBE" "in/hostile/$image.gpucc" "$sm90" saxpy sm_90 > t/probe ||
		fail "lookup_probe $image"
	[ "$(wc -l < t/probe)" = 4 ] || fail "$image: not four answers: $(cat t/probe)"
	while read -r how what rest; do
		case $rest in
		error:*"points to no line of the manifest's entries"*) ;;
		error:*) fail "$image: $how $what: another error: $rest" ;;
		*)
			served=${rest%% *}
			listed "in/hostile/$image.gpucc" | grep -q "^${served:0:12}" ||
				fail "$image: $how $what served $served, which list does not show"
			;;
		esac
	done < t/probe
done
grep -q "error:" t/probe || fail "the last probe met no error: $(cat t/probe)"

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

echo "ok: $cases hostile images, 12 commands each${peak_cmd:+; peak RSS $peak_kb KiB ($peak_cmd)}"
