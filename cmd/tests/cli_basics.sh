# cmd/tests/cli_basics.sh -- the command framework as a user meets it: help,
# --version, every command's -h, usage errors (exit 129), and `gpucc pack`
# in both its forms, including its refusals, none of which may leave a file;
# and standard output that cannot be written (a full disk) fails every command.
. "$SRCROOT/cmd/tests/lib.sh"

EXAMPLE=$TESTDATA/example
COMMANDS="list show cat extract verify stats pack"

# ---- help and version --------------------------------------------------------

expect_exit 0 "$GPUCC" help
for c in $COMMANDS; do assert_grep "^  $c " out; done
assert_grep '^exit codes:' out
for code in 0 1 2 3 4 5 6 129; do assert_grep "^ *$code  " out; done
[ ! -s err ] || fail "gpucc help wrote to stderr"

expect_exit 0 "$GPUCC" --help
expect_exit 129 "$GPUCC"
assert_one_line err
assert_grep "^usage: gpucc <command> \[<args>\] (see 'gpucc help')$" err
[ ! -s out ] || fail "gpucc without arguments wrote to stdout"

expect_exit 0 "$GPUCC" --version
assert_grep '^gpucc [0-9]' out
assert_grep '^LLVM ' out
assert_grep '^libarchive [0-9]' out
# --version takes nothing: an argument after it is a usage error, not
# ignored
for v in --version version; do
	expect_exit 129 "$GPUCC" $v x
	assert_one_line err
	assert_grep "^gpucc: $v takes no arguments, not 'x' (see 'gpucc help')$" err
	[ ! -s out ] || fail "gpucc $v x printed the version"
done
expect_exit 129 "$GPUCC" help list extra
assert_one_line err
assert_grep "^gpucc help: unexpected argument 'extra' (see 'gpucc help')$" err

for c in $COMMANDS; do
	expect_exit 0 "$GPUCC" "$c" -h
	assert_grep "^usage: gpucc $c " out
	assert_grep '^options:' out
	assert_grep '  -h, --help' out
	expect_exit 0 "$GPUCC" "$c" --help
	expect_exit 0 "$GPUCC" help "$c"
	assert_grep "^usage: gpucc $c " out
done

# Bash completion offers each command's options as its -h table lists them,
# and no others (it offered compile's --version, which its description
# mentions as ld.lld's).
complete_words() {
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _gpucc; printf "%s\n" "${COMPREPLY[@]}"' \
		_ "$SRCROOT/cmd/completion/gpucc.bash" "$@" | sort
}
"$GPUCC" help | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z ]*[a-z]\)  .*/\1/p' | grep -v '^help$' > commands.txt
[ "$(wc -l < commands.txt)" -gt 10 ] || fail "gpucc help lists $(wc -l < commands.txt) commands"
while read -r c; do
	# shellcheck disable=SC2086
	"$GPUCC" $c -h | sed -n '/^options:/,$s/^  \(-., \)\{0,1\} *\(--[a-z0-9-]*\).*/\2/p' | sort > want.txt
	# shellcheck disable=SC2086
	complete_words "$GPUCC" $c -- > got.txt
	diff want.txt got.txt > complete.diff || { cat complete.diff >&2; fail "completion of 'gpucc $c --' is not its -h options"; }
done < commands.txt
rm -f commands.txt want.txt got.txt complete.diff

# ---- usage errors --------------------------------------------------------------

expect_exit 129 "$GPUCC" frobnicate
assert_grep "unknown command 'frobnicate'" err
expect_exit 129 "$GPUCC" help frobnicate
# Every usage error is one line that says where the command line is
# explained (the parser's printed three: the error, the usage line, and
# the pointer to -h)
expect_exit 129 "$GPUCC" list
assert_one_line err
assert_grep "^gpucc list: missing argument (see 'gpucc list -h')$" err
for args in "list a b" "list --frobnicate a" "list --json=yes a" "show a" "cat a 00" \
	"extract -C" "merge a" "cache gc --max-size x" "embed a -o b.o" "devices --cuda-driver x"; do
	# shellcheck disable=SC2086
	expect_exit 129 "$GPUCC" $args
	assert_one_line err
	assert_grep " (see 'gpucc [a-z ]* -h')$" err
