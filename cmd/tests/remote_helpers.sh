# cmd/tests/remote_helpers.sh -- sourced by the remote cache tests after
# lib.sh: real servers on 127.0.0.1, on ports the kernel chose free, each
# stopped by its PID when the test ends, whatever way it ends.
#   start_nginx DIR        nginx serving DIR/store with WebDAV PUT (/cache/,
#                          /sub/), read-only (/ro/: limit_except), full
#                          (/full/: 507 to a PUT), and 500 and 429 answers;
#                          /bkt/ stands in for an S3 endpoint (path-style),
#                          logging each request's SigV4 inputs to DIR/s3.log
#                          (cmd/tests/remote_sigv4.py reads them); /cache/
#                          and /sub/ also take DELETE;
#                          sets NGINX_PID, NGINX_PORT; with NGINX_TLS_CERT
#                          and NGINX_TLS_KEY set, also HTTPS (HTTP/2 where
#                          nginx has it: NGINX_HTTP2=yes) on NGINX_TLS_PORT:
#                          /cache/, and /auth/ (401 without "Bearer
#                          s3cr3t"), each request logged to DIR/tls.log
#   start_redis DIR [CONF-LINE...]   redis-server on TCP and DIR/redis.sock;
#                          sets REDIS_PID, REDIS_PORT, REDIS_SOCK
#   stop_pid PID           SIGKILL (a stopped process too, which then runs
#                          no more), and reap
#   wait_connected PID PORT   until process PID has a TCP connection to PORT
#   compile_with CACHE IMAGE [ARGS...]  the fixed compile of these tests

SERVER_PIDS=""
stop_pid() {
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	return 0
}
stop_servers() {
	local p
	for p in $SERVER_PIDS; do stop_pid "$p"; done
	SERVER_PIDS=""
}
trap 'stop_servers; remove_test_dirs' EXIT

command -v python3 >/dev/null || skip "python3 is not installed (it finds free ports)"

# A port the kernel calls free now.  A server that then fails to bind it
# (another process took it meanwhile) is started again on another.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Poll until the server PID listens on PORT (true), or has died (false).
# The bound on tries only keeps a broken setup from hanging the suite.
wait_listening() {
	local pid=$1 port=$2 tries=0
	while ! port_open "$port"; do
		kill -0 "$pid" 2>/dev/null || return 1
		tries=$((tries + 1))
		[ "$tries" -lt 2000 ] || return 1
		sleep 0.01
	done
}

start_nginx() {
	local dir=$1 attempt
	command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || skip "nginx is not installed (scripts/setup installs nginx-light)"
	local nginx
	nginx=$(command -v nginx || echo /usr/sbin/nginx)
	mkdir -p "$dir/store/cache" "$dir/store/sub" "$dir/store/empty" "$dir/tmp"
	for attempt in 1 2 3 4 5; do
		NGINX_PORT=$(free_port)
		local tls_server=""
		if [ -n "${NGINX_TLS_CERT:-}" ]; then
			NGINX_TLS_PORT=$(free_port)
			tls_server=$(nginx_tls_server "$dir" "$nginx")
		fi
		local user=""
		[ "$(id -u)" = 0 ] && user="user root;"
		cat > "$dir/nginx.conf" <<EOF
$user
daemon off;
master_process off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 256; }
http {
	access_log $dir/access.log;
	log_format tls '\$server_protocol \$connection \$request_method \$uri \$status \$remote_user|\$http_authorization|\$http_x_team';
	log_format s3 '\$request_method \$uri|\$http_authorization|\$http_x_amz_content_sha256|\$request_uri|\$http_host|\$http_x_amz_date|\$msec|\$http_x_amz_security_token';
	client_body_temp_path $dir/tmp/body;
	proxy_temp_path $dir/tmp/proxy;
	fastcgi_temp_path $dir/tmp/fastcgi;
	uwsgi_temp_path $dir/tmp/uwsgi;
	scgi_temp_path $dir/tmp/scgi;
	client_max_body_size 0;
	keepalive_requests 100000;
	server {
		listen 127.0.0.1:$NGINX_PORT;
		root $dir/store;
		location /cache/ {
			dav_methods PUT DELETE;
			create_full_put_path on;
		}
		location /sub/ {
			dav_methods PUT DELETE;
			create_full_put_path on;
		}
		location /ro/ {
			alias $dir/store/cache/;
			dav_methods PUT;
			limit_except GET HEAD { deny all; }
		}
		location /full/ {
			alias $dir/store/empty/;
			dav_methods PUT;
			if (\$request_method = PUT) { return 507; }
		}
		location /bkt/ {
			dav_methods PUT;
			create_full_put_path on;
			access_log $dir/s3.log s3;
		}
		location /fail500/ { return 500; }
		location /fail429/ { return 429; }
	}
$tls_server
}
EOF
		"$nginx" -e "$dir/error.log" -p "$dir" -c "$dir/nginx.conf" 2>>"$dir/start.log" &
		NGINX_PID=$!
		SERVER_PIDS="$SERVER_PIDS $NGINX_PID"
		wait_listening "$NGINX_PID" "$NGINX_PORT" &&
			{ [ -z "$tls_server" ] || wait_listening "$NGINX_PID" "$NGINX_TLS_PORT"; } && return 0
		stop_pid "$NGINX_PID"
	done
	cat "$dir/start.log" "$dir/error.log" >&2
	fail "nginx did not start"
}

