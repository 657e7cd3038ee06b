# cmd/tests/cli_bad_input.sh -- gpucc on bad images.  The fixtures are made
# here from a freshly packed good image by testdata/bad/make_bad_images.py
# (one named mutation each; binary fixtures are not kept in git).  For each:
# `gpucc verify` exits 3 with one line on stderr that names the file and the
# defect; list/show/stats, cat and extract exit with the documented code
# (0 where the defect does not concern them, 3 where it does), print nothing
# on stdout when they fail, never crash, and leave no file behind.  A
# directory or a snapshot given as an image is named for what it is.
. "$SRCROOT/cmd/tests/lib.sh"

command -v python3 >/dev/null || fail "python3 is needed to make the fixtures"
expect_exit 0 "$GPUCC" pack -o good.gpucc "$TESTDATA/example/pack.json"
python3 "$TESTDATA/bad/make_bad_images.py" good.gpucc bad || fail "making the fixtures failed"

# Keys, and which part is the first and which the last payload in archive
# order (the mutations damage those two).
"$GPUCC" list good.gpucc > good.list || fail "list good.gpucc"
nv_key=$(awk '$2 == "sm_90:ptx78" { print $1 }' good.list)
amd_key=$(awk '$2 == "gfx90a" { print $1 }' good.list)
key_of_part() { case $1 in ptx) echo "$nv_key" ;; hsaco) echo "$amd_key" ;; esac; }
tar -tf good.gpucc | grep '^payloads/' | sed -n '1s/.*\.//p' > first.part
tar -tf good.gpucc | grep '^payloads/' | sed -n '$s/.*\.//p' > last.part
first=$(cat first.part)
last=$(cat last.part)
[ -n "$first" ] && [ -n "$last" ] && [ "$first" != "$last" ] || fail "unexpected good image layout"

escape=/tmp/gpucc-escaped.ptx
escape_existed=false
[ -e $escape ] && escape_existed=true

# check FIXTURE DEFECT OPEN_EXIT CAT_PART CAT_EXIT EXTRACT_EXIT
#   DEFECT        a pattern the one-line verify message must hold
#   OPEN_EXIT     exit of the commands that read only the manifest (list,
#                 show, stats): 3 when the defect is in what they read, else 0
#   CAT_PART      the part (first or last payload) to cat, and CAT_EXIT its exit
#   EXTRACT_EXIT  exit of extract: 3, or 0 when the defect is in no payload
check() {
	local f=bad/$1.gpucc defect=$2 open_exit=$3 part=$4 cat_exit=$5 extract_exit=$6
	local key
	key=$(key_of_part "$part")

	expect_exit 3 "$GPUCC" verify "$f"
	assert_one_line err
	assert_grep "^gpucc verify: '$f': " err
	assert_grep "$defect" err
	[ ! -s out ] || fail "verify $f printed on stdout"

	for cmd in list stats show; do
		if [ $cmd = show ]; then
			expect_exit "$open_exit" "$GPUCC" show "$f" "$key"
		else
			expect_exit "$open_exit" "$GPUCC" $cmd "$f"
		fi
		if [ "$open_exit" != 0 ]; then
			assert_one_line err
			assert_grep "^gpucc $cmd: '$f': " err
			[ ! -s out ] || fail "$cmd $f failed but printed on stdout"
		fi
	done

	expect_exit "$cat_exit" "$GPUCC" cat "$f" "$key" --part "$part"
	if [ "$cat_exit" != 0 ]; then
		assert_one_line err
		assert_grep "^gpucc cat: '$f': " err
		[ ! -s out ] || fail "cat $f wrote unverified bytes to stdout"
	fi

	expect_exit "$extract_exit" "$GPUCC" extract "$f" -C "x/$1"
	if [ "$extract_exit" != 0 ]; then
		assert_one_line err
		assert_grep "^gpucc extract: '$f': " err
		[ ! -s out ] || fail "extract $f failed but printed on stdout"
		# Nothing left: not the directory it created, not a temporary file.
		[ ! -e "x/$1" ] || [ -z "$(ls -A "x/$1")" ] || fail "extract $f left: $(ls -A "x/$1")"
	else
		[ "$(ls -A "x/$1" | wc -l)" -eq 2 ] || fail "extract $f wrote: $(ls -A "x/$1")"
	fi
	# And an existing directory stays as it was.
	mkdir -p "y/$1"
	expect_exit "$extract_exit" "$GPUCC" extract "$f" -C "y/$1"
	[ "$extract_exit" = 0 ] || [ -z "$(ls -A "y/$1")" ] || fail "extract $f left: $(ls -A "y/$1")"
}