done
expect_exit 129 "$GPUCC" list a.gpucc b.gpucc
assert_grep "unexpected argument 'b.gpucc'" err
expect_exit 129 "$GPUCC" list --frobnicate a.gpucc
assert_grep "unknown option '--frobnicate'" err
expect_exit 129 "$GPUCC" list --json=yes a.gpucc
expect_exit 129 "$GPUCC" show a.gpucc
expect_exit 129 "$GPUCC" cat a.gpucc 00
assert_grep "missing option '--part'" err
expect_exit 129 "$GPUCC" cat a.gpucc 00 --part elf
assert_grep "unknown payload kind 'elf'" err
expect_exit 129 "$GPUCC" extract -C
assert_grep "needs a value" err
expect_exit 129 "$GPUCC" pack "$EXAMPLE/pack.json"
assert_grep "missing option '-o IMAGE'" err
expect_exit 129 "$GPUCC" pack -o x.gpucc
expect_exit 129 "$GPUCC" pack -o x.gpucc --zstd=23 "$EXAMPLE/pack.json"
assert_grep 'level must be 1 to 22' err
expect_exit 129 "$GPUCC" pack -o x.gpucc --zstd=fast "$EXAMPLE/pack.json"
expect_exit 129 "$GPUCC" pack -o x.gpucc --zstd=+3 "$EXAMPLE/pack.json"
expect_exit 129 "$GPUCC" pack -o x.gpucc "--zstd= 3" "$EXAMPLE/pack.json"
# --zstd= (a script's empty $LEVEL) is no level, refused by the parser in
# every command; it was stored as the bare --zstd is, and took the default.
for cmd in "pack -o x.gpucc $EXAMPLE/pack.json" "compile $EXAMPLE/saxpy.nvptx.ll -t sm_90 -o x.gpucc" \
	"merge none.gpucc -o x.gpucc" "delta none.gpucc --since none.snap -o x.gpucc"; do
	expect_exit 129 $GPUCC $cmd --zstd=
	assert_grep "^gpucc [a-z]*: option '--zstd=' needs a LEVEL after '=' (or '--zstd' alone for its default) (see 'gpucc [a-z]* -h')$" err
	assert_no_file x.gpucc
done
expect_exit 0 "$GPUCC" pack -o x.gpucc --zstd "$EXAMPLE/pack.json"
# A bare --zstd is level 3 (GPUCC_ZSTD_DEFAULT_LEVEL) in every command, and
# every --zstd takes digits only, with one message.
expect_exit 0 "$GPUCC" pack -o x3.gpucc --zstd=3 "$EXAMPLE/pack.json"
expect_exit 0 "$GPUCC" pack -o x19.gpucc --zstd=19 "$EXAMPLE/pack.json"
cmp -s x.gpucc x3.gpucc || fail "pack: a bare --zstd is not level 3"
! cmp -s x3.gpucc x19.gpucc || fail "pack: levels 3 and 19 gave the same bytes (the check above proves nothing)"
expect_exit 0 "$GPUCC" merge x19.gpucc --zstd -o m.gpucc
expect_exit 0 "$GPUCC" merge x19.gpucc --zstd=3 -o m3.gpucc
cmp -s m.gpucc m3.gpucc || fail "merge: a bare --zstd is not level 3"
cmp -s m.gpucc x.gpucc || fail "merge and pack: a bare --zstd differs"
for cmd in "pack -o x.gpucc $EXAMPLE/pack.json" "merge x3.gpucc -o m.gpucc"; do
	expect_exit 129 $GPUCC $cmd --zstd=+3
	assert_grep "^gpucc [a-z]*: --zstd level must be 1 to 22, not '+3' (see 'gpucc [a-z]* -h')$" err
