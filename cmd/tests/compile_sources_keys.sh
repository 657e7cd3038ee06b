# cmd/tests/compile_sources_keys.sh -- direct mode keys everything clang
# reads that can change its output (docs/compile.md, "Hits without clang:
# direct mode"): each case compiles one source (OpenCL C, HIP for the last)
# for an AMD target twice with something clang reads changed in between,
# and holds the second run's image against a --no-cache compile of the
# same inputs: a hit must never serve the first run's code.  The classes:
# the environment clang's driver reads (CCC_OVERRIDE_OPTIONS, CPATH...);
# files that arguments name and -MD does not list (response files,
# --config files); the time macros (__DATE__, __TIME__, __TIMESTAMP__;
# SOURCE_DATE_EPOCH, checked by the units that use them only); paths
# through symbolic links, given to clang as they were written; the include
# search's misses (a header that appears earlier on the path, a
# __has_include whose answer changed); and the HIP installation clang's
# driver finds by itself.  The kernels call no OpenCL builtin: libclc is
# not needed.
. "$SRCROOT/cmd/tests/lib.sh"

command -v clang-19 >/dev/null || skip "clang-19 is not installed: sources need it (scripts/setup installs it)"
command -v ld.lld-19 >/dev/null || skip "ld.lld-19 is not installed (lld-19)"
command -v python3 >/dev/null || skip "python3 reads --json output"
export TMPDIR=$TEST_DIR/tmp
mkdir -p "$TMPDIR"

# clang-19 behind a wrapper that counts its compiles (lib.sh).
counting_clang

# cached NAME ARGS...: compile into NAME.gpucc through the cache, --json in
# NAME.json; uncached NAME ARGS...: the same with --no-cache.
cached() {
	local name=$1; shift
	expect_exit 0 "$GPUCC" compile -t gfx90a --cache "$TEST_DIR/cache" \
		--clang "$TEST_DIR/clang-counting" -o "$name.gpucc" --json "$@"
	cp out "$name.json"
}
uncached() {
	local name=$1; shift
	expect_exit 0 "$GPUCC" compile -t gfx90a --no-cache -o "$name.gpucc" "$@"
}
source_note() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["results"][0]["source"])' "$1.json"; }
# fresh_as NAME REFERENCE: the run NAME was no hit, and its image is what a
# compile without the cache writes.
fresh_as() {
	case $(source_note "$1") in hit*) fail "$1: a stale hit: $(source_note "$1")" ;; esac
	assert_same "$1.gpucc" "$2.gpucc"
}
# hits NAME: the run NAME hit its record.
hits() {
	case $(source_note "$1") in hit*) ;; *) fail "$1: expected a hit, got: $(source_note "$1")" ;; esac
}

# ---- the environment clang's driver reads ----------------------------------------
mkdir env && cd env || fail "no directory env"
cat >v.cl <<'EOF'
#ifndef VALUE
#define VALUE 1
#endif
__kernel void k(__global int *x) { x[0] = VALUE; }
EOF
settle
CCC_OVERRIDE_OPTIONS='^-DVALUE=7' cached seven v.cl
CCC_OVERRIDE_OPTIONS='^-DVALUE=7' cached seven-again v.cl
hits seven-again
CCC_OVERRIDE_OPTIONS='^-DVALUE=8' cached eight v.cl
CCC_OVERRIDE_OPTIONS='^-DVALUE=8' uncached eight-ref v.cl
fresh_as eight eight-ref
cmp -s seven.gpucc eight.gpucc && fail "CCC_OVERRIDE_OPTIONS did not reach clang"
cached none v.cl
uncached none-ref v.cl
fresh_as none none-ref
# The include paths of the environment, and OBJC_INCLUDE_PATH's kin: a
# directory named there holds the header.
mkdir -p one two
echo '#define VALUE 21' >one/value.h
echo '#define VALUE 22' >two/value.h
printf '#include <value.h>\n__kernel void k(__global int *x) { x[0] = VALUE; }\n' >inc.cl
settle
for var in CPATH C_INCLUDE_PATH; do
	env "$var=$PWD/one" "$GPUCC" compile -t gfx90a --cache "$TEST_DIR/cache" -o "$var-one.gpucc" inc.cl ||
		fail "$var=one did not compile"
	env "$var=$PWD/two" "$GPUCC" compile -t gfx90a --cache "$TEST_DIR/cache" -o "$var-two.gpucc" --json inc.cl >"$var-two.json" ||
		fail "$var=two did not compile"
	env "$var=$PWD/two" "$GPUCC" compile -t gfx90a --no-cache -o "$var-two-ref.gpucc" inc.cl ||
		fail "$var=two did not compile without the cache"
	fresh_as "$var-two" "$var-two-ref"