check empty           'not a gpucc image (empty file)'                    3 "$first" 3 3
check random          'not a gpucc image'                                 3 "$first" 3 3
check truncated       'truncated'                                         0 "$last"  3 3
check wrong-version   'image format version 2 is not supported'           3 "$first" 3 3
check bad-manifest    'corrupt manifest'                                  3 "$first" 3 3
check digest-mismatch "member 'payloads/[0-9a-f]*\.$first': SHA-256 digest mismatch" \
                                                                          0 "$first" 3 3
check missing-member  "lists member 'payloads/[0-9a-f]*\.$last' but the image has no such member" \
                                                                          0 "$last"  3 3
check extra-member    "member 'payloads/extra.txt' is not listed in the manifest" \
                                                                          0 "$first" 0 0
check dotdot-member   "member 'payloads/\.\./\.\./escaped.ptx' has an unsafe path" \
                                                                          0 "$first" 3 3
check absolute-member "member '/tmp/gpucc-escaped.ptx' has an unsafe path" 0 "$first" 3 3
check symlink-member  "member 'payloads/[0-9a-f]*\.$first' is a link, not a file" \
                                                                          0 "$first" 3 3

# A compressed image cut short is truncated, as a plain one is, not "not a
# gpucc image"; a stream that gives no byte is empty, as an empty file is,
# not of an "unrecognized archive format".
expect_exit 0 "$GPUCC" pack --zstd -o good.zst.gpucc "$TESTDATA/example/pack.json"
head -c 40 good.zst.gpucc > cut.zst.gpucc
for cmd in list verify; do
	expect_exit 3 "$GPUCC" $cmd cut.zst.gpucc
	assert_one_line err
	assert_grep "^gpucc $cmd: 'cut.zst.gpucc': truncated image (" err
	expect_exit 3 "$GPUCC" $cmd /dev/null
	assert_one_line err
	assert_grep "^gpucc $cmd: '/dev/null': not a gpucc image (empty)$" err
done

# A failed extract removes every directory it created, and only those.
expect_exit 3 "$GPUCC" extract bad/digest-mismatch.gpucc -C deep/a/b/c
assert_no_file deep
mkdir -p pre/a
expect_exit 3 "$GPUCC" extract bad/digest-mismatch.gpucc -C pre/a/b/c/
[ -d pre/a ] && [ -z "$(ls -A pre/a)" ] || fail "extract -C pre/a/b/c/ left: $(ls -AR pre)"
expect_exit 3 "$GPUCC" extract bad/digest-mismatch.gpucc -C pre/a/../b//c
[ "$(ls -A pre)" = a ] || fail "extract -C pre/a/../b//c left: $(ls -AR pre)"

# The intact payload of a damaged image is still served, verified.
expect_exit 0 "$GPUCC" cat bad/digest-mismatch.gpucc "$(key_of_part "$last")" --part "$last"
"$GPUCC" cat good.gpucc "$(key_of_part "$last")" --part "$last" > good.last
assert_same out good.last

# A truncated compressed image.
expect_exit 0 "$GPUCC" pack --zstd=3 -o good.zst.gpucc "$TESTDATA/example/pack.json"
head -c "$(($(wc -c < good.zst.gpucc) / 2))" good.zst.gpucc > bad/truncated-zstd.gpucc
for cmd in verify list; do
	expect_exit 3 "$GPUCC" $cmd bad/truncated-zstd.gpucc
	assert_one_line err
	assert_grep "^gpucc $cmd: 'bad/truncated-zstd.gpucc': .*[Tt]runcated" err
done
expect_exit 3 "$GPUCC" extract bad/truncated-zstd.gpucc -C x/truncated-zstd
[ ! -e x/truncated-zstd ] || [ -z "$(ls -A x/truncated-zstd)" ] || fail "extract left files"

# A directory is not an image.
mkdir adir
expect_exit 3 "$GPUCC" verify adir
assert_one_line err
assert_grep "'adir' is a directory" err