# Whether this nginx was built with HTTP/2 (its HTTPS server then offers it).
nginx_has_http2() {
	"$1" -V 2>&1 | grep -q -- --with-http_v2_module
}

# start_nginx's HTTPS server block, on NGINX_TLS_PORT.
nginx_tls_server() {
	local dir=$1 h2=""
	nginx_has_http2 "$2" && h2=" http2"
	mkdir -p "$dir/store/auth"
	cat <<EOF
	server {
		listen 127.0.0.1:$NGINX_TLS_PORT ssl$h2;
		ssl_certificate $NGINX_TLS_CERT;
		ssl_certificate_key $NGINX_TLS_KEY;
		root $dir/store;
		access_log $dir/tls.log tls;
		location /cache/ {
			dav_methods PUT DELETE;
			create_full_put_path on;
		}
		location /auth/ {
			dav_methods PUT DELETE;
			create_full_put_path on;
			if (\$http_authorization != "Bearer s3cr3t") { return 401; }
		}
	}
EOF
}

start_redis() {
	local dir=$1 attempt line
	shift
	command -v redis-server >/dev/null || skip "redis-server is not installed (scripts/setup installs it)"
	mkdir -p "$dir"
	REDIS_SOCK=$dir/redis.sock
	for attempt in 1 2 3 4 5; do
		REDIS_PORT=$(free_port)
		{
			echo "bind 127.0.0.1"
			echo "port $REDIS_PORT"
			echo "unixsocket $REDIS_SOCK"
			echo "unixsocketperm 700"
			echo "save \"\""
			echo "appendonly no"
			echo "daemonize no"
			echo "dir $dir"
			echo "logfile $dir/redis.log"
			for line in "$@"; do echo "$line"; done
		} > "$dir/redis.conf"
		redis-server "$dir/redis.conf" >>"$dir/start.log" 2>&1 &
		REDIS_PID=$!
		SERVER_PIDS="$SERVER_PIDS $REDIS_PID"
		wait_listening "$REDIS_PID" "$REDIS_PORT" && return 0
		stop_pid "$REDIS_PID"
	done
	cat "$dir/start.log" "$dir/redis.log" >&2
	fail "redis-server did not start"
}

# Poll until process PID holds an established TCP connection to PORT
# (/proc/net/tcp lists it, owned by one of the process's socket inodes).
wait_connected() {
	local pid=$1 port=$2 hex tries=0 inode
	hex=$(printf '%04X' "$port")
	while :; do
		kill -0 "$pid" 2>/dev/null || return 1
		for inode in $(awk -v p=":$hex" '$3 ~ p"$" && $4 == "01" { print $10 }' /proc/net/tcp); do
			ls -l "/proc/$pid/fd" 2>/dev/null | grep -q "socket:\[$inode\]" && return 0
		done
		tries=$((tries + 1))
		[ "$tries" -lt 3000 ] || return 1
		sleep 0.01
	done
}

