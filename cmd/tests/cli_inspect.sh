# cmd/tests/cli_inspect.sh -- the inspection commands on the example image
# (list, show, cat, extract, verify, stats, with and without --json), key
# prefixes, the image as a plain tar (tar and bsdtar list it, tar -xf gives
# the bytes gpucc cat gives), deterministic bytes, and that none of these
# commands loads LLVM or the HIP runtime.
. "$SRCROOT/cmd/tests/lib.sh"

EXAMPLE=$TESTDATA/example
command -v python3 >/dev/null || fail "python3 is needed to check JSON output"

expect_exit 0 "$GPUCC" pack -o ex.gpucc "$EXAMPLE/pack.json"
img=ex.gpucc

# ---- list ---------------------------------------------------------------------------

expect_exit 0 "$GPUCC" list $img
[ ! -s err ] || fail "list wrote to stderr"
[ "$(wc -l < out)" -eq 3 ] || fail "list: expected a header and two rows"
assert_grep '^KEY  *TARGET  *PAYLOADS  *KERNELS$' out
assert_grep '^[0-9a-f]\{12\}  sm_90:ptx78  ptx:1166    saxpy$' out
assert_grep '^[0-9a-f]\{12\}  gfx90a       hsaco:4800  saxpy$' out
nv_key=$(awk '$2 == "sm_90:ptx78" { print $1 }' out)
amd_key=$(awk '$2 == "gfx90a" { print $1 }' out)
# Columns line up: every row's second column starts where the header's does.
awk 'NR == 1 { col = index($0, "TARGET") } NR > 1 && substr($0, col - 2, 2) != "  " { exit 1 }' out ||
	fail "list columns are not aligned"

# Kernel names that hold the separator, a space or a quote, or are the '-'
# of no kernels, are quoted, so that the cell reads back as the names it
# lists ("c,d" read as two kernels); --json has them as they are.
python3 - "$EXAMPLE" > names.json <<'PY'
import json, sys
print(json.dumps({"entries": [
    {"module_file": sys.argv[1] + "/saxpy.nvptx.ll", "target": "sm_90",
     "kernels": ["plain", "a b", "c,d", "-", 'q"x\\y', "back\\slash"],
     "ptx": sys.argv[1] + "/saxpy.sm_90.ptx"}]}))
PY
expect_exit 0 "$GPUCC" pack -o names.gpucc names.json
expect_exit 0 "$GPUCC" list names.gpucc
assert_grep '^[0-9a-f]\{12\}  sm_90:ptx78  ptx:1166  plain,"a b","c,d","-","q\\"x\\\\y",back\\slash$' out
expect_exit 0 "$GPUCC" list --json names.gpucc
python3 -c 'import json; e=json.load(open("out")); assert e[0]["kernels"] == ["plain", "a b", "c,d", "-", "q\"x\\y", "back\\slash"], e' ||
	fail "list --json changed the kernel names"

expect_exit 0 "$GPUCC" list --json $img
python3 - out "$nv_key" <<'PY' || fail "list --json is wrong"
import json, sys
entries = json.load(open(sys.argv[1]))
assert len(entries) == 2, entries
nv = [e for e in entries if e["target"] == "sm_90:ptx78"][0]
assert nv["key"].startswith(sys.argv[2]) and len(nv["key"]) == 64, nv
assert nv["module"] == "saxpy.nvptx.ll" and nv["kernels"] == ["saxpy"], nv
assert nv["payloads"] == [{"part": "ptx", "size": 1166, "sha256": nv["payloads"][0]["sha256"]}], nv
assert len(nv["payloads"][0]["sha256"]) == 64
assert [e["key"] for e in entries] == sorted(e["key"] for e in entries)
PY

# ---- show ---------------------------------------------------------------------------

