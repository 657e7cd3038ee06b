# cmd/tests/remote_resolve.sh -- a remote whose host name never resolves:
# the name server takes the question and never answers.  Each request's
# deadline (`timeout=`, docs/remote-cache.md) covers name resolution, so the
# compile goes on without the remote after one warning naming it ("cannot
# resolve host ...: timed out"), where the resolver itself would wait
# RES_OPTIONS' 30 s x 3 tries and then fail in its own words.
#
# The silent name server is a UDP socket on 127.0.0.1:53 in a network
# namespace of the test's own, whose /etc/resolv.conf (bind-mounted in a
# mount namespace) names it: `unshare -rmn`, where user namespaces are
# allowed.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "python3 is not installed (the silent name server)"
command -v unshare >/dev/null || skip "unshare is not installed (util-linux)"
unshare -rmn true 2>/dev/null || skip "user namespaces are not allowed here (unshare -rmn)"
command -v ip >/dev/null || [ -x /usr/sbin/ip ] || skip "ip is not installed (iproute2)"

cat > resolv.conf <<'EOF'
nameserver 127.0.0.1
options timeout:30 attempts:3
EOF
cat > inside.sh <<'EOF'
set -u
PATH=$PATH:/usr/sbin
ip link set lo up || exit 90
mount --bind "$PWD/resolv.conf" /etc/resolv.conf || exit 91
python3 - <<'PY' &
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 53))
open("listening", "w").close()
while True:
    data, _ = s.recvfrom(4096)
    with open("questions", "ab") as f:
        f.write(data[12:] + b"\n")
PY
sink=$!
tries=0
while [ ! -e listening ] && [ "$tries" -lt 500 ]; do sleep 0.01; tries=$((tries + 1)); done
[ -e listening ] || exit 92
for remote in "http://gpucc-cache.test:8080/gpucc|timeout=400" \
              "redis://gpucc-cache.test:6379|timeout=400"; do
	name=${remote%%:*}
	RES_OPTIONS="timeout:30 attempts:3" "$GPUCC" compile --cache "c-$name" --no-cubin -t sm_90 \
		"$TESTDATA/example/saxpy.nvptx.ll" -o "$name.gpucc" --remote "$remote" \
		> "$name.out" 2> "$name.err"
	echo $? > "$name.rc"
done
kill "$sink"
EOF
unshare -rmn bash inside.sh
rc=$?
[ "$rc" = 0 ] || fail "the namespace could not be set up (inside.sh exit $rc)"
grep -q "gpucc-cache" questions || fail "the resolver never asked the silent name server"
expect_exit 0 "$GPUCC" compile --cache local --no-cubin -t sm_90 \
	"$TESTDATA/example/saxpy.nvptx.ll" -o local.gpucc --no-remote
for name in http redis; do
	[ "$(cat "$name.rc")" = 0 ] || fail "$name: compile exited $(cat "$name.rc"): $(cat "$name.err")"
	assert_one_line "$name.err"
	grep -q "warning: .*gpucc-cache.test.*cannot resolve host 'gpucc-cache.test': timed out" "$name.err" ||
		fail "$name: not the deadline's warning: $(cat "$name.err")"
	assert_same local.gpucc "$name.gpucc"
done
echo "ok: a host name that never resolves is one warning per remote, within its timeout"