done
rm x.gpucc x3.gpucc x19.gpucc m.gpucc m3.gpucc
expect_exit 129 "$GPUCC" pack -o x.gpucc --target sm_90 "$EXAMPLE/pack.json"
assert_grep "'--target' cannot be combined with a spec file" err
expect_exit 129 "$GPUCC" pack -o x.gpucc --module "$EXAMPLE/saxpy.nvptx.ll" --ptx "$EXAMPLE/saxpy.sm_90.ptx"
assert_grep "missing option '--target'" err
expect_exit 129 "$GPUCC" pack -o x.gpucc --module "$EXAMPLE/saxpy.nvptx.ll" --target sm_90 \
	--option fast-math --ptx "$EXAMPLE/saxpy.sm_90.ptx"
assert_grep "'fast-math' is not NAME=VALUE" err
expect_exit 129 "$GPUCC" pack -o x.gpucc --module-sha256 "$(printf '%064d' 0)" --target sm_90 \
	--ptx "$EXAMPLE/saxpy.sm_90.ptx"
assert_grep "'--module-sha256' needs '--module-name'" err
expect_exit 129 "$GPUCC" pack -o x.gpucc --module a.ll --module b.ll --target sm_90
assert_no_file x.gpucc

# Missing inputs: exit 2, the file named.
expect_exit 2 "$GPUCC" list missing.gpucc
assert_one_line err
assert_grep "^gpucc list: cannot open 'missing.gpucc': No such file or directory$" err
expect_exit 2 "$GPUCC" verify missing.gpucc
expect_exit 2 "$GPUCC" pack -o x.gpucc missing.json
assert_grep "cannot open 'missing.json'" err
assert_no_file x.gpucc

# ---- pack: the one-entry form ----------------------------------------------------

expect_exit 0 "$GPUCC" pack -o one.gpucc --module "$EXAMPLE/saxpy.nvptx.ll" --target sm_90 \
	--kernel saxpy --option opt-level=2 --option fast-math=on --external vprintf \
	--ptx "$EXAMPLE/saxpy.sm_90.ptx"
[ ! -s out ] && [ ! -s err ] || fail "pack printed something"
expect_exit 0 "$GPUCC" verify one.gpucc
assert_grep '^one.gpucc: ok (1 entry, 1 payload, 1166 bytes)$' out
expect_exit 0 "$GPUCC" list one.gpucc
[ "$(wc -l < out)" -eq 2 ] || fail "list should print a header and one row"
assert_grep '^KEY  *TARGET  *PAYLOADS  *KERNELS$' out
# The target is stored canonically: sm_90 means PTX ISA 7.8, the oldest it allows.
assert_grep '^[0-9a-f]\{12\}  sm_90:ptx78  ptx:1166  saxpy$' out
key=$(awk 'NR == 2 { print $1 }' out)
expect_exit 0 "$GPUCC" show one.gpucc "$key"
assert_grep '^module: *saxpy.nvptx.ll$' out
assert_grep '^triple: *nvptx64-nvidia-cuda$' out
assert_grep '^  fast-math=on$' out
assert_grep '^  opt-level=2$' out
assert_grep '^  vprintf$' out
assert_grep '^  saxpy  registers ?, shared ?, scratch ?$' out
module_sha=$(sha256sum "$EXAMPLE/saxpy.nvptx.ll" | cut -d' ' -f1)
assert_grep "^module sha256: *$module_sha$" out

# Option order on the command line does not change the key; option values do.
expect_exit 0 "$GPUCC" pack -o two.gpucc --module "$EXAMPLE/saxpy.nvptx.ll" --target sm_90:ptx78 \
	--kernel saxpy --option fast-math=on --option opt-level=2 --external vprintf \
	--ptx "$EXAMPLE/saxpy.sm_90.ptx"
assert_same one.gpucc two.gpucc
expect_exit 0 "$GPUCC" pack -o three.gpucc --module "$EXAMPLE/saxpy.nvptx.ll" --target sm_90 \
	--kernel saxpy --option opt-level=3 --option fast-math=on --external vprintf \
	--ptx "$EXAMPLE/saxpy.sm_90.ptx"
