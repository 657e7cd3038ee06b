# cmd/tests/cache_prune.sh -- `gpucc cache prune` removes exactly the entries
# no compile of this gpucc can hit again (another gpucc, LLVM, ptxas, LLD or
# device library; docs/design.md invariant 1), and with --older-than the unused
# ones; -n and --json say which and why; what compile can still reach stays
# and hits; a tool that is not found judges nothing; bad ages are usage
# errors.  An AMD entry is judged by the LLD of its own LLVM (LLD 19 links
# LLVM 19's code objects, LLD 22 LLVM 22's).
. "$SRCROOT/cmd/tests/lib.sh"
command -v python3 >/dev/null || fail "python3 is needed to read --json output"

K=$TESTDATA/kernels
# A copy of the ROCm device libraries, so that the test can change one.
rocm=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode
[ -f "$rocm/ocml.bc" ] || rocm=/opt/rocm/amdgcn/bitcode
[ -f "$rocm/ocml.bc" ] || skip "no ROCm device libraries (scripts/setup installs them)"
cp -r "$rocm" libs
export GPUCC_ROCM_DEVICE_LIBS=$TEST_DIR/libs
# The newest LLVM built: pack's default, and what the AMD compiles get.
newest=$("$GPUCC" --version | sed -n 's/^  LLVM \([0-9]*\)\..*/\1/p' | tail -1)
ptxas=$( (CUDA_PATH=${CUDA_PATH:-/usr/local/cuda}; "$CUDA_PATH/bin/ptxas" --version 2>/dev/null ||
	ptxas --version 2>/dev/null) | sed -n 's/.*, V\([0-9.]*\)$/\1/p')

# What a compile here makes: NVIDIA, AMD, AMD linking the device libraries.
compile_all() { # EXPECTED-COMPILED
	expect_exit 0 "$GPUCC" compile --cache c --json "$K/nvptx/vector_add.ll" -t sm_90
	cp out nv.json
	expect_exit 0 "$GPUCC" compile --cache c --json "$K/amdgpu/vector_add.ll" "$K/amdgpu/math.ll" -t gfx90a
	python3 - nv.json out "$1" <<'PY' || fail "compile: expected $1 compiled"
import json, sys
n = sum(json.load(open(f))["compiled"] for f in sys.argv[1:3])
assert n == int(sys.argv[3]), n
PY
}
compile_all 3

# Entries no compile here reaches, as pack makes them, and one it does: an
# NVIDIA entry made without ptxas (what --no-cubin keys, too).
printf '//\n.version 7.8\n.target sm_90\n.address_size 64\n' > k.ptx
cp "$TESTDATA/example/saxpy.gfx90a.hsaco" k.hsaco
python3 - "${ptxas:-13.0.88}" > spec.json <<'PY'
import json, sys
ptxas = sys.argv[1]
def entry(n, target="sm_90", **kw):
    e = {"module": f"stale{n}.ll", "module_sha256": f"{n:064x}", "target": target, "kernels": ["k"]}
    e.update({"hsaco": "k.hsaco"} if target.startswith("gfx") else {"ptx": "k.ptx"})
    e.update(kw)
    return e
