#!/bin/bash
# cmd/tests/cli_reads.sh -- how much of an image each inspection command
# reads, counted by the kernel (/proc/PID/io rchar: bytes returned by read
# and pread, whatever the code path): verify reads an image once, compressed
# or not (formats/image.md, Reading); list reads only up to the manifest;
# cat of an uncompressed image reads only the payload it writes.  The
# payloads are random, so a compressed image is as large as a plain one and
# a second pass would double the count.
. "$(dirname "$0")/lib.sh"

# reads CMD...: run CMD (stdout discarded) and print the bytes it read; fail
# unless it exits 0.  The child is waited for without being reaped
# (WNOWAIT), so that its counters can still be read.
reads() {
	python3 - "$@" <<'PY'
import os, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
with open(f"/proc/{p.pid}/io") as f:
    io = dict(line.split(": ") for line in f.read().splitlines())
if p.wait() != 0:
    sys.exit(f"{sys.argv[1:]} exited {p.returncode}")
print(io["rchar"])
PY
}

# at_most WHAT BYTES LIMIT / at_least WHAT BYTES LIMIT
at_most() {
	[ "$2" -le "$3" ] || fail "$1 read $2 bytes, more than $3"
}
at_least() {
	[ "$2" -ge "$3" ] || fail "$1 read $2 bytes, fewer than $3"
}

mib=1048576
echo 'one' > one.ll
echo 'two' > two.ll
head -c $((16 * mib)) /dev/urandom > one.ptx
head -c $((8 * mib)) /dev/urandom > two.ptx
cat > spec.json <<'EOF'
{"entries": [
 {"module_file": "one.ll", "target": "sm_90", "kernels": ["one"], "ptx": "one.ptx"},
 {"module_file": "two.ll", "target": "sm_90", "kernels": ["two"], "ptx": "two.ptx"}]}
EOF
expect_exit 0 "$GPUCC" pack -o plain.gpucc spec.json
expect_exit 0 "$GPUCC" pack --zstd=1 -o zstd.gpucc spec.json

for image in plain.gpucc zstd.gpucc; do
	size=$(stat -c %s "$image")
	# One pass: the members and the tail after the end-of-archive marker
	# (which verify checks too) come from one read of the file.  A second
	# pass would read 2 x size.
	n=$(reads "$GPUCC" verify "$image") || fail "verify $image failed"
	at_most "verify $image ($size bytes)" "$n" $((size + size / 4))
	# (A compressed image reaches the decompressor through read: the count
	# sees every byte.  An uncompressed one might be mapped instead.)
	[ "$image" = plain.gpucc ] || at_least "verify $image" "$n" "$size"
	# list needs the manifest, the second member: nothing of the payloads.
	n=$(reads "$GPUCC" list "$image") || fail "list $image failed"
	at_most "list $image" "$n" "$mib"
done

# cat of the smaller payload from the uncompressed image: that payload, not
# the whole file (the members are found by their computed offsets).
key=$("$GPUCC" list --json plain.gpucc | python3 -c '
import json, sys
print(next(e["key"] for e in json.load(sys.stdin) if e["module"] == "two.ll"))')
n=$(reads "$GPUCC" cat plain.gpucc "$key" --part ptx) || fail "cat failed"
at_most "cat of an 8 MiB payload" "$n" $((9 * mib))
"$GPUCC" cat plain.gpucc "$key" --part ptx | cmp - two.ptx || fail "cat wrote other bytes"
echo "ok"
