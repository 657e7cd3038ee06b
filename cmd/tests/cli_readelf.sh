# cmd/tests/cli_readelf.sh -- an AMDGPU code object taken out of an image (by
# gpucc extract and by tar -xf) is a loadable object that llvm-readelf reads
# as it is: kernel metadata notes and the kernel descriptor symbol.  Skipped
# when llvm-readelf-19 is absent.
. "$SRCROOT/cmd/tests/lib.sh"

readelf=$(command -v llvm-readelf-19 || command -v llvm-readelf || true)
[ -n "$readelf" ] || skip "llvm-readelf-19 not found"

expect_exit 0 "$GPUCC" pack -o ex.gpucc "$TESTDATA/example/pack.json"
expect_exit 0 "$GPUCC" extract ex.gpucc -C ex -q
mkdir untar && (cd untar && tar -xf ../ex.gpucc) || fail "tar -xf failed"
for f in ex/*.hsaco untar/payloads/*.hsaco; do
	[ -f "$f" ] || fail "no code object extracted"
	"$readelf" --file-header --notes --symbols "$f" > readelf.out 2> readelf.err ||
		{ cat readelf.err >&2; fail "llvm-readelf rejected $f"; }
	[ ! -s readelf.err ] || { cat readelf.err >&2; fail "llvm-readelf warned about $f"; }
	assert_grep 'Type: *DYN' readelf.out
	assert_grep 'AMDGPU Metadata' readelf.out
	assert_grep 'amdhsa.target: *amdgcn-amd-amdhsa--gfx90a' readelf.out
	assert_grep 'saxpy\.kd' readelf.out
done
echo "ok"
