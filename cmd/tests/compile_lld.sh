# cmd/tests/compile_lld.sh -- AMDGPU code objects linked by the LLD linked
# into each backend's compile worker (lib/backend_llvm/lld_link.h), that
# backend's LLVM major's own: LLD 19 in LLVM 19's worker, LLD 22 in LLVM
# 22's.  For each, where it is the ld.lld-N found: no ld.lld process links
# a job (strace's execve trace), and the image is byte for byte the one
# ld.lld processes make when another ld.lld-N (a copy of the real one, so
# another file) is first on PATH and links every job itself.  The
# ld.lld-N the build found is not run even for its version (the build's
# memo of it); the copy is.  A major is skipped (a printed reason) where
# the build has no backend of it, no LLD library for it (liblld-N-dev), or
# no ld.lld-N; the whole test where strace is missing.
. "$SRCROOT/cmd/tests/lib.sh"

command -v strace >/dev/null || skip "strace is not installed (it shows which processes run)"

# links: how many ld.lld processes linked (-shared) in TRACE
links() { grep -c 'execve(".*ld\.lld[^"]*", \[.*"-shared"' "$1"; }
# versions: how many ld.lld processes were asked their version in TRACE
versions() { grep -c 'execve(".*ld\.lld[^"]*", \[.*"--version"' "$1"; }

# check_major N TARGETS...: every job of the four modules for TARGETS on
# LLVM N's backend (--llvm N), linked in process, against ld.lld-N
# processes.
check_major() {
	local major=$1 lld
	shift
	if ! has_llvm "$major"; then
		skip_block "LLVM $major's worker links in process (this build has no LLVM $major backend)"
		return
	fi
	if ! grep -q "GPUCC_BUILD_LD_LLDS.*{$major, \"$major\\." "$BUILDDIR/gpucc_build_config.h"; then
		skip_block "LLVM $major's worker links in process (built without LLD $major as a library," \
			"liblld-$major-dev: that worker runs ld.lld-$major)"
		return
	fi
	if ! lld=$(command -v "ld.lld-$major"); then
		skip_block "LLVM $major's worker links in process (ld.lld-$major is not installed)"
		return
	fi
	local targets="" jobs=0 t
	for t in "$@"; do
		targets="$targets -t $t"
		jobs=$((jobs + 4))
	done
	local modules=("$TESTDATA"/kernels/amdgpu/{vector_add,math,multi,large}.ll)

	# shellcheck disable=SC2086
	no_leak_check strace -f -qq -e trace=execve -o "inproc$major.trace" \
		"$GPUCC" compile --llvm "$major" --cache "inproc$major" -j2 $targets "${modules[@]}" \
		-o "inproc$major.gpucc" >out 2>err ||
		{ cat err >&2; fail "LLVM $major: the compile with the worker's LLD failed"; }
	[ "$(links "inproc$major.trace")" = 0 ] ||
		fail "LLVM $major: ld.lld processes linked although the worker's LLD is that ld.lld"
	# Nor is that ld.lld asked its version (the build saw it: meson.build),
	# though the cache is new; the copy below, another file, is.
	[ "$(versions "inproc$major.trace")" = 0 ] ||
		fail "LLVM $major: the ld.lld the build saw was asked its version"
	grep -q "gpucc-compile-worker-$major\"" "inproc$major.trace" ||
		fail "LLVM $major: no compile worker of it ran (nothing was compiled)"

	mkdir "bin$major" && cp "$(readlink -f "$lld")" "bin$major/ld.lld-$major"
	# shellcheck disable=SC2086
	PATH=$PWD/bin$major:$PATH no_leak_check strace -f -qq -e trace=execve -o "process$major.trace" \
		"$GPUCC" compile --llvm "$major" --cache "process$major" -j2 $targets "${modules[@]}" \
		-o "process$major.gpucc" --json >out 2>err ||
		{ cat err >&2; fail "LLVM $major: the compile with ld.lld processes failed"; }
	local compiled
	compiled=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["compiled"])' out)
	[ "$compiled" = $jobs ] || fail "LLVM $major: $compiled of $jobs jobs compiled"
	[ "$(links "process$major.trace")" = $jobs ] ||
		fail "LLVM $major: $(links "process$major.trace") ld.lld processes linked $jobs jobs" \
			"with another ld.lld-$major first on PATH"
	[ "$(grep -c "execve(\"$PWD/bin$major/ld.lld-$major\", \\[.*\"-shared\"" "process$major.trace")" = $jobs ] ||
		fail "LLVM $major: not every job was linked by the ld.lld-$major first on PATH"
	[ "$(versions "process$major.trace")" = 1 ] ||
		fail "LLVM $major: another ld.lld-$major first on PATH was asked its version" \
			"$(versions "process$major.trace") times, not once"
	cmp -s "inproc$major.gpucc" "process$major.gpucc" ||
		fail "LLVM $major: code objects linked in process differ from ld.lld-$major's (keys or bytes)"
	expect_exit 0 "$GPUCC" verify "inproc$major.gpucc"
	python3 - "$GPUCC" "inproc$major.gpucc" "$major" <<'PY' ||
import json, subprocess, sys
gpucc, image, major = sys.argv[1], sys.argv[2], sys.argv[3] + "."
listed = json.loads(subprocess.run([gpucc, "list", "--json", image], capture_output=True,
                                   check=True).stdout)
for key in (e["key"] for e in listed):
    e = json.loads(subprocess.run([gpucc, "show", image, key, "--json"], capture_output=True,
                                  check=True).stdout)
    assert e["llvm_version"].startswith(major) and e["options"]["ld.lld"].startswith(major), e
PY
		fail "LLVM $major: entries name another LLVM, or another LLD, than LLVM $major's"
}

check_major 19 gfx90a gfx942 gfx1030
# gfx950: a processor only LLVM 22 knows.
check_major 22 gfx90a gfx942 gfx1030 gfx950
echo ok
