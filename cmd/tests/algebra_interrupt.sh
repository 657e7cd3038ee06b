# cmd/tests/algebra_interrupt.sh -- a merge or delta ended by SIGINT
# (Ctrl-C), SIGTERM (a CI runner cancelling the job) or SIGHUP dies of that
# signal, leaves its output as it was, and leaves nothing beside it: not
# the temporary file it was writing, nor the merge lock .OUT.lock.  (Only a
# SIGKILL leaves them, for the next write to remove: algebra_faults.sh.)
# A waiting merge interrupted leaves the lock of the one it waits for, and a
# signal ignored on entry (nohup) stays ignored.
. "$SRCROOT/cmd/tests/lib.sh"
. "$SRCROOT/cmd/tests/algebra_helpers.sh"

# Incompressible payloads and --zstd=19: seconds of work, so a signal sent
# once the temporary file appears finds the write under way.
python3 - <<'PY' || fail "cannot make spec"
import json, os
for name in ("r1", "r2"):
    os.mkdir(name)
    entries = []
    for i in range(4):
        open(f"{name}/p{i}", "wb").write(os.urandom(3 << 20))
        entries.append({"module": f"{name}-{i}.ll", "module_sha256": os.urandom(32).hex(),
                        "target": "sm_90", "kernels": [f"k{i}"], "ptx": f"p{i}"})
    json.dump({"entries": entries}, open(f"{name}/spec.json", "w"))
PY
expect_exit 0 "$GPUCC" pack -o r1.gpucc r1/spec.json
expect_exit 0 "$GPUCC" pack -o r2.gpucc r2/spec.json
rm -rf r1 r2
make_image small.gpucc S 0 2
expect_exit 0 "$GPUCC" snapshot small.gpucc -o small.snap

# A background job of a script ignores SIGINT, and a run under nohup (a CI
# runner's) SIGHUP; gpucc keeps a signal ignored on entry, so each run gets
# the default back from env (coreutils 9), without which the test skips.
env --default-signal=INT,TERM,HUP true 2>/dev/null ||
	skip "env --default-signal is needed to undo signals ignored on entry"
dflt="env --default-signal=INT,TERM,HUP"

# signal_mid_write SIG OUT CMD...: run CMD, send SIG once its temporary file
# beside OUT exists, and check that it died of SIG leaving no dot-file
# beside OUT.  A run that ends, or writes nothing for 1,000 polls, before
# its temporary file is seen fails the test, saying how it ended.  The
# temporary file is .OUT.tmp.PID.N; the probe of the directory made before
# it (.OUT.tmp.probe.*, unlinked at once) does not count.
signal_mid_write() {
	local sig=$1 out=$2; shift 2
	local pid i how
	$dflt "$@" >out 2>err &
	pid=$!
	local seen=""
	for i in $(seq 1000); do
		ls -a | grep -q "^\.$out\.tmp\.[0-9]" && { seen=1; break; }
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.01
	done
	if [ -z "$seen" ]; then
		how="still running after $i polls"
		kill -0 "$pid" 2>/dev/null || { wait "$pid"; how="exited $? after $i polls"; }
		kill -KILL "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
		fail "'$*' wrote no temporary file ($how); stderr: $(cat err); files: $(ls -A | tr '\n' ' ')"
	fi
	kill -"$sig" "$pid"
	wait "$pid"
	local rc=$? want
	want=$((128 + $(kill -l "$sig")))
	[ "$rc" = "$want" ] || { cat err >&2; fail "'$*' got SIG$sig and exited $rc, not $want"; }
	if ls -a | grep "^\.$out\."; then
		fail "'$*' got SIG$sig and left the files above beside '$out'"
	fi
}

for sig in TERM HUP INT; do
	cp small.gpucc out.gpucc
	signal_mid_write "$sig" out.gpucc "$GPUCC" merge out.gpucc r1.gpucc r2.gpucc --zstd=19 -o out.gpucc
	assert_same out.gpucc small.gpucc
	signal_mid_write "$sig" d.gpucc "$GPUCC" delta r1.gpucc --since small.snap --zstd=19 -o d.gpucc
	assert_no_file d.gpucc
done

# A merge waiting for the lock, interrupted, leaves the holder's lock.
cp small.gpucc out.gpucc
$dflt "$GPUCC" merge out.gpucc r1.gpucc r2.gpucc --zstd=19 -o out.gpucc >holder.out 2>holder.err &
holder=$!
for i in $(seq 1000); do ls -a | grep -q '^\.out\.gpucc\.tmp\.[0-9]' && break; sleep 0.01; done
$dflt "$GPUCC" merge out.gpucc small.gpucc -o out.gpucc >out 2>err &
waiter=$!
# Interrupted once it waits: it has opened the lock file (and then blocks in
# flock, since the holder holds it).
for i in $(seq 1000); do
	ls -l "/proc/$waiter/fd" 2>/dev/null | grep -q '\.out\.gpucc\.lock$' && break
	kill -0 "$waiter" 2>/dev/null || break
	sleep 0.01
done
ls -l "/proc/$waiter/fd" 2>/dev/null | grep -q '\.out\.gpucc\.lock$' ||
	{ cat err >&2; fail "the second merge never opened the lock file"; }
kill -TERM "$waiter"
wait "$waiter"
[ -e .out.gpucc.lock ] || fail "an interrupted waiter removed the lock its holder holds"
kill -TERM "$holder"
wait "$holder"
ls -a | grep '^\.out\.gpucc\.' && fail "the interrupted holder left the files above"

# Ignored on entry (nohup), a signal stays ignored: the merge completes.
( trap '' HUP; exec "$GPUCC" merge small.gpucc r1.gpucc --zstd=3 -o hup.gpucc ) >out 2>err &
pid=$!
for i in $(seq 1000); do ls -a | grep -q '^\.hup\.gpucc\.tmp\.[0-9]' && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.01; done
kill -HUP "$pid" 2>/dev/null
wait "$pid" || { cat err >&2; fail "a merge ignoring SIGHUP did not complete"; }
assert_verifies hup.gpucc
echo ok