done
cd .. || fail "cannot leave env"

# ---- files that arguments name, which no -MD list holds ---------------------------
mkdir args && cd args || fail "no directory args"
printf '__kernel void k(__global int *x) { x[0] = VALUE; }\n' >v.cl
# form FILE ARGS...: a file of arguments, edited to another of its size.
for form in rsp config-eq config-sep nested; do
	case $form in
	rsp) file=flags.rsp; set -- --clang-arg=@flags.rsp ;;
	config-eq) file=x.cfg; set -- --clang-arg=--config=./x.cfg ;;
	config-sep) file=x.cfg; set -- --clang-arg=--config --clang-arg=./x.cfg ;;
	nested) file=inner.rsp; echo '@inner.rsp' >outer.rsp; set -- --clang-arg=@outer.rsp ;;
	esac
	echo '-DVALUE=7' >"$file"
	settle
	cached "$form-7" v.cl "$@"
	cached "$form-7-again" v.cl "$@"
	hits "$form-7-again"
	echo '-DVALUE=8' >"$file"
	settle
	cached "$form-8" v.cl "$@"
	uncached "$form-8-ref" v.cl "$@"
	fresh_as "$form-8" "$form-8-ref"
	cmp -s "$form-7.gpucc" "$form-8.gpucc" && fail "$form: $file did not reach clang"
	rm -rf "$TEST_DIR/cache"
done
# A file an option's value names: bitcode clang links in (-mlink-builtin-bitcode).
printf 'int value(void) { return 7; }\n' >lib7.cl
printf 'int value(void) { return 8; }\n' >lib8.cl
for v in 7 8; do
	clang-19 -x cl -nogpulib --target=amdgcn-amd-amdhsa -mcpu=gfx90a -c -emit-llvm -o "lib$v.bc" "lib$v.cl" ||
		fail "clang-19 cannot make lib$v.bc"
done
printf 'int value(void);\n__kernel void k(__global int *x) { x[0] = value(); }\n' >uses.cl
link() { echo "--clang-arg=-Xclang --clang-arg=-mlink-builtin-bitcode --clang-arg=-Xclang --clang-arg=lib.bc"; }
cp lib7.bc lib.bc
settle
# shellcheck disable=SC2046
cached linked-7 uses.cl $(link)
cp lib8.bc lib.bc
settle
# shellcheck disable=SC2046
cached linked-8 uses.cl $(link)
# shellcheck disable=SC2046
uncached linked-8-ref uses.cl $(link)
fresh_as linked-8 linked-8-ref
cmp -s linked-7.gpucc linked-8.gpucc && fail "the bitcode -mlink-builtin-bitcode names did not reach clang"
cd .. || fail "cannot leave args"

# ---- the time macros -----------------------------------------------------------------
mkdir time && cd time || fail "no directory time"
printf '__kernel void k(__global char *x) { __constant char *t = __TIME__; for (int i = 0; i < 8; i++) x[i] = t[i]; }\n' >t.cl
printf '#define STAMP __DATE__\n' >stamp.h
printf '#include "stamp.h"\n__kernel void k(__global char *x) { __constant char *t = STAMP; for (int i = 0; i < 11; i++) x[i] = t[i]; }\n' >d.cl
settle
# SOURCE_DATE_EPOCH fixes what they say: a unit using them checks it.
SOURCE_DATE_EPOCH=86400 cached epoch-1 t.cl
SOURCE_DATE_EPOCH=86400 cached epoch-1-again t.cl
hits epoch-1-again
SOURCE_DATE_EPOCH=90000 cached epoch-2 t.cl
SOURCE_DATE_EPOCH=90000 uncached epoch-2-ref t.cl
fresh_as epoch-2 epoch-2-ref
# shellcheck disable=SC2016 # the note names the variable, unexpanded
[ "$(source_note epoch-2)" = 'miss: $SOURCE_DATE_EPOCH changed' ] ||
	fail "epoch-2: expected the miss to name SOURCE_DATE_EPOCH: $(source_note epoch-2)"
