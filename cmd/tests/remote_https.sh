# cmd/tests/remote_https.sh -- the HTTP remote cache over TLS, against a
# real nginx on 127.0.0.1 with a certificate from a CA this test makes:
# two machines sharing one remote (the second compiling nothing), the CA
# named by cacert=PATH, CURL_CA_BUNDLE or SSL_CERT_FILE; without it, or for
# a host name the certificate does not name, a miss with one warning (TLS
# is never unverified); bearer token, extra header and basic auth sent;
# and, where nginx speaks HTTP/2, each run's requests multiplexed over one
# connection.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/remote_helpers.sh"
command -v openssl >/dev/null || skip "openssl is not installed (scripts/setup installs it)"
# Only what the test names is trusted.
unset CURL_CA_BUNDLE SSL_CERT_FILE

# A CA, and a server certificate it signs for 127.0.0.1 only.
mkdir tls
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
	-subj /CN=gpucc-test-ca -keyout tls/ca.key -out tls/ca.pem \
	-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
	2>tls/log || fail "openssl: cannot make the CA: $(cat tls/log)"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=127.0.0.1 \
	-keyout tls/server.key -out tls/server.csr 2>tls/log || fail "openssl: $(cat tls/log)"
printf '%s\n' subjectAltName=IP:127.0.0.1 basicConstraints=CA:FALSE extendedKeyUsage=serverAuth > tls/ext
openssl x509 -req -days 2 -in tls/server.csr -CA tls/ca.pem -CAkey tls/ca.key -CAcreateserial \
	-extfile tls/ext -out tls/server.pem 2>tls/log || fail "openssl: cannot sign: $(cat tls/log)"
CA=$TEST_DIR/tls/ca.pem

NGINX_TLS_CERT=$TEST_DIR/tls/server.pem NGINX_TLS_KEY=$TEST_DIR/tls/server.key \
	start_nginx "$TEST_DIR/nginx"
STORE=$TEST_DIR/nginx/store
LOG=$TEST_DIR/nginx/tls.log
BASE=https://127.0.0.1:$NGINX_TLS_PORT
URL=$BASE/cache

# The log lines of the last run: lines after the first $mark.
mark=0
mark_log() { mark=$(wc -l < "$LOG"); }
run_log() { tail -n +$((mark + 1)) "$LOG"; }

compile_with ref ref.gpucc --no-remote
[ "$(json_count compiled)" = 2 ] || fail "the reference compiled $(json_count compiled) entries, not 2"

# Machine A compiles and uploads over HTTPS; machine B compiles nothing.
mark_log
uploads A a.gpucc --remote "$URL|cacert=$CA"
objects_are_entries "$STORE/cache" A
run_log > a.log
[ "$(grep -c ' PUT /cache/.* 201 ' a.log)" = 2 ] || { cat a.log >&2; fail "A's 2 PUTs are not in the log"; }
mark_log
hits_remote B b.gpucc --remote "$URL|cacert=$CA"
run_log > b.log
[ "$(grep -c ' GET /cache/.* 200 ' b.log)" = 2 ] || { cat b.log >&2; fail "B's 2 GETs are not in the log"; }

# HTTP/2: every request of a run on one connection, its streams
# multiplexed (libcurl waits for ALPN rather than opening a connection per
# transfer); over HTTP/1.1 the two parallel GETs would take two.
if nginx_has_http2 "$(command -v nginx || echo /usr/sbin/nginx)"; then
	for run in a b; do
		[ "$(cut -d' ' -f1 "$run.log" | sort -u)" = HTTP/2.0 ] ||
			{ cat "$run.log" >&2; fail "$run's requests were not all HTTP/2"; }
		[ "$(cut -d' ' -f2 "$run.log" | sort -u | wc -l)" = 1 ] ||
			{ cat "$run.log" >&2; fail "$run's requests took more than one connection"; }
	done
else
	echo "remote_https: nginx lacks HTTP/2; multiplexing not checked" >&2
fi

