# runtime_devices_select: `gpucc devices --image` shows, per device and per
# kernel, the entry gpucc_image_select picks (or its error, listing the
# image's code for the device's vendor only, and exit 2), and
# with --target answers for named device targets without loading a runtime,
# so it runs on a machine without a GPU.  The GPU path runs on the stand-in
# runtimes of lib/tests/stub_runtimes.c ($STUB_RUNTIMES).
. "$SRCROOT/cmd/tests/lib.sh"

# One module compiled three ways, the kernel "scale" left out of the xnack+
# build: an sm_80 cubin with PTX ISA 7.8, gfx90a:xnack+ and gfx90a ("any").
printf 'ptx for sm_80' >k.ptx
printf 'cubin for sm_80' >k.cubin
printf 'code object xnack+' >xnack.hsaco
printf 'code object any' >any.hsaco
digest=$(printf '%064d' 1)
cat >spec.json <<EOF
{"entries": [
  {"module": "k.ll", "module_sha256": "$digest", "target": "sm_80:ptx78",
   "kernels": ["saxpy", "scale"], "ptx": "k.ptx", "cubin": "k.cubin"},
  {"module": "k.ll", "module_sha256": "$digest", "target": "gfx90a:xnack+",
   "kernels": ["saxpy"], "hsaco": "xnack.hsaco"},
  {"module": "k.ll", "module_sha256": "$digest", "target": "gfx90a",
   "kernels": ["saxpy", "scale"], "hsaco": "any.hsaco"}
]}
EOF
expect_exit 0 "$GPUCC" pack -o k.gpucc spec.json
# A cubin made by CUDA 13's ptxas, with its PTX (ISA 8.0).
cat >spec13.json <<EOF
{"entries": [
  {"module": "k.ll", "module_sha256": "$digest", "target": "sm_90:ptx80",
   "options": {"ptxas": "13.0.88"}, "kernels": ["norm"], "ptx": "k.ptx", "cubin": "k.cubin"}
]}
EOF
expect_exit 0 "$GPUCC" pack -o k13.gpucc spec13.json
# Arch-specific code, a PTX ISA newer than a CUDA 12.4 driver JITs, a cubin
# of CUDA 13's ptxas for another sm, and a code object for one exact
# target ID (sramecc+, xnack-).
cat >specx.json <<EOF
{"entries": [
  {"module": "k.ll", "module_sha256": "$digest", "target": "sm_90a:ptx80",
   "kernels": ["k"], "ptx": "k.ptx", "cubin": "k.cubin"},
  {"module": "k.ll", "module_sha256": "$digest", "target": "sm_86:ptx85",
   "kernels": ["k"], "ptx": "k.ptx"},
  {"module": "k.ll", "module_sha256": "$digest", "target": "sm_80:ptx78",
   "options": {"ptxas": "13.0.88"}, "kernels": ["k"], "cubin": "k.cubin"},
  {"module": "k.ll", "module_sha256": "$digest", "target": "gfx90a:sramecc+:xnack-",
   "kernels": ["k"], "hsaco": "any.hsaco"}
]}
EOF
expect_exit 0 "$GPUCC" pack -o kx.gpucc specx.json
# Blackwell and MI350: arch-specific (a) and family (f) code, plain PTX.
cat >specb.json <<EOF
{"entries": [
  {"module": "k.ll", "module_sha256": "$digest", "target": "sm_100a:ptx88",
   "kernels": ["k"], "cubin": "k.cubin"},
  {"module": "k.ll", "module_sha256": "$digest", "target": "sm_100f:ptx88",
   "kernels": ["k"], "cubin": "k.cubin"},
  {"module": "k.ll", "module_sha256": "$digest", "target": "sm_100:ptx86",
   "kernels": ["k"], "ptx": "k.ptx"},
  {"module": "k.ll", "module_sha256": "$digest", "target": "sm_120f:ptx88",
   "kernels": ["k"], "cubin": "k.cubin"},
  {"module": "k.ll", "module_sha256": "$digest", "target": "sm_90:ptx78",
   "kernels": ["k"], "ptx": "k.ptx"},
  {"module": "k.ll", "module_sha256": "$digest", "target": "gfx950",
   "kernels": ["k"], "hsaco": "any.hsaco"}
]}
EOF
expect_exit 0 "$GPUCC" pack -o kb.gpucc specb.json

# key_of IMAGE TARGET: the key of IMAGE's entry for TARGET.
key_of() {
	"$GPUCC" list --json "$1" | python3 -c '
import json, sys
print([e["key"] for e in json.load(sys.stdin) if e["target"] == sys.argv[1]][0])' "$2"
}

