# cmd/tests/algebra_helpers.sh -- sourced by the cache-algebra CLI tests
# (algebra_*, cache_*) after lib.sh.  Makes images of synthetic entries with
# `gpucc pack`, so tests control keys and contents exactly.
#
#   make_image OUT NAME FIRST COUNT [VARIANT] [SIZE] [--zstd]
#       entries NAME-FIRST .. NAME-(FIRST+COUNT-1): the key depends only on
#       NAME-i; the payload (SIZE bytes, default 300) also on VARIANT, so the
#       same NAME-i with two VARIANTs is a conflict.  Even i are sm_90 with a
#       PTX payload, odd i gfx90a with a code object and bitcode.
#   keys_of IMAGE      the sorted keys of an image, one per line
#   assert_verifies IMAGE...
make_image() {
	local out=$1 name=$2 first=$3 count=$4 variant=${5:-v0} size=${6:-300} zstd=${7:-}
	local dir
	dir=$(mktemp -d "$TEST_DIR/spec.XXXXXX")
	python3 - "$dir" "$name" "$first" "$count" "$variant" "$size" <<'PY' || fail "cannot make spec"
import hashlib, json, os, sys
d, name, first, count, variant, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], int(sys.argv[6])
entries = []
for i in range(first, first + count):
    ident = f"{name}-{i}"
    module = hashlib.sha256(ident.encode()).hexdigest()
    seed = f"{ident}/{variant}".encode()
    block = hashlib.sha256(seed).digest()
    body = (block * (size // 32 + 1))[:size]
    e = {"module": ident + ".ll", "module_sha256": module, "options": {"opt-level": "2"},
         "kernels": [f"k_{i}"]}
    p = os.path.join(d, f"p{i}")
    open(p, "wb").write(body)
    if i % 2 == 0:
        e["target"] = "sm_90"
        e["ptx"] = f"p{i}"
    else:
        e["target"] = "gfx90a"
        e["hsaco"] = f"p{i}"
        b = os.path.join(d, f"b{i}")
        open(b, "wb").write(b"BC" + body[:64])
        e["bitcode"] = f"b{i}"
    entries.append(e)
json.dump({"entries": entries}, open(os.path.join(d, "spec.json"), "w"))
PY
	"$GPUCC" pack -o "$out" $zstd "$dir/spec.json" >/dev/null 2>"$dir/err" ||
		{ cat "$dir/err" >&2; fail "gpucc pack failed for $out"; }
	rm -rf "$dir"
}

keys_of() {
	"$GPUCC" snapshot --show "$1" | cut -c1-64
}

assert_verifies() {
	local f
	for f in "$@"; do
		"$GPUCC" verify "$f" >/dev/null 2>verify.err || { cat verify.err >&2; fail "'$f' does not verify"; }
	done
}
