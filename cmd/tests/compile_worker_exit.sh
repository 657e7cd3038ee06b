# cmd/tests/compile_worker_exit.sh -- a compile worker never dies by a
# signal when it ends: 200 runs of a failing NVIDIA job (a module without
# kernels, which fails after the worker has started loading libnvJitLink
# on a thread of its own) each fail with exit 5 and one line, and leave no
# core file; every worker ends by exiting (strace, where it is installed,
# on a share of the runs).  A worker that exited while libnvJitLink's
# initialisers ran on that thread died by SIGSEGV in about one run of
# three.  Skipped without libnvJitLink, which only NVIDIA jobs load.  The
# sanitizer build runs 40 of the 200: a run's cost there is ASan's and
# LeakSanitizer's, the race it looks for is the same in both builds, and
# every run there still checks the worker's exit path under the sanitizers.
. "$SRCROOT/cmd/tests/lib.sh"

cuda=${CUDA_PATH:-/usr/local/cuda}
ls "$cuda"/lib64/libnvJitLink.so* >/dev/null 2>&1 || skip "no libnvJitLink in $cuda/lib64"
unset GPUCC_NVJITLINK
# A core file lands in the working directory where the kernel's pattern is
# a plain name (else it goes to a handler, which the strace runs stand in
# for).
pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null)
cores=
case $pattern in
'' | '|'* | */*) skip_block "no core file left by a worker (core files go to '$pattern'; the strace runs stand in)" ;;
*) ulimit -c unlimited 2>/dev/null && cores=1 ;;
esac

runs=200
[ -z "$SANITIZE_CFLAGS" ] || runs=40
printf 'target triple = "nvptx64-nvidia-cuda"\ndefine void @f() {\n  ret void\n}\n' >nokernel.ll
for i in $(seq "$runs"); do
	"$GPUCC" compile nokernel.ll -t sm_90 --no-cache >out 2>err
	rc=$?
	[ "$rc" = 5 ] || { cat err >&2; fail "run $i exited $rc, expected 5"; }
	assert_one_line err
done
assert_grep "nokernel.ll: sm_90:ptx78: no kernels" err
if [ -n "$cores" ]; then
	left=$(find . -name "${pattern%%%*}*" -newer nokernel.ll -type f)
	[ -z "$left" ] || fail "workers dumped core: $left"
fi
if have strace "how every worker ends, traced"; then
	for i in $(seq 20); do
		no_leak_check strace -f -e trace=none -o "trace.$i" "$GPUCC" compile nokernel.ll -t sm_90 \
			--no-cache >out 2>err
		[ "$?" = 5 ] || { cat err >&2; fail "run $i under strace did not exit 5"; }
	done
	if grep -h "killed by" trace.*; then
		fail "a worker died by a signal (above)"
	fi
	[ "$(grep -h "exited with" trace.* | wc -l)" -ge 40 ] || fail "strace saw fewer than two processes end per run"
fi
echo ok
