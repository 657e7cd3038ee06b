# cmd/tests/compile_cli.sh -- `gpucc compile` as a build script drives it:
# a FIFO module is refused at once (no wait for a writer); one file named
# twice (another path, a link) is one module and a target spelt twice one
# target; -o may not name a module and its directory is checked before
# anything compiles; --zstd needs -o; an existing image is replaced, not
# merged into; --json and --explain (both on stdout) are refused together;
# control characters in a module's name are escaped in text
# output (one message a line, LLVM's own messages and the refusal of a
# module that is no regular file included) and the --json output stays
# JSON.  A module name too long to open is a bad input (3), said on one line.
# Not on a terminal, a line per job on stdout as it finishes (compiled in
# N s, hit, failed), none with --json or --explain.
. "$SRCROOT/cmd/tests/lib.sh"

K=$TESTDATA/kernels
export LC_ALL=C # module names below are not UTF-8: grep matches bytes
command -v python3 >/dev/null || fail "python3 is needed to read --json output"
cp "$K/nvptx/vector_add.ll" va.ll
cp "$K/nvptx/multi.ll" multi.ll
ln -s va.ll link.ll

# jobs JSON: "module target status" per result
jobs() {
	python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
assert d["jobs"] == len(d["results"]), d
for r in d["results"]:
    print(r["module"], r["target"], r["status"])
PY
}

# ---- modules that are not regular files ----------------------------------------------
mkfifo fifo.ll
expect_exit 3 timeout 20 "$GPUCC" compile --no-cache --no-cubin fifo.ll -t sm_90
assert_grep "module 'fifo.ll' is a FIFO, socket or device, not a regular file" err
mkdir dir.ll
expect_exit 3 "$GPUCC" compile --no-cache --no-cubin dir.ll -t sm_90
assert_grep "module 'dir.ll' is a directory, not a regular file" err
# A name too long to open is the argument's defect (3, as a directory is),
# not a failure of the machine (1); the message stays one line and still
# says why, however long the name.
long=$(printf '%05000d' 0).ll
expect_exit 3 "$GPUCC" compile --no-cache --no-cubin "$long" -t sm_90
assert_one_line err
assert_grep "^gpucc compile: cannot open module '0*\.\.\.': File name too long (the name has 5003 bytes)$" err
expect_exit 3 "$GPUCC" compile --no-cache --no-cubin "./$(printf '%0300d' 0).ll" -t sm_90
assert_grep "cannot open module '\./0*\.\.\.': File name too long (the name has 305 bytes)$" err

# ---- one file, one target, named twice -------------------------------------------------
expect_exit 0 "$GPUCC" compile --no-cache --no-cubin --json va.ll ./va.ll link.ll "$PWD/va.ll" \
	-t sm_90 -t sm_90:ptx78
[ "$(jobs out)" = "va.ll sm_90:ptx78 compiled" ] || { jobs out >&2; fail "one module and target named twice gave several jobs"; }