ptx_sha=$(sha256sum "$EXAMPLE/saxpy.sm_90.ptx" | cut -d' ' -f1)
expect_exit 0 "$GPUCC" show $img "$nv_key"
assert_grep "^key: *$nv_key[0-9a-f]\{52\}$" out
assert_grep '^key schema: *1$' out
assert_grep '^content digest: *[0-9a-f]\{64\}$' out
assert_grep '^target: *sm_90:ptx78$' out
assert_grep '^gpucc version: *[0-9]' out
assert_grep '^llvm version: *[^ ]' out
assert_grep '^  opt-level=2$' out
assert_grep '^  saxpy  registers 10, shared 0 bytes, scratch 0 bytes$' out
assert_grep "^  ptx  *1166 bytes  sha256 $ptx_sha$" out
full_key=$(awk '$1 == "key:" { print $2 }' out)
# A full key and a short prefix find the same entry.
"$GPUCC" show $img "$full_key" > show.full || fail "show by full key failed"
assert_same out show.full
"$GPUCC" show $img "$(echo "$nv_key" | cut -c1-4)" > show.short || fail "show by prefix failed"
assert_same out show.full

expect_exit 0 "$GPUCC" show --json $img "$amd_key"
python3 - out <<'PY' || fail "show --json is wrong"
import json, sys
e = json.load(open(sys.argv[1]))
for field in ("key", "key_schema", "content_digest", "module", "module_sha256", "target",
              "triple", "gpucc_version", "llvm_version", "options", "device_libs", "kernels",
              "externals", "payloads"):
    assert field in e, field
assert e["target"] == "gfx90a" and e["triple"] == "amdgcn-amd-amdhsa", e
assert e["options"] == {"opt-level": "2"}, e
assert e["kernels"] == [{"name": "saxpy", "registers": 6, "shared_bytes": 0, "scratch_bytes": 0}]
assert e["payloads"][0]["part"] == "hsaco" and e["payloads"][0]["size"] == 4800
PY

# Unknown keys, non-hex keys.
# (a first digit that neither key starts with)
absent=$(for d in 0 1 2 3 4 5 6 7 8 9 a b c d e f; do
	case "$nv_key $amd_key" in "$d"* | *" $d"*) ;; *) echo "$d"; break ;; esac
done)
expect_exit 2 "$GPUCC" show $img "${absent}0"
assert_one_line err
assert_grep "^gpucc show: '$img': no entry with key '${absent}0'" err
expect_exit 2 "$GPUCC" cat $img "${absent}0" --part ptx
[ ! -s out ] || fail "cat of an unknown key wrote to stdout"
# A KEY that is not 1 to 64 hex digits is a bad command line (129), as in
# cache lookup, whether IMAGE exists or not (show and cat said 3, bad
# input); a control character in it is escaped.
for key in not-hex "" "${full_key}0" $'12\n34'; do
	for cmd in "show $img" "cat $img -p ptx" "show missing.gpucc" "cat missing.gpucc -p ptx"; do
		# shellcheck disable=SC2086
		set -- $cmd
		expect_exit 129 "$GPUCC" "$1" "$2" "$key" "${@:3}"
		assert_one_line err
		assert_grep "is not a key or key prefix" err
		[ ! -s out ] || fail "'$cmd' of a malformed key wrote to stdout"
	done
done
expect_exit 129 "$GPUCC" show $img not-hex
assert_grep "^gpucc show: 'not-hex' is not a key or key prefix (1 to 64 hex digits) (see 'gpucc show -h')$" err
expect_exit 129 "$GPUCC" cat $img $'12\n34' -p ptx
assert_grep "^gpucc cat: '12\\\\n34' is not a key or key prefix" err

# An ambiguous prefix lists its candidates.  Eighteen entries (options differ)
# must share a first hex digit somewhere.
pack_variants many.gpucc 18
expect_exit 0 "$GPUCC" stats many.gpucc
assert_grep '^entries: *18$' out
assert_grep '^payloads: *1 distinct, 1166 bytes$' out
assert_grep '^dedup savings: *19822 bytes (20988 referenced, 1166 stored)$' out
"$GPUCC" list many.gpucc | awk 'NR > 1 { print substr($1, 1, 1) }' | sort | uniq -d | head -n 1 > dup
digit=$(cat dup)
[ -n "$digit" ] || fail "no shared first digit among 18 keys"
expect_exit 2 "$GPUCC" show many.gpucc "$digit"
assert_one_line err
assert_grep "key prefix '$digit' is ambiguous" err
for k in $("$GPUCC" list many.gpucc | awk -v d="$digit" 'NR > 1 && substr($1, 1, 1) == d { print $1 }'); do
	assert_grep "$k" err
