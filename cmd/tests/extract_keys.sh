# cmd/tests/extract_keys.sh -- `gpucc extract IMAGE KEY...`: only the named
# entries' payloads are written, the same files a full extract writes for
# them; keys are full or unique prefixes, an entry named twice written once;
# an unknown, ambiguous or malformed key fails with one line naming it and
# writes nothing.  Only those entries are read: with another entry's payload
# corrupt, or its object in the manifest, extracting a good key succeeds
# (the image is read through its index) while a full extract, or one that
# names the damaged entry too, fails and leaves nothing.
. "$SRCROOT/cmd/tests/lib.sh"

EXAMPLE=$TESTDATA/example
command -v python3 >/dev/null || fail "python3 is needed to build and damage images"

# Three entries: gfx90a (hsaco), and two sm_90 ones sharing one PTX payload.
python3 - "$EXAMPLE" > three.json <<'PY'
import json, sys
ex = sys.argv[1]
nv = {"module_file": ex + "/saxpy.nvptx.ll", "target": "sm_90:ptx78", "kernels": ["saxpy"],
      "ptx": ex + "/saxpy.sm_90.ptx"}
print(json.dumps({"entries": [
    nv, dict(nv, options={"variant": "2"}),
    {"module_file": ex + "/saxpy.amdgpu.ll", "target": "gfx90a", "kernels": ["saxpy"],
     "hsaco": ex + "/saxpy.gfx90a.hsaco"}]}))
PY
expect_exit 0 "$GPUCC" pack -o three.gpucc three.json
tar -tf three.gpucc | grep -qx manifest.idx || fail "three.gpucc has no index"
"$GPUCC" list three.gpucc > list || fail "list three.gpucc"
amd_key=$(awk '$2 == "gfx90a" { print $1 }' list)
nv_keys=$(awk '$2 == "sm_90:ptx78" { print $1 }' list)
nv1=$(echo "$nv_keys" | sed -n 1p)
nv2=$(echo "$nv_keys" | sed -n 2p)
[ -n "$amd_key" ] && [ -n "$nv1" ] && [ -n "$nv2" ] || fail "list three.gpucc: $(cat list)"
full_nv1=$("$GPUCC" show --json three.gpucc "$nv1" |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])') || fail "show $nv1"
hsaco_member=$(tar -tf three.gpucc | grep '\.hsaco$')

# patch IMAGE MEMBER OLD NEW: the first OLD in MEMBER's data becomes NEW (as
# long), in place: a damaged image whose headers still hold.
patch() {
	python3 - "$@" <<'PY' || fail "cannot patch $2 of $1"
import sys, tarfile
path, member, old, new = sys.argv[1], sys.argv[2], sys.argv[3].encode(), sys.argv[4].encode()
assert len(old) == len(new)
with tarfile.open(path) as t:
    m = t.getmember(member)
with open(path, "r+b") as f:
    f.seek(m.offset_data)
    at = f.read(m.size).find(old)
    assert at >= 0, (member, old)
    f.seek(m.offset_data + at)
    f.write(new)
PY
}

# same_subset DIR KEY...: DIR holds exactly the files of full/ whose names
# carry one of the keys, byte for byte.
same_subset() {
	local dir=$1; shift
	local want=$(for k in "$@"; do ls full | grep -F ".$k."; done | sort -u)
	[ "$(ls -A "$dir" | sort)" = "$want" ] ||
		fail "$dir holds '$(ls -A "$dir" | tr '\n' ' ')', expected '$(echo $want)'"
	for f in $want; do assert_same "$dir/$f" "full/$f"; done
}

# ---- the named entries, and only those ------------------------------------------

expect_exit 0 "$GPUCC" extract three.gpucc -C full -q
[ "$(ls -A full | wc -l)" -eq 3 ] || fail "full extract wrote: $(ls -A full)"
expect_exit 0 "$GPUCC" extract three.gpucc "$amd_key" -C amd
[ ! -s err ] || fail "extract KEY wrote to stderr"
assert_grep "^amd/saxpy.amdgpu.gfx90a.$amd_key.hsaco$" out
[ "$(wc -l < out)" -eq 1 ] || fail "extract KEY listed: $(cat out)"
same_subset amd "$amd_key"
# Two entries sharing one payload: two files, the same bytes.
expect_exit 0 "$GPUCC" extract three.gpucc "$nv1" "$nv2" -C nv
same_subset nv "$nv1" "$nv2"
# A full key, a prefix of it and an upper-case prefix name one entry: written once.
upper=$(echo "${nv1:0:6}" | tr a-f A-F)
expect_exit 0 "$GPUCC" extract three.gpucc "$full_nv1" "${nv1:0:4}" "$upper" -C once
[ "$(wc -l < out)" -eq 1 ] || fail "an entry named three times was listed: $(cat out)"
same_subset once "$nv1"
# --json lists only what was written.
expect_exit 0 "$GPUCC" extract three.gpucc "$amd_key" -C json --json
python3 - out "$amd_key" <<'PY' || fail "extract KEY --json is wrong: $(cat out)"
import json, sys
files = json.load(open(sys.argv[1]))["files"]
assert [f["name"] for f in files] == ["saxpy.amdgpu.gfx90a.%s.hsaco" % sys.argv[2]], files
assert files[0]["part"] == "hsaco" and files[0]["size"] == 4800, files
PY
# A compressed image (read without its index) gives the same files.
expect_exit 0 "$GPUCC" pack -o three.zst.gpucc --zstd=3 three.json
expect_exit 0 "$GPUCC" extract three.zst.gpucc "$nv2" "$amd_key" -C zst
same_subset zst "$nv2" "$amd_key"

