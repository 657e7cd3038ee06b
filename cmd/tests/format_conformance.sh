# cmd/tests/format_conformance.sh -- the manifest as formats/manifest.md
# specifies it, checked on the real gpucc: a packed good image has its
# manifest edited (edit_manifest below) in ways the spec allows or forbids.
# What the spec forbids, `list` (which only opens the image) and `verify`
# refuse with one line naming the image and the defect, exit 3; what it
# allows, they accept, and `merge` writes it back canonically.  Images
# and keys are also rebuilt from the specs alone (headers, pax headers,
# the index, the zstd frame) and compared byte for byte.  (Every
# command on every hostile image is cmd/tests/hostile_images.sh.)
. "$SRCROOT/cmd/tests/lib.sh"

command -v python3 >/dev/null || skip "python3 is needed to edit manifests"
expect_exit 0 "$GPUCC" pack -o good.gpucc "$TESTDATA/example/pack.json"

# edit_manifest IN OUT PYTHON: OUT is IN with its manifest's text t (a str)
# changed by the Python statements PYTHON, members and order kept.
edit_manifest() {
	python3 - "$1" "$2" "$3" <<'EOF' || fail "editing the manifest of $1 failed"
import io, sys, tarfile
source, target, code = sys.argv[1:]
with tarfile.open(source) as tar:
    members = [(m.name, tar.extractfile(m).read()) for m in tar.getmembers()]
# An edited manifest disagrees with the image's index: the edit is of a
# format 1.0 image, which has none (formats/image.md).
if members[1][0] == "manifest.idx":
    members = [("GPUCC-IMAGE", b"gpucc-image 1\n")] + members[2:]
scope = {"t": members[1][1].decode()}
exec(code, scope)
members[1] = ("manifest.json", scope["t"].encode())
with tarfile.open(target, "w", format=tarfile.USTAR_FORMAT) as tar:
    for name, data in members:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = len(data), 0o644, 0
        tar.addfile(info, io.BytesIO(data))
EOF
}

# refused FILE PATTERN [COMMAND...]: each command (list and verify when none
# are given; merge writes nothing) exits 3 with one line on stderr naming
# FILE and matching PATTERN.
refused() {
	local f=$1 pattern=$2 cmd
	shift 2
	for cmd in ${*:-list verify}; do
		if [ "$cmd" = merge ]; then
			expect_exit 3 "$GPUCC" merge -o merged.gpucc "$f"
			assert_no_file merged.gpucc
		else
			expect_exit 3 "$GPUCC" "$cmd" "$f"
		fi
		assert_one_line err
		assert_grep "^gpucc $cmd: '$f': " err
		assert_grep "$pattern" err
		[ ! -s out ] || fail "$cmd $f failed but printed on stdout"
	done
}