expect_exit 0 "$GPUCC" list three.gpucc
assert_no_grep "^$key " out

# --module-sha256 with --module-name gives the same key as --module.
expect_exit 0 "$GPUCC" pack -o four.gpucc --module-sha256 "$module_sha" --module-name saxpy.nvptx.ll \
	--target sm_90 --kernel saxpy --option opt-level=2 --option fast-math=on --external vprintf \
	--ptx "$EXAMPLE/saxpy.sm_90.ptx"
assert_same one.gpucc four.gpucc

# A bad target is bad input (3), and leaves nothing behind.
expect_exit 3 "$GPUCC" pack -o x.gpucc --module "$EXAMPLE/saxpy.nvptx.ll" --target sm_99 \
	--ptx "$EXAMPLE/saxpy.sm_90.ptx"
assert_one_line err
assert_grep "sm_99" err
expect_exit 3 "$GPUCC" pack -o x.gpucc --module "$EXAMPLE/saxpy.nvptx.ll" --target sm_90
assert_grep 'no payload' err
expect_exit 2 "$GPUCC" pack -o x.gpucc --module "$EXAMPLE/saxpy.nvptx.ll" --target sm_90 \
	--ptx missing.ptx
assert_grep "'missing.ptx'" err
assert_no_file x.gpucc

# ---- pack: spec files ---------------------------------------------------------------

# Relative paths in a spec are relative to the spec, not to the current directory.
expect_exit 0 "$GPUCC" pack -o example.gpucc "$EXAMPLE/pack.json"
expect_exit 0 "$GPUCC" verify example.gpucc
assert_grep '^example.gpucc: ok (2 entries, 2 payloads, 5966 bytes)$' out

# zstd: another file, the same entries.
expect_exit 0 "$GPUCC" pack -o example.zst.gpucc --zstd "$EXAMPLE/pack.json"
expect_exit 0 "$GPUCC" verify example.zst.gpucc
"$GPUCC" list example.gpucc > list.plain || fail "list failed"
"$GPUCC" list example.zst.gpucc > list.zstd || fail "list failed"
assert_same list.plain list.zstd
expect_exit 0 "$GPUCC" stats example.zst.gpucc
assert_grep '^compressed: *zstd$' out
expect_exit 0 "$GPUCC" pack -o example.zst1.gpucc --zstd=1 "$EXAMPLE/pack.json"
expect_exit 0 "$GPUCC" verify example.zst1.gpucc

# An existing image is replaced only by a complete new one.
cp example.gpucc before.gpucc
expect_exit 3 "$GPUCC" pack -o example.gpucc "$TESTDATA/bad/pack-bad-target.json"
assert_same before.gpucc example.gpucc

# A cubin or hsaco that is an ELF must be one the GPU's runtime loads.
python3 - <<'ELF'
import struct
def elf(name, bits, endian, etype, machine):
    ident = b"\x7fELF" + bytes([bits, endian, 1]) + bytes(9)
    with open(name, "wb") as f:
        f.write(ident + struct.pack("<HH", etype, machine) + bytes(44))