# ---- keys that name no entry, or several, or are not keys ----------------------

expect_exit 2 "$GPUCC" extract three.gpucc "$amd_key" 0123456789abcdef -C none
assert_one_line err
assert_grep "^gpucc extract: 'three.gpucc': no entry with key '0123456789abcdef'$" err
[ ! -s out ] || fail "extract of an unknown key printed: $(cat out)"
assert_no_file none
# Eighteen entries must share a first hex digit: that prefix is ambiguous.
pack_variants many.gpucc 18
digit=$("$GPUCC" list many.gpucc | awk 'NR > 1 { print substr($1, 1, 1) }' | sort | uniq -d | head -n 1)
[ -n "$digit" ] || fail "no shared first digit among 18 keys"
expect_exit 2 "$GPUCC" extract many.gpucc "$digit" -C none
assert_one_line err
assert_grep "^gpucc extract: 'many.gpucc': key prefix '$digit' is ambiguous" err
assert_no_file none
for bad in xyz '' "$nv1-" "${full_nv1}0"; do
	expect_exit 129 "$GPUCC" extract three.gpucc "$nv1" "$bad" -C none
	assert_one_line err
	assert_grep "is not a key or key prefix (1 to 64 hex digits) (see 'gpucc extract -h')$" err
	assert_no_file none
done

# ---- only the named entries are read ---------------------------------------------

# Another entry's payload corrupt: the good keys extract, a full extract and
# one naming the damaged entry fail, leaving nothing (all or nothing).
cp three.gpucc payload.gpucc
patch payload.gpucc "$hsaco_member" ELF ELG
expect_exit 0 "$GPUCC" extract payload.gpucc "$nv1" "$nv2" -C good
same_subset good "$nv1" "$nv2"
expect_exit 3 "$GPUCC" extract payload.gpucc -C all
assert_one_line err
assert_grep "^gpucc extract: 'payload.gpucc': member '$hsaco_member': SHA-256 digest mismatch" err
assert_no_file all
expect_exit 3 "$GPUCC" extract payload.gpucc "$nv1" "$amd_key" -C some
assert_one_line err
assert_grep "SHA-256 digest mismatch" err
assert_no_file some
# Into a directory that holds files: a failed run leaves them as they were.
mkdir kept && echo mine > kept/mine
expect_exit 3 "$GPUCC" extract payload.gpucc "$amd_key" "$nv1" -C kept
[ "$(ls -A kept)" = mine ] || fail "a failed extract left: $(ls -A kept)"

# Another entry's object in the manifest is not JSON: a full parse fails, a
# lookup through the index parses only the entries it finds.
cp three.gpucc manifest.gpucc
field=$(tar -xOf three.gpucc manifest.json | grep -o "\"key\":\"$amd_key[0-9a-f]*\",\"key_schema\":1")
[ -n "$field" ] || fail "no key_schema after the gfx90a key in the manifest"
patch manifest.gpucc manifest.json "$field" "${field%1}X"
expect_exit 0 "$GPUCC" extract manifest.gpucc "${nv1:0:5}" "$nv2" -C indexed
same_subset indexed "$nv1" "$nv2"
expect_exit 3 "$GPUCC" extract manifest.gpucc -C all
assert_one_line err
assert_grep "^gpucc extract: 'manifest.gpucc': corrupt manifest" err
assert_no_file all
expect_exit 3 "$GPUCC" extract manifest.gpucc "$amd_key" -C all
assert_grep "corrupt manifest" err
assert_no_file all

# The help names KEY.
expect_exit 0 "$GPUCC" extract -h
assert_grep '^usage: gpucc extract IMAGE \[KEY\.\.\.\]' out
exit 0