# What each device target loads, per kernel: "-" for the newest driver;
# "none" where nothing fits (the command then exits 2).
cases='
# image      target                  driver  kernel  entry          part   fit
k.gpucc      sm_80                   -       saxpy   sm_80:ptx78    cubin  exact
k.gpucc      sm_80                   -       scale   sm_80:ptx78    cubin  exact
k.gpucc      sm_80                   11.0    saxpy   sm_80:ptx78    cubin  exact
k.gpucc      sm_86                   -       saxpy   sm_80:ptx78    ptx    fallback
k.gpucc      sm_86                   11.8    scale   sm_80:ptx78    ptx    fallback
k.gpucc      sm_86                   11.7    saxpy   sm_80:ptx78    cubin  fallback
k.gpucc      sm_89                   11.7    scale   sm_80:ptx78    cubin  fallback
k.gpucc      sm_90                   -       saxpy   sm_80:ptx78    ptx    fallback
k.gpucc      sm_120                  -       saxpy   sm_80:ptx78    ptx    fallback
k.gpucc      sm_90                   11.7    saxpy   none           -      -
k.gpucc      sm_75                   -       scale   none           -      -
k.gpucc      sm_87                   11.7    saxpy   none           -      -
k.gpucc      gfx90a:xnack+           -       saxpy   gfx90a:xnack+  hsaco  exact
k.gpucc      gfx90a:xnack+           -       scale   gfx90a         hsaco  fallback
k.gpucc      gfx90a:sramecc+:xnack+  -       saxpy   gfx90a:xnack+  hsaco  fallback
k.gpucc      gfx90a:xnack-           -       saxpy   gfx90a         hsaco  fallback
k.gpucc      gfx90a                  -       saxpy   gfx90a         hsaco  exact
k.gpucc      gfx942                  -       saxpy   none           -      -
k13.gpucc    sm_90                   -       norm    sm_90:ptx80    cubin  exact
k13.gpucc    sm_90                   13.0    norm    sm_90:ptx80    cubin  exact
k13.gpucc    sm_90                   12.4    norm    sm_90:ptx80    ptx    fallback
k13.gpucc    sm_90                   11.8    norm    none           -      -
kx.gpucc     sm_90                   -       k       sm_90a:ptx80   cubin  exact
kx.gpucc     sm_90                   12.4    k       sm_90a:ptx80   cubin  exact
kx.gpucc     sm_100                  -       k       sm_86:ptx85    ptx    fallback
kx.gpucc     sm_100                  12.4    k       none           -      -
kx.gpucc     sm_86                   12.5    k       sm_86:ptx85    ptx    fallback
kx.gpucc     sm_86                   12.4    k       none           -      -
kx.gpucc     sm_89                   12.4    k       none           -      -
kx.gpucc     sm_89                   13.0    k       sm_86:ptx85    ptx    fallback
kx.gpucc     sm_87                   13.0    k       sm_86:ptx85    ptx    fallback
kb.gpucc     sm_100                  -       k       sm_100a:ptx88  cubin  exact
kb.gpucc     sm_103                  -       k       sm_100:ptx86   ptx    fallback
kb.gpucc     sm_103                  12.6    k       sm_90:ptx78    ptx    fallback
kb.gpucc     sm_120                  -       k       sm_120f:ptx88  cubin  exact
kb.gpucc     sm_121                  -       k       sm_100:ptx86   ptx    fallback
kb.gpucc     gfx950:sramecc+:xnack-  -       k       gfx950         hsaco  fallback
kb.gpucc     gfx942:sramecc+:xnack-  -       k       none           -      -
kx.gpucc     gfx90a:sramecc+:xnack-  -       k       gfx90a:sramecc+:xnack-  hsaco  exact
kx.gpucc     gfx90a:xnack-           -       k       none           -      -
kx.gpucc     gfx90a:sramecc-:xnack-  -       k       none           -      -
kx.gpucc     gfx90a                  -       k       none           -      -
'
echo "$cases" | while read -r image target driver kernel entry part fit; do
	case $image in '' | '#'*) continue ;; esac
	opts=(--image "$image" --target "$target")
	[ "$driver" = - ] || opts+=(--cuda-driver "$driver")
	# The exit status: 2 when any kernel of the image has no fit there.
	want=0
	echo "$cases" | grep -q "^$image  *$target  *$driver  .* none " && want=2
	what="$target (driver $driver) $kernel"

	expect_exit "$want" "$GPUCC" devices "${opts[@]}"
	if [ "$entry" = none ]; then
		assert_grep "^  $kernel  no fit: no entry of '$image' with kernel '$kernel' runs on ${target%%:*}" out
		# The reason lists the code of the device's vendor only.
		case $image:$target in
		kx.gpucc:gfx*)
			assert_grep "^  $kernel  no fit: .*: the image has AMD code for gfx90a:sramecc+:xnack- (hsaco)$" out
			assert_no_grep "no fit: .*sm_" out ;;
		kx.gpucc:*)
			for code in 'sm_90a:ptx80 (cubin)' 'sm_86:ptx85 (ptx)' 'sm_80:ptx78 (cubin for a CUDA 13 driver)'; do
				assert_grep "^  $kernel  no fit: .*: the image has NVIDIA code for .*$code" out
			done
			assert_no_grep "no fit: .*gfx" out ;;
		kb.gpucc:gfx*)
			assert_grep "^  $kernel  no fit: .*: the image has AMD code for gfx950 (hsaco)$" out
			assert_no_grep "no fit: .*sm_" out ;;
		*:gfx*)
			assert_grep "^  $kernel  no fit: .*: the image has AMD code for gfx90a (hsaco)" out
			assert_no_grep "no fit: .*sm_" out ;;
		*)
			assert_grep "^  $kernel  no fit: .*: the image has NVIDIA code for \(sm_80:ptx78 (cubin)\|sm_90:ptx80 (cubin for a CUDA 13 driver, ptx)\)$" out
			assert_no_grep "no fit: .*gfx" out ;;
		esac
		assert_one_line err
		assert_grep "^gpucc devices: no fit for [0-9]* of [0-9]* kernel rows; the first: no entry of '$image'" err
	else
		key=$(key_of "$image" "$entry")
		grep -q "^  $kernel  ${key:0:12}  $entry  *$part  *$fit\$" out ||
			{ cat out >&2; fail "$what: expected $entry $part $fit"; }
		[ "$want" = 2 ] || [ ! -s err ] || { cat err >&2; fail "$what: wrote to stderr"; }
	fi

	expect_exit "$want" "$GPUCC" devices --json "${opts[@]}"
	python3 - "$kernel" "$entry" "$part" "$fit" "${key:-}" "$target" "$driver" <<'PY' ||
