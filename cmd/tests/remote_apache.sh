# cmd/tests/remote_apache.sh -- the HTTP remote cache against a real Apache
# httpd with mod_dav and mod_dav_fs on 127.0.0.1: two machines (two caches)
# sharing one remote, the second compiling nothing; push and pull; a missing
# object a miss; a corrupt one rejected and deleted; and layout=subdirs and
# layout=bazel, whose first PUTs mod_dav refuses (409 Conflict: it makes no
# missing collection), after which gpucc makes the collections (MKCOL) and
# puts again (docs/remote-cache.md, "Apache").
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/remote_helpers.sh"

APACHE=$(command -v apache2 || echo /usr/sbin/apache2)
[ -x "$APACHE" ] || skip "apache2 is not installed (scripts/setup installs it)"
MODULES_DIR=/usr/lib/apache2/modules
for m in mpm_event authz_core dav dav_fs; do
	[ -f "$MODULES_DIR/mod_$m.so" ] || skip "apache2 has no $MODULES_DIR/mod_$m.so"
done

# Apache refuses to serve as root (User root): as root its workers run as
# www-data (or nobody), which must then be able to reach and write the store.
APACHE_USER=""
if [ "$(id -u)" = 0 ]; then
	APACHE_USER=$(id -un www-data 2>/dev/null || id -un nobody 2>/dev/null) ||
		skip "running as root, and no www-data or nobody user for apache2's workers"
	chmod 711 "$TEST_DIR"
fi

# store_dir DIR...: directories the server may write into.
store_dir() {
	mkdir -p "$@"
	[ -z "$APACHE_USER" ] || chown "$APACHE_USER:" "$@"
}

# A graceful stop: SIGTERM makes the parent end its workers (SIGKILL would
# leave them running, holding the port).
APACHE_PID=""
stop_apache() {
	[ -n "$APACHE_PID" ] || return 0
	kill -TERM "$APACHE_PID" 2>/dev/null
	wait "$APACHE_PID" 2>/dev/null
	APACHE_PID=""
}
trap 'stop_apache; stop_servers; remove_test_dirs' EXIT

# start_apache DIR: the document root DIR/store with Dav On, every request
# logged to DIR/logs/access.log as "METHOD PATH STATUS"; sets APACHE_PORT.
start_apache() {
	local dir=$1 user=""
	store_dir "$dir/store" "$dir/run" "$dir/logs"
	[ -z "$APACHE_USER" ] || user="User $APACHE_USER
Group #$(id -g "$APACHE_USER")"
	for _ in 1 2 3 4 5; do
		APACHE_PORT=$(free_port)
		cat > "$dir/httpd.conf" <<EOF
ServerRoot $dir
ServerName 127.0.0.1
Listen 127.0.0.1:$APACHE_PORT
PidFile $dir/run/httpd.pid
DefaultRuntimeDir $dir/run
ErrorLog $dir/logs/error.log
LogLevel warn
$user
LoadModule mpm_event_module $MODULES_DIR/mod_mpm_event.so
LoadModule authz_core_module $MODULES_DIR/mod_authz_core.so
LoadModule dav_module $MODULES_DIR/mod_dav.so
LoadModule dav_fs_module $MODULES_DIR/mod_dav_fs.so
StartServers 1
ServerLimit 2
ThreadsPerChild 16
MinSpareThreads 8
MaxSpareThreads 32
MaxRequestWorkers 32
LimitRequestBody 0
DavLockDB $dir/run/davlock
LogFormat "%m %U %>s" brief
CustomLog $dir/logs/access.log brief
DocumentRoot $dir/store
<Directory />
	Require all denied
</Directory>
<Directory $dir/store>
	Dav On
	Require all granted
</Directory>
EOF
		"$APACHE" -f "$dir/httpd.conf" -DFOREGROUND >>"$dir/start.log" 2>&1 &
		APACHE_PID=$!
		wait_listening "$APACHE_PID" "$APACHE_PORT" && return 0
		stop_apache
	done
	cat "$dir/start.log" "$dir/logs/error.log" >&2
	fail "apache2 did not start"
}