elf("exec.cubin", 2, 1, 2, 190)
elf("rel.cubin", 2, 1, 1, 190)
elf("rel.hsaco", 2, 1, 1, 224)
elf("x86.so", 2, 1, 3, 62)
elf("elf32.cubin", 1, 1, 2, 190)
ELF
pack_one() { # PART FILE TARGET
	expect_exit "${4:-3}" "$GPUCC" pack -o one.gpucc --module "$EXAMPLE/saxpy.nvptx.ll" --target "$3" --kernel saxpy "--$1" "$2"
}
pack_one cubin exec.cubin sm_90 0
pack_one cubin "$EXAMPLE/saxpy.sm_90.ptx" sm_90 0 # not an ELF (a fatbin, say): taken as given
pack_one cubin rel.cubin sm_90
assert_one_line err
assert_grep "^gpucc pack: 'rel.cubin' is a relocatable cubin, which the CUDA driver does not load: give the executable one (ptxas without -c, or linked by nvlink)$" err
assert_no_file one.gpucc.tmp
pack_one cubin "$EXAMPLE/saxpy.gfx90a.hsaco" sm_90
assert_grep "saxpy.gfx90a.hsaco' is not a cubin: an ELF for machine 224 (AMDGPU: an hsaco)$" err
pack_one cubin elf32.cubin sm_90
assert_grep "'elf32.cubin' is not a cubin: a 32-bit little-endian ELF$" err
pack_one hsaco rel.hsaco gfx90a
assert_grep "'rel.hsaco' is a relocatable AMDGPU ELF, which HIP does not load: give the code object (linked by ld.lld -shared)$" err
pack_one hsaco exec.cubin gfx90a
assert_grep "'exec.cubin' is not an AMDGPU code object: an ELF for machine 190 (CUDA: a cubin)$" err
pack_one hsaco x86.so gfx90a
assert_grep "'x86.so' is not an AMDGPU code object: an ELF for machine 62$" err
rm exec.cubin rel.cubin rel.hsaco x86.so elf32.cubin

# Bad specs: exit code, one line naming the spec (and the entry) and the defect.
check_bad_spec() { # CODE SPEC PATTERN
	expect_exit "$1" "$GPUCC" pack -o bad.gpucc "$TESTDATA/bad/$2"
	assert_one_line err
	assert_grep "^gpucc pack: '[^']*$2'" err
	assert_grep "$3" err
	assert_no_file bad.gpucc
}
check_bad_spec 3 pack-invalid-json.json 'not valid JSON (line 3)'
check_bad_spec 3 pack-unknown-field.json "entries\[0\]: unknown entry field 'kernals'"
check_bad_spec 3 pack-bad-target.json "entries\[0\]: .*'sm_99'"
check_bad_spec 2 pack-missing-payload.json "entries\[0\]: cannot open '.*no-such-file.ptx'"
check_bad_spec 3 pack-wrong-part.json "entries\[0\]: a ptx payload does not fit target 'gfx90a'"
# A conflict names both entries of the spec (the image being written is not
# a source).
check_bad_spec 4 pack-conflict.json "entries\[1\]: conflict: key [0-9a-f]\{64\} is also entries\[0\]'s, with other contents$"

# Identical duplicates collapse silently.
cat > dup.json <<EOF
{"entries": [
  {"module_file": "$EXAMPLE/saxpy.nvptx.ll", "target": "sm_90", "kernels": ["saxpy"],
   "ptx": "$EXAMPLE/saxpy.sm_90.ptx"},
  {"module_file": "$EXAMPLE/saxpy.nvptx.ll", "target": "sm_90:ptx78", "kernels": ["saxpy"],
   "ptx": "$EXAMPLE/saxpy.sm_90.ptx"}
]}
EOF
expect_exit 0 "$GPUCC" pack -o dup.gpucc dup.json
expect_exit 0 "$GPUCC" verify dup.gpucc
assert_grep 'ok (1 entry, 1 payload, ' out

# An empty spec gives an empty, valid image.
echo '{"entries": []}' > empty.json
expect_exit 0 "$GPUCC" pack -o empty.gpucc empty.json
expect_exit 0 "$GPUCC" verify empty.gpucc
assert_grep '^empty.gpucc: ok (0 entries, 0 payloads, 0 bytes)$' out
expect_exit 0 "$GPUCC" list empty.gpucc
[ "$(wc -l < out)" -eq 1 ] || fail "list of an empty image should print the header only"
expect_exit 0 "$GPUCC" list --json empty.gpucc
assert_grep '^\[\]$' out