# A snapshot is not an image, and the message says what it is.
expect_exit 0 "$GPUCC" snapshot good.gpucc -o good.snap
for cmd in list verify stats; do
	expect_exit 3 "$GPUCC" $cmd good.snap
	assert_one_line err
	assert_grep "^gpucc $cmd: 'good.snap' is a gpucc snapshot, not an image$" err
done
expect_exit 3 "$GPUCC" cat good.snap "$nv_key" --part ptx
assert_grep "'good.snap' is a gpucc snapshot, not an image" err
[ ! -s out ] || fail "cat of a snapshot printed"
# Nor is a snapshot, an image or a directory a key list for snapshot --keys
# (it said "line 1: expected 'KEY CONTENT'", and exit 1 for a directory)
for f in good.snap:snapshot good.gpucc:image; do
	expect_exit 3 "$GPUCC" snapshot --keys "${f%%:*}" --show
	assert_one_line err
	assert_grep "^gpucc snapshot: --keys '${f%%:*}' is a gpucc ${f#*:}, not a key list ('KEY CONTENT' lines): give it as the SOURCE$" err
	[ ! -s out ] || fail "snapshot --keys ${f%%:*} printed"
done
expect_exit 3 "$GPUCC" snapshot --keys adir --show
assert_one_line err
assert_grep "^gpucc snapshot: --keys 'adir' is a directory, not a key list" err
printf 'not a key\n' > bad.keys
expect_exit 3 "$GPUCC" snapshot --keys bad.keys --show
assert_grep "^gpucc snapshot: 'bad.keys' line 1: expected 'KEY CONTENT'" err
# cache import says what a snapshot is and why it cannot be imported (it
# said "cannot be merged"), and makes no cache
expect_exit 3 "$GPUCC" cache import --cache imp good.gpucc good.snap
assert_one_line err
assert_grep "^gpucc cache import: cannot import 'good.snap': it is a snapshot, which holds keys and content digests but no entries" err
[ ! -s out ] || fail "cache import of a snapshot printed"
assert_no_file imp

# A control character in a missing input's name reads the same in every
# message, whichever layer words it: spelt \n, \t or \xHH, as the command
# spells names it words itself (embed's message below is the command's).
# libgpucc's messages made a newline a space and let an escape sequence
# reach the terminal raw.
for spelt in 'miss\nme' 'miss\tme' 'miss\x1bme' 'miss\x7fme'; do
	name=$(printf "$spelt").gpucc
	for cmd in "list NAME" "list --json NAME" "verify NAME" "stats NAME" \
		"show NAME $nv_key" "cat NAME $nv_key --part ptx" "extract NAME -C x/odd" \
		"merge -o m.gpucc good.gpucc NAME" "delta NAME --since good.snap -o d.gpucc" \
		"delta good.gpucc --since NAME -o d.gpucc" "snapshot NAME -o s.snap" \
		"cache import --cache imp NAME" "embed NAME --symbol x -o x.o"; do
		args=()
		for word in $cmd; do
			[ "$word" = NAME ] && word=$name
			args+=("$word")
		done
		sub=${cmd%% *}
		[ "$sub" = cache ] && sub="cache import"
		expect_exit 2 "$GPUCC" "${args[@]}"
		assert_one_line err
		grep -q -F "gpucc $sub: cannot open '$spelt.gpucc': No such file or directory" err ||
			fail "'$cmd' did not spell '$spelt' as the command does: $(cat -A err)"
		tr -d '\n' < err | LC_ALL=C grep -q '[[:cntrl:]]' &&
			fail "'$cmd' printed a control character: $(cat -A err)"
		[ ! -s out ] || fail "'$cmd' printed on stdout"
	done