# ---- -o ---------------------------------------------------------------------------------
cp va.ll before.ll
expect_exit 129 "$GPUCC" compile --no-cache --no-cubin va.ll multi.ll -t sm_90 -o multi.ll
assert_grep "output 'multi.ll' is the module 'multi.ll'" err
assert_same multi.ll "$K/nvptx/multi.ll"
expect_exit 129 "$GPUCC" compile --no-cache --no-cubin va.ll -t sm_90 -o link.ll
[ -L link.ll ] || fail "-o naming a link to a module replaced the link"
assert_same va.ll before.ll
expect_exit 3 "$GPUCC" compile --no-cache --no-cubin va.ll -t sm_90 -o dir.ll
# A missing directory is found before anything compiles: nothing is cached.
mkdir cache
expect_exit 2 "$GPUCC" compile --cache cache --no-cubin va.ll multi.ll -t sm_90 -o missing/x.gpucc
assert_grep "cannot create 'missing/x.gpucc': its directory does not exist" err
expect_exit 0 "$GPUCC" cache verify --cache cache
assert_grep "(0 entries" out
expect_exit 2 "$GPUCC" compile --no-cache --no-cubin va.ll -t sm_90 -o va.ll/x.gpucc
assert_one_line err
assert_grep "^gpucc compile: cannot create 'va.ll/x.gpucc': 'va.ll' is not a directory$" err
expect_exit 129 "$GPUCC" compile --no-cache --no-cubin va.ll -t sm_90 -o /proc/x.gpucc
assert_grep "^gpucc compile: -o '/proc/x.gpucc' is in /proc, where only the kernel makes files" err
mkdir "$(printf 'odd\ndir')"
expect_exit 3 "$GPUCC" compile --no-cache --no-cubin va.ll -t sm_90 -o "$(printf 'odd\ndir')"
assert_one_line err
assert_grep "^gpucc compile: 'odd\\\\ndir' is a directory, not a file name: give the output's file name" err
expect_exit 2 "$GPUCC" compile --no-cache --no-cubin va.ll -t sm_90 -o "$(printf 'odd\ndir')/no/x"
assert_one_line err
assert_grep "^gpucc compile: cannot create 'odd\\\\ndir/no/x': its directory does not exist$" err
ls -A | grep -q '\.tmp\.' && fail "the directory check left a file behind"
# --zstd compresses the image: without -o it is refused, not ignored.
expect_exit 129 "$GPUCC" compile --no-cache --no-cubin va.ll -t sm_90 --zstd
expect_exit 129 "$GPUCC" compile --no-cache --no-cubin va.ll -t sm_90 --zstd=3
# --json's output is JSON only: --explain's text cannot join it on stdout.
expect_exit 129 "$GPUCC" compile --no-cache --no-cubin va.ll -t sm_90 --json --explain
[ -s out ] && fail "--json --explain printed on stdout"
# An existing image is replaced whole.
expect_exit 0 "$GPUCC" compile --no-cache --no-cubin va.ll -t sm_90 -o img.gpucc
expect_exit 0 "$GPUCC" compile --no-cache --no-cubin multi.ll -t sm_90 -o img.gpucc
expect_exit 0 "$GPUCC" list img.gpucc
assert_grep "squares" out
grep -q "vector_add" out && fail "-o merged into the existing image instead of replacing it"
[ "$(ls -A | grep -c '\.tmp\.')" = 0 ] || fail "a temporary file was left behind"

# ---- odd module names ---------------------------------------------------------------------
name=$(printf 'new\nline\377.ll')
cp "$K/bad/syntax_error.ll" "$name"
expect_exit 5 "$GPUCC" compile --verbose --no-cache --no-cubin "$name" -t sm_90
grep -v -e '^gpucc compile: ' -e '^new\\nline' err && fail "a newline in a module's name broke a message's line"
assert_grep '^gpucc compile: error: new.*line.*sm_90:ptx78' err
# LLVM's own message quotes the name too: escaped there as well, its line
# whole, in the error and in the diagnostics.
assert_grep '^gpucc compile: error: new\\nline.\.ll: sm_90:ptx78: not valid LLVM IR: new\\nline.\.ll:6:3: error: expected value token$' err
assert_grep '^new\\nline.\.ll: sm_90:ptx78: new\\nline.\.ll:6:3: error: expected value token$' err
mkdir "$name.d"
expect_exit 3 "$GPUCC" compile --no-cache --no-cubin "$name.d" -t sm_90
assert_one_line err
assert_grep "module 'new\\\\nline.\.ll\.d' is a directory" err
expect_exit 5 "$GPUCC" compile --no-cache --no-cubin "$name" -t sm_90 --explain
head -n1 out | grep -q '^new\\nline.*\.ll sm_90:ptx78: failed' || fail "--explain broke its line at the name's newline"
expect_exit 5 "$GPUCC" compile --no-cache --no-cubin "$name" -t sm_90 --json
jobs out > /dev/null || fail "--json with an odd module name is not JSON"
expect_exit 2 "$GPUCC" compile --no-cache --no-cubin "$(printf 'gone\nmodule.ll')" -t sm_90
assert_one_line err
# A name libgpucc spells itself is not spelt twice (a backslash is no
# control character), and one it quotes as given is spelt the same: the
# cache's name in its warning made a newline a space and printed ESC raw.
for spelt in 'gone\nmodule' 'gone\x1bmodule' 'gone\tmodule'; do
	expect_exit 2 "$GPUCC" compile --no-cache --no-cubin "$(printf "$spelt").ll" -t sm_90
	assert_one_line err
	grep -q -F "gpucc compile: cannot open module '$spelt.ll': No such file or directory" err ||
		fail "compile did not spell '$spelt' once: $(cat -A err)"
	printf 'not a cache\n' > "$(printf "$spelt")"
	expect_exit 0 "$GPUCC" compile --cache "$(printf "$spelt")" --no-cubin va.ll -t sm_90
	grep -q -F "gpucc compile: warning: compiling without a cache: cache '$spelt' is not a directory" err ||
		fail "compile did not spell the cache '$spelt': $(cat -A err)"
	tr -d '\n' < err | LC_ALL=C grep -q '[[:cntrl:]]' && fail "a control character was printed: $(cat -A err)"
	rm "$(printf "$spelt")"
