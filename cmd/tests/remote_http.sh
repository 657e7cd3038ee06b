# cmd/tests/remote_http.sh -- the HTTP remote cache against a real nginx
# with WebDAV on 127.0.0.1: two machines (two caches) sharing one remote,
# the second compiling nothing; layouts (bazel's ac/ and cas/ checked on
# the server's disk); GPUCC_REMOTE, the cache's config
# and --no-remote; push and pull; and every fault (500, 429, an object
# truncated, bit-flipped or swapped on the server's disk, a server killed
# mid-request, one frozen by SIGSTOP, a full one refusing writes, a dead
# one), each a compile that succeeds with one warning naming the remote and
# an image byte-identical to a local-only build; a rejected object deleted
# from a writable remote, kept on a read-only one, and nothing deleted
# after a transfer that failed (a 204, a body cut short before the close);
# a remote's total time; specs refused (a query, a CR, long values); trust
# files read whole; S3's SigV4 signatures recomputed
# (cmd/tests/remote_sigv4.py).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/remote_helpers.sh"

start_nginx "$TEST_DIR/nginx"
STORE=$TEST_DIR/nginx/store
BASE=http://127.0.0.1:$NGINX_PORT
URL=$BASE/cache

# The reference: a local-only build.
compile_with ref ref.gpucc --no-remote
[ "$(json_count compiled)" = 2 ] || fail "the reference compiled $(json_count compiled) entries, not 2"

# Machine A compiles and uploads; machine B compiles nothing.
uploads A a.gpucc --remote "$URL"
objects_are_entries "$STORE/cache" A
hits_remote B b.gpucc --remote "$URL"
expect_exit 0 "$GPUCC" cache stats --cache B --json
assert_grep '"remote": {"hits": 2, "misses": 0, "errors": 0, "timeouts": 0, "bytes_in": [1-9]' out
expect_exit 0 "$GPUCC" cache stats --cache B
assert_grep '^remote hits  *2$' out
expect_exit 0 "$GPUCC" cache stats --cache B --reset
expect_exit 0 "$GPUCC" cache stats --cache B --json
assert_grep '"remote": {"hits": 0, "misses": 0, "errors": 0, "timeouts": 0, "bytes_in": 0, "bytes_out": 0}' out
expect_exit 0 "$GPUCC" cache stats --cache B
assert_no_grep '^remote hits' out
# The counters' line is rewritten in place under the lock, not as a new
# file renamed over the old one: the reset left no tail of the longer line
# before it, and a run that hits keeps the file's inode.  A symlink in the
# file's place is replaced by a file, never written through.
zeros="gpucc-remote-stats 1 hits=0 misses=0 errors=0 timeouts=0 bytes_in=0 bytes_out=0"
[ "$(cat B/remote-stats)" = "$zeros" ] || fail "B/remote-stats after a reset: $(cat B/remote-stats)"
inode=$(stat -c %i B/remote-stats)
rm -f B/v1/*/*.gpucc
hits_remote B b.gpucc --remote "$URL"
[ "$(stat -c %i B/remote-stats)" = "$inode" ] || fail "the counters' file was replaced, not rewritten"
expect_exit 0 "$GPUCC" cache stats --cache B --json
assert_grep '"remote": {"hits": 2, "misses": 0, "errors": 0, "timeouts": 0, "bytes_in": [1-9]' out
echo "$zeros" > elsewhere
rm B/remote-stats
ln -s "$PWD/elsewhere" B/remote-stats
rm -f B/v1/*/*.gpucc
hits_remote B b.gpucc --remote "$URL"
[ -f B/remote-stats ] && [ ! -L B/remote-stats ] || fail "the symlink at B/remote-stats is still there"
[ "$(cat elsewhere)" = "$zeros" ] || fail "a remote hit wrote through the symlink: $(cat elsewhere)"
expect_exit 0 "$GPUCC" cache stats --cache B --json
assert_grep '"remote": {"hits": 2, "misses": 0,' out
# B stored what it verified: without the remote it hits locally.
compile_with B b2.gpucc --no-remote
[ "$(json_count hits)" = 2 ] || fail "B's local cache did not keep the remote's entries"
assert_same b2.gpucc ref.gpucc
# A build's log (stdout, not a terminal) says a job's entry came from the
# remote: a line per job.
# shellcheck disable=SC2086
expect_exit 0 "$GPUCC" compile --cache BL --no-cubin -t sm_90 $MODULES -o bl.gpucc --remote "$URL"
[ "$(grep -c ' sm_90:ptx[0-9]*: remote hit$' out)" = 2 ] || fail "no 'remote hit' lines: $(cat out)"
# shellcheck disable=SC2086
expect_exit 0 "$GPUCC" compile --cache BL --no-cubin -t sm_90 $MODULES -o bl.gpucc --remote "$URL"
[ "$(grep -c ' sm_90:ptx[0-9]*: hit$' out)" = 2 ] || fail "no local 'hit' lines: $(cat out)"
# --json counts them, and their payload bytes, apart from local hits.
compile_with BJ bj.gpucc --remote "$URL"
python3 - <<'EOF' || fail "--json's remote hits: $(cat out)"
import json
d = json.load(open("out"))
assert d["hits"] == 2 and d["remote_hits"] == 2, d
assert d["bytes"]["remote_hits"] == sum(p["size"] for r in d["results"] for p in r["payloads"]) > 0, d
assert d["bytes"]["hits"] == 0 and d["bytes"]["compiled"] == 0, d
assert all(r["remote"] for r in d["results"]), d
EOF
compile_with BJ bj.gpucc --remote "$URL"
[ "$(json_count remote_hits)" = 0 ] || fail "local hits counted as the remote's: $(cat out)"