print(json.dumps({"entries": [
    entry(1, gpucc_version="0.0.1", options={"ptxas": ptxas}),
    entry(2, llvm_version="18.1.8", options={"ptxas": ptxas}),
    entry(3, options={"ptxas": "1.0.0"}),
    entry(4, options={"ptxas": "none"}),
    entry(5, options={"ptxas": ptxas}, device_libs=[{"name": "libdevice.10.bc", "sha256": "11" * 32}]),
    entry(6, target="gfx90a", options={"ld.lld": "14.0.6"}),
]}))
PY
expect_exit 0 "$GPUCC" pack -o stale.gpucc spec.json
expect_exit 0 "$GPUCC" cache import --cache c stale.gpucc
key_of() { "$GPUCC" list --json stale.gpucc | python3 -c "
import json, sys
print([e['key'] for e in json.load(sys.stdin) if e['module'] == sys.argv[1]][0])" "$1"; }
kept=$(key_of stale4.ll)

# ---- -n lists what would go, with why, and removes nothing
ls -lR c/v1 > before
expect_exit 0 "$GPUCC" cache prune --cache c -n
ls -lR c/v1 > after
assert_same before after
[ "$(grep -c '^would remove ' out)" -eq 6 ] || { cat out >&2; fail "-n: expected 5 entries and a summary"; }
assert_grep "stale1.ll: made by gpucc 0.0.1, this is " out
assert_grep "stale2.ll: made with LLVM 18.1.8, this gpucc uses " out
assert_grep "stale3.ll: made with ptxas 1.0.0, this toolchain has " out
assert_grep "stale5.ll: device library 'libdevice.10.bc' has changed" out
assert_grep "stale6.ll: made with LLD 14.0.6, this toolchain has LLD $newest\." out
assert_grep "^would remove 5 entries (.*); 4 entries (.*) would stay$" out
assert_no_grep "stale4.ll" out

# ---- prune removes those five, and what compile makes here all hits
expect_exit 0 "$GPUCC" cache prune --cache c --json
python3 - out "$kept" <<'PY' || fail "prune --json is wrong"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["dry_run"] is False and d["removed_entries"] == 5 and d["entries"] == 4, d
assert sorted(r["module"] for r in d["removed"]) == [f"stale{n}.ll" for n in (1, 2, 3, 5, 6)], d
assert all(len(r["key"]) == 64 and r["bytes"] > 0 and r["reason"] for r in d["removed"]), d
assert sys.argv[2] not in [r["key"] for r in d["removed"]]
PY
[ -f "c/v1/$(echo "$kept" | cut -c1-2)/$kept.gpucc" ] || fail "the entry --no-cubin can reach was removed"
expect_exit 0 "$GPUCC" cache verify --cache c
compile_all 0
expect_exit 0 "$GPUCC" cache prune --cache c
assert_grep "^removed 0 entries (0 bytes); 4 entries (.*) left$" out

# ---- a device library changes: the entries that link it go
llvm-dis-19 libs/ocml.bc -o ocml.ll || fail "llvm-dis-19 cannot read ocml.bc"
echo 'define void @gpucc_prune_test_marker() { ret void }' >> ocml.ll
llvm-as-19 ocml.ll -o libs/ocml.bc || fail "llvm-as-19 failed"
expect_exit 0 "$GPUCC" cache prune --cache c -n
assert_grep "math.ll: device library 'ocml.bc' has changed" out
assert_grep "^would remove 1 entry (" out
expect_exit 0 "$GPUCC" cache prune --cache c
compile_all 1

# ---- a tool not found judges nothing: the entries stay, a warning says so
expect_exit 0 "$GPUCC" cache import --cache c stale.gpucc
PATH=/nonexistent expect_exit 0 "$GPUCC" cache prune --cache c -n
assert_no_grep "stale6.ll" out
assert_grep "^gpucc cache prune: warning: .*ld.lld-$newest was not found on PATH.*: entries are not judged by it and stay$" err
[ "$(grep -c warning err)" -eq 1 ] || fail "the warning should come once"
expect_exit 0 "$GPUCC" cache prune --cache c -q # (the stale imports go again)
[ ! -s out ] || fail "-q printed"

# ---- --older-than: entries not used for that long go; a hit renews
old=$(( $(date +%s) - 40 * 86400 ))
for f in c/v1/*/*.gpucc; do touch -d "@$old" "$f"; done
expect_exit 0 "$GPUCC" cache lookup --cache c "$kept" # used now: stays
expect_exit 0 "$GPUCC" cache prune --cache c --older-than 41d
assert_grep "^removed 0 entries" out
expect_exit 0 "$GPUCC" cache prune --cache c --older-than 30d --json
python3 - out "$kept" <<'PY' || fail "--older-than is wrong"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["removed_entries"] == 3 and d["entries"] == 1, d
assert all(r["reason"] == "not used for 40 days" for r in d["removed"]), d
PY
[ -f "c/v1/$(echo "$kept" | cut -c1-2)/$kept.gpucc" ] || fail "the entry used just now was removed"

# ---- each LLVM's entries by its own LLD: an LLVM 22 entry linked by LLD 19
# (what gpucc made before LLVM 22's worker had its own LLD) goes, an LLVM
# 19 one linked by LLD 19 stays, one linked by LLD 22 goes
v19=$("$GPUCC" --version | sed -n 's/^  LLVM \(19\.[0-9.]*\)$/\1/p')
v22=$("$GPUCC" --version | sed -n 's/^  LLVM \(22\.[0-9.]*\)$/\1/p')
lld19=$(ld.lld-19 --version 2>/dev/null | sed -n 's/.*LLD \([0-9.]*\).*/\1/p')
lld22=$(ld.lld-22 --version 2>/dev/null | sed -n 's/.*LLD \([0-9.]*\).*/\1/p')
if [ -z "$v19" ] || [ -z "$v22" ] || [ -z "$lld19" ] || [ -z "$lld22" ]; then
	skip_block "AMD entries judged by their own LLVM's LLD (needs LLVM 19 and 22 backends, ld.lld-19 and ld.lld-22)"
else
	python3 - "$v19" "$v22" "$lld19" "$lld22" > majors.json <<'PY'
import json, sys
v19, v22, lld19, lld22 = sys.argv[1:]
def entry(n, llvm, lld):
    return {"module": f"major{n}.ll", "module_sha256": f"{n:064x}", "target": "gfx90a",
            "kernels": ["k"], "hsaco": "k.hsaco", "llvm_version": llvm, "options": {"ld.lld": lld}}
print(json.dumps({"entries": [entry(1, v22, lld19), entry(2, v19, lld19), entry(3, v19, lld22)]}))
PY
	expect_exit 0 "$GPUCC" pack -o majors.gpucc majors.json
	expect_exit 0 "$GPUCC" cache import --cache majors majors.gpucc
	expect_exit 0 "$GPUCC" cache prune --cache majors -n
	assert_grep "major1.ll: made with LLD $lld19, this toolchain has LLD $lld22$" out
	assert_grep "major3.ll: made with LLD $lld22, this toolchain has LLD $lld19$" out
	assert_no_grep "major2.ll" out
	assert_grep "^would remove 2 entries (.*); 1 entry (.*) would stay$" out
fi

# ---- bad input
for age in 30 30y x d 99999999999999999999d ''; do
	expect_exit 129 "$GPUCC" cache prune --cache c --older-than "$age"
	assert_one_line err
	assert_grep "^gpucc cache prune: --older-than '$age': not an age" err
done
expect_exit 2 "$GPUCC" cache prune --cache "$TEST_DIR/typo"
assert_one_line err
assert_no_file typo