MODULES="vector_add.ll multi.ll"
cp "$TESTDATA/kernels/nvptx/vector_add.ll" "$TESTDATA/kernels/nvptx/multi.ll" .

# compile_with CACHE IMAGE [ARGS...]: the modules for sm_90, PTX only (no
# ptxas needed), into IMAGE through CACHE; stdout in ./out, stderr in ./err.
compile_with() {
	local cache=$1 image=$2
	shift 2
	# shellcheck disable=SC2086
	expect_exit 0 "$GPUCC" compile --cache "$cache" --no-cubin -t sm_90 $MODULES -o "$image" --json "$@"
}

# Fields of compile's --json summary.
json_count() { grep -o "\"$1\":[0-9]*" "${2:-out}" | head -1 | cut -d: -f2; }

# uploads CACHE IMAGE REMOTE-ARGS...: an empty CACHE compiles both modules
# and uploads them, warning nothing; IMAGE is ref.gpucc's bytes.
uploads() {
	local cache=$1 image=$2
	compile_with "$@"
	[ "$(json_count compiled)" = 2 ] || fail "$cache compiled $(json_count compiled), not 2"
	assert_no_grep warning err
	assert_same "$image" ref.gpucc
}

# push_then_pull REMOTE SOURCE EMPTY: cache push of ref.gpucc from cache P
# uploads both entries, a second push finds them there; cache pull of
# SOURCE (ref.gpucc or its snapshot) into an empty cache Q fetches both, and
# a compile from Q then hits both; a pull from the remote EMPTY finds
# neither (exit 2).
push_then_pull() {
	expect_exit 0 "$GPUCC" cache push ref.gpucc --cache P --remote "$1"
	assert_grep "^2 uploaded, 0 present already, 0 failed$" out
	expect_exit 0 "$GPUCC" cache push ref.gpucc --cache P --remote "$1"
	assert_grep "^0 uploaded, 2 present already, 0 failed$" out
	expect_exit 0 "$GPUCC" cache pull "$2" --cache Q --remote "$1"
	assert_grep "^2 fetched, 0 present already, 0 not found$" out
	compile_with Q q.gpucc --no-remote
	[ "$(json_count hits)" = 2 ] || fail "pull did not fill the cache"
	assert_same q.gpucc ref.gpucc
	expect_exit 2 "$GPUCC" cache pull ref.gpucc --cache Q2 --remote "$3"
	assert_grep "^0 fetched, 0 present already, 2 not found$" out
}

# objects_are_entries DIR CACHE: DIR on the server holds two objects, each
# an entry of CACHE byte for byte.
objects_are_entries() {
	[ "$(find "$1" -maxdepth 1 -name '*.gpucc' | wc -l)" = 2 ] || fail "$2 did not upload 2 objects to $1"
	for f in "$1"/*.gpucc; do
		cmp -s "$f" "$2/v1/$(basename "$f" | cut -c1-2)/$(basename "$f")" || fail "uploaded $f is not $2's entry"
	done
}

# hits_remote CACHE IMAGE REMOTE-ARGS...: an empty CACHE compiles nothing,
# both entries come from the remote without loading LLVM, warning nothing;
# IMAGE is ref.gpucc's bytes.
hits_remote() {
	local cache=$1 image=$2
	compile_with "$@"
	[ "$(json_count compiled)" = 0 ] || fail "$cache compiled $(json_count compiled): the remote did not serve"
	[ "$(json_count hits)" = 2 ] || fail "$cache hit $(json_count hits), not 2"
	assert_grep '"llvm_loaded":false' out
	assert_no_grep warning err
	assert_same "$image" ref.gpucc
}

# The one warning a failing remote gives, naming it; no other warning.
assert_one_remote_warning() {
	local n
	n=$(grep -cF "warning: cache: remote '$1'" err)
	[ "$n" = 1 ] || { cat err >&2; head -c 300 out >&2; fail "${FAULT:-}: expected one warning naming remote '$1', got $n"; }
	[ "$(grep -c warning err)" = 1 ] || { cat err >&2; fail "warnings other than the remote's"; }
}