done
# What a module holds is spelt so too: its triple, in a job's error.
sed 's/^target triple = .*/target triple = "amdgcn\x1b-amd-amdhsa"/' va.ll > triple.ll
expect_exit 5 "$GPUCC" compile --no-cache --no-cubin triple.ll -t sm_90
assert_one_line err
assert_grep "^gpucc compile: error: triple.ll: sm_90:ptx78: module triple 'amdgcn\\\\x1b-amd-amdhsa' does not fit target sm_90:ptx78" err
# And in diagnostics, which quote the module's source: an escape sequence in
# the line LLVM shows is spelt; the lines and the caret's layout stay.
printf 'define ptx_kernel void @k(ptr addrspace(1) %%p) {\n  %%v = fadd float 1.0, %%nope ; \033[31mred\n  ret void\n}\n' > esc.ll
expect_exit 5 "$GPUCC" compile --verbose --no-cache --no-cubin esc.ll -t sm_90
assert_grep "^esc.ll: sm_90:ptx78:   %v = fadd float 1.0, %nope ; \\\\x1b\\[31mred$" err
assert_grep "^esc.ll: sm_90:ptx78:                        ^$" err
LC_ALL=C grep -q "$(printf '\033')" err && fail "an escape sequence in a diagnostic reached the terminal"

# ---- a compile ended by a signal (Ctrl-C, a cancelled CI job) dies of it and
# leaves neither the backend's directories in $TMPDIR nor a temporary file
# beside -o; its tools (ld.lld) start with no signal blocked
# (env gives back a signal ignored on entry, as SIGHUP is under nohup.)
mkdir tmp
for sig in TERM HUP; do
	env --default-signal=$sig 2>/dev/null true || continue
	TMPDIR=$PWD/tmp env --default-signal=$sig "$GPUCC" compile --no-cache -O3 -j2 "$TESTDATA/kernels/amdgpu/large.ll" \
		-t gfx90a -t gfx942 -t gfx908 -t gfx1030 -t gfx1100 -o sig.gpucc >out 2>err &
	pid=$!
	for i in $(seq 1000); do
		ls tmp | grep -q "^gpucc-backend-$pid-" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.01
	done
	ls tmp | grep -q "^gpucc-backend-$pid-" || { cat err >&2; fail "compile made no directory in \$TMPDIR"; }
	kill -"$sig" "$pid"
	wait "$pid"
	rc=$?
	[ "$rc" = $((128 + $(kill -l $sig))) ] || { cat err >&2; fail "compile got SIG$sig and exited $rc"; }
	[ -z "$(ls -A tmp)" ] || fail "compile got SIG$sig and left in \$TMPDIR: $(ls -A tmp)"
	assert_no_file sig.gpucc
	if ls -a | grep '^\.sig\.gpucc'; then fail "compile got SIG$sig and left the files above"; fi
done
if [ -r /proc/self/status ]; then
	# A tool the backend runs has no signal blocked: a stand-in ld.lld-N,
	# N the major of the backend gfx90a gets (the newest), prints the set
	# its process blocks, and fails.  (In Python: a shell clears the set it
	# inherits.)
	m=$("$GPUCC" --version | sed -n 's/^  LLVM \([0-9]*\)\..*/\1/p' | tail -1)
	mkdir lld
	cat > lld/ld.lld-$m <<-'EOF'
	#!/usr/bin/env python3
	import sys
	if sys.argv[1:2] == ["--version"]:
	    print("LLD %s.1.7 (compatible with GNU linkers)" % sys.argv[0].rsplit("-", 1)[1])
	    sys.exit(0)
	print([l for l in open("/proc/self/status") if l.startswith("SigBlk:")][0].strip())
	sys.exit(1)
	EOF
	chmod +x lld/ld.lld-$m
	PATH=$PWD/lld:$PATH expect_exit 5 "$GPUCC" compile --verbose --no-cache "$TESTDATA/kernels/amdgpu/vector_add.ll" -t gfx90a
	assert_grep "SigBlk:[[:space:]]*0*$" err
fi

