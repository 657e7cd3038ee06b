# cmd/tests/verify_structure.sh -- `gpucc verify --structure`
# (gpucc_image_verify_structure): everything verify checks but the payloads'
# bytes, which is what binds a lookup to the manifest (formats/image.md,
# "What binds a lookup to the manifest").
#   - it refuses what a lookup cannot see by itself: an index that leaves
#     out a kernel's record (the runtime's selection then picks another
#     listed entry), data after the end-of-archive marker;
#   - on every hostile image, it accepts only where verify accepts or where
#     verify's defect is in a payload's bytes;
#   - it reads no payload data of an uncompressed image (strace).
. "$SRCROOT/cmd/tests/lib.sh"
command -v python3 >/dev/null || skip "python3 is needed to make the images"

# Three entries sharing one kernel: sm_90 and sm_80 PTX (the same bytes) and
# a gfx90a code object.
cp "$TESTDATA"/example/saxpy.* .
python3 - "$TESTDATA/example/pack.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
sm80 = dict(doc["entries"][0], target="sm_80:ptx78")
doc["entries"].append(sm80)
json.dump(doc, open("three.json", "w"))
PY
expect_exit 0 "$GPUCC" pack -o three.gpucc three.json
expect_exit 0 "$GPUCC" verify --structure three.gpucc
[ "$(cat out)" = "three.gpucc: structure ok (3 entries, 2 payloads, 5966 bytes)" ] || fail "verify --structure printed: $(cat out)"
expect_exit 0 "$GPUCC" verify --structure --json three.gpucc
python3 -c 'import json; v = json.load(open("out")); assert v == {"image": "three.gpucc", "ok": True, "entries": 3, "payloads": 2, "bytes": 5966, "payload_bytes_checked": False}, v' ||
	fail "verify --structure --json is wrong: $(cat out)"
expect_exit 129 "$GPUCC" verify --structure -q --json three.gpucc
key() { "$GPUCC" list "$1" | awk -v t="$2" '$2 ~ "^" t { print $1 }'; }
sm90=$(key three.gpucc sm_90)
sm80=$(key three.gpucc sm_80)
[ -n "$sm90" ] && [ -n "$sm80" ] || fail "no sm_90 or sm_80 entry in three.gpucc"

# ---- a kernel record left out of the index ------------------------------------
# The sm_90 entry's record of "saxpy" removed, the index otherwise as the
# manifest gives it: a lookup reading a few records cannot see it, and
# selects the sm_80 PTX for an sm_90 device; verify and --structure refuse.
python3 - "$SRCROOT/cmd/tests" three.gpucc left.gpucc <<'PY'
import copy, io, sys, tarfile
sys.path.insert(0, sys.argv[1])
import image_spec
src = tarfile.open(sys.argv[2])
members = {m.name: src.extractfile(m).read() for m in src.getmembers()}
man = members["manifest.json"]
spans = []
for e, start, length in image_spec.entry_spans(man):
    if e["target"].startswith("sm_90"):
        e = dict(copy.deepcopy(e), kernels=[])
    spans.append((e, start, length))
size = image_spec.index_size(spans)
at = 512 + image_spec.pad(len(members["GPUCC-IMAGE"])) + 512 + image_spec.pad(size) + \
    512 + image_spec.pad(len(man))
payloads = sorted(n for n in members if n.startswith("payloads/"))
where = {}
for name in payloads:
    where[name], at = at, at + 512 + image_spec.pad(len(members[name]))
index = image_spec.index_bytes(spans, len(man), where)
with tarfile.open(sys.argv[3], "w", format=tarfile.USTAR_FORMAT) as out:
    for name, data in [("GPUCC-IMAGE", members["GPUCC-IMAGE"]), ("manifest.idx", index),
                       ("manifest.json", man)] + [(n, members[n]) for n in payloads]:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), 0o644
        out.addfile(info, io.BytesIO(data))
PY
[ -s left.gpucc ] || fail "left.gpucc was not written"
"$LOOKUP_PROBE" three.gpucc "$sm90" saxpy sm_90 > probe || fail "lookup_probe three.gpucc"
[ "$(grep -c "select: $sm90" probe)" = 2 ] || fail "three.gpucc: sm_90 not selected: $(cat probe)"
"$LOOKUP_PROBE" left.gpucc "$sm90" saxpy sm_90 > probe || fail "lookup_probe left.gpucc"
[ "$(grep -c "select: $sm80" probe)" = 2 ] ||
	fail "left.gpucc: the limit formats/image.md states is not what the lookup does: $(cat probe)"
[ "$(grep -c "lookup: $sm90" probe)" = 2 ] || fail "left.gpucc: the sm_90 key not found: $(cat probe)"
for how in "" --structure; do
	expect_exit 3 "$GPUCC" verify $how left.gpucc
	assert_one_line err
	grep -q "left.gpucc.*member 'manifest.idx': it disagrees with the manifest" err ||
		fail "verify $how left.gpucc: $(cat err)"