done
# The same for names the command reports on success, and for words that
# are no command.
oddout=$(printf 'out\x1bput')
expect_exit 0 "$GPUCC" delta good.gpucc --since good.snap -o "$oddout.gpucc"
assert_grep 'written to .out\\x1bput\.gpucc.$' err
expect_exit 0 "$GPUCC" snapshot good.gpucc -o "$oddout.snap"
assert_grep 'written to .out\\x1bput\.snap.$' err
rm -f "$oddout.gpucc" "$oddout.snap"
expect_exit 129 "$GPUCC" "$(printf 'lis\nt')"
assert_grep '^gpucc: unknown command .lis\\nt. (see .gpucc help.)$' err
expect_exit 129 "$GPUCC" cache "$(printf 'st\x1bats')"
assert_grep '^gpucc cache: unknown subcommand .st\\x1bats. ' err
expect_exit 129 "$GPUCC" help "$(printf 'li\tst')"
assert_grep '^gpucc help: unknown command .li\\tst. (see .gpucc help.)$' err
expect_exit 129 "$GPUCC" help cache "$(printf 'st\x1bats')"
assert_grep '^gpucc help: unknown command .cache st\\x1bats. (see .gpucc help.)$' err
# And for the options and arguments the parser refuses (it printed them
# raw: an escape sequence reached the terminal, a newline split the line).
while IFS=' ' read -r spelt cmd; do
	spelt=${spelt//_/ }
	args=()
	for word in $cmd; do args+=("$(printf -- "$word")"); done
	expect_exit 129 "$GPUCC" "${args[@]}"
	head -n 1 err > err.first
	grep -q -F "$spelt" err.first || fail "'$cmd' did not spell its word: $(cat -A err)"
	tr -d '\n' < err | LC_ALL=C grep -q '[[:cntrl:]]' &&
		fail "'$cmd' printed a control character: $(cat -A err)"
	[ "$(grep -c '^gpucc ' err)" = 1 ] || fail "'$cmd' split its message: $(cat -A err)"
done <<-'LINES'
	unknown_option_'--js\x1bon' list --js\x1bon good.gpucc
	unknown_option_'-\x01' verify -\x01 good.gpucc
	unexpected_argument_'x\ny' list good.gpucc x\ny
	option_'--json=a\tb'_takes_no_value stats --json=a\tb good.gpucc
LINES
# Each message reaches stderr in one write, whole, so that the lines of
# processes sharing it (make -j) stay whole too: the command's own
# messages were written a byte at a time.
if have strace "each message reaches stderr in one write"; then
	for cmd in "cat good.gpucc $nv_key --part hsaco" "list --frob good.gpucc" "show none.gpucc 00"; do
		# shellcheck disable=SC2086
		no_leak_check strace -s 4096 -o write.trace -e trace=write "$GPUCC" $cmd 2>/dev/null
		grep '^write(2, ' write.trace > stderr.writes
		[ -s stderr.writes ] || fail "'$cmd' wrote no message under strace"
		if grep -v '\\n", [0-9]*) *= [0-9]*$' stderr.writes; then
			fail "'$cmd' wrote a message in pieces"
		fi
	done
fi

assert_no_file m.gpucc
assert_no_file d.gpucc
assert_no_file s.snap
assert_no_file x/odd
assert_no_file x.o
assert_no_file imp

# Nothing escaped, nothing was left beside the inputs.
$escape_existed || assert_no_file $escape
assert_no_file escaped.ptx
assert_no_file ../escaped.ptx
# A process's stream as an output of pack, compile or embed is refused
# (129), as merge, delta and snapshot refuse it (algebra_bad_input.sh): an
# output renamed into place never reaches a stream, and as root it replaced
# /dev/stdout's link with a regular file.  stream.link stands in for it.
ln -s /proc/self/fd/1 stream.link
for out in stream.link - /dev/fd/1; do
	for cmd in "pack $TESTDATA/example/pack.json -o" \
		"compile --no-cache --no-cubin $TESTDATA/kernels/nvptx/vector_add.ll -t sm_80 -o" \
		"embed good.gpucc --symbol x -o" "embed good.gpucc --symbol x -o x.o --header"; do
		# shellcheck disable=SC2086
		expect_exit 129 "$GPUCC" $cmd $out
		assert_one_line err
		[ ! -s out ] || fail "'$cmd $out' wrote on stdout"
	done
done
assert_grep "^gpucc embed: --header '/dev/fd/1' names a process's stream, not a file" err
[ -L stream.link ] || fail "stream.link was replaced"
assert_no_file ./-
assert_no_file x.o
rm stream.link

leftovers=$(find . -name '.gpucc*' -o -name '*.tmp*')
[ -z "$leftovers" ] || fail "temporary files left: $leftovers"
echo "ok"