import json, sys
kernel, entry, part, fit, key, target, driver = sys.argv[1:]
d = json.load(open("out"))
[dev] = d["devices"]
assert dev["runtime"] is None and dev["name"] is None and dev["arch"] == target, dev
if driver == "-":
    assert dev["driver_version"] is None, dev
else:
    major, minor = driver.split(".")
    assert dev["driver_version"] == int(major) * 1000 + int(minor) * 10, dev
rows = [k for k in dev["kernels"] if k["kernel"] == kernel]
assert len(rows) == 1, dev
row = rows[0]
if entry == "none":
    assert set(row) == {"kernel", "error"} and "the image has" in row["error"], row
else:
    assert row == {"kernel": kernel, "key": key, "target": entry, "part": part,
                   "exact": fit == "exact"}, row
PY
		fail "$what: --json"
done || exit 1

# An image without code of the device's vendor says so, and lists none of
# the other vendor's.
printf '{"entries": [{"module": "k.ll", "module_sha256": "%s", "target": "gfx90a", "kernels": ["saxpy"], "hsaco": "any.hsaco"}]}' "$digest" >amd.json
expect_exit 0 "$GPUCC" pack -o amd.gpucc amd.json
expect_exit 2 "$GPUCC" devices -i amd.gpucc -t sm_90 -t gfx942
assert_grep "^  saxpy  no fit: no entry of 'amd.gpucc' with kernel 'saxpy' runs on sm_90 (driver JITs PTX ISA up to 9.0): the image has no NVIDIA code for that kernel$" out
assert_grep "^  saxpy  no fit: no entry of 'amd.gpucc' with kernel 'saxpy' runs on gfx942: the image has AMD code for gfx90a (hsaco)$" out
expect_exit 2 "$GPUCC" devices -i k13.gpucc -t gfx90a
assert_grep "^  norm  no fit: .* runs on gfx90a: the image has no AMD code for that kernel$" out
assert_no_grep "no fit: .*sm_90" out

# The kernel column is as wide as the longest name in characters, not
# bytes: a name in UTF-8 (an AMD kernel may be named so) pushed the others'
# columns out by a byte a character.
printf '{"entries": [{"module": "k.ll", "module_sha256": "%s", "target": "gfx90a", "kernels": ["\u00e9t\u00e9", "abcd"], "hsaco": "any.hsaco"}]}' "$digest" >utf8.json
expect_exit 0 "$GPUCC" pack -o utf8.gpucc utf8.json
expect_exit 0 "$GPUCC" devices -i utf8.gpucc -t gfx90a
assert_grep "^  été   [0-9a-f]\{12\}  gfx90a " out
assert_grep "^  abcd  [0-9a-f]\{12\}  gfx90a " out