# ---- a dry run changes no cache: it creates none, counts no hit or miss,
# refreshes no entry's use time and saves no toolchain memo (it counted a
# miss that never happened, and made the directory)
expect_exit 0 "$GPUCC" compile --cache dry --no-cubin --dry-run va.ll -t sm_90
assert_no_file dry
expect_exit 0 "$GPUCC" compile --cache dry --no-cubin va.ll -t sm_90
entry=$(find dry/v1 -name '*.gpucc')
touch -d '2001-01-01 00:00:00' "$entry"
rm -f dry/compile-toolchain
find dry -type f ! -name '*.gpucc' -exec sha256sum {} + | sort > dry.before
expect_exit 0 "$GPUCC" compile --cache dry --no-cubin --dry-run va.ll -t sm_90 --json
python3 -c 'import json,sys; d=json.load(open("out")); sys.exit(d["hits"] != 1)' || fail "a dry run missed a cached entry"
[ "$(stat -c %Y "$entry")" = "$(date -d '2001-01-01 00:00:00' +%s)" ] || fail "a dry run refreshed an entry's use time"
find dry -type f ! -name '*.gpucc' -exec sha256sum {} + | sort > dry.after
cmp -s dry.before dry.after || fail "a dry run wrote into the cache: $(diff dry.before dry.after)"
assert_no_file dry/compile-toolchain
assert_no_grep "read-only" err

# ---- one entry the cache cannot take is that entry's problem, not the cache's:
# a file where its shard belongs (or a directory where it belongs) left the
# other modules of the run uncached, as if the disk were full; a full disk
# (here ulimit -f) still ends caching for the run, with one warning
cp "$K/nvptx/math.ll" math.ll
"$GPUCC" compile --no-cache --no-cubin --dry-run --json va.ll -t sm_90 > va.json
va_key=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0]["key"])' va.json)
mkdir -p shard/v1 && echo x > "shard/v1/$(printf %.2s "$va_key")"
expect_exit 0 "$GPUCC" compile --cache shard --no-cubin -j1 va.ll math.ll multi.ll -t sm_90
assert_grep "^gpucc compile: warning: va.ll: sm_90:ptx78: not cached: .*Not a directory$" err
assert_no_grep "nothing more is cached" err
[ "$(find shard/v1 -name '*.gpucc' | wc -l)" = 2 ] || fail "one entry's failed insert kept the others out of the cache"
mkdir -p "entrydir/v1/$(printf %.2s "$va_key")/$va_key.gpucc/x"
expect_exit 0 "$GPUCC" compile --cache entrydir --no-cubin -j1 va.ll math.ll multi.ll -t sm_90
assert_grep "^gpucc compile: warning: va.ll: sm_90:ptx78: not cached: .*Is a directory$" err
# ... and the warning before the failed replacement did not say it was replaced
assert_grep "is corrupt, to be replaced by the arriving one: " err
[ "$(find entrydir/v1 -name '*.gpucc' -type f | wc -l)" = 2 ] || fail "a directory at one entry's name kept the others out of the cache"
( trap - XFSZ; ulimit -f 4; exec "$GPUCC" compile --cache full --no-cubin -j1 va.ll math.ll multi.ll -t sm_90 ) >out 2>err
rc=$?
[ $rc = 0 ] || { cat err >&2; fail "a compile whose cache entries passed ulimit -f exited $rc, not 0"; }
assert_one_line err
assert_grep "^gpucc compile: warning: va.ll: sm_90:ptx78: not cached: .*File too large; nothing more is cached in this run$" err

# ---- without -j, one thread per CPU the process may use (taskset, a CI
# runner's cpuset), as nproc counts them, not per CPU of the machine
if have taskset "one thread per CPU the process may use" && taskset -c 0 true 2>/dev/null; then
	taskset -c 0 "$GPUCC" compile --no-cache --no-cubin --json va.ll multi.ll math.ll -t sm_90 -t gfx90a >out 2>err ||
		fail "compile under taskset failed: $(cat err)"
	python3 -c "import json; d = json.load(open('out')); assert d['threads'] == 1 and d['compiled'] == 3, d" ||
		fail "on one CPU, compile ran $(grep -o '"threads":[0-9]*' out) threads"
fi