done

# ---- data after the end-of-archive marker -------------------------------------
{ cat three.gpucc; printf 'appended\n'; } > after.gpucc
expect_exit 3 "$GPUCC" verify --structure after.gpucc
grep -q "after.gpucc': data after the end of the archive, at offset $(stat -c %s three.gpucc)" err ||
	fail "verify --structure after.gpucc: $(cat err)"
{ cat three.gpucc; head -c 10240 /dev/zero; } > padded.gpucc
expect_exit 0 "$GPUCC" verify --structure padded.gpucc

# ---- a payload's bytes: verify's, not --structure's -----------------------------
# A byte of the first payload's data changed (its header, name and size
# intact): verify refuses it, --structure does not read it.
first=$(tar -tvf three.gpucc | awk '$NF ~ /^payloads\// { print $NF; exit }')
offset=$(python3 - three.gpucc "$first" <<'PY'
import sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    print(t.getmember(sys.argv[2]).offset_data + 7)
PY
)
cp three.gpucc flipped.gpucc
printf 'Z' | dd of=flipped.gpucc bs=1 seek="$offset" conv=notrunc status=none
expect_exit 3 "$GPUCC" verify flipped.gpucc
grep -q "SHA-256 digest mismatch" err || fail "verify flipped.gpucc: $(cat err)"
expect_exit 0 "$GPUCC" verify --structure flipped.gpucc

# ---- every hostile image --------------------------------------------------------
# --structure accepts an image only where verify does, or where verify's
# defect is a payload's digest; and it refuses every index and after-the-end
# case the generator makes.
expect_exit 0 "$GPUCC" pack -o good.gpucc "$TESTDATA/example/pack.json"
python3 "$TESTDATA/hostile/make_hostile_images.py" good.gpucc hostile > /dev/null ||
	fail "making the hostile images failed"
checked=0
while IFS="$(printf '\t')" read -r file stage defect; do
	"$GPUCC" verify "hostile/$file" > /dev/null 2> verify.err
	full=$?
	"$GPUCC" verify --structure "hostile/$file" > /dev/null 2> structure.err
	structure=$?
	case $full/$structure in
	0/0 | 3/3) ;;
	3/0) grep -q "SHA-256 digest mismatch" verify.err ||
		fail "$file: --structure accepts what verify refuses: $(cat verify.err)" ;;
	*) fail "$file: verify exit $full, --structure exit $structure: $(cat structure.err)" ;;
	esac
	case $file in
	index-* | *after-* | data-in-end-marker*)
		[ "$full" = 0 ] || [ "$structure" = 3 ] || fail "$file: --structure accepts it" ;;
	esac
	[ "$structure" = 0 ] || [ "$(wc -l < structure.err)" = 1 ] ||
		fail "$file: --structure's error is not one line: $(cat structure.err)"
	checked=$((checked + 1))
done < hostile/cases.tsv
[ "$checked" -ge 90 ] || fail "only $checked hostile images"

# ---- no payload data read --------------------------------------------------------
# An image of one 4 MiB PTX payload: --structure reads a few KiB of it (the
# headers), verify all of it.
if have strace; then
	python3 - <<'PY'
import json
with open("big.ptx", "w") as f:
    f.write("//\n.version 7.8\n.target sm_90\n.address_size 64\n")
    while f.tell() < 4 << 20:
        f.write("// " + "x" * 60 + "\n")
json.dump({"entries": [{"module_file": "saxpy.nvptx.ll", "target": "sm_90:ptx78",
                        "options": {"opt-level": "2"}, "kernels": [{"name": "big"}],
                        "ptx": "big.ptx"}]}, open("big.json", "w"))
PY
	expect_exit 0 "$GPUCC" pack -o big.gpucc big.json
	bytes_read() {
		no_leak_check strace -f -qq -e trace=read,pread64 -o trace "$GPUCC" verify "$@" big.gpucc >/dev/null ||
			fail "verify $* big.gpucc under strace"
		awk '/^[0-9]+ +p?read(64)?\(/ && $NF ~ /^[0-9]+$/ { n += $NF } END { print n + 0 }' trace
	}
	full=$(bytes_read)
	structure=$(bytes_read --structure)
	[ "$full" -ge $((4 << 20)) ] || fail "verify read only $full bytes of a 4 MiB payload"
	[ "$structure" -lt $((1 << 20)) ] || fail "verify --structure read $structure bytes"
	echo "ok: verify read $full bytes, --structure $structure"
else
	skip_block "the bytes --structure reads (no strace)"
fi
echo "ok: --structure on $checked hostile images"