# Every device target of a run gets its rows; one without a fit makes the
# run exit 2 after the whole table.
expect_exit 0 "$GPUCC" devices -i k.gpucc -t sm_80 -t sm_86 -t gfx90a:xnack- -t gfx90a:xnack+
[ "$(grep -c '^target:' out)" = 4 ] || { cat out >&2; fail "four targets"; }
[ "$(grep -c '^  s' out)" = 8 ] || { cat out >&2; fail "two kernels a target"; }
assert_grep "^target:0  sm_80 (PTX <= 9.0)  (--target sm_80, newest CUDA driver)$" out
assert_grep "^target:2  gfx90a:xnack-  (--target gfx90a:xnack-)$" out
expect_exit 2 "$GPUCC" devices -i k.gpucc -t sm_75 -t sm_86 --cuda-driver 12.4
assert_grep "^target:1  sm_86 (PTX <= 8.4)  (--target sm_86, CUDA driver 12.4)$" out
assert_grep "^  saxpy  no fit: .* runs on sm_75 (driver JITs PTX ISA up to 8.4): the image has" out
assert_grep "^  scale  [0-9a-f]\{12\}  sm_80:ptx78  *ptx  *fallback$" out
assert_grep "no fit for 2 of 4 kernel rows" err
expect_exit 2 "$GPUCC" devices --json -i k.gpucc -t sm_75 -t sm_86 --cuda-driver 12.4
python3 -c '
import json
d = json.load(open("out"))["devices"]
assert [x["arch"] for x in d] == ["sm_75", "sm_86"] and [x["ordinal"] for x in d] == [0, 1], d
assert [x["max_ptx_isa"] for x in d] == [84, 84] and [x["driver_version"] for x in d] == [12040] * 2
assert all("error" in k for k in d[0]["kernels"]) and all("key" in k for k in d[1]["kernels"]), d
' || fail "--json with two targets"

# --target loads no runtime, not even one that is there to load.
export GPUCC_HIP_LIBRARY=$STUB_RUNTIMES GPUCC_CUDA_LIBRARY=$STUB_RUNTIMES
LD_DEBUG=libs "$GPUCC" devices -i k.gpucc -t sm_80 -t gfx90a >out 2>libs.txt ||
	fail "devices --target exited $?"
assert_no_grep "libamdhip64" libs.txt
assert_no_grep "libcuda" libs.txt
assert_no_grep "stub_runtimes" libs.txt
# Without --target the GPUs the (stand-in) runtimes list, with the same rows:
# two HIP gfx90a:sramecc+:xnack- devices and a CUDA sm_90 one, driver 12.4.
LD_DEBUG=libs "$GPUCC" devices -i k.gpucc >out 2>libs.txt || fail "devices on the stub exited $?"
assert_grep "stub_runtimes" libs.txt
assert_grep "^hip:1  gfx90a:sramecc+:xnack-  Stub HIP GPU 1  " out
assert_grep "^  saxpy  [0-9a-f]\{12\}  gfx90a  *hsaco  *fallback$" out
assert_grep "^cuda:0  sm_90 (PTX <= 8.4)  " out
[ "$(grep -c '^  s' out)" = 6 ] || { cat out >&2; fail "two kernels a device"; }
STUB_CUDA_CC=7.5 expect_exit 2 "$GPUCC" devices -i k.gpucc --json
python3 -c '
import json
d = json.load(open("out"))["devices"]
assert [x["runtime"] for x in d] == ["hip", "hip", "cuda"], d
assert all("key" in k for x in d[:2] for k in x["kernels"]), d
assert [k["kernel"] for k in d[2]["kernels"]] == ["saxpy", "scale"], d
assert all("runs on sm_75" in k["error"] for k in d[2]["kernels"]), d
' || fail "--json on the stub"
unset GPUCC_HIP_LIBRARY GPUCC_CUDA_LIBRARY

# Bad device targets: one line naming the argument, 3 (bad input, as an
# unknown target is in compile and pack; it was 129 here).  Driver versions
# that are no version: 129.
for bad in sm_90a sm_100a sm_100f sm_90:ptx78 sm_9 sm_1000 sm_x gfx90a:xnack gfx1030:xnack+ gfx9999 foo ''; do
	expect_exit 3 "$GPUCC" devices -i k.gpucc -t sm_80 --target "$bad"
	assert_one_line err
	assert_grep "^gpucc devices: bad --target: .*'$bad'\|^gpucc devices: bad --target: empty" err
done
for bad in 12.x 12.40 x 123 .4 0 ''; do
	expect_exit 129 "$GPUCC" devices -i k.gpucc -t sm_80 --cuda-driver "$bad"
	assert_one_line err
	assert_grep "^gpucc devices: bad --cuda-driver '$bad'" err
done
expect_exit 129 "$GPUCC" devices -t sm_80
assert_grep "^gpucc devices: --target needs --image" err
expect_exit 129 "$GPUCC" devices --cuda-driver 12.4 -i k.gpucc
assert_grep "^gpucc devices: --cuda-driver describes --target devices" err
# The image is read after the command line is checked.
expect_exit 2 "$GPUCC" devices -i missing.gpucc -t sm_80
echo ok
