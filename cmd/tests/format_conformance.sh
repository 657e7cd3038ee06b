# cmd/tests/format_conformance.sh -- the manifest as formats/manifest.md
# specifies it, checked on the real gpucc: a packed good image has its
# manifest edited (edit_manifest below) in ways the spec allows or forbids.
# What the spec forbids, `list` (which only opens the image) and `verify`
# refuse with one line naming the image and the defect, exit 3; what it
# allows, they accept, and `merge` writes it back canonically.  (Every
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
# are given) exits 3 with one line on stderr naming FILE and matching PATTERN.
refused() {
	local f=$1 pattern=$2 cmd
	shift 2
	for cmd in ${*:-list verify}; do
		expect_exit 3 "$GPUCC" "$cmd" "$f"
		assert_one_line err
		assert_grep "^gpucc $cmd: '$f': " err
		assert_grep "$pattern" err
		[ ! -s out ] || fail "$cmd $f failed but printed on stdout"
	done
}

# The first entry's key, as the manifest spells it.
key=$(tar -xOf good.gpucc manifest.json | sed -n 's/^{"key":"\([0-9a-f]*\)".*/\1/p' | head -n 1)
[ ${#key} = 64 ] || fail "no key in the good image"

# Digests and keys are lowercase hex: uppercase spells the same bytes
# another way, and a set of entries has one manifest.
upper=$(printf %s "$key" | tr a-f A-F)
edit_manifest good.gpucc upper-key.gpucc "t = t.replace('$key', '$upper', 1)"
refused upper-key.gpucc "entry 0: 'key' is not 64 lowercase hex digits"
edit_manifest good.gpucc upper-sha.gpucc \
	"import re; t = re.sub(r'\"sha256\":\"([0-9a-f]*)\"', lambda m: '\"sha256\":\"' + m[1].upper() + '\"', t, 1)"
refused upper-sha.gpucc "'sha256' is not 64 lowercase hex digits"