# first_key IMAGE: the first entry's key, as the manifest spells it.
first_key() {
	tar -xOf "$1" manifest.json | sed -n 's/^{"key":"\([0-9a-f]*\)".*/\1/p' | head -n 1
}
key=$(first_key good.gpucc)
[ ${#key} = 64 ] || fail "no key in the good image"

# Digests and keys are lowercase hex: uppercase spells the same bytes
# another way, and a set of entries has one manifest.
upper=$(printf %s "$key" | tr a-f A-F)
edit_manifest good.gpucc upper-key.gpucc "t = t.replace('$key', '$upper', 1)"
refused upper-key.gpucc "entry 0: 'key' is not 64 lowercase hex digits"
edit_manifest good.gpucc upper-sha.gpucc \
	"import re; t = re.sub(r'\"sha256\":\"([0-9a-f]*)\"', lambda m: '\"sha256\":\"' + m[1].upper() + '\"', t, 1)"
refused upper-sha.gpucc "'sha256' is not 64 lowercase hex digits"

# JSON bounds no member name: an unknown field with a long name is ignored
# like any other, and so is one at the top; an option's name may be long
# (pack writes it, so readers must read it).
long=$(printf 'x%.0s' $(seq 100))
edit_manifest good.gpucc long-unknown.gpucc \
	"t = t.replace('{\"key\":', '{\"$long\":{\"$long\":1},\"key\":', 1).replace('{\"format\"', '{\"$long\":[]', 1).replace('[]', '[],\"format\"', 1)"
expect_exit 0 "$GPUCC" verify long-unknown.gpucc
expect_exit 0 "$GPUCC" merge -q -o long-unknown-merged.gpucc long-unknown.gpucc
expect_exit 0 "$GPUCC" merge -q -o good-merged.gpucc good.gpucc
assert_same long-unknown-merged.gpucc good-merged.gpucc
python3 - "$TESTDATA/example" "$long" > long-option.json <<'EOF2' || fail "writing long-option.json"
import json, sys
example, long = sys.argv[1:]
doc = json.load(open(example + "/pack.json"))
for e in doc["entries"]:
    e["options"][long] = "on"
    for part in ("module_file", "ptx", "hsaco"):
        if part in e:
            e[part] = example + "/" + e[part]
print(json.dumps(doc))
EOF2
expect_exit 0 "$GPUCC" pack -o long-option.gpucc long-option.json
expect_exit 0 "$GPUCC" verify long-option.gpucc
expect_exit 0 "$GPUCC" show --json long-option.gpucc "$(first_key long-option.gpucc)"
assert_grep "\"$long\": *\"on\"" out

# A field of the schema twice in one object, at any level, is refused when
# the image is opened: JSON parsers disagree on which of the two counts.
edit_manifest good.gpucc twice-version.gpucc "t = t.replace('\"version\":1', '\"version\":2,\"version\":1', 1)"
refused twice-version.gpucc "corrupt manifest: 'version' appears twice"
edit_manifest good.gpucc twice-gpucc.gpucc "t = t.replace('\"gpucc\":', '\"gpucc\":\"0.0.1\",\"gpucc\":', 1)"
refused twice-gpucc.gpucc "entry 0: 'toolchain.gpucc' appears twice"
edit_manifest good.gpucc twice-registers.gpucc "t = t.replace('\"registers\":', '\"registers\":1,\"registers\":', 1)"
refused twice-registers.gpucc "entry 0: a kernel's 'registers' appears twice"
# ... but members come in any order, each once.
edit_manifest good.gpucc reordered.gpucc \
	"t = t.replace('{\"format\":\"gpucc-image\",\"version\":1,', '{', 1).replace('\n]}', '\n],\"version\":1,\"format\":\"gpucc-image\"}', 1)"
expect_exit 0 "$GPUCC" verify reordered.gpucc
expect_exit 0 "$GPUCC" merge -q -o reordered-merged.gpucc reordered.gpucc
expect_exit 0 "$GPUCC" merge -q -o good-merged.gpucc good.gpucc
assert_same reordered-merged.gpucc good-merged.gpucc

# Options and device libraries are sorted and unique (key.md hashes them
# so): refused on opening, naming the defect, not only later as a key
# that its components do not give.
edit_manifest good.gpucc repeated-option.gpucc \
	"t = t.replace('{\"opt-level\":\"2\"}', '{\"opt-level\":\"2\",\"opt-level\":\"3\"}', 1)"
refused repeated-option.gpucc "entry 0: options must be sorted by name and unique ('opt-level')"
edit_manifest good.gpucc unsorted-libs.gpucc \
	"t = t.replace('\"device_libs\":[]', '\"device_libs\":[{\"name\":\"b.bc\",\"sha256\":\"$key\"},{\"name\":\"a.bc\",\"sha256\":\"$key\"}]', 1)"
refused unsorted-libs.gpucc "entry 0: device libraries must be sorted by name and unique ('a.bc')"

# A 'version' that is not an integer is a mistyped field, not "version 0".
edit_manifest good.gpucc version-string.gpucc "t = t.replace('\"version\":1', '\"version\":\"1\"', 1)"
refused version-string.gpucc "corrupt manifest: 'version' is not a non-negative integer"
edit_manifest good.gpucc version-2.gpucc "t = t.replace('\"version\":1', '\"version\":2', 1)"
refused version-2.gpucc "manifest version 2 is not supported (this gpucc reads 1)"

# Another key schema (key.md, "Versioning"): the commands that only read
# take the entry as stated; verify, which computes keys, names the schema
# it does not know rather than a key that does not match.
edit_manifest good.gpucc schema-2.gpucc "t = t.replace('\"key_schema\":1', '\"key_schema\":2', 1)"
expect_exit 0 "$GPUCC" list schema-2.gpucc
refused schema-2.gpucc "corrupt manifest: entry [0-9a-f]*: key schema 2 is not supported (this gpucc uses 1)$" verify merge

# Writers refuse what readers would: pack writes no image whose kernel
# resource count passes 2^40 (one that readers then refused), and 2^40
# itself reads back.
pack_with_registers() {
	python3 - "$TESTDATA/example" "$1" > "registers-$1.json" <<'EOF2' || fail "writing registers-$1.json"
import json, sys
example, registers = sys.argv[1], int(sys.argv[2])
doc = json.load(open(example + "/pack.json"))
for e in doc["entries"]:
    e["kernels"][0]["registers"] = registers
    for part in ("module_file", "ptx", "hsaco"):
        if part in e:
            e[part] = example + "/" + e[part]
print(json.dumps(doc))
EOF2
}
pack_with_registers 1099511627777
expect_exit 3 "$GPUCC" pack -o registers.gpucc registers-1099511627777.json
assert_one_line err
assert_grep "kernel 'saxpy' has a resource count over 2^40, which readers refuse" err
assert_no_file registers.gpucc
pack_with_registers 1099511627776
expect_exit 0 "$GPUCC" pack -o registers.gpucc registers-1099511627776.json
expect_exit 0 "$GPUCC" verify registers.gpucc
edit_manifest registers.gpucc registers-over.gpucc "t = t.replace(':1099511627776,', ':1099511627777,', 1)"
refused registers-over.gpucc "entry 0: a kernel resource count is not an integer from 0 to 2^40"

# The header bytes formats/image.md ("Writing") specifies, member by member,
# so that another writer can make the same image.
check_headers() {
	python3 - "$1" "$2" <<'EOF2' || fail "the headers of $1 are not as image.md says"
import sys
image, mtime = sys.argv[1], int(sys.argv[2])
data = open(image, "rb").read()
at = 0
names = []
while data[at:at + 512] != bytes(512):
    h = data[at:at + 512]
    name = h[:100].rstrip(b"\0")
    size = int(h[124:135], 8)
    want = bytearray(512)
    want[:len(name)] = name
    want[100:108] = b"000644 \0"
    want[108:116] = want[116:124] = b"000000 \0"
    want[124:136] = b"%011o " % size
    want[136:148] = b"%011o " % mtime
    want[148:156] = b" " * 8
    want[156:157] = b"0"
    want[257:265] = b"ustar\x0000"
    want[329:337] = want[337:345] = b"000000 \0"
    want[148:156] = b"%06o\0 " % sum(want)
    assert h == bytes(want), "header of %r: %r" % (name, h)
    assert data[at + 512 + size:at + 512 + -(-size // 512) * 512] == bytes(-size % 512), name
    names.append(name)
    at += 512 + -(-size // 512) * 512
assert len(data) == at + 1024, "not two zero blocks and nothing after them"
assert names[:3] == [b"GPUCC-IMAGE", b"manifest.idx", b"manifest.json"], names
assert names[3:] == sorted(names[3:]), names
assert data[512:512 + 16] == b"gpucc-image 1.1\n"
EOF2
}

# The index, byte for byte as formats/image.md ("The index") specifies it,
# derived here from the manifest's bytes alone.
check_index() {
	python3 - "$1" <<'EOF2' || fail "the index of $1 is not as image.md says"
import os, sys
sys.path.insert(0, os.environ["SRCROOT"] + "/cmd/tests")
from image_spec import index_member
data = open(sys.argv[1], "rb").read()
members, at = {}, 0
while data[at:at + 512] != bytes(512):
    name, size = data[at:at + 100].rstrip(b"\0").decode(), int(data[at + 124:at + 135], 8)
    members[name] = (at, data[at + 512:at + 512 + size])
    at += 512 + -(-size // 512) * 512
fmt, idx, man = (members[n][1] for n in ("GPUCC-IMAGE", "manifest.idx", "manifest.json"))
want, where = index_member(man, len(fmt), {n: len(d) for n, (_, d) in members.items()
                                           if n.startswith("payloads/")})
for name, offset in where.items():
    assert members[name][0] == offset, name  # single-block headers here
assert idx == want, next(i for i in range(min(len(idx), len(want))) if idx[i] != want[i])
EOF2
}
expect_exit 0 "$GPUCC" merge -q -o merged.gpucc good.gpucc
check_headers merged.gpucc 0
check_index merged.gpucc
check_index good.gpucc
SOURCE_DATE_EPOCH=2147483646 expect_exit 0 "$GPUCC" merge -q -o merged-2038.gpucc good.gpucc
check_headers merged-2038.gpucc 2147483646
# An empty SOURCE_DATE_EPOCH is unset.
SOURCE_DATE_EPOCH= expect_exit 0 "$GPUCC" merge -q -o merged-empty-epoch.gpucc good.gpucc
assert_same merged.gpucc merged-empty-epoch.gpucc
# From 2^33 seconds on, the ustar mtime field cannot hold the time: every
# member has a pax header, which readers take, and merge still gives one
# image for either order.
python3 - "$TESTDATA/example" <<'EOF2' || fail "writing one-entry specs"
import json, sys
example = sys.argv[1]
doc = json.load(open(example + "/pack.json"))
for i, e in enumerate(doc["entries"]):
    for part in ("module_file", "ptx", "hsaco"):
        if part in e:
            e[part] = example + "/" + e[part]
    json.dump({"entries": [e]}, open("one-%d.json" % i, "w"))
EOF2
expect_exit 0 "$GPUCC" pack -o one-0.gpucc one-0.json
expect_exit 0 "$GPUCC" pack -o one-1.gpucc one-1.json
export SOURCE_DATE_EPOCH=8589934592
expect_exit 0 "$GPUCC" merge -q -o late-01.gpucc one-0.gpucc one-1.gpucc
expect_exit 0 "$GPUCC" merge -q -o late-10.gpucc one-1.gpucc one-0.gpucc
export SOURCE_DATE_EPOCH=0
assert_same late-01.gpucc late-10.gpucc
expect_exit 0 "$GPUCC" verify late-01.gpucc
python3 - late-01.gpucc <<'EOF2' || fail "late-01.gpucc: not a pax header before every member"
import sys, tarfile
with tarfile.open(sys.argv[1]) as tar:
    members = tar.getmembers()
assert len(members) == 5 and all(m.pax_headers == {"mtime": "8589934592"} for m in members), members
assert all(m.mtime == 8589934592 for m in members)
EOF2

# An image rebuilt from formats/image.md alone ("Writing", "Pax extended
# headers", "Compression", "The index"): the members' data taken from the
# image, every header, pax record, padding and index byte made here, so
# that the spec, not gpucc, says what an image's bytes are.
rebuild_from_spec() {
	python3 - "$@" <<'EOF2' || fail "$1 is not the image formats/image.md gives"
import os, sys, tarfile
sys.path.insert(0, os.environ["SRCROOT"] + "/cmd/tests")
from image_spec import entry_spans, index_member
image, tar_bytes, mtime, compressed = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
with tarfile.open(tar_bytes) as tar:
    members = [(m.name, tar.extractfile(m).read()) for m in tar.getmembers()]
pad = lambda n: -(-n // 512) * 512

def octal(v, digits):
    return b"%0*o" % (digits, v)

def base256(v, width):
    out = bytearray(v.to_bytes(width, "big"))
    out[0] |= 0x80
    return bytes(out)

def header(name, size, mtime, typeflag):
    h = bytearray(512)
    h[:len(name)] = name
    h[100:108] = h[108:116] = h[116:124] = b"000000 \0"
    h[100:108] = b"000644 \0"
    h[124:136] = (octal(size, 11) + b" " if size < 1 << 33 else
                  octal(size, 12) if size < 1 << 36 else base256(size, 12))
    h[136:148] = (octal(mtime, 11) if mtime < 1 << 33 else base256(mtime, 11)) + b" "
    h[148:156] = b" " * 8
    h[156:157] = typeflag
    h[257:265] = b"ustar\x0000"
    h[329:337] = h[337:345] = b"000000 \0"
    h[148:156] = octal(sum(h), 6) + b"\0 "
    return bytes(h)

def record(key, value):
    body = b" %s=%s\n" % (key, value)
    n = len(body) + 1
    while len(b"%d" % n) + len(body) != n:
        n += 1
    return b"%d" % n + body

def member(name, data, pax_writer):
    size, out = len(data), b""
    records = b""
    if pax_writer and (mtime >= 2**31 - 1 or size >= 1 << 33):
        if mtime >= 2**31 - 1:
            records += record(b"mtime", b"%d" % mtime)
        if size >= 1 << 33:
            records += record(b"size", b"%d" % size)
        folder, _, base = name.rpartition(b"/")
        pax_name = (folder + b"/" if folder else b"") + b"PaxHeader/" + base
        out = header(pax_name, len(records), min(mtime, 2**31 - 1), b"x")
        out += records + bytes(pad(len(records)) - len(records))
    return out + header(name, size, mtime, b"0") + data + bytes(pad(size) - size)

# The index from the manifest's bytes (cmd/tests/image_spec.py).
names = [n for n, _ in members]
fmt, man = members[0][1], members[names.index("manifest.json")][1]
index, _ = index_member(man, len(fmt), {n: len(d) for n, d in members if n.startswith("payloads/")})
entries = entry_spans(man)

# The members in order, through the writer image.md says is used.
version = b"gpucc-image 1.1\n" if len(entries) >= 2 else b"gpucc-image 1\n"
want = [(b"GPUCC-IMAGE", version)]
if len(entries) >= 2:
    want.append((b"manifest.idx", index))
want.append((b"manifest.json", man))
want += [(n.encode(), d) for n, d in sorted(members) if n.startswith("payloads/")]
fits = all(len(n) < 100 and len(d) < 1 << 33 for n, d in want) and mtime < 2**31 - 1
built = b"".join(member(n, d, compressed or not fits) for n, d in want) + bytes(1024)
got = open(tar_bytes, "rb").read()
first = next((i for i in range(min(len(got), len(built))) if got[i] != built[i]), None)
assert got == built, (image, len(got), len(built), first)
EOF2
}
rebuild_from_spec late-01.gpucc late-01.gpucc 8589934592 0
# From 2^31-1 on, every member has a pax header, compressed or not.
SOURCE_DATE_EPOCH=2147483647 expect_exit 0 "$GPUCC" merge -q -o merged-2147483647.gpucc good.gpucc
rebuild_from_spec merged-2147483647.gpucc merged-2147483647.gpucc 2147483647 0
rebuild_from_spec merged.gpucc merged.gpucc 0 0
rebuild_from_spec one-0.gpucc one-0.gpucc 0 0
# Each entry's key from its manifest fields alone (key.md, "From a
# manifest entry").
tar -xOf good.gpucc manifest.json > good-manifest.json
python3 - good-manifest.json <<'EOF2' || fail "key.md does not give the keys of good.gpucc"
import hashlib, json, struct, sys
entries = json.load(open(sys.argv[1]))["entries"]
assert entries
for e in entries:
    t = e["toolchain"]
    values = [b"%d" % e["key_schema"], t["gpucc"].encode(), t["llvm"].encode(),
              b"".join(d["name"].encode() + b"\0" + d["sha256"].encode() + b"\n"
                       for d in t["device_libs"]),
              e["target"].encode(),
              b"".join(b"%s=%s\n" % (n.encode(), v.encode()) for n, v in e["options"].items()),
              bytes.fromhex(e["module_sha256"])]
    names = [b"schema", b"gpucc", b"llvm", b"device-libs", b"target", b"options", b"module"]
    data = b"gpucc-key\0" + b"".join(struct.pack(">I", len(n)) + n + struct.pack(">Q", len(v)) + v
                                      for n, v in zip(names, values))
    assert hashlib.sha256(data).hexdigest() == e["key"], e["key"]
EOF2
# Compressed, the libarchive writer's rule holds: from 2^31-1 on, every
# member has a pax header.  The frame is zstd's multi-threaded streaming
# mode at the level's defaults, without checksum or content size: the
# zstd tool of the same libzstd makes the same bytes from the tar stream.
if have zstd "zstd images against the zstd tool"; then
	for epoch in 0 2147483647 8589934592; do
		SOURCE_DATE_EPOCH=$epoch expect_exit 0 "$GPUCC" merge -q --zstd=5 -o "z-$epoch.gpucc" good.gpucc
		zstd -q -d -c "z-$epoch.gpucc" > "z-$epoch.tar" || fail "zstd -d z-$epoch.gpucc"
		rebuild_from_spec "z-$epoch.gpucc" "z-$epoch.tar" "$epoch" 1
	done
	lib=$(python3 -c 'import ctypes; v = ctypes.CDLL("libzstd.so.1").ZSTD_versionNumber(); print("v%d.%d.%d" % (v // 10000, v // 100 % 100, v % 100))' 2>/dev/null)
	if zstd --version | grep -q " $lib,"; then
		zstd -q -5 -T1 --no-check -c < z-0.tar > z-0.zst
		assert_same z-0.zst z-0.gpucc
	else
		skip_block "the compressed bytes against the zstd tool's (it is not libzstd $lib)"
	fi
fi

# Typeflags NUL and 7 are regular files to tar, and to both of gpucc's
# readers (its own ustar reader, and libarchive for compressed images).
python3 - good.gpucc <<'EOF2' || fail "writing the typeflag images"
import sys
data = open(sys.argv[1], "rb").read()
for flag, out in ((b"\0", "typeflag-nul.gpucc"), (b"7", "typeflag-7.gpucc")):
    image, at = bytearray(data), 0
    while image[at:at + 512] != bytes(512):
        h = image[at:at + 512]
        size = int(bytes(h[124:135]), 8)
        image[at + 156:at + 157] = flag
        image[at + 148:at + 156] = b" " * 8
        image[at + 148:at + 156] = b"%06o\0 " % sum(image[at:at + 512])
        at += 512 + -(-size // 512) * 512
    open(out, "wb").write(image)
EOF2
for f in typeflag-nul typeflag-7; do
	command -v zstd >/dev/null && zstd -q "$f.gpucc" -o "$f.zst.gpucc"
	for g in "$f.gpucc" ${f}.zst.gpucc; do
		[ -f "$g" ] || continue
		expect_exit 0 "$GPUCC" verify "$g"
		mkdir "x-$g"
		expect_exit 0 "$GPUCC" extract -q "$g" -C "x-$g"
		[ "$(find "x-$g" -type f | wc -l)" = 2 ] || fail "extract $g: not two payloads"
	done
done

# A key is computed from key.md alone: the components compile --explain
# prints for the documented options, hashed as key.md encodes them, give
# the key it prints.
"$GPUCC" compile -n --no-cache --explain --no-cubin -g --fast-math --ftz -O3 -t sm_90 \
	"$TESTDATA/example/saxpy.nvptx.ll" > explain 2> explain.err
explain_exit=$?
if [ $explain_exit = 0 ]; then
	python3 - explain "$("$GPUCC" --version | sed -n '1s/^gpucc //p')" <<'EOF2' || fail "key.md does not give the key compile computes"
import hashlib, struct, sys
lines = open(sys.argv[1]).read().split("\n")
key = lines[0].split()[-1]
fields, name = {}, None
for line in lines[1:]:
    if not line.strip():
        continue
    if not line.startswith("    "):
        name, value = line.split(None, 1)
        fields[name] = [value]
    else:
        fields[name].append(line.strip())
options = fields["options"]
assert options == ["debug-info=on", "fast-math=on", "ftz=on", "opt-level=3", "ptxas=none"], options
assert fields["gpucc"] == [sys.argv[2]] and fields["device-libs"] == ["(none)"], fields
values = [b"1", sys.argv[2].encode(), fields["llvm"][0].encode(), b"",
          fields["target"][0].encode(), "".join(o + "\n" for o in options).encode(),
          bytes.fromhex(fields["module"][0])]
names = ["schema", "gpucc", "llvm", "device-libs", "target", "options", "module"]
data = b"gpucc-key\0" + b"".join(struct.pack(">I", len(n)) + n.encode() + struct.pack(">Q", len(v)) + v
                                  for n, v in zip(names, values))
assert hashlib.sha256(data).hexdigest() == key, (key, fields)
EOF2
elif [ $explain_exit = 6 ]; then
	echo "compile is unavailable here: the key computation is not checked"
else
	cat explain.err >&2
	fail "compile --explain exited $explain_exit"
fi

# A payload's kind is not checked against the target (manifest.md): an
# hsaco in the NVIDIA entry is read, though pack never writes one.
python3 - good.gpucc hsaco-for-nvidia.gpucc <<'EOF2' || fail "writing hsaco-for-nvidia.gpucc"
import io, sys, tarfile
with tarfile.open(sys.argv[1]) as tar:
    members = [(m.name, tar.extractfile(m).read()) for m in tar.getmembers()]
if members[1][0] == "manifest.idx":  # edited: as format 1.0, without an index
    members = [("GPUCC-IMAGE", b"gpucc-image 1\n")] + members[2:]
manifest = members[1][1].decode()
assert '"part":"ptx"' in manifest
members[1] = ("manifest.json", manifest.replace('"part":"ptx"', '"part":"hsaco"', 1).encode())
members[2:] = sorted((name.replace(".ptx", ".hsaco"), data) for name, data in members[2:])
with tarfile.open(sys.argv[2], "w", format=tarfile.USTAR_FORMAT) as tar:
    for name, data in members:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = len(data), 0o644, 0
        tar.addfile(info, io.BytesIO(data))
EOF2
expect_exit 0 "$GPUCC" verify hsaco-for-nvidia.gpucc

# The cache's stats line (cache.md, "stats"): a line of another version,
# or with a value that is not decimal digits, reads as zeros and is
# rewritten whole at the next update; a good one is read as written.
expect_exit 0 "$GPUCC" cache import -q --cache stats-cache good.gpucc
stats_hits() {
	printf '%s\n' "$1" > stats-cache/stats
	expect_exit 0 "$GPUCC" cache stats --cache stats-cache
	sed -n 's/^hits  *\([0-9][0-9]*\).*/\1/p' out
}
[ "$(stats_hits 'gpucc-cache-stats 1 hits=5 misses=2 corrupt=0 reset=0 bytes=5')" = 5 ] ||
	fail "a good stats line is not read"
for line in 'gpucc-cache-stats 1 hits=-1 misses=2 corrupt=0 reset=0 bytes=5' \
	'gpucc-cache-stats 10 hits=5 misses=2 corrupt=0 reset=0 bytes=5' \
	'gpucc-cache-stats 1 hits=18446744073709551616 misses=2 corrupt=0 reset=0 bytes=5' \
	'gpucc-cache-stats 1 hits=+5 misses=2 corrupt=0 reset=0 bytes=5'; do
	[ "$(stats_hits "$line")" = 0 ] || fail "stats line '$line' is read: $(cat out)"
done
expect_exit 0 "$GPUCC" cache lookup --cache stats-cache "$key"
grep -q '^gpucc-cache-stats 1 hits=1 misses=0 corrupt=0 reset=0 bytes=[0-9]*$' stats-cache/stats ||
	fail "stats not rewritten whole: $(cat stats-cache/stats)"

# zstd skippable frames carry no data: before the image's frame or after
# it, readers pass over them as zstd -d does (image.md, "Container").
if have zstd "zstd skippable frames"; then
	zstd -q -c good.gpucc > good.zst
	python3 - good.zst <<'EOF2' || fail "writing the skippable-frame images"
import struct, sys
frame = open(sys.argv[1], "rb").read()
skippable = struct.pack("<II", 0x184D2A50, 4) + b"note"
open("skippable-first.gpucc", "wb").write(skippable + frame)
open("skippable-last.gpucc", "wb").write(frame + skippable)
EOF2
	for f in skippable-first.gpucc skippable-last.gpucc; do
		expect_exit 0 "$GPUCC" verify "$f"
		expect_exit 0 "$GPUCC" merge -q -o "merged-$f" "$f"
		assert_same "merged-$f" good-merged.gpucc
	done
fi

# Names (manifest.md, "Names"): a module name taken from a file's name is
# spelt, so that any file packs (and compiles); a kernel, an external or a
# module name given outright that no manifest can carry is refused, exit 3,
# in one line naming it spelt and why, and no image is written.
printf '.version 7.8\n' > names.ptx
cp names.ptx "$(printf 'caf\351\n.ll')"
expect_exit 0 "$GPUCC" pack -o names.gpucc -m "$(printf 'caf\351\n.ll')" -t sm_90 -k k --ptx names.ptx
expect_exit 0 "$GPUCC" show names.gpucc "$(cut -c1-12 <<<"$("$GPUCC" list names.gpucc | tail -1)")" --json
assert_grep '"module": "caf\\\\xe9\\\\n.ll"' out
expect_exit 0 "$GPUCC" verify names.gpucc
for bad in "-k sin$(printf '\001')exp:a kernel's name 'sin\\\\x01exp' holds a control character" \
		"-k sin$(printf '\351')xp:a kernel's name 'sin\\\\xe9xp' is not UTF-8" \
		"-k k --external ext$(printf '\177'):an external's name 'ext\\\\x7f' holds a control character" \
		"-k k --module-name a$(printf '\033')b.ll:the module name 'a\\\\x1bb.ll' holds a control character"; do
	rm -f named.gpucc
	# shellcheck disable=SC2086
	expect_exit 3 "$GPUCC" pack -o named.gpucc -m names.ptx -t sm_90 ${bad%%:*} --ptx names.ptx
	assert_one_line err
	assert_grep "^gpucc pack: .*${bad#*:}, which a manifest cannot carry (formats/manifest.md, Names)$" err
	assert_no_file named.gpucc
done
echo ok