start_apache "$TEST_DIR/apache"
STORE=$TEST_DIR/apache/store
LOG=$TEST_DIR/apache/logs/access.log
# log_count N PATTERN: whether the access log holds N lines matching
# PATTERN.  Apache logs a request after it has answered it, so the client
# can be done before its line is there: wait for the count (up to 10 s)
# before judging it.
log_count() {
	local i
	for i in $(seq 100); do
		[ "$(grep -c "$2" "$LOG")" -lt "$1" ] || break
		sleep 0.1
	done
	[ "$(grep -c "$2" "$LOG")" = "$1" ]
}
# log_has PATTERN: at least one such line (waiting as log_count does).
log_has() {
	local i
	for i in $(seq 100); do
		! grep -q "$1" "$LOG" || return 0
		sleep 0.1
	done
	return 1
}
BASE=http://127.0.0.1:$APACHE_PORT
URL=$BASE/cache
store_dir "$STORE/cache" "$STORE/empty" "$STORE/pp"

# The reference: a local-only build.
compile_with ref ref.gpucc --no-remote
[ "$(json_count compiled)" = 2 ] || fail "the reference compiled $(json_count compiled) entries, not 2"

# Machine A compiles and uploads (201 Created); machine B compiles nothing.
uploads A a.gpucc --remote "$URL"
objects_are_entries "$STORE/cache" A
log_count 2 '^PUT /cache/[0-9a-f]*\.gpucc 201$' || { cat "$LOG" >&2; fail "A's PUTs were not 201"; }
hits_remote B b.gpucc --remote "$URL"
expect_exit 0 "$GPUCC" cache stats --cache B --json
assert_grep '"remote": {"hits": 2, "misses": 0, "errors": 0, "timeouts": 0, "bytes_in": [1-9]' out

# A missing object is a miss (404), with no warning.
compile_with M m.gpucc --remote "$BASE/empty"
[ "$(json_count compiled)" = 2 ] || fail "missing objects: M compiled $(json_count compiled), not 2"
assert_no_grep warning err
assert_same m.gpucc ref.gpucc
log_count 2 '^GET /empty/[0-9a-f]*\.gpucc 404$' || { cat "$LOG" >&2; fail "no 404 for the missing objects"; }
expect_exit 0 "$GPUCC" cache stats --cache M --json
assert_grep '"remote": {"hits": 0, "misses": 2, "errors": 0,' out

# push, then pull (HEAD for what is there, PUT, GET).
expect_exit 0 "$GPUCC" snapshot ref.gpucc -o ref.snap
push_then_pull "$BASE/pp" ref.snap "$BASE/nothing-here"