cmp -s epoch-1.gpucc epoch-2.gpucc && fail "SOURCE_DATE_EPOCH did not reach clang"
# A unit that does not use them hits whatever it is (a build may set it
# anew for each commit).
printf '__kernel void k(__global int *x) { x[0] = 1; }\n' >plain.cl
settle
SOURCE_DATE_EPOCH=86400 cached plain-1 plain.cl
SOURCE_DATE_EPOCH=90000 cached plain-2 plain.cl
hits plain-2
# Without it they are the clock's: no record, clang runs every time (the
# header's __DATE__ too).
for src in t d; do
	(unset SOURCE_DATE_EPOCH; cached "$src-clock-1" "$src.cl")
	: >"$TEST_DIR/clang-runs"
	(unset SOURCE_DATE_EPOCH; cached "$src-clock-2" "$src.cl")
	case $(source_note "$src-clock-1") in *"uses __"*"SOURCE_DATE_EPOCH is not set"*) ;;
	*) fail "$src.cl: the time macros were recorded: $(source_note "$src-clock-1")" ;; esac
	case $(source_note "$src-clock-2") in hit*) fail "$src.cl: a hit with the clock's time macros" ;; esac
	[ "$(runs)" -eq 1 ] || fail "$src.cl: clang ran $(runs) times for the clock's time macros, expected 1"
done
cd .. || fail "cannot leave time"

# ---- paths through links are given to clang as written --------------------------------
mkdir -p links/real/deep links/inc links/build && cd links/build || fail "no directory links"
ln -s real/deep ../link
echo '#define VALUE 1' >../inc/value.h       # DIR/inc
mkdir -p ../real/inc
echo '#define VALUE 2' >../real/inc/value.h  # DIR/link/../inc
printf '#include <value.h>\n__kernel void k(__global int *x) { x[0] = VALUE; }\n' >../inc.cl
printf '__kernel void k(__global int *x) { x[0] = 1; }\n' >../s.cl
printf '__kernel void k(__global int *x) { x[0] = 2; }\n' >../real/s.cl
dir=$(cd .. && pwd -P)
settle
# -I DIR/link/../inc is DIR/real/inc, not DIR/inc; so with the cache and
# without, whichever is asked first.
uncached inc-ref "$dir/inc.cl" -I "$dir/link/../inc"
cached inc "$dir/inc.cl" -I "$dir/link/../inc"
fresh_as inc inc-ref
uncached inc-other "$dir/inc.cl" -I "$dir/inc"
cmp -s inc.gpucc inc-other.gpucc && fail "-I DIR/link/../inc reached clang as DIR/inc"
# The source DIR/link/../s.cl is DIR/real/s.cl.
uncached s-ref "$dir/link/../s.cl"
cached s "$dir/link/../s.cl"
fresh_as s s-ref
uncached s-other "$dir/s.cl"
cmp -s s.gpucc s-other.gpucc && fail "the source DIR/link/../s.cl reached clang as DIR/s.cl"
cd ../.. || fail "cannot leave links"