# A local hit never loads libcurl, nor does a remote hit over plain http://
# (gpucc's own HTTP/1.1 client serves it); S3 (SigV4, below) does.
if command -v strace >/dev/null; then
	no_leak_check strace -f -e trace=openat -o trace "$GPUCC" compile --cache B --no-cubin -t sm_90 \
		$MODULES --remote "$URL" >/dev/null 2>err || fail "traced local hit failed"
	assert_no_grep libcurl trace
	no_leak_check strace -f -e trace=openat -o trace "$GPUCC" compile --cache B2 --no-cubin -t sm_90 \
		$MODULES --remote "$URL" -o b2t.gpucc --json >out 2>err || fail "traced remote hit failed"
	[ "$(json_count hits)" = 2 ] || fail "traced remote hit: $(json_count hits) hits, not 2"
	assert_no_grep libcurl trace
else
	LD_DEBUG=files "$GPUCC" compile --cache B2 --no-cubin -t sm_90 $MODULES --remote "$URL" \
		>/dev/null 2>trace || fail "remote hit under LD_DEBUG failed"
	assert_no_grep libcurl trace
fi

# layout=subdirs: objects under their key's first two hex digits.
compile_with C c.gpucc --remote "$BASE/sub|layout=subdirs"
[ "$(find "$STORE/sub" -mindepth 2 -name '*.gpucc' | wc -l)" = 2 ] || fail "subdirs layout: no objects in shards"
compile_with D d.gpucc --remote "$BASE/sub|layout=subdirs"
[ "$(json_count hits)" = 2 ] || fail "subdirs layout: D hit $(json_count hits), not 2"
assert_same d.gpucc ref.gpucc

# layout=bazel: each entry's record under ac/<key>, its payloads under
# cas/<their SHA-256>, as bazel-remote serves them.
BZL=$STORE/cache/bzl
compile_with BZ1 bz1.gpucc --remote "$URL/bzl|layout=bazel"
[ "$(json_count compiled)" = 2 ] || fail "bazel layout: BZ1 compiled $(json_count compiled), not 2"
assert_no_grep warning err
find BZ1/v1 -name '*.gpucc' -printf '%f\n' | sed 's/\.gpucc$//' | sort > keys.want
ls "$BZL/ac" | sort > keys.got
cmp -s keys.want keys.got || fail "bazel layout: ac/ holds $(cat keys.got), not the keys"
for f in BZ1/v1/*/*.gpucc; do tar -tf "$f"; done | sed -n 's|^payloads/\([0-9a-f]\{64\}\).*|\1|p' |
	sort -u > cas.want
ls "$BZL/cas" | sort > cas.got
[ -s cas.want ] && cmp -s cas.want cas.got || fail "bazel layout: cas/ holds $(cat cas.got), not the payloads"
for f in "$BZL"/cas/*; do
	[ "$(sha256sum "$f" | cut -c1-64)" = "$(basename "$f")" ] || fail "bazel layout: $f is not named by its SHA-256"
done
# The record and its payloads give back the entry file (formats/remote.md,
# "The bazel layout"), rebuilt here independently of gpucc.
for f in BZ1/v1/*/*.gpucc; do
	python3 - "$BZL" "$f" <<'EOF2' || fail "bazel layout: $f is not its record and payloads"