done
expect_exit 2 "$GPUCC" cat many.gpucc "$digit" --part ptx
[ ! -s out ] || fail "cat of an ambiguous key wrote to stdout"

# ---- cat ---------------------------------------------------------------------------

expect_exit 0 "$GPUCC" cat $img "$nv_key" --part ptx
assert_same out "$EXAMPLE/saxpy.sm_90.ptx"
[ ! -s err ] || fail "cat wrote to stderr"
expect_exit 0 "$GPUCC" cat $img "$amd_key" -p hsaco
assert_same out "$EXAMPLE/saxpy.gfx90a.hsaco"
expect_exit 2 "$GPUCC" cat $img "$nv_key" --part cubin
assert_one_line err
assert_grep "^gpucc cat: '$img': entry $nv_key has no cubin payload (it has: ptx)$" err
[ ! -s out ] || fail "cat of a missing part wrote to stdout"
# --part given twice: the same part is one; two parts are refused, as the
# cache commands refuse --on-conflict or --zstd given two values (it used
# the last one).
expect_exit 0 "$GPUCC" cat $img "$amd_key" -p hsaco --part=hsaco
assert_same out "$EXAMPLE/saxpy.gfx90a.hsaco"
expect_exit 129 "$GPUCC" cat $img "$amd_key" -p hsaco -p ptx
assert_one_line err
assert_grep "^gpucc cat: --part=hsaco and --part=ptx disagree: give one (see 'gpucc cat -h')$" err
[ ! -s out ] || fail "cat with two parts wrote to stdout"

# ---- the image is a plain tar -------------------------------------------------------

ptx_member=payloads/$ptx_sha.ptx
hsaco_member=payloads/$(sha256sum "$EXAMPLE/saxpy.gfx90a.hsaco" | cut -d' ' -f1).hsaco
for lister in tar bsdtar; do
	command -v $lister >/dev/null || fail "$lister is not installed (scripts/setup installs it)"
	$lister -tvf $img > tar.list || fail "$lister -tvf failed"
	grep -q " $ptx_member\$" tar.list || fail "$lister does not list $ptx_member"
	grep -q " $hsaco_member\$" tar.list || fail "$lister does not list $hsaco_member"
	grep -q ' manifest.json$' tar.list || fail "$lister does not list the manifest"
done
mkdir untar && (cd untar && tar -xf ../$img) || fail "tar -xf failed"
"$GPUCC" cat $img "$nv_key" --part ptx > cat.ptx
"$GPUCC" cat $img "$amd_key" --part hsaco > cat.hsaco
assert_same "untar/$ptx_member" cat.ptx
assert_same "untar/$hsaco_member" cat.hsaco
# And so does a zstd-compressed image, with a tar that knows zstd.
expect_exit 0 "$GPUCC" pack -o ex.zst.gpucc --zstd=3 "$EXAMPLE/pack.json"
mkdir unzst && (cd unzst && bsdtar -xf ../ex.zst.gpucc) || fail "bsdtar -xf of a zstd image failed"
assert_same "unzst/$ptx_member" cat.ptx
"$GPUCC" cat ex.zst.gpucc "$amd_key" --part hsaco > zst.hsaco
assert_same zst.hsaco cat.hsaco

# ---- deterministic bytes -------------------------------------------------------------

