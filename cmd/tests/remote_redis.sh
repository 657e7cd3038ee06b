# cmd/tests/remote_redis.sh -- the Redis remote cache against a real
# redis-server on 127.0.0.1, over TCP and a Unix socket, with a password and
# a read-only ACL user: two machines sharing one remote (the second
# compiling nothing), and the faults (a key overwritten -- deleted unless
# the remote is read-only --, a key of another type, which push replaces,
# the server frozen by SIGSTOP, killed mid-request, full, a read-only user
# asked to write, a wrong password, a server dripping its reply a byte at a
# time), each a compile that succeeds with one warning naming the
# remote and an image byte-identical to a local-only build.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/remote_helpers.sh"
command -v redis-cli >/dev/null || skip "redis-cli is not installed (redis-tools, with redis-server)"

start_redis "$TEST_DIR/redis" "requirepass s3cret" \
	"user reader on >rpass ~gpucc:* resetchannels -@all +get +mget +auth +select +ping"
URL="redis://:s3cret@127.0.0.1:$REDIS_PORT"
SHOWN="redis://:***@127.0.0.1:$REDIS_PORT"
rcli() { redis-cli -p "$REDIS_PORT" -a s3cret --no-auth-warning "$@"; }

compile_with ref ref.gpucc --no-remote