# The CA from the environment, curl's name for it, then OpenSSL's.
CURL_CA_BUNDLE=$CA compile_with E1 e1.gpucc --remote "$URL"
[ "$(json_count hits)" = 2 ] || fail "CURL_CA_BUNDLE: hit $(json_count hits), not 2: $(cat err)"
assert_no_grep warning err
SSL_CERT_FILE=$CA compile_with E2 e2.gpucc --remote "$URL"
[ "$(json_count hits)" = 2 ] || fail "SSL_CERT_FILE: hit $(json_count hits), not 2: $(cat err)"
assert_no_grep warning err

# Not trusted: a miss with one warning naming the TLS failure, and the
# build as without a remote.  The certificate trusted but for another name
# than the URL's host: the same.  (The connect timeout covers the TLS
# handshake and loading the system's CA bundle for it: generous here, so
# that a busy machine's slowness is never the failure seen.)
compile_with NOCA noca.gpucc --remote "$URL|connect-timeout=30000"
assert_same noca.gpucc ref.gpucc
FAULT="no CA" assert_one_remote_warning "$URL"
assert_grep "SSL certificate problem" err
[ "$(json_count compiled)" = 2 ] || fail "no CA: compiled $(json_count compiled), not 2"
HOSTURL=https://localhost:$NGINX_TLS_PORT/cache
compile_with HOST host.gpucc --remote "$HOSTURL|cacert=$CA|connect-timeout=30000"
assert_same host.gpucc ref.gpucc
FAULT="wrong host" assert_one_remote_warning "$HOSTURL"
assert_grep "certificate subject name\|does not match" err
[ "$(json_count compiled)" = 2 ] || fail "wrong host: compiled $(json_count compiled), not 2"

# cacert= names a file that must be there.
expect_exit 129 "$GPUCC" compile --cache X --no-cubin -t sm_90 vector_add.ll --remote "$URL|cacert=$TEST_DIR/nope.pem"
assert_grep "cacert file '$TEST_DIR/nope.pem': No such file" err
expect_exit 129 "$GPUCC" compile --cache X --no-cubin -t sm_90 vector_add.ll --remote "$URL|cacert=$TEST_DIR"
assert_grep "cacert file '$TEST_DIR': not a regular file" err

# A bearer token and an extra header: /auth/ answers 401 without the token.
AUTH="$BASE/auth|cacert=$CA|bearer=s3cr3t|header=X-Team:gpu"
mark_log
compile_with T1 t1.gpucc --remote "$AUTH"
assert_no_grep warning err
[ "$(find "$STORE/auth" -name '*.gpucc' | wc -l)" = 2 ] || fail "bearer: A did not upload 2 objects"
run_log > t1.log
[ "$(grep -c '|Bearer s3cr3t|gpu$' t1.log)" = "$(wc -l < t1.log)" ] ||
	{ cat t1.log >&2; fail "bearer: a request lacked the token or the header"; }
compile_with T2 t2.gpucc --remote "$AUTH"
[ "$(json_count hits)" = 2 ] || fail "bearer: hit $(json_count hits), not 2"
assert_same t2.gpucc ref.gpucc
compile_with T3 t3.gpucc --remote "$BASE/auth|cacert=$CA"
assert_same t3.gpucc ref.gpucc
FAULT="no token" assert_one_remote_warning "$BASE/auth"
assert_grep "HTTP status 401" err

# Basic auth from the URL's user:password@, never printed.
mark_log
compile_with U1 u1.gpucc --remote "https://alice:pa55@127.0.0.1:$NGINX_TLS_PORT/cache|cacert=$CA"
[ "$(json_count hits)" = 2 ] || fail "basic auth: hit $(json_count hits), not 2"
run_log > u1.log
[ "$(grep -c " 200 alice|Basic $(printf alice:pa55 | base64)|" u1.log)" = 2 ] ||
	{ cat u1.log >&2; fail "basic auth: the GETs did not carry alice's credentials"; }
compile_with U2 u2.gpucc --remote "https://alice:pa55@127.0.0.1:$NGINX_TLS_PORT/auth|connect-timeout=30000"
FAULT="basic auth, no CA" assert_one_remote_warning "https://alice:***@127.0.0.1:$NGINX_TLS_PORT/auth"
assert_no_grep pa55 err
echo "remote_https: ok"