# ---- the include search's misses --------------------------------------------------------
mkdir -p search/early search/late && cd search || fail "no directory search"
echo '#define VALUE 1' >late/value.h
printf '#include <value.h>\n__kernel void k(__global int *x) { x[0] = VALUE; }\n' >inc.cl
printf '#if __has_include(<extra.h>)\n#define VALUE 2\n#else\n#define VALUE 1\n#endif\n__kernel void k(__global int *x) { x[0] = VALUE; }\n' >has.cl
settle
cached late inc.cl -I early -I late
cached late-again inc.cl -I early -I late
hits late-again
# A header that appears in a directory searched before the one it was found in.
echo '#define VALUE 2' >early/value.h
settle
cached early inc.cl -I early -I late
uncached early-ref inc.cl -I early -I late
fresh_as early early-ref
cmp -s late.gpucc early.gpucc && fail "the earlier header did not reach clang"
# ... and in a directory named that did not exist.
cached gone-1 inc.cl -I absent -I late
mkdir absent && echo '#define VALUE 3' >absent/value.h
settle
cached gone-2 inc.cl -I absent -I late
uncached gone-2-ref inc.cl -I absent -I late
fresh_as gone-2 gone-2-ref
# The record keeps, for the places found empty, the deepest directory
# above each that exists, with its stamp (identity, mtime, ctime): a
# lookup stats that directory instead of each place.  record_with PLACE:
# the record that lists PLACE as found empty.
record_with() { grep -l "^0\{64\} $1\$" "$TEST_DIR"/cache/v1/sources/*/*.record | head -1; }
# ... two levels down in a directory that did not exist, under one that
# did: making it moves that one's stamp.
mkdir nest
settle
cached nest-1 inc.cl -I nest/deep/er -I late
grep -q '^dir [0-9]* [0-9]* [0-9]* [0-9]* nest$' "$(record_with nest/deep/er)" ||
	fail "the record does not keep the directory nest for nest/deep/er: $(cat "$(record_with nest/deep/er)")"
cached nest-1-again inc.cl -I nest/deep/er -I late
hits nest-1-again
mkdir -p nest/deep/er && echo '#define VALUE 8' >nest/deep/er/value.h
settle
cached nest-2 inc.cl -I nest/deep/er -I late
uncached nest-2-ref inc.cl -I nest/deep/er -I late
fresh_as nest-2 nest-2-ref
cmp -s late.gpucc nest-2.gpucc && fail "the header in the new nested directory did not reach clang"
# ... there, with the directory's mtime put back as it was: its ctime
# still moved, and the lookup looks at each place again.
mkdir hold
settle
cached hold-1 inc.cl -I hold/sub -I late
grep -q '^dir [0-9]* [0-9]* [0-9]* [0-9]* hold$' "$(record_with hold/sub)" ||
	fail "the record does not keep the directory hold for hold/sub"
touch -r hold hold.stamp
mkdir hold/sub && echo '#define VALUE 9' >hold/sub/value.h
touch -r hold.stamp hold
settle
cached hold-2 inc.cl -I hold/sub -I late
uncached hold-2-ref inc.cl -I hold/sub -I late
fresh_as hold-2 hold-2-ref
cmp -s late.gpucc hold-2.gpucc && fail "the header in hold/sub did not reach clang"
# A directory whose stamp moved for a file no search looks for: each of
# its places is looked at again, all still empty, and the lookup hits,
# with what a compile writes; a header made there after that is a miss.
mkdir other
settle
cached other-1 inc.cl -I other/inc -I late
echo '#define UNRELATED 1' >other/unrelated.h
touch other
settle
cached other-2 inc.cl -I other/inc -I late
hits other-2
uncached other-2-ref inc.cl -I other/inc -I late
assert_same other-2.gpucc other-2-ref.gpucc
mkdir other/inc && echo '#define VALUE 10' >other/inc/value.h
settle
cached other-3 inc.cl -I other/inc -I late
uncached other-3-ref inc.cl -I other/inc -I late
fresh_as other-3 other-3-ref
# A directory changed as clang ran proves nothing (a change within the
# same tick of the clock would leave its mtime as it was): its places are
# listed alone, before every directory's line, and each is looked at.  A
# loop makes and removes a file in it for as long as the compile runs.  (A
# clang wrapper making one file failed in whole runs on an idle machine:
# the compile's start was read from the precise clock, ahead of the coarse
# one that stamps files; it is read from the file clock now.)
mkdir tick
( while :; do : >tick/churn; rm -f tick/churn; done ) &
churn=$!
cached tick-1 inc.cl -I tick/sub -I late
kill "$churn"
wait "$churn" 2>/dev/null
rm -f tick/churn
settle
awk '/^dir /{exit} / tick\/sub$/{found=1} END{exit !found}' "$(record_with tick/sub)" ||
	fail "tick/sub is not listed alone: $(cat "$(record_with tick/sub)")"
grep -q '^dir .* tick$' "$(record_with tick/sub)" && fail "the record keeps the directory tick, changed as clang ran"
cached tick-2 inc.cl -I tick/sub -I late
hits tick-2
mkdir tick/sub && echo '#define VALUE 11' >tick/sub/value.h
settle
cached tick-3 inc.cl -I tick/sub -I late
uncached tick-3-ref inc.cl -I tick/sub -I late
fresh_as tick-3 tick-3-ref
# ... and beside the header that includes it with quotes, in a directory
# no -I names (#include "..." tries the includer's directory first).
mkdir -p inc/sub
echo '#include "b.h"' >inc/sub/a.h
echo '#define VALUE 4' >late/b.h
printf '#include <sub/a.h>\n__kernel void k(__global int *x) { x[0] = VALUE; }\n' >quoted.cl
settle
cached quoted-late quoted.cl -I inc -I late
echo '#define VALUE 5' >inc/sub/b.h
settle
cached quoted-beside quoted.cl -I inc -I late
uncached quoted-beside-ref quoted.cl -I inc -I late
fresh_as quoted-beside quoted-beside-ref
cmp -s quoted-late.gpucc quoted-beside.gpucc && fail "the header beside its includer did not reach clang"
# ... and in the working directory, which -include tries first, for a
# source elsewhere.
mkdir -p src
printf '__kernel void k(__global int *x) { x[0] = PRE; }\n' >src/pre.cl
echo '#define PRE 6' >late/pre.h
settle
cached pre-late src/pre.cl -include pre.h -I late
echo '#define PRE 7' >pre.h
settle
cached pre-here src/pre.cl -include pre.h -I late
uncached pre-here-ref src/pre.cl -include pre.h -I late
fresh_as pre-here pre-here-ref
cmp -s pre-late.gpucc pre-here.gpucc && fail "the -include header in the working directory did not reach clang"
# A __has_include whose answer changed, either way.
cached has-no has.cl -I late
echo '' >late/extra.h
settle
cached has-yes has.cl -I late
uncached has-yes-ref has.cl -I late
fresh_as has-yes has-yes-ref
cmp -s has-no.gpucc has-yes.gpucc && fail "the answer of __has_include did not reach clang"
# Gone again: the first result's answer holds again, and it hits.
rm late/extra.h
cached has-no-again has.cl -I late
hits has-no-again
assert_same has-no-again.gpucc has-no.gpucc
cd .. || fail "cannot leave search"

# ---- the HIP installation clang's driver finds by itself ------------------------------
# A copy of clang-19 in DIR/llvm/bin looks for HIP in DIR first (then in
# the system's places): a HIP installation made there later (its version
# file, its include directory) is one clang takes, before the -idirafter
# directory that held the header.
if [ -f /usr/lib/x86_64-linux-gnu/amdgcn/bitcode/ocml.bc ] && [ -x /usr/lib/llvm-19/bin/clang ] &&
	[ -f /usr/share/hip/version ]; then
	mkdir -p hip/llvm/bin hip/late hip/w && cd hip/w || fail "no directory hip"
	cp /usr/lib/llvm-19/bin/clang ../llvm/bin/clang
	ln -s /usr/lib/llvm-19/lib ../llvm/lib
	echo '#define M 1' >../late/marker.h
	printf '#include <marker.h>\nextern "C" __global__ void k(int *x) { x[0] = M; }\n' >m.hip
	hip_run() { # NAME CACHE-ARGS...
		local name=$1; shift
		expect_exit 0 "$GPUCC" compile -t gfx90a --clang ../llvm/bin/clang --clang-arg=-idirafter \
			--clang-arg=../late -o "$name.gpucc" --json m.hip "$@"
		cp out "$name.json"
	}
	settle
	hip_run before --cache "$TEST_DIR/cache"
	hip_run before-again --cache "$TEST_DIR/cache"
	hits before-again
	mkdir -p ../share/hip ../include
	cp /usr/share/hip/version ../share/hip/version
	echo '#define M 2' >../include/marker.h
	settle
	hip_run after --cache "$TEST_DIR/cache"
	hip_run after-ref --no-cache
	fresh_as after after-ref
	cmp -s before.gpucc after.gpucc && fail "the HIP installation made beside clang did not reach it"
	cd ../.. || fail "cannot leave hip"
else
	skip_block "the HIP installation case (no ROCm device libraries or HIP 5.2 version file)"
fi

echo ok
