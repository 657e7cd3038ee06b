# cmd/tests/compile_sources_keys.sh -- direct mode keys everything clang
# reads that can change its output (docs/compile.md, "Hits without clang:
# direct mode"): each case compiles one OpenCL C source for an AMD target
# twice with something clang reads changed in between, and holds the
# second run's image against a --no-cache compile of the same inputs: a
# hit must never serve the first run's code.  The classes: the environment
# clang's driver reads (CCC_OVERRIDE_OPTIONS, CPATH...); files that
# arguments name and -MD does not list (response files, --config files);
# the time macros (__DATE__, __TIME__, __TIMESTAMP__, SOURCE_DATE_EPOCH);
# paths through symbolic links, given to clang as they were written; and
# the include search's misses (a header that appears earlier on the path,
# a __has_include whose answer changed).
. "$SRCROOT/cmd/tests/lib.sh"

command -v clang-19 >/dev/null || skip "clang-19 is not installed: sources need it (scripts/setup installs it)"
command -v ld.lld-19 >/dev/null || skip "ld.lld-19 is not installed (lld-19)"
command -v python3 >/dev/null || skip "python3 reads --json output"
[ -f /usr/lib/clc/amdgcn--amdhsa.bc ] || skip "libclc (libclc-19) is not installed: the OpenCL C sources need it"
export TMPDIR=$TEST_DIR/tmp
mkdir -p "$TMPDIR"

# clang-19 behind a wrapper that counts its compiles (--version aside).
cat >clang-counting <<EOF
#!/bin/sh
case "\$1" in --version) ;; *) echo run >>"$TEST_DIR/clang-runs" ;; esac
exec clang-19 "\$@"
EOF
chmod +x clang-counting
: >clang-runs
runs() { wc -l <"$TEST_DIR/clang-runs"; }

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

echo ok