# Inputs that are not regular files are refused, not waited on or read
# forever: a FIFO (open would wait for a writer), /dev/zero, a directory;
# as the spec, the module, a device library and a payload.  (124: timed out.)
mkfifo fifo.json
check_not_regular() { # WHAT PATTERN CMD...
	local what=$1 pattern=$2; shift 2
	expect_exit 3 timeout 20 "$GPUCC" pack -o nr.gpucc "$@"
	assert_one_line err
	assert_grep "^gpucc pack: .*'$what' is $pattern, not a regular file$" err
	assert_no_file nr.gpucc
}
check_not_regular fifo.json 'a FIFO, socket or device' fifo.json
check_not_regular /dev/zero 'a FIFO, socket or device' /dev/zero
check_not_regular fifo.json 'a FIFO, socket or device' --module fifo.json --target sm_90 \
	--kernel saxpy --ptx "$EXAMPLE/saxpy.sm_90.ptx"
check_not_regular /dev/zero 'a FIFO, socket or device' --module "$EXAMPLE/saxpy.nvptx.ll" \
	--target sm_90 --kernel saxpy --device-lib /dev/zero --ptx "$EXAMPLE/saxpy.sm_90.ptx"
check_not_regular fifo.json 'a FIFO, socket or device' --module "$EXAMPLE/saxpy.nvptx.ll" \
	--target sm_90 --kernel saxpy --ptx fifo.json
check_not_regular /dev/zero 'a FIFO, socket or device' --module "$EXAMPLE/saxpy.nvptx.ll" \
	--target sm_90 --kernel saxpy --ptx /dev/zero
check_not_regular "$EXAMPLE" 'a directory' --module "$EXAMPLE/saxpy.nvptx.ll" \
	--target sm_90 --kernel saxpy --ptx "$EXAMPLE"
printf '%s\n' '{"entries": [{"module": "m.ll", "target": "sm_90", "kernels": ["k"],' \
	'"module_sha256": "0000000000000000000000000000000000000000000000000000000000000000",' \
	'"ptx": "fifo.json"}]}' > fifo-payload.json
check_not_regular './fifo.json' 'a FIFO, socket or device' fifo-payload.json
rm -f fifo.json fifo-payload.json

# Inputs are never modified: -o naming the spec, the module, a payload or a
# device library (or a hard link to one) is refused, and the file is intact.
cp "$EXAMPLE/saxpy.sm_90.ptx" in.ptx
cp "$EXAMPLE/saxpy.nvptx.ll" in.ll
ln in.ptx in-link.ptx
echo '{"entries": [{"module_file": "in.ll", "target": "sm_90", "kernels": ["saxpy"], "ptx": "in.ptx"}]}' > in.json
cp in.json in.json.orig
check_names_input() { # OUTPUT INPUT CMD...
	local output=$1 input=$2; shift 2
	expect_exit 129 "$GPUCC" pack -o "$output" "$@"
	assert_one_line err
	assert_grep "^gpucc pack: .*-o '$output' names the input '[^']*$input': write the image elsewhere (see 'gpucc pack -h')$" err
}
check_names_input in.json in.json in.json
assert_same in.json in.json.orig
for o in in.ptx in-link.ptx in.ll; do
	check_names_input "$o" 'in\.\(ptx\|ll\)' --module in.ll --target sm_90 --kernel saxpy --ptx in.ptx
	check_names_input "$o" 'in\.\(ptx\|ll\)' in.json
done
check_names_input in.ptx in.ptx --module "$EXAMPLE/saxpy.nvptx.ll" --target sm_90 \
	--kernel saxpy --device-lib in.ptx --ptx "$EXAMPLE/saxpy.sm_90.ptx"
assert_same in.ptx "$EXAMPLE/saxpy.sm_90.ptx"
assert_same in.ll "$EXAMPLE/saxpy.nvptx.ll"
rm -f in.ptx in-link.ptx in.ll in.json.orig

# A field given twice is refused, not resolved silently in favour of one
# (cJSON keeps both and a lookup finds the first); so is a string that
# \u0000 or a NUL byte would cut short.
spec_defect() { # SPEC PATTERN
	expect_exit 3 "$GPUCC" pack -o defect.gpucc "$1"
	assert_one_line err
	assert_grep "^gpucc pack: '$1': $2" err
	assert_no_file defect.gpucc
}
ll=$EXAMPLE/saxpy.nvptx.ll ptx=$EXAMPLE/saxpy.sm_90.ptx
printf '{"entries": [{"module_file": "%s", "target": "sm_90", "kernels": ["saxpy"],\n "ptx": "%s", "ptx": "%s"}]}\n' \
	"$ll" "$ptx" "$ll" > twice.json