# ---- the progress line on a terminal: a cache warning printed while it
# was drawn was glued to its end ("..., ETA 0sgpucc compile: warning: ...");
# it now clears the line first, and the run ends with a line break.  The
# ETA counts only the compiles' pace, not that of hits and skips
if have script "the progress line on a terminal"; then
	cp "$TESTDATA/example/kernels/saxpy.nvptx.ll" "$TESTDATA/example/kernels/sigmoid.nvptx.ll" .
	"$GPUCC" compile --cache tty --no-cubin saxpy.nvptx.ll sigmoid.nvptx.ll -t sm_90 || fail "filling the cache failed"
	for f in $(find tty/v1 -name '*.gpucc'); do truncate -s 100 "$f"; done
	script -qec "'$GPUCC' compile --cache tty --no-cubin -j1 saxpy.nvptx.ll sigmoid.nvptx.ll va.ll -t sm_90 -t gfx90a" /dev/null > typescript
	python3 - typescript <<-'PY' || fail "the progress line is wrong: $(cat -A typescript)"
	import re, sys
	t = open(sys.argv[1], "rb").read()
	warning = b"gpucc compile: warning: cache: "
	assert t.count(warning) == 2, t
	at = -1
	while (at := t.find(warning, at + 1)) >= 0:
	    assert at == 0 or t[:at].endswith((b"\x1b[K", b"\n")), t
	assert b"\x1b[Kgpucc compile: 6/6 done, " in t and t.endswith(b"\r\n"), t
	# Skips are reported while planning, in no time: no estimate (it said
	# "ETA 0s") until a compile has finished.
	assert re.search(rb"1/6 done, 0 hits, 0 failed, [0-9.]+s\r", t), t
	PY
fi

# ---- numbers ---------------------------------------------------------------------------------
for bad in "-j 0" "-j -1" "-j 99999" "-j abc" "-O4" "-O x" "--code-object 3"; do
	# shellcheck disable=SC2086
	expect_exit 129 "$GPUCC" compile --no-cache --no-cubin va.ll -t sm_90 $bad
done
# ---- names no manifest can carry as they are ------------------------------------------
# A module's file name with a control character or a byte that is not UTF-8
# compiles, its entries named as the manifest spells it; a kernel named so
# fails its own job (loaders look kernels up by their bytes), the others
# are written with --keep-going.
cp multi.ll "$(printf 'x\ny.ll')"
cp va.ll "$(printf 'caf\351.ll')"
expect_exit 0 "$GPUCC" compile --no-cache --no-cubin "$(printf 'x\ny.ll')" "$(printf 'caf\351.ll')" -t sm_90 -o names.gpucc
"$GPUCC" list --json names.gpucc >names.json || fail "list of names.gpucc"
python3 - names.json <<'PY' || fail "module names were not spelt as the manifest carries them"
import json, sys
names = sorted(e["module"] for e in json.load(open(sys.argv[1])))
assert names == ["caf\\xE9.ll", "x\\ny.ll"] or names == ["caf\\xe9.ll", "x\\ny.ll"], names
PY
printf 'target triple = "amdgcn-amd-amdhsa"\ndefine amdgpu_kernel void @"bad\\01name"() {\n  ret void\n}\n' >badname.ll
amd=$TESTDATA/kernels/amdgpu/vector_add.ll
expect_exit 5 "$GPUCC" compile --no-cache badname.ll "$amd" -t gfx90a -o bad.gpucc
assert_one_line err
assert_grep "^gpucc compile: error: badname.ll: gfx90a: .*holds a control character.*rename it$" err
assert_no_file bad.gpucc
expect_exit 5 "$GPUCC" compile --no-cache --keep-going badname.ll "$amd" -t gfx90a -o bad.gpucc
"$GPUCC" list bad.gpucc | grep -q vector_add || fail "--keep-going did not write the job that compiled"
[ "$("$GPUCC" list --json bad.gpucc | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" = 1 ] ||
	fail "--keep-going wrote more than the job that compiled"
exit 0

# A build's log: a line per job on stdout (not a terminal), as it finishes.
cp "$TESTDATA/example/kernels/saxpy.amdgpu.ll" logged.ll
expect_exit 0 "$GPUCC" compile --cache log-cache logged.ll -t gfx90a -t gfx942 -o logged.gpucc
[ "$(grep -c '^logged\.ll gfx9[0-9a-z]*: compiled in [0-9.]* s$' out)" = 2 ] || fail "no compiled lines: $(cat out)"
expect_exit 0 "$GPUCC" compile --cache log-cache logged.ll -t gfx90a -t gfx942 -o logged.gpucc
[ "$(grep -c '^logged\.ll gfx9[0-9a-z]*: hit$' out)" = 2 ] || fail "no hit lines: $(cat out)"
expect_exit 0 "$GPUCC" compile --cache log-cache logged.ll -t gfx90a --json
python3 -c 'import json; json.load(open("out"))' || fail "--json with log lines: $(cat out)"
printf 'define void @f() {\n' >broken.ll
expect_exit 5 "$GPUCC" compile --cache log-cache broken.ll -t gfx90a
assert_grep '^broken\.ll gfx90a: failed$' out
assert_one_line err
