# cmd/tests/remote_s3.sh -- the S3 remote cache against a real S3-protocol
# server on 127.0.0.1: s3rver, a Node.js S3 server from the npm registry
# (Debian 12 packages none), installed by this test into a cache directory
# and started on a port the kernel chose.  The server is first checked to
# speak S3 (CreateBucket, ListBuckets, PUT, HEAD, GET, ListObjectsV2, a
# missing key's 404 NoSuchKey); then two machines (two caches) share one
# bucket, the second compiling nothing; missing objects and buckets are
# misses; push and pull; an unknown access key is one warning and a build
# that succeeds.  s3rver checks the access key but not SigV4 signatures:
# those are recomputed in cmd/tests/remote_http.sh (cmd/tests/remote_sigv4.py).
# Skips, saying why, where Node.js, npm or the package cannot be had.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/remote_helpers.sh"

S3RVER_VERSION=3.7.1

# install_s3rver: sets S3RVER to s3rver's command-line script, installing
# the package (pinned) under the user's cache directory once; into a
# temporary directory renamed into place, so that concurrent runs (the
# plain and the sanitizer builds) never see half an install.
install_s3rver() {
	command -v node >/dev/null || skip "node is not installed (scripts/setup installs nodejs and npm)"
	command -v npm >/dev/null || skip "npm is not installed (scripts/setup installs nodejs and npm)"
	local cache=${XDG_CACHE_HOME:-${HOME:+$HOME/.cache}} tmp
	[ -n "$cache" ] || cache=$BUILDDIR
	local dir=$cache/gpucc-tests/s3rver-$S3RVER_VERSION
	S3RVER=$dir/node_modules/s3rver/bin/s3rver.js
	[ -f "$S3RVER" ] && return 0
	mkdir -p "$cache/gpucc-tests" || skip "cannot create $cache/gpucc-tests for s3rver"
	tmp=$(mktemp -d "$cache/gpucc-tests/s3rver-install.XXXXXX") || skip "cannot create a directory under $cache/gpucc-tests"
	if ! timeout 180 npm install --prefix "$tmp" --no-save --no-audit --no-fund --ignore-scripts \
		--fetch-retries=1 --fetch-timeout=60000 "s3rver@$S3RVER_VERSION" >npm.log 2>&1; then
		rm -rf "$tmp"
		tail -5 npm.log >&2
		skip "npm could not install s3rver@$S3RVER_VERSION (see above)"
	fi
	# Another run may have put its install in place meanwhile: keep that one.
	mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
	[ -f "$S3RVER" ] || fail "s3rver@$S3RVER_VERSION installed without bin/s3rver.js"
}