# A bit flipped on the server's disk: rejected (a miss, one warning, never
# a hit), and deleted from the writable remote; the other object stays.
mkdir -p "$STORE/flip"
cp "$STORE"/cache/*.gpucc "$STORE/flip/"
[ -z "$APACHE_USER" ] || chown -R "$APACHE_USER:" "$STORE/flip"
victim=$(ls "$STORE"/flip/*.gpucc | head -1)
python3 - "$victim" <<'EOF'
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
b[len(b) - 1024 - 600] ^= 0x01  # inside the first payload, before the end marker
open(p, 'wb').write(bytes(b))
EOF
FAULT=bit-flipped
compile_with FLIP flip.gpucc --remote "$BASE/flip"
assert_same flip.gpucc ref.gpucc
assert_one_remote_warning "$BASE/flip"
assert_grep "rejected" err
[ "$(json_count compiled)" -ge 1 ] || fail "the corrupt object was a hit"
[ ! -e "$victim" ] || fail "the rejected object was not deleted"
log_has "^DELETE /flip/$(basename "$victim") 204$" || { cat "$LOG" >&2; fail "no DELETE answered 204"; }
[ "$(ls "$STORE/flip" | wc -l)" = 1 ] || fail "an object that verified was deleted too"

# layout=subdirs: mod_dav creates no missing parent collection on PUT (no
# create_full_put_path as in nginx): a PUT into a shard not there yet is 409
# Conflict; gpucc then makes the shards it needs (MKCOL, one each) and puts
# those objects again.  No warning, nothing lost.
store_dir "$STORE/sub"
compile_with C c.gpucc --remote "$BASE/sub|layout=subdirs"
assert_same c.gpucc ref.gpucc
assert_no_grep warning err
[ "$(json_count compiled)" = 2 ] || fail "subdirs layout: C compiled $(json_count compiled), not 2"
log_has '^PUT /sub/[0-9a-f][0-9a-f]/[0-9a-f]*\.gpucc 409$' || { cat "$LOG" >&2; fail "no PUT answered 409"; }
log_has '^MKCOL /sub/[0-9a-f][0-9a-f]/ 201$' || { cat "$LOG" >&2; fail "no MKCOL made a shard"; }
log_count 2 '^PUT /sub/[0-9a-f][0-9a-f]/[0-9a-f]*\.gpucc 201$' ||
	{ cat "$LOG" >&2; fail "the objects were not put again once their shards existed"; }
[ "$(find "$STORE/sub" -mindepth 2 -name '*.gpucc' | wc -l)" = 2 ] || fail "subdirs layout: no objects in shards"
hits_remote E e.gpucc --remote "$BASE/sub|layout=subdirs"
# A push of the same entries finds them present; into an empty store it
# makes the shards again.
store_dir "$STORE/sub2"
expect_exit 0 "$GPUCC" cache push ref.gpucc --cache P --remote "$BASE/sub2|layout=subdirs"
assert_grep "^2 uploaded" out
[ "$(find "$STORE/sub2" -mindepth 2 -name '*.gpucc' | wc -l)" = 2 ] || fail "subdirs push: no objects in shards"
# A collection that cannot be made (the remote's own path is missing: 409
# for MKCOL too) is a failed upload, reported once, the build unharmed.
FAULT="subdirs under a missing path"
compile_with F f.gpucc --remote "$BASE/no-such-dir/sub|layout=subdirs"
assert_same f.gpucc ref.gpucc
assert_one_remote_warning "$BASE/no-such-dir/sub"
assert_grep "HTTP status 409 for MKCOL" err

# layout=bazel: the same for ac/ and cas/.
store_dir "$STORE/bzl"
compile_with BZ1 bz1.gpucc --remote "$BASE/bzl|layout=bazel"
assert_same bz1.gpucc ref.gpucc
[ "$(json_count compiled)" = 2 ] || fail "bazel layout: BZ1 compiled $(json_count compiled), not 2"
assert_no_grep warning err
log_has '^MKCOL /bzl/cas/ 201$' && log_has '^MKCOL /bzl/ac/ 201$' ||
	{ cat "$LOG" >&2; fail "bazel layout: cas/ and ac/ were not made"; }
find BZ1/v1 -name '*.gpucc' -printf '%f\n' | sed 's/\.gpucc$//' | sort > keys.want
ls "$STORE/bzl/ac" | sort > keys.got
cmp -s keys.want keys.got || fail "bazel layout: ac/ holds $(cat keys.got), not the keys"
[ -n "$(ls "$STORE/bzl/cas")" ] || fail "bazel layout: cas/ is empty"
for f in "$STORE"/bzl/cas/*; do
	[ "$(sha256sum "$f" | cut -c1-64)" = "$(basename "$f")" ] || fail "bazel layout: $f is not named by its SHA-256"
done
hits_remote BZ2 bz2.gpucc --remote "$BASE/bzl|layout=bazel"
echo "remote_apache: ok"