# Machine A compiles and uploads, B compiles nothing (TCP, password).
uploads A a.gpucc --remote "$URL"
[ "$(rcli --scan --pattern 'gpucc:v1:*' | wc -l)" = 2 ] || fail "A did not store 2 keys"
key=$(rcli --scan --pattern 'gpucc:v1:*' | head -1)
rcli --raw GET "$key" | head -c -1 > value
cmp -s value "A/v1/$(echo "${key#gpucc:v1:}" | cut -c1-2)/${key#gpucc:v1:}.gpucc" || fail "the stored value is not A's entry"
hits_remote B b.gpucc --remote "$URL"
expect_exit 0 "$GPUCC" cache stats --cache B --json
assert_grep '"remote": {"hits": 2, "misses": 0, "errors": 0, "timeouts": 0' out

# Another database: /3 selects it.
compile_with DB db.gpucc --remote "$URL/3"
[ "$(json_count compiled)" = 2 ] || fail "database 3 is not empty, yet held entries"
[ "$(rcli -n 3 --scan --pattern 'gpucc:v1:*' | wc -l)" = 2 ] || fail "the entries did not go to database 3"

# The Unix socket, with the password as an attribute.
compile_with U u.gpucc --remote "redis+unix:$REDIS_SOCK|password=s3cret"
[ "$(json_count hits)" = 2 ] || fail "Unix socket: hit $(json_count hits), not 2"
assert_no_grep warning err

# The read-only ACL user: hits; marked read-only it never writes.
compile_with R r.gpucc --remote "redis://reader:rpass@127.0.0.1:$REDIS_PORT|read-only"
[ "$(json_count hits)" = 2 ] || fail "ACL reader: hit $(json_count hits), not 2"
assert_no_grep warning err
# Not marked read-only, its write is refused by the server's ACL: a warning.
rm -rf R2
cp vector_add.ll extra.ll && sed -i 's/vector_add/vector_add_extra/g' extra.ll
expect_exit 0 "$GPUCC" compile --cache R2 --no-cubin -t sm_90 extra.ll \
	--remote "redis://reader:rpass@127.0.0.1:$REDIS_PORT"
assert_grep "warning: cache: remote 'redis://reader:\*\*\*@127.0.0.1:$REDIS_PORT': uploading: SET: NOPERM" err
assert_no_grep rpass err

# A wrong password: one warning, and the build goes on.
fault() { # NAME CACHE URL SHOWN PATTERN
	FAULT=$1
	compile_with "$2" "$2.gpucc" --remote "$3"
	assert_same "$2.gpucc" ref.gpucc
	assert_one_remote_warning "$4"
	assert_grep "$5" err
}
fault "wrong password" FPASS "redis://:nope@127.0.0.1:$REDIS_PORT" \
	"$SHOWN" "AUTH: WRONGPASS"

# A key overwritten on the server: rejected; kept by a read-only remote,
# deleted (DEL) by a writable one, so that the next writer replaces it.
rcli SET "$key" "not an entry" >/dev/null
fault "overwritten, read-only" FOVERRO "$URL|read-only" "$SHOWN" "rejected"
[ "$(rcli GET "$key")" = "not an entry" ] || fail "a read-only remote's rejected key was changed"
fault overwritten FOVER "$URL" "$SHOWN" "rejected"
[ "$(rcli EXISTS "$key")" = 0 ] || fail "the rejected key was not deleted from a writable remote"
[ "$(rcli --scan --pattern 'gpucc:v1:*' | wc -l)" = 1 ] || fail "a key that verified was deleted too"
head -c 100 value > cut
redis-cli -p "$REDIS_PORT" -a s3cret --no-auth-warning -x SET "$key" < cut >/dev/null
fault "cut short" FCUT "$URL" "$SHOWN" "rejected"
# (FCUT compiled the damaged key and, the remote being disabled, did not
# write it back: put it back from A for the tests below.)
redis-cli -p "$REDIS_PORT" -a s3cret --no-auth-warning -x SET "$key" < value >/dev/null

# A key of another type (a list) where an entry's string belongs: MGET
# reads it as nil, a miss; cache push finds it absent and replaces it.
rcli DEL "$key" >/dev/null
rcli RPUSH "$key" a b >/dev/null
expect_exit 0 "$GPUCC" cache push ref.gpucc --cache A --remote "$URL"
assert_grep "^1 uploaded, 1 present already, 0 failed$" out
assert_no_grep warning err
[ "$(rcli TYPE "$key")" = string ] || fail "cache push did not replace the list under $key"
rcli --raw GET "$key" | head -c -1 > replaced
cmp -s replaced value || fail "the value cache push stored under $key is not A's entry"

# Full: reads work, every write is refused (maxmemory).
rcli CONFIG SET maxmemory 1 >/dev/null
rcli CONFIG SET maxmemory-policy noeviction >/dev/null
expect_exit 0 "$GPUCC" compile --cache FULL --no-cubin -t sm_90 extra.ll --remote "$URL"
assert_one_remote_warning "$SHOWN"
assert_grep "uploading: SET: OOM" err
rcli CONFIG SET maxmemory 0 >/dev/null

# Frozen: the timeout bounds the wait.
kill -STOP "$REDIS_PID"
fault frozen FSTOP "$URL|timeout=200" "$SHOWN" "timed out"
kill -CONT "$REDIS_PID"

# Killed while a request waits on it.
kill -STOP "$REDIS_PID"
"$GPUCC" compile --cache FKILL --no-cubin -t sm_90 $MODULES -o FKILL.gpucc \
	--remote "$URL|timeout=600000" >out 2>err &
gpucc_pid=$!
wait_connected "$gpucc_pid" "$REDIS_PORT" || { stop_pid "$gpucc_pid"; fail "gpucc never connected"; }
stop_pid "$REDIS_PID"
wait "$gpucc_pid" || { cat err >&2; fail "compile failed when its remote was killed"; }
assert_same FKILL.gpucc ref.gpucc
assert_one_remote_warning "$SHOWN"

# A server that drips its MGET reply a byte at a time, each byte well
# within the timeout, for ever: the timeout bounds the whole reply.
cat > drip.py <<'EOF2'
import os, socket, sys, threading, time
s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(8)
open(sys.argv[1] + '.tmp', 'w').write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + '.tmp', sys.argv[1])
def serve(c):
    try:
        c.recv(65536)  # the MGET
        c.sendall(b'*2\r\n$100000000\r\n')
        while True:
            c.sendall(b'x'); time.sleep(0.05)
    except OSError:
        pass
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF2
python3 drip.py drip.port &
SERVER_PIDS="$SERVER_PIDS $!"
for _ in $(seq 100); do [ -s drip.port ] && break; sleep 0.1; done
[ -s drip.port ] || fail "the dripping server did not start"
DRIP="redis://127.0.0.1:$(cat drip.port)"
fault dripping FDRIP "$DRIP|timeout=500" "$DRIP" "MGET: timed out"
[ "$(json_count compiled)" = 2 ] || fail "dripping: compiled $(json_count compiled), not 2"
# Under a timeout of ten minutes, the remote's total time in the run ends it.
fault "dripping, total" FDRIPT "$DRIP|timeout=600000|total-timeout=300" "$DRIP" \
	"its total time in this run (total-timeout=300 ms) ran out: MGET: timed out"

# Dead: nothing listens.
fault dead FDEAD "$URL" "$SHOWN" "cannot connect"
echo "remote_redis: ok"