# start_s3rver DIR: s3rver storing under DIR/data, on a port it asks the
# kernel for (port 0), read back from the line it prints once listening;
# sets S3_PID, S3_PORT.  The bound on tries only keeps a broken setup from
# hanging the suite.
start_s3rver() {
	local dir=$1 tries=0
	mkdir -p "$dir/data"
	node "$S3RVER" -d "$dir/data" -a 127.0.0.1 -p 0 -s >"$dir/s3rver.log" 2>&1 &
	S3_PID=$!
	SERVER_PIDS="$SERVER_PIDS $S3_PID"
	while :; do
		S3_PORT=$(sed -n 's/^S3rver listening on 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$dir/s3rver.log")
		[ -n "$S3_PORT" ] && port_open "$S3_PORT" && return 0
		kill -0 "$S3_PID" 2>/dev/null || break
		tries=$((tries + 1))
		[ "$tries" -lt 3000 ] || break
		sleep 0.02
	done
	cat "$dir/s3rver.log" >&2
	fail "s3rver did not start"
}

# s3 METHOD PATH [FILE]: one anonymous request (s3rver serves those as the
# bucket owner's) to the server, FILE as the body; prints the status, and
# leaves the response's body in ./body.
s3() {
	python3 - "http://127.0.0.1:$S3_PORT" "$@" <<'PY'
import sys, urllib.request, urllib.error
base, method, path = sys.argv[1:4]
data = open(sys.argv[4], 'rb').read() if len(sys.argv) > 4 else None
req = urllib.request.Request(base + path, data=data, method=method)
try:
    resp = urllib.request.urlopen(req, timeout=30)
except urllib.error.HTTPError as e:
    resp = e
status, body = resp.status if hasattr(resp, 'status') else resp.code, resp.read()
open('body', 'wb').write(body)
print(status)
PY
}

install_s3rver
start_s3rver "$TEST_DIR/s3"

# ---- the server speaks S3 --------------------------------------------------------
[ "$(s3 PUT /gpucc)" = 200 ] || fail "s3rver: CreateBucket answered $(cat body)"
[ "$(s3 GET /)" = 200 ] || fail "s3rver: ListBuckets failed"
assert_grep '<ListAllMyBucketsResult.*<Bucket><Name>gpucc</Name>' body
printf 'probe' > probe
[ "$(s3 PUT /gpucc/probe/x probe)" = 200 ] || fail "s3rver: PutObject answered $(cat body)"
[ "$(s3 HEAD /gpucc/probe/x)" = 200 ] || fail "s3rver: HeadObject of a stored object failed"
[ "$(s3 GET /gpucc/probe/x)" = 200 ] || fail "s3rver: GetObject failed"
assert_same body probe
[ "$(s3 HEAD /gpucc/probe/missing)" = 404 ] || fail "s3rver: HeadObject of a missing key is not 404"
[ "$(s3 GET /gpucc/probe/missing)" = 404 ] || fail "s3rver: GetObject of a missing key is not 404"
assert_grep '<Error><Code>NoSuchKey</Code>' body
[ "$(s3 GET /nobucket/x)" = 404 ] || fail "s3rver: a missing bucket is not 404"
assert_grep '<Code>NoSuchBucket</Code>' body

# ---- two machines share one bucket -------------------------------------------------
# s3rver's account (its README); generous timeouts, as a Node.js server on
# a loaded machine may answer slowly and this test is about the protocol.
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
unset AWS_SESSION_TOKEN
ENDPOINT="endpoint=http://127.0.0.1:$S3_PORT|region=us-east-1|connect-timeout=5000|timeout=30000"
S3="s3://gpucc/ci|$ENDPOINT"

compile_with ref ref.gpucc --no-remote
[ "$(json_count compiled)" = 2 ] || fail "the reference compiled $(json_count compiled) entries, not 2"

uploads A a.gpucc --remote "$S3"
# The bucket lists A's two entries under ci/, each byte for byte.
[ "$(s3 GET '/gpucc?list-type=2&prefix=ci/')" = 200 ] || fail "ListObjectsV2 failed"
grep -o '<Key>[^<]*</Key>' body | sed 's|<Key>ci/\(.*\)</Key>|\1|' | sort > keys.got
find A/v1 -name '*.gpucc' -printf '%f\n' | sort > keys.want
[ "$(wc -l < keys.want)" = 2 ] || fail "A's cache holds $(wc -l < keys.want) entries, not 2"
cmp -s keys.want keys.got || fail "the bucket holds $(cat keys.got), not A's entries"
while read -r k; do
	[ "$(s3 GET "/gpucc/ci/$k")" = 200 ] || fail "GET ci/$k failed"
	cmp -s body "A/v1/$(echo "$k" | cut -c1-2)/$k" || fail "the uploaded ci/$k is not A's entry"
done < keys.want

hits_remote B b.gpucc --remote "$S3"
expect_exit 0 "$GPUCC" cache stats --cache B --json
assert_grep '"remote": {"hits": 2, "misses": 0, "errors": 0, "timeouts": 0, "bytes_in": [1-9]' out

# Without credentials, requests go unsigned; s3rver serves them.
(unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY; compile_with U u.gpucc --remote "$S3") || exit 1
[ "$(json_count hits)" = 2 ] || fail "unsigned: U hit $(json_count hits), not 2"
assert_no_grep warning err
assert_same u.gpucc ref.gpucc

# ---- missing objects and buckets ---------------------------------------------------
# A prefix holding nothing: misses (404 NoSuchKey), no error; C then uploads.
compile_with C c.gpucc --remote "s3://gpucc/empty|$ENDPOINT"
[ "$(json_count compiled)" = 2 ] || fail "C compiled $(json_count compiled), not 2"
assert_no_grep warning err
assert_same c.gpucc ref.gpucc
expect_exit 0 "$GPUCC" cache stats --cache C --json
assert_grep '"remote": {"hits": 0, "misses": 2, "errors": 0, "timeouts": 0' out
[ "$(s3 HEAD "/gpucc/empty/$(head -1 keys.want)")" = 200 ] || fail "C did not upload to empty/"
# A missing bucket (404 NoSuchBucket): read-only, only misses; writable,
# the refused upload is one warning, and the build goes on.
compile_with M1 m1.gpucc --remote "s3://nobucket/ci|$ENDPOINT|read-only"
[ "$(json_count compiled)" = 2 ] || fail "M1 compiled $(json_count compiled), not 2"
assert_no_grep warning err
assert_same m1.gpucc ref.gpucc
compile_with M2 m2.gpucc --remote "s3://nobucket/ci|$ENDPOINT"
assert_same m2.gpucc ref.gpucc
assert_one_remote_warning "s3://nobucket/ci"

# ---- an access key the server does not know ----------------------------------------
# 403 InvalidAccessKeyId to every request: one warning, a build that
# succeeds with the image a local build makes.
AWS_ACCESS_KEY_ID=NOSUCHKEY compile_with W w.gpucc --remote "$S3"
[ "$(json_count compiled)" = 2 ] || fail "W compiled $(json_count compiled), not 2"
assert_same w.gpucc ref.gpucc
assert_one_remote_warning "s3://gpucc/ci"
assert_grep "403" err

# ---- push and pull ----------------------------------------------------------------
PUSHED="s3://gpucc/pushed|$ENDPOINT"
push_then_pull "$PUSHED" ref.gpucc "s3://gpucc/nothing-here|$ENDPOINT"

kill -0 "$S3_PID" 2>/dev/null || fail "s3rver died during the test"