spec_defect twice.json "entries\[0\]: entry field 'ptx' given twice$"
printf '{"entries": [{"module_file": "%s", "target": "sm_90", "target": "gfx90a",\n "kernels": ["saxpy"], "ptx": "%s"}]}\n' \
	"$ll" "$ptx" > twice.json
spec_defect twice.json "entries\[0\]: entry field 'target' given twice$"
printf '{"entries": [{"module_file": "%s", "target": "sm_90",\n "kernels": [{"name": "saxpy", "name": "other"}], "ptx": "%s"}]}\n' \
	"$ll" "$ptx" > twice.json
spec_defect twice.json "entries\[0\]: kernel field 'name' given twice$"
echo '{"entries": [], "entries": [{"target": "sm_90"}]}' > twice.json
spec_defect twice.json "top-level field 'entries' given twice$"
printf '{"entries": [{"module_file": "%s", "target": "sm_90",\n "kernels": ["sax\\u0000py"], "ptx": "%s"}]}\n' \
	"$ll" "$ptx" > nul.json
assert_grep 'sax\\u0000py' nul.json
spec_defect nul.json 'a string holds \\u0000 (line 2)$'
printf '{"entries": []}\n\0{"junk"' > nul.json
spec_defect nul.json 'holds a NUL byte (line 2)$'
# An escaped backslash before u0000 is no NUL.
printf '%s\n' '{"entries": [], "comment": "C:\\u0000"}' > not-nul.json
expect_exit 0 "$GPUCC" pack -o not-nul.gpucc not-nul.json
rm -f twice.json nul.json not-nul.json not-nul.gpucc

# SOURCE_DATE_EPOCH: decimal digits up to the end of year 9999 (what tar
# readers accept); anything else is refused rather than read as something
# else (an overflow was taken as INT64_MAX, which GNU tar cannot list).
for v in -1 ' 12' +5 12abc 1e9 99999999999999999999999 253402300800; do
	SOURCE_DATE_EPOCH=$v expect_exit 3 "$GPUCC" pack -o epoch.gpucc "$EXAMPLE/pack.json"
	assert_one_line err
	assert_grep "^gpucc pack: SOURCE_DATE_EPOCH='$v' is not a non-negative integer of at most 253402300799$" err
	assert_no_file epoch.gpucc
done
SOURCE_DATE_EPOCH=253402300799 expect_exit 0 "$GPUCC" pack -o epoch.gpucc "$EXAMPLE/pack.json"
expect_exit 0 "$GPUCC" verify epoch.gpucc
# The command reads it when it starts, for every command (libgpucc reads
# no environment): a malformed one fails one that writes no image too,
# before it does anything, and gpucc's own --version.
SOURCE_DATE_EPOCH=12abc expect_exit 3 "$GPUCC" list epoch.gpucc
assert_one_line err
assert_grep "^gpucc list: SOURCE_DATE_EPOCH='12abc' is not a non-negative integer of at most 253402300799$" err
SOURCE_DATE_EPOCH=x expect_exit 3 "$GPUCC" --version
assert_one_line err
assert_grep "^gpucc: SOURCE_DATE_EPOCH='x' is not a non-negative integer" err
if tar --version 2>/dev/null | grep -q GNU; then
	TZ=UTC tar -tvf epoch.gpucc > out 2>err || fail "tar cannot list an image dated 9999"
	assert_grep ' 9999-12-31 23:59 manifest.json$' out
fi
rm -f epoch.gpucc

# ---- output that cannot be written ----------------------------------------------