import os, sys
store, entry = sys.argv[1], sys.argv[2]
key = os.path.basename(entry)[:-len('.gpucc')]
rec = open(os.path.join(store, 'ac', key), 'rb').read()
magic, count, rest = rec.split(b'\n', 2)
assert magic == b'gpucc-remote-record 1'
spans = [rest.split(b'\n', int(count))[i].split() for i in range(int(count))]
skeleton = rest.split(b'\n', int(count))[int(count)] if int(count) else rest
out, used = b'', 0
for offset, size, digest in spans:
    take = int(offset) - len(out)
    out += skeleton[used:used + take]
    used += take
    payload = open(os.path.join(store, 'cas', digest.decode()), 'rb').read()
    assert len(payload) == int(size)
    out += payload
out += skeleton[used:]
assert out == open(entry, 'rb').read()
EOF2
done
hits_remote BZ2 bz2.gpucc --remote "$URL/bzl|layout=bazel"
for f in BZ1/v1/*/*.gpucc; do
	cmp -s "$f" "BZ2/${f#BZ1/}" || fail "bazel layout: BZ2's $f is not BZ1's"
done
# A payload bit-flipped on the server's disk: the record naming it is
# rejected and, the remote being writable, deleted (the payload may be
# others' too); read-only, it is kept.
cp -r "$BZL" "$STORE/cache/bzlflip"
cas=$(head -1 cas.want)
python3 -c 'import sys; p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[len(b) // 2] ^= 1; open(p, "wb").write(bytes(b))' \
	"$STORE/cache/bzlflip/cas/$cas"
named=$(grep -l "$cas" "$STORE"/cache/bzlflip/ac/*)
[ -n "$named" ] || fail "bazel layout: no record names payload $cas"
compile_with BZR bzr.gpucc --remote "$URL/bzlflip|layout=bazel|read-only"
assert_same bzr.gpucc ref.gpucc
assert_one_remote_warning "$URL/bzlflip"
assert_grep "rejected: a payload's bytes do not have the SHA-256 of its name" err
for f in $named; do [ -f "$f" ] || fail "bazel layout: a read-only remote lost $f"; done
compile_with BZW bzw.gpucc --remote "$URL/bzlflip|layout=bazel"
assert_same bzw.gpucc ref.gpucc
assert_one_remote_warning "$URL/bzlflip"
for f in $named; do [ ! -e "$f" ] || fail "bazel layout: rejected record $f was not deleted"; done
[ "$(ls "$STORE/cache/bzlflip/ac" | wc -l)" = $((2 - $(echo "$named" | wc -l))) ] ||
	fail "bazel layout: a record that verified was deleted"
# A record cut short: rejected and deleted.
cp -r "$BZL" "$STORE/cache/bzlcut"
record=$(ls "$STORE"/cache/bzlcut/ac/* | head -1)
truncate -s 100 "$record"
compile_with BZC bzc.gpucc --remote "$URL/bzlcut|layout=bazel"
assert_same bzc.gpucc ref.gpucc
assert_one_remote_warning "$URL/bzlcut"
assert_grep "rejected: the action-cache record is malformed" err
[ ! -e "$record" ] || fail "bazel layout: the record cut short was not deleted"
expect_exit 129 "$GPUCC" compile --cache BZX --no-cubin -t sm_90 vector_add.ll --remote "$URL|layout=ant"
assert_grep "bad value 'ant' for layout" err

# gpucc's own HTTP/1.1 client against a server nginx cannot play
# (python3's http.server over the objects above): bodies in chunks, bodies
# until the connection closes, a body cut short, and a server that closes a
# kept connection when the next request comes (the request is retried once
# on a fresh connection); 204 (no content) to a GET, and bodies until the
# connection closes cut short (every one, or only cas/'s).  What each
# request carried is logged; a DELETE removes the file, as a writable
# WebDAV server would.
cat > pyserver.py <<'EOF2'
import http.server, os, socketserver, sys, time
root, log = sys.argv[1], open(sys.argv[2], 'a', buffering=1)
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def log_message(self, *a): pass
    def do_GET(self):
        self.served = getattr(self, 'served', 0) + 1
        log.write('%s %s|%s|%s\n' % (self.command, self.path, self.headers.get('Authorization', ''),
                                     self.headers.get('X-Team', '')))
        mode, _, rest = self.path.lstrip('/').partition('/')
        if mode == 'idle' and self.served > 1:
            self.close_connection = True  # closed as the next request comes
            return
        if mode == 'hang':
            time.sleep(3600)  # answers nothing, for longer than any test
        if mode == 'nocontent':
            self.send_response(204); self.end_headers()
            return
        try:
            body = open(os.path.join(root, rest), 'rb').read()
        except OSError:
            self.send_response(404); self.send_header('Content-Length', '0'); self.end_headers()
            return
        self.send_response(200)
        if mode == 'chunked':
            self.send_header('Transfer-Encoding', 'chunked'); self.end_headers()
            for i in range(0, len(body), 1000):
                part = body[i:i + 1000]
                self.wfile.write(b'%x;ext=1\r\n%s\r\n' % (len(part), part))
            self.wfile.write(b'0\r\nX-Trailer: yes\r\n\r\n')
        elif mode == 'close':
            self.send_header('Connection', 'close'); self.end_headers()
            self.wfile.write(body); self.close_connection = True
        elif mode == 'closecut' or (mode == 'cutcas' and '/cas/' in rest):
            self.send_header('Connection', 'close'); self.end_headers()
            self.wfile.write(body[:len(body) // 2]); self.close_connection = True
        elif mode == 'cut':
            self.send_header('Content-Length', str(len(body))); self.end_headers()
            self.wfile.write(body[:len(body) // 2]); self.close_connection = True
        else:
            self.send_header('Content-Length', str(len(body))); self.end_headers()
            self.wfile.write(body)
    def do_DELETE(self):
        log.write('%s %s\n' % (self.command, self.path))
        mode, _, rest = self.path.lstrip('/').partition('/')
        try:
            os.unlink(os.path.join(root, rest))
            self.send_response(204)
        except OSError:
            self.send_response(404)
        self.send_header('Content-Length', '0'); self.end_headers()
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    def handle_error(self, *a): pass  # a client that hung up early
s = S(('127.0.0.1', 0), H)
open(sys.argv[3] + '.tmp', 'w').write(str(s.server_address[1]))
os.rename(sys.argv[3] + '.tmp', sys.argv[3])
s.serve_forever()
EOF2
python3 pyserver.py "$STORE/cache" py.log py.port &
SERVER_PIDS="$SERVER_PIDS $!"
for _ in $(seq 100); do [ -s py.port ] && break; sleep 0.1; done
[ -s py.port ] || fail "the python3 server did not start"
PY=http://127.0.0.1:$(cat py.port)
compile_with PCH pch.gpucc --remote "http://alice:pa55@127.0.0.1:$(cat py.port)/chunked|header=X-Team:gpu"
[ "$(json_count hits)" = 2 ] || { cat err >&2; fail "chunked: hit $(json_count hits), not 2"; }
assert_same pch.gpucc ref.gpucc
assert_no_grep warning err
[ "$(grep -c '^GET /chunked/.*|Basic YWxpY2U6cGE1NQ==|gpu$' py.log)" = 2 ] ||
	{ cat py.log >&2; fail "chunked: the GETs did not carry basic auth and the extra header"; }
compile_with PCL pcl.gpucc --remote "$PY/close"
[ "$(json_count hits)" = 2 ] || { cat err >&2; fail "body until close: hit $(json_count hits), not 2"; }
assert_same pcl.gpucc ref.gpucc
assert_no_grep warning err
compile_with PCUT pcut.gpucc --remote "$PY/cut"
assert_same pcut.gpucc ref.gpucc
assert_one_remote_warning "$PY/cut"
assert_grep "closed the connection before the response's end" err
[ "$(json_count hits)" = 0 ] || fail "a body cut short was a hit"
# A transfer that fails deletes nothing: a 204 to a GET is no object, and
# a body that ended at the connection's close yet does not verify may have
# been cut on the way, so the server's copies (whole here) are kept.
mkdir -p "$STORE/cache/pyflat" orig
cp "$STORE"/cache/*.gpucc "$STORE/cache/pyflat/"
cp -r "$STORE/cache/pyflat" orig/flat
cp -r "$BZL" "$STORE/cache/pybzl"
cp -r "$BZL" orig/bzl
kept_all() { # DIR ORIG: every file of ORIG still in DIR, unchanged
	local f
	for f in $(cd "$2" && find . -type f); do
		cmp -s "$2/$f" "$1/$f" || fail "$FAULT: $1/$f was deleted or changed"
	done
}
for mode in "nocontent HTTP status 204 for GET" "closecut maybe cut short in transit"; do
	FAULT=${mode%% *}
	: > py.log
	compile_with "P$FAULT" "p$FAULT.gpucc" --remote "$PY/$FAULT/pyflat"
	assert_same "p$FAULT.gpucc" ref.gpucc
	assert_one_remote_warning "$PY/$FAULT/pyflat"
	assert_grep "${mode#* }" err
	[ "$(json_count hits)" = 0 ] || fail "$FAULT: a hit"
	assert_no_grep '^DELETE' py.log
	kept_all "$STORE/cache/pyflat" orig/flat
done
for mode in closecut cutcas; do
	FAULT=bazel-$mode
	: > py.log
	compile_with "PB$mode" "pb$mode.gpucc" --remote "$PY/$mode/pybzl|layout=bazel"
	assert_same "pb$mode.gpucc" ref.gpucc
	assert_one_remote_warning "$PY/$mode/pybzl"
	assert_grep "maybe cut short in transit" err
	assert_no_grep '^DELETE' py.log
	kept_all "$STORE/cache/pybzl" orig/bzl
done
# A remote's batches in one process have a total time (total-timeout=):
# a server that answers nothing, under a timeout of ten minutes, costs
# the run that total, then one warning.
FAULT=total
compile_with PHANG phang.gpucc --remote "$PY/hang/pyflat|timeout=600000|total-timeout=300"
assert_same phang.gpucc ref.gpucc
assert_one_remote_warning "$PY/hang/pyflat"
assert_grep "its total time in this run (total-timeout=300 ms) ran out" err
# layout=bazel makes two rounds of GETs (ac/, then cas/) in one process:
# the second finds its kept connections closed by the server.
: > py.log
compile_with PID pid.gpucc --remote "$PY/idle/bzl|layout=bazel|bearer=t0ken"
[ "$(json_count hits)" = 2 ] || { cat err >&2; fail "idle close: hit $(json_count hits), not 2"; }
assert_same pid.gpucc ref.gpucc
assert_no_grep warning err
grep -q '^GET /idle/bzl/cas/.*|Bearer t0ken|$' py.log || fail "idle close: no bearer token sent"
[ "$(grep -c '^GET /idle/bzl/cas/' py.log)" -gt "$(ls "$BZL/cas" | wc -l)" ] ||
	fail "idle close: no request was retried on a fresh connection"

# GPUCC_REMOTE, the cache's config, and --no-remote over both.
GPUCC_REMOTE="$URL" compile_with E e.gpucc
[ "$(json_count hits)" = 2 ] || fail "GPUCC_REMOTE was not used"
mkdir F && echo "remote = $URL|timeout=5000" > F/config
compile_with F f.gpucc
[ "$(json_count hits)" = 2 ] || fail "the config's remote was not used"
assert_no_grep warning err
GPUCC_REMOTE="$URL" compile_with G g.gpucc --no-remote
[ "$(json_count compiled)" = 2 ] || fail "--no-remote still used GPUCC_REMOTE"
GPUCC_REMOTE="gopher://x" compile_with G2 g2.gpucc
assert_grep "^gpucc compile: warning: GPUCC_REMOTE: remote 'gopher://x': unknown scheme" err
expect_exit 129 "$GPUCC" compile --cache G3 --no-cubin -t sm_90 vector_add.ll --remote "$URL|bogus"
assert_grep "unknown attribute 'bogus'" err
# A URL with a query, a fragment or a control character, and an attribute
# value over 4096 bytes or with a CR, are refused: one line naming the
# remote and the defect (the CR spelt '?'), never sent nor cut.
long=$(head -c 5000 /dev/zero | tr '\0' t)
for bad in "$URL?x=1|'?' in the URL" "$URL#top|'#' in the URL" \
	"$URL"$'\r'"|a control character (0x0d) in the URL" \
	"$URL|bearer=$long|the value of 'bearer' is longer than 4096 bytes" \
	"$URL|header=X-Team:a"$'\r'"b|the value of 'header' holds a control character (0x0d)" \
	"$URL|read"$'\r'"-only|an attribute's name holds a control character (0x0d)"; do
	expect_exit 129 "$GPUCC" compile --cache G3 --no-cubin -t sm_90 vector_add.ll --remote "${bad%|*}"
	[ "$(wc -l < err)" = 1 ] || { cat err >&2; fail "'${bad#*|}': not one line"; }
	assert_grep "remote '$URL[^']*': ${bad##*|}" err
done
expect_exit 129 "$GPUCC" compile --cache G3 --no-cubin -t sm_90 vector_add.ll --remote "$URL" --no-remote
# A password in a URL is never printed.
compile_with G4 g4.gpucc --remote "http://user:secret@127.0.0.1:$NGINX_PORT/fail500"
assert_no_grep secret err
assert_grep "remote 'http://user:\*\*\*@" err

# A read-only remote (the server refuses writes: limit_except) serves hits
# and is never written to.
compile_with RO ro.gpucc --remote "$BASE/ro|read-only"
[ "$(json_count hits)" = 2 ] || fail "read-only remote: no hits"
assert_no_grep warning err
assert_no_grep '"PUT /ro/' "$TEST_DIR/nginx/access.log"

# ---- faults: each a miss with one warning, and the same image ----------------------
fault() { # NAME CACHE URL PATTERN [ARGS...]
	local name=$1 cache=$2 url=$3 pattern=$4
	FAULT=$name
	shift 4
	compile_with "$cache" "$cache.gpucc" --remote "$url" "$@"
	assert_same "$cache.gpucc" ref.gpucc
	assert_one_remote_warning "$url"
	assert_grep "$pattern" err
	[ "$(json_count compiled)" -ge 1 ] || fail "$name: nothing compiled, yet the remote failed"
}
fault "500" F500 "$BASE/fail500" "HTTP status 500 for GET"
fault "429" F429 "$BASE/fail429" "HTTP status 429 for GET"
expect_exit 0 "$GPUCC" cache stats --cache F500 --json
# One error or two: the two GETs run in parallel, and the first to fail
# disables the remote.
assert_grep '"remote": {"hits": 0, "misses": 2, "errors": [12],' out

# Objects damaged on the server's disk.
damaged() { # DIR: a copy of the uploaded objects
	mkdir -p "$STORE/cache/$1"
	cp "$STORE"/cache/*.gpucc "$STORE/cache/$1/"
	ls "$STORE/cache/$1"/*.gpucc | head -1
}
victim=$(damaged trunc)
size=$(stat -c %s "$victim")
truncate -s $((size / 2)) "$victim"
fault truncated FTRUNC "$URL/trunc" "rejected"
victim=$(damaged flip)
python3 - "$victim" <<'EOF'
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
# A byte of the first payload: past the manifest's 512-byte header and
# record, inside the archive's data (the last 1 KiB is the end marker).
i = len(b) - 1024 - 600
b[i] ^= 0x01
open(p, 'wb').write(bytes(b))
EOF
# A rejected object stays on a read-only remote, and is deleted from a
# writable one (DELETE), so that the next writer replaces it.
compile_with FFLIPRO FFLIPRO.gpucc --remote "$URL/flip|read-only"
assert_same FFLIPRO.gpucc ref.gpucc
assert_one_remote_warning "$URL/flip"
[ -f "$victim" ] || fail "a read-only remote's rejected object was deleted"
fault bit-flipped FFLIP "$URL/flip" "rejected"
[ ! -e "$victim" ] || fail "the rejected object was not deleted from a writable remote"
[ "$(ls "$STORE/cache/flip" | wc -l)" = 1 ] || fail "an object that verified was deleted too"
# (nginx logs a request once it has answered it: wait for the line.)
for _ in $(seq 100); do
	! grep -q "\"DELETE /cache/flip/$(basename "$victim") " "$TEST_DIR/nginx/access.log" || break
	sleep 0.1
done
grep -q "\"DELETE /cache/flip/$(basename "$victim") " "$TEST_DIR/nginx/access.log" || fail "no DELETE logged"
compile_with FFLIP2 FFLIP2.gpucc --remote "$URL/flip"
assert_no_grep warning err
cmp -s "$victim" "FFLIP2/v1/$(basename "$victim" | cut -c1-2)/$(basename "$victim")" ||
	fail "the next writer did not replace the deleted object"
mkdir -p "$STORE/cache/swap"
set -- "$STORE"/cache/*.gpucc
cp "$1" "$STORE/cache/swap/$(basename "$2")"
cp "$2" "$STORE/cache/swap/$(basename "$1")"
fault swapped FSWAP "$URL/swap" "rejected: .*another key"
# An object under its own key whose fields were edited (-O2 made -O3 in its
# manifest, the sizes kept): its key, recomputed from the fields, is another.
victim=$(damaged fields)
python3 - "$victim" <<'EOF' || fail "no -O level to edit in the object"
import sys
p = sys.argv[1]
b = open(p, 'rb').read()
assert b.count(b'"opt-level":"2"') == 1
open(p, 'wb').write(b.replace(b'"opt-level":"2"', b'"opt-level":"3"'))
EOF
fault edited FFIELDS "$URL/fields" "rejected: .*key components"

# A full server: reads miss, the upload is refused (507).
compile_with FULL full.gpucc --remote "$BASE/full"
assert_same full.gpucc ref.gpucc
assert_one_remote_warning "$BASE/full"
assert_grep "uploading: HTTP status 507 for PUT" err

# A server frozen by SIGSTOP: the timeout bounds the wait.
kill -STOP "$NGINX_PID"
fault frozen FSTOP "$URL" "timed out" 
kill -CONT "$NGINX_PID"

# A server killed while a request waits on it (frozen first, so that the
# request is surely in flight when it dies; no timeout would end it).
kill -STOP "$NGINX_PID"
"$GPUCC" compile --cache FKILL --no-cubin -t sm_90 $MODULES -o FKILL.gpucc \
	--remote "$URL|timeout=600000" >out 2>err &
gpucc_pid=$!
wait_connected "$gpucc_pid" "$NGINX_PORT" || { stop_pid "$gpucc_pid"; fail "gpucc never connected"; }
stop_pid "$NGINX_PID"
wait "$gpucc_pid" || { cat err >&2; fail "compile failed when its remote was killed"; }
assert_same FKILL.gpucc ref.gpucc
assert_one_remote_warning "$URL"

# A dead remote (nothing listens).
fault dead FDEAD "$URL" "Couldn't connect\|Connection refused"

# ---- push and pull ------------------------------------------------------------------
start_nginx "$TEST_DIR/nginx2"
STORE=$TEST_DIR/nginx2/store
URL=http://127.0.0.1:$NGINX_PORT/cache
expect_exit 0 "$GPUCC" snapshot ref.gpucc -o ref.snap
push_then_pull "$URL" ref.snap "$URL/nothing-here"
expect_exit 129 "$GPUCC" cache pull ref.gpucc --cache Q3 --no-remote
expect_exit 1 "$GPUCC" cache push ref.gpucc --cache P2 --remote "http://127.0.0.1:$NGINX_PORT/fail500"
assert_grep "HTTP status 500" err

# ---- S3: path-style, signed with SigV4 and the payload's SHA-256 ------------------
# nginx stands in for the server (it checks no signature) and logs what each
# request carried.
S3="s3://bkt/ci|endpoint=http://127.0.0.1:$NGINX_PORT|region=us-test-1"
AWS_ACCESS_KEY_ID=AKIDTEST AWS_SECRET_ACCESS_KEY=s3secret compile_with S3A s3a.gpucc --remote "$S3"
[ "$(json_count compiled)" = 2 ] || fail "S3: A compiled $(json_count compiled)"
assert_no_grep warning err
[ "$(find "$STORE/bkt/ci" -name '*.gpucc' | wc -l)" = 2 ] || fail "S3: not uploaded path-style to bkt/ci/"
S3LOG=$TEST_DIR/nginx2/s3.log
grep -q '^PUT ' "$S3LOG" || fail "S3: no PUT logged"
while IFS='|' read -r request auth sha _; do
	printf '%s' "$auth" | grep -Eq '^AWS4-HMAC-SHA256 Credential=AKIDTEST/[0-9]{8}/us-test-1/s3/aws4_request, SignedHeaders=[^ ]*x-amz-content-sha256[^ ]*, Signature=[0-9a-f]{64}$' ||
		fail "S3: '$request' not signed with SigV4 as expected: $auth"
	case $request in
	PUT*) [ "$sha" = "$(sha256sum "$STORE${request#PUT }" | cut -c1-64)" ] ||
		fail "S3: '$request' sent x-amz-content-sha256 $sha, not its body's digest" ;;
	GET*) [ "$sha" = e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 ] ||
		fail "S3: '$request' sent x-amz-content-sha256 $sha, not an empty body's" ;;
	esac
done < "$S3LOG"
AWS_ACCESS_KEY_ID=AKIDTEST AWS_SECRET_ACCESS_KEY=s3secret compile_with S3B s3b.gpucc --remote "$S3"
[ "$(json_count hits)" = 2 ] || fail "S3: B hit $(json_count hits), not 2"
assert_same s3b.gpucc ref.gpucc
AWS_ACCESS_KEY_ID=AKIDTEST AWS_SECRET_ACCESS_KEY=s3secret AWS_SESSION_TOKEN=tok3n \
	compile_with S3C s3c.gpucc --remote "$S3"
[ "$(json_count hits)" = 2 ] || fail "S3: C (session token) hit $(json_count hits), not 2"
grep -q '|tok3n$' "$S3LOG" || fail "S3: the session token was not sent"
# Every signature recomputed from what the request carried, for the
# secret, region and service expected (a wrong one of them, or of the
# date or payload hash signed, fails here).
python3 "$(dirname "$0")/remote_sigv4.py" "$S3LOG" AKIDTEST s3secret us-test-1 >sigv4.out ||
	fail "S3: $(cat sigv4.out)"
# The check itself refuses another region or secret.
for wrong in "AKIDTEST s3secret us-east-1" "AKIDTEST s3secreT us-test-1"; do
	# shellcheck disable=SC2086
	! python3 "$(dirname "$0")/remote_sigv4.py" "$S3LOG" $wrong >/dev/null ||
		fail "S3: the SigV4 check passed with $wrong"
done
assert_no_grep s3secret err
assert_no_grep s3secret "$S3LOG"

# ---- signatures --------------------------------------------------------------------
expect_exit 0 "$GPUCC" cache keygen ci.key
grep -E '^[0-9a-f]{64}$' out > trusted || fail "keygen printed no public key"
[ "$(stat -c %a ci.key)" = 600 ] || fail "the private key is not mode 600"
expect_exit 1 "$GPUCC" cache keygen ci.key
expect_exit 0 "$GPUCC" cache keygen other.key
grep -E '^[0-9a-f]{64}$' out > other.pub || fail "keygen printed no public key"
# A trusted writer signs; a reader that trusts its key takes the entries.
compile_with S1 s1.gpucc --remote "$URL/signed|sign=$TEST_DIR/ci.key"
[ "$(json_count compiled)" = 2 ] || fail "the signing writer compiled $(json_count compiled)"
compile_with S2 s2.gpucc --remote "$URL/signed|trust=$TEST_DIR/trusted"
[ "$(json_count hits)" = 2 ] || fail "signed entries were not taken: $(cat err)"
assert_no_grep warning err
assert_same s2.gpucc ref.gpucc
# Unsigned entries (push's), entries signed by another key, and a signature
# altered on the server's disk are misses, with one warning.
signed_fault() { # NAME CACHE PATH PATTERN
	FAULT=$1
	compile_with "$2" "$2.gpucc" --remote "$URL/$3|trust=$TEST_DIR/trusted"
	assert_same "$2.gpucc" ref.gpucc
	assert_one_remote_warning "$URL/$3"
	assert_grep "$4" err
	[ "$(json_count compiled)" -ge 1 ] || fail "$1: nothing compiled"
}
signed_fault unsigned SU "" "not signed"
compile_with S3 s3.gpucc --remote "$URL/forged|sign=$TEST_DIR/other.key"
ls -l "$STORE/cache/forged" > forged.before
signed_fault "untrusted signer" SF forged "which is not trusted"
# What this reader's trust refuses, others may trust: never deleted.
ls -l "$STORE/cache/forged" > forged.after
cmp -s forged.before forged.after || fail "entries of a signer not trusted here were deleted"
[ "$(grep -c '\.gpucc$' forged.after)" -ge 2 ] || fail "the forged remote holds no entries"
# The trust file is read whole: the tail of a long comment line is comment,
# never a key (read in 512-byte pieces, it was one).
{ printf '#%0510d' 0; cat other.pub; cat trusted; } > long-comment
FAULT="long comment"
compile_with S4 s4.gpucc --remote "$URL/forged2|sign=$TEST_DIR/other.key"
compile_with SLC slc.gpucc --remote "$URL/forged2|read-only|trust=$TEST_DIR/long-comment"
assert_same slc.gpucc ref.gpucc
assert_one_remote_warning "$URL/forged2"
assert_grep "which is not trusted" err
# A line that is no key (one over 512 bytes, a key with more after it, a
# NUL byte), a file with no key, or none at all: the remote is disabled
# at its first use, with one warning naming the file and line; the build
# goes on.
{ cat trusted; printf '%0600d\n' 0; } > long-line
{ cat trusted; echo "$(cat other.pub) extra"; } > key-and-more
{ cat trusted; printf 'ab\0cd\n'; } > nul-byte
printf '# nothing\n\n' > no-key
for bad in "long-line line 2: not a public key" "key-and-more line 2: not a public key" \
	"nul-byte line 2: a NUL byte" "no-key holds no public key" "missing No such file"; do
	file=${bad%% *}
	FAULT="trust file $file"
	compile_with "ST$file" "st$file.gpucc" --remote "$URL/signed|trust=$TEST_DIR/$file"
	assert_same "st$file.gpucc" ref.gpucc
	assert_one_remote_warning "$URL/signed"
	assert_grep "trusted keys '$TEST_DIR/$file'.*${bad#* }" err
	[ "$(json_count hits)" = 0 ] || fail "$FAULT: a hit"
done
mkdir -p "$STORE/cache/tampered"
cp "$STORE"/cache/signed/*.gpucc "$STORE/cache/tampered/"
for f in "$STORE"/cache/tampered/*.gpucc; do
	python3 - "$f" <<'EOF2'
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
b[-16 - 64 + 5] ^= 0x80  # a byte of the signature, in the trailer
open(p, 'wb').write(bytes(b))
EOF2
done
signed_fault "altered signature" ST tampered "does not verify"
FAULT="trust file of a private key"
compile_with SX sx.gpucc --remote "$URL/signed|trust=$TEST_DIR/ci.key"
assert_one_remote_warning "$URL/signed"
assert_grep "trusted keys '$TEST_DIR/ci.key', line 1: not a public key" err
echo "remote_http: ok"