# The same spec in two directories, SOURCE_DATE_EPOCH unset and 0: one image.
mkdir -p a/x b/y/z
cp "$EXAMPLE"/* a/x/
cp "$EXAMPLE"/* b/y/z/
(cd a && env -u SOURCE_DATE_EPOCH "$GPUCC" pack -o ../det1.gpucc x/pack.json) || fail "pack in a/"
(cd b/y && SOURCE_DATE_EPOCH=0 "$GPUCC" pack -o ../../det2.gpucc z/pack.json) || fail "pack in b/"
assert_same det1.gpucc det2.gpucc
assert_same det1.gpucc $img
(cd a && env -u SOURCE_DATE_EPOCH "$GPUCC" pack --zstd -o ../det1.zst x/pack.json) || fail "pack --zstd"
(cd b/y && "$GPUCC" pack --zstd -o ../../det2.zst z/pack.json) || fail "pack --zstd"
assert_same det1.zst det2.zst
# The order of the spec's entries, and of a kernel object's fields, does not
# matter (formats/image.md: the bytes depend only on the set of entries).
python3 - a/x/pack.json a/x/reversed.json <<'PY' || fail "cannot reverse the spec"
import json, sys
spec = json.load(open(sys.argv[1]))
spec["entries"].reverse()
for e in spec["entries"]:
    e["kernels"] = [dict(reversed(list(k.items()))) for k in e["kernels"]]
json.dump(dict(reversed(list(spec.items()))), open(sys.argv[2], "w"))
PY
(cd a && "$GPUCC" pack -o ../det3.gpucc x/reversed.json) || fail "pack of the reversed spec"
assert_same det1.gpucc det3.gpucc
# SOURCE_DATE_EPOCH sets every member's time, owners are 0 and nameless.
SOURCE_DATE_EPOCH=1700000000 "$GPUCC" pack -o dated.gpucc "$EXAMPLE/pack.json" || fail "pack dated"
python3 - dated.gpucc $img <<'PY' || fail "member times or owners are wrong"
import sys, tarfile
for path, want in ((sys.argv[1], 1700000000), (sys.argv[2], 0)):
    with tarfile.open(path) as tar:
        members = tar.getmembers()
        assert members, path
        for m in members:
            assert m.mtime == want, (path, m.name, m.mtime)
            assert (m.uid, m.gid, m.uname, m.gname) == (0, 0, "", ""), (path, m.name)
            assert m.isfile() and not m.name.startswith("/"), (path, m.name)
PY

# ---- extract ---------------------------------------------------------------------

nv_file=saxpy.nvptx.sm_90_ptx78.$nv_key.ptx
amd_file=saxpy.amdgpu.gfx90a.$amd_key.hsaco
expect_exit 0 "$GPUCC" extract $img -C outdir/sub
[ ! -s err ] || fail "extract wrote to stderr"
assert_grep "^outdir/sub/$nv_file$" out
assert_grep "^outdir/sub/$amd_file$" out
[ "$(ls -A outdir/sub | wc -l)" -eq 2 ] || fail "extract wrote other files: $(ls -A outdir/sub)"
assert_same "outdir/sub/$nv_file" cat.ptx
assert_same "outdir/sub/$amd_file" cat.hsaco
# Existing files are refused before anything is written, and left as they were.
echo "mine" > "outdir/sub/$amd_file"
rm "outdir/sub/$nv_file"
expect_exit 1 "$GPUCC" extract $img -C outdir/sub
assert_one_line err
assert_grep "'outdir/sub/$amd_file' already exists (not replaced without force)" err
assert_no_file "outdir/sub/$nv_file"
[ "$(cat "outdir/sub/$amd_file")" = mine ] || fail "extract changed an existing file"
expect_exit 0 "$GPUCC" extract $img -C outdir/sub --force -q
[ ! -s out ] || fail "extract -q printed something"
assert_same "outdir/sub/$amd_file" cat.hsaco
[ "$(ls -A outdir/sub | wc -l)" -eq 2 ] || fail "extract --force left other files"
# A list of files that cannot be written (standard output closed, or full)
# fails the run, which then leaves nothing: no file, no directory -C made,
# and files --force would replace as they were (it exited 1 and left them).
echo "mine" > "outdir/sub/$amd_file"
for how in closed full closed-json full-json; do
	json=; case $how in *-json) json=--json ;; esac
	case $how in
	closed*) "$GPUCC" extract $img -C gone/sub $json >&- 2>err; rc=$? ;;
	full*) [ -w /dev/full ] || continue
		"$GPUCC" extract $img -C gone/sub $json >/dev/full 2>err; rc=$? ;;
	esac
	[ $rc = 1 ] || { cat err >&2; fail "extract $json to a $how standard output exited $rc, not 1"; }
	assert_one_line err
	assert_grep "^gpucc extract: cannot write the list of files to standard output (nothing was extracted): \(Bad file descriptor\|No space left on device\)$" err
	assert_no_file gone
	"$GPUCC" extract $img -C outdir/sub --force $json >&- 2>err && fail "extract --force $json to a closed standard output succeeded"
	[ "$(cat "outdir/sub/$amd_file")" = mine ] || fail "extract --force to a $how standard output kept the new file"
	[ "$(ls -A outdir/sub | wc -l)" -eq 2 ] || fail "extract --force to a $how standard output left: $(ls -A outdir/sub)"
done
expect_exit 0 "$GPUCC" extract $img -C outdir/sub --force -q
# with nothing to print (-q), a closed standard output is no failure
"$GPUCC" extract $img -C quiet -q >&- 2>err || { cat err >&2; fail "extract -q to a closed standard output failed"; }
assert_file "quiet/$nv_file"
rm -r quiet
# Without -C: the current directory, names only.
mkdir here && (cd here && "$GPUCC" extract ../$img > ../here.out) || fail "extract into ."
assert_grep "^$nv_file$" here.out
assert_same "here/$nv_file" cat.ptx
# A control character in DIR is spelt in the rows, as in messages (it was
# printed raw: an escape sequence reached the terminal).
expect_exit 0 "$GPUCC" extract $img -C "$(printf 'odd\x1bdir')"
assert_grep "^odd\\\\x1bdir/$nv_file$" out
LC_ALL=C grep -q '[[:cntrl:]]' out && fail "extract printed a control character: $(cat -A out)"
rm -r "$(printf 'odd\x1bdir')"
# DIR with a trailing '/' (as the shell completes it) gives DIR/NAME, in
# rows and messages alike, not DIR//NAME.
expect_exit 0 "$GPUCC" extract $img -C slash/
assert_grep "^slash/$nv_file$" out
expect_exit 1 "$GPUCC" extract $img -C slash/
assert_grep "^gpucc extract: 'slash/$nv_file' already exists" err
rm -r slash
# One payload shared by 18 entries: 18 files, all equal, the image read once.
expect_exit 0 "$GPUCC" extract many.gpucc -C many
[ "$(ls -A many | wc -l)" -eq 18 ] || fail "extract of many.gpucc: $(ls -A many | wc -l) files"
for f in many/*; do assert_same "$f" cat.ptx; done
# --json: what was written, each file with its payload's part, size and digest.
expect_exit 0 "$GPUCC" extract $img -C json --json
python3 - out "$nv_file" "$amd_file" <<'PY' || fail "extract --json is wrong"
import hashlib, json, os, sys
x = json.load(open(sys.argv[1]))
assert x["directory"] == "json" and len(x["files"]) == 2, x
names = sorted(f["name"] for f in x["files"])
assert names == sorted(sys.argv[2:4]), names
for f in x["files"]:
    data = open(os.path.join("json", f["name"]), "rb").read()
    assert f["size"] == len(data) and f["sha256"] == hashlib.sha256(data).hexdigest(), f
    assert f["part"] == f["name"].rsplit(".", 1)[1], f
PY
# Odd module names are sanitised into one safe file name.
expect_exit 0 "$GPUCC" pack -o odd.gpucc --module-sha256 "$ptx_sha" --module-name '../../.hidden dir/x y.ll' \
	--target sm_90 --ptx "$EXAMPLE/saxpy.sm_90.ptx"
expect_exit 0 "$GPUCC" extract odd.gpucc -C odd
[ "$(ls -A odd | wc -l)" -eq 1 ] || fail "extract of odd.gpucc: $(ls -A odd)"
ls odd | grep -q '^x_y\.sm_90_ptx78\.[0-9a-f]\{12\}\.ptx$' || fail "unexpected name: $(ls -A odd)"
expect_exit 0 "$GPUCC" pack -o dot.gpucc --module-sha256 "$ptx_sha" --module-name '.ll' \
	--target sm_90 --ptx "$EXAMPLE/saxpy.sm_90.ptx"
expect_exit 0 "$GPUCC" extract dot.gpucc -C dot
ls dot | grep -q '^_ll\.sm_90_ptx78\.[0-9a-f]\{12\}\.ptx$' || fail "unexpected name: $(ls -A dot)"

# Files get 0666 less the umask.
(umask 027 && "$GPUCC" extract -q $img -C masked) || fail "extract under umask 027"
[ "$(stat -c %a "masked/$nv_file")" = 640 ] || fail "extract ignored the umask: $(stat -c %a "masked/$nv_file")"
# Outputs are flushed before and after the rename (docs/reliability.md, "Atomic
# outputs"): each file, then the directory.
if have strace "extract's fsyncs of its files and directory"; then
	no_leak_check strace -f -e trace=fsync,fdatasync -o extract.trace \
		"$GPUCC" extract -q $img -C synced || fail "extract under strace failed"
	[ "$(grep -c 'sync(' extract.trace)" -ge 3 ] || { cat extract.trace >&2; fail "extract did not fsync its files and directory"; }
fi
# A directory, or anything but a file or a link, named like an output is
# refused, with --force too, before anything is written.
mkdir -p refused/"$nv_file"
mkfifo refused/"$amd_file"
expect_exit 1 "$GPUCC" extract --force $img -C refused
assert_one_line err
assert_grep "^gpucc extract: cannot write 'refused/$nv_file': is a directory$" err
rmdir refused/"$nv_file"
expect_exit 1 "$GPUCC" extract --force $img -C refused
assert_one_line err
assert_grep "^gpucc extract: cannot write 'refused/$amd_file': not a regular file$" err
[ "$(ls -A refused)" = "$amd_file" ] && [ -p refused/"$amd_file" ] || fail "a refused extract changed: $(ls -Al refused)"
# Nor does --force replace IMAGE itself, or a hard link to it, named like
# an output (inputs are never modified): the payload was renamed over it.
mkdir self
cp $img "self/$nv_file"
ln "self/$nv_file" "self/$amd_file"
for image in "self/$nv_file" "self/$amd_file"; do
	expect_exit 1 "$GPUCC" extract --force "$image" -C self
	assert_one_line err
	assert_grep "^gpucc extract: cannot write 'self/.*': it is the image being extracted$" err
	assert_same "$image" $img
done
[ "$(ls -A self | wc -l)" = 2 ] || fail "a refused extract left files: $(ls -A self)"
rm -r self
# A publishing step that fails after others succeeded (here: the second,
# by the fault shim) leaves nothing behind: the files this run published
# are removed.
shim=${FAULTSHIM:-$(dirname "$GPUCC")/tests/faultshim.so}
if [ -f "$shim" ]; then
	asan=$(ldd "$GPUCC" | awk '/libasan/ {print $3}')
	mkdir halfway
	GPUCC_FAULT_ERRNO=EIO GPUCC_FAULT_OPS=rename,link GPUCC_FAULT_AFTER=1 \
		LD_PRELOAD=${asan:+$asan:}$shim expect_exit 1 "$GPUCC" extract $img -C halfway
	assert_one_line err
	assert_grep "^gpucc extract: cannot write 'halfway/.*': Input/output error$" err
	[ ! -s out ] || fail "a failed extract printed names of files it did not leave"
	[ -z "$(ls -A halfway)" ] || fail "a failed extract left files: $(ls -A halfway)"
else
	skip_block "a publishing step failed after others (no fault shim at $shim)"
fi

# ---- verify and stats --------------------------------------------------------------

expect_exit 0 "$GPUCC" verify $img
assert_grep "^$img: ok (2 entries, 2 payloads, 5966 bytes)$" out
[ ! -s err ] || fail "verify wrote to stderr"
expect_exit 0 "$GPUCC" verify -q $img
[ ! -s out ] || fail "verify -q printed something"
# -q and --json exclude each other, as their synopsis says (--json won):
# a usage error before anything is read or written.
for cmd in "verify -q --json $img" "extract --json -q $img -C both"; do
	# shellcheck disable=SC2086
	expect_exit 129 "$GPUCC" $cmd
	assert_one_line err
	assert_grep "^gpucc [a-z]*: -q and --json exclude each other (see 'gpucc [a-z]* -h')$" err
	[ ! -s out ] || fail "'$cmd' printed on stdout"
done
assert_no_file both
expect_exit 0 "$GPUCC" verify --json $img
python3 -c 'import json,sys; v=json.load(open("out")); assert v == {"image": sys.argv[1], "ok": True, "entries": 2, "payloads": 2, "bytes": 5966}, v' $img ||
	fail "verify --json is wrong"
# a failure: the object on stdout, the line on stderr, the exit code of bad input
head -c 3000 $img > cut.gpucc
expect_exit 3 "$GPUCC" verify --json cut.gpucc
assert_one_line err
python3 -c 'import json,sys; v=json.load(open("out")); assert v["ok"] is False and v["image"] == "cut.gpucc" and v["error"] in open("err").read(), v' ||
	fail "verify --json of a bad image is wrong"

expect_exit 0 "$GPUCC" stats $img
assert_grep "^file size: *$(wc -c < $img) bytes$" out
assert_grep '^compressed: *no$' out
assert_grep '^entries: *2$' out
assert_grep '^payloads: *2 distinct, 5966 bytes$' out
assert_grep '^  ptx  *1, 1166 bytes$' out
assert_grep '^  hsaco  *1, 4800 bytes$' out
assert_grep '^dedup savings: *0 bytes' out
assert_grep '^  gfx90a  *1$' out
assert_grep '^  sm_90:ptx78  *1$' out
expect_exit 0 "$GPUCC" stats --json ex.zst.gpucc
python3 - out "$(wc -c < ex.zst.gpucc)" <<'PY' || fail "stats --json is wrong"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["compressed"] is True and s["file_size"] == int(sys.argv[2]), s
assert s["entries"] == 2 and s["payloads"] == 2 and s["payload_bytes"] == 5966, s
assert s["parts"] == {"ptx": {"payloads": 1, "bytes": 1166}, "hsaco": {"payloads": 1, "bytes": 4800}}, s
assert s["targets"] == {"gfx90a": 1, "sm_90:ptx78": 1} and s["dedup_savings"] == 0, s
PY

# an image read from a pipe has no file size to show (it said 0 bytes)
expect_exit 0 "$GPUCC" stats <(cat $img)
assert_grep '^file size: *unknown (not a regular file)$' out
assert_grep '^entries: *2$' out
expect_exit 0 "$GPUCC" stats --json <(cat $img)
python3 -c 'import json; s=json.load(open("out")); assert s["file_size"] is None and s["entries"] == 2, s' ||
	fail "stats --json of a pipe is wrong"

# A control character in IMAGE's name is escaped in text output and
# messages, as compile escapes module names (a newline split stats' first
# row, and cat's message, in two); --json has the name as it is.
odd=$'odd\nname.gpucc'
cp $img "$odd"
expect_exit 0 "$GPUCC" stats "$odd"
assert_grep '^image: *odd\\nname\.gpucc$' out
assert_grep '^file size: ' out
"$GPUCC" stats $img | tail -n +2 > stats.plain
tail -n +2 out > stats.odd
assert_same stats.plain stats.odd
expect_exit 0 "$GPUCC" stats --json "$odd"
python3 -c 'import json,sys; s=json.load(open("out")); assert s["image"] == sys.argv[1], s' "$odd" ||
	fail "stats --json changed the image's name"
expect_exit 2 "$GPUCC" cat "$odd" "$nv_key" --part cubin
assert_one_line err
assert_grep '^gpucc cat: '"'"'odd\\nname\.gpucc'"'"': entry '"$nv_key"' has no cubin payload (it has: ptx)$' err
expect_exit 0 "$GPUCC" verify "$odd"
assert_one_line out
assert_grep '^odd\\nname\.gpucc: ok (2 entries, ' out
rm -f "$odd"

# a count of one byte is singular (stats, show, snapshot said "1 bytes", "1 keys")
printf 'x' > one.ptx
cat > one.json <<'EOF'
{"entries": [
 {"module": "a.ll", "module_sha256": "0000000000000000000000000000000000000000000000000000000000000001",
  "target": "sm_90", "kernels": [{"name": "k", "registers": 1, "shared_bytes": 1, "scratch_bytes": 2}],
  "ptx": "one.ptx"},
 {"module": "b.ll", "module_sha256": "0000000000000000000000000000000000000000000000000000000000000002",
  "target": "sm_90", "kernels": ["k"], "ptx": "one.ptx"}]}
EOF
expect_exit 0 "$GPUCC" pack -o one.gpucc one.json
expect_exit 0 "$GPUCC" stats one.gpucc
assert_grep '^payloads: *1 distinct, 1 byte$' out
assert_grep '^  ptx  *1, 1 byte$' out
assert_grep '^dedup savings: *1 byte (2 referenced, 1 stored)$' out
one_key=$("$GPUCC" list --json one.gpucc | python3 -c 'import json,sys; print([e["key"] for e in json.load(sys.stdin) if e["module"] == "a.ll"][0])')
expect_exit 0 "$GPUCC" show one.gpucc "$one_key"
assert_grep '^  k  registers 1, shared 1 byte, scratch 2 bytes$' out
assert_grep "^  ptx  *1 byte   sha256 $(sha256sum one.ptx | cut -c1-64)$" out
expect_exit 0 "$GPUCC" snapshot one.gpucc -o two.snap
assert_grep "^gpucc snapshot: 2 keys written to 'two.snap'$" err
"$GPUCC" snapshot --show one.gpucc | head -1 > one.keys
expect_exit 0 "$GPUCC" snapshot --keys one.keys -o one.snap
assert_grep "^gpucc snapshot: 1 key written to 'one.snap'$" err

# ---- each --json output is the object its -h documents ------------------------------
# (list, show, stats and snapshot --show documented none of their names)
# json_as_documented CMD...  the names in CMD's --json output (below maps
# whose keys are data: options, parts, targets) are the quoted names of its
# -h, and the other way round
json_as_documented() {
	local name=$1
	[ "$name" = snapshot ] || [ "$name" = show ] || [ "$name" = list ] || [ "$name" = stats ] ||
		fail "json_as_documented: unknown command $name"
	"$GPUCC" "$name" -h > help.txt || fail "$name -h failed"
	"$GPUCC" "$@" > json.out || fail "'$*' failed"
	python3 - help.txt json.out "$name" <<'PY' || fail "$name --json and its -h disagree"
import json, re, sys
documented = set(re.findall(r'"([a-z0-9_-]+)"', open(sys.argv[1]).read()))
keys, values = set(), set()
def walk(v, data_keys=False):
    if isinstance(v, dict):
        for k, x in v.items():
            if not data_keys:
                keys.add(k)
            walk(x, k in ("options", "parts", "targets") and not data_keys)
    elif isinstance(v, list):
        for x in v:
            walk(x)
    elif isinstance(v, str):
        values.add(v)  # a documented value ("gpucc-snapshot")
walk(json.load(open(sys.argv[2])))
missing = documented - keys - values
undocumented = keys - documented
assert not missing and not undocumented, (sys.argv[3], "documented but absent:", missing, "undocumented:", undocumented)
PY
}
json_as_documented list --json $img
json_as_documented show --json $img "$nv_key"
json_as_documented stats --json $img
json_as_documented snapshot --show --json $img

# ---- neither LLVM nor the HIP runtime is loaded --------------------------------------

if ldd "$GPUCC" | grep -E 'libLLVM|amdhip64|libhsa'; then
	fail "gpucc links LLVM or the HIP runtime"
fi
for args in "list $img" "verify $img" "show $img $nv_key" "stats $img" "extract $img -C ld -q" \
	"cat $img $nv_key --part ptx"; do
	# shellcheck disable=SC2086
	LD_DEBUG=files "$GPUCC" $args > /dev/null 2> ld.log || fail "gpucc $args failed"
	grep -q 'file=libc\.so' ld.log || fail "LD_DEBUG=files did not trace library loads"
	if grep -E 'file=[^ ]*(libLLVM|amdhip64|libhsa-runtime)' ld.log; then
		fail "gpucc $args loaded LLVM or the HIP runtime"
	fi
done
echo "ok"