# Standard output on a full device: every command that prints, help and
# --version included, fails with one line and exit 1 (a script piping
# `gpucc list` into a file on a full disk must not see success), that says
# why (it said only "cannot write to standard output").
if [ -w /dev/full ]; then
	expect_exit 0 "$GPUCC" pack -o full.gpucc "$EXAMPLE/pack.json"
	expect_exit 0 "$GPUCC" snapshot full.gpucc -o full.snap
	key=$("$GPUCC" list full.gpucc | awk 'NR == 2 { print $1 }')
	part=$("$GPUCC" list full.gpucc | awk 'NR == 2 { sub(/:.*/, "", $3); print $3 }')
	while IFS= read -r line; do
		# shellcheck disable=SC2086
		"$GPUCC" $line >/dev/full 2>err
		rc=$?
		[ "$rc" = 1 ] || { cat err >&2; fail "'gpucc $line >/dev/full' exited $rc, expected 1"; }
		assert_one_line err
		assert_grep "^gpucc[a-z ]*: cannot write .*: No space left on device$" err
	done <<-LINES
		help
		--version
		help cache
		cache -h
		list -h
		list full.gpucc
		list --json full.gpucc
		show full.gpucc $key
		cat full.gpucc $key --part $part
		stats full.gpucc
		verify full.gpucc
		verify --json full.gpucc
		stats --json full.gpucc
		extract --json full.gpucc -C full.out
		snapshot --show full.snap
	LINES
	rm -rf full.out
	rm -f full.gpucc full.snap
else
	echo "skipping the /dev/full checks: /dev/full is not writable here"
fi

# ---- an option that takes one value, given twice with two values ----------
# A usage error (129) naming both, before anything is read or made: these
# took the last one silently (a script appending -o b to one that said -o a
# wrote b).  One case per kind of option: an output (-o, --header), a
# directory (--cache, --into), another path (--since, --keys, --image), a
# value (--max-size, --older-than, -C, --symbol, --code-object).
while read -r spelt cmd; do
	expect_exit 129 $GPUCC $cmd
	assert_one_line err
	assert_grep "^gpucc [a-z ]*: $(printf %s "$spelt" | tr _ ' ') disagree: give one (see 'gpucc [a-z ]* -h')$" err
	[ ! -s out ] || fail "'$cmd' printed on stdout"
done <<-'LINES'
	--output=a.gpucc_and_--output=b.gpucc merge none.gpucc -o a.gpucc -o b.gpucc
	--header=a.h_and_--header=b.h embed none.gpucc -o x.o --symbol x --header a.h --header=b.h
	--cache=c1_and_--cache=c2 cache import none.gpucc --cache c1 --cache c2
	--into=c1_and_--into=c2 merge none.gpucc --into c1 --into=c2
	--since=a.snap_and_--since=b.snap delta none.gpucc --since a.snap --since b.snap -o x.gpucc
	--keys=a_and_--keys=b snapshot --keys a --keys b -o x.snap
	--image=a.gpucc_and_--image=b.gpucc devices --image a.gpucc --image b.gpucc
	--max-size=1G_and_--max-size=2G cache gc --cache c1 --max-size 1G --max-size 2G
	--older-than=30d_and_--older-than=1d cache prune --cache c1 --older-than 30d --older-than 1d
	--directory=d1_and_--directory=d2 extract none.gpucc -C d1 -C d2
	--symbol=a_and_--symbol=b embed none.gpucc -o x.o --symbol a --symbol b
	--code-object=4_and_--code-object=5 compile none.ll -t gfx942 --code-object 4 --code-object 5
LINES
for f in a.gpucc b.gpucc x.gpucc x.o a.h b.h c1 c2 x.snap d1 d2; do
	assert_no_file $f
done
# The same value twice is that value.
expect_exit 2 "$GPUCC" merge none.gpucc -o a.gpucc -o a.gpucc
assert_grep "cannot open 'none.gpucc'" err

# No temporary file survives any of the above.
leftovers=$(ls -A | grep -v -e '\.gpucc$' -e '\.json$' -e '^out$' -e '^err$' -e '^list\.' || true)
[ -z "$leftovers" ] || fail "files left behind: $leftovers"
echo "ok"
