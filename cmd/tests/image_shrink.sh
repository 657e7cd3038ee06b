#!/bin/bash
# cmd/tests/image_shrink.sh -- an image cut short in place while gpucc reads
# it (cp rewrites its target so): every command that opens an image ends
# with exit 0, or exit 3 and one line naming the file, and never by a
# signal (a mapped image would die of SIGBUS, exit 135 with no message);
# an output it would have written is not left behind.
#
# Deterministic: the fault shim (cmd/tests/faultshim.c, GPUCC_SHRINK_*)
# counts every read and mapping of the image and cuts it at a chosen one.
# A clean run counts them; the cut is then tried at the first calls, at
# the middle one and at the last, each time into the manifest and into the
# payloads, and to nothing at the first, for an uncompressed and a zstd
# image.  The cuts fall on page boundaries: a mapping's bytes past the end
# of a file in its last page read as zeros, which a parser would refuse
# before it touched the pages past them, that fault.
. "$SRCROOT/cmd/tests/lib.sh"
. "$SRCROOT/cmd/tests/algebra_helpers.sh"

[ -n "${FAULTSHIM:-}" ] && [ -f "$FAULTSHIM" ] || skip "the fault shim (FAULTSHIM) is not built"
# Under AddressSanitizer its runtime must come first in the preload list.
preload=$FAULTSHIM
asan=$(ldd "$GPUCC" | awk '/libasan/ {print $3}')
[ -z "$asan" ] || preload="$asan:$FAULTSHIM"

make_image plain.gpucc S 0 60 v0 2000
make_image zstd.gpucc S 0 60 v0 2000 --zstd
make_image other.gpucc O 0 10
"$GPUCC" snapshot other.gpucc -o base.snap >/dev/null 2>&1 || fail "cannot snapshot other.gpucc"
key=$(keys_of plain.gpucc | head -1)
[ -n "$key" ] || fail "no key in plain.gpucc"
part=ptx # (even entries are sm_90 with PTX, odd ones gfx90a with a code object)
"$GPUCC" cat plain.gpucc "$key" --part ptx >/dev/null 2>&1 || part=hsaco

# Each command reads img.gpucc; OUTPUT is what it writes, which a failed
# run must not leave ("-": nothing to check).  devices exits 2 uncut (half
# the kernels fit neither target): a cut run ends as an uncut one does, or
# with exit 3.
commands=(
	"-|list img.gpucc"
	"-|list --json img.gpucc"
	"-|stats img.gpucc"
	"-|verify img.gpucc"
	"-|show img.gpucc ${key:0:16}"
	"-|cat img.gpucc ${key:0:16} --part $part"
	"-|extract img.gpucc -C extracted"
	"merged.gpucc|merge img.gpucc other.gpucc -o merged.gpucc --no-sync"
	"merged.gpucc|merge img.gpucc other.gpucc -o merged.gpucc --zstd --no-sync"
	"delta.gpucc|delta img.gpucc --since base.snap -o delta.gpucc --no-sync"
	"taken.snap|snapshot img.gpucc -o taken.snap"
	"-|cache import img.gpucc --cache cache"
	"-|devices --image img.gpucc --target sm_90 --target gfx90a"
	"img.o|embed img.gpucc -o img.o --symbol image"
)

# shrunk SOURCE AT TO CMD...: run CMD on a fresh copy of SOURCE as
# img.gpucc, cut to TO bytes at its AT-th read (-1: never; the reads are
# logged to ./reads); stdout and stderr in ./out ./err, status in $rc.
shrunk() {
	local source=$1 at=$2 to=$3; shift 3
	rm -rf img.gpucc extracted cache merged.gpucc delta.gpucc taken.snap img.o reads
	cp "$source" img.gpucc
	GPUCC_SHRINK_PATH="$TEST_DIR/img.gpucc" GPUCC_SHRINK_AT=$at GPUCC_SHRINK_TO=$to \
		GPUCC_SHRINK_LOG="$TEST_DIR/reads" LD_PRELOAD=$preload "$@" >out 2>err
	rc=$?
}

# the shim sees gpucc's reads of the image
shrunk plain.gpucc -1 0 "$GPUCC" list img.gpucc
[ "$rc" = 0 ] && [ -s reads ] || skip "LD_PRELOAD of the fault shim does not take effect here"

runs=0 failures=0
for source in plain.gpucc zstd.gpucc; do
	# (the manifest: about 30 KB from offset 1536)
	size=$(stat -c %s "$source")
	half=$((size / 2 / 4096 * 4096))
	for spec in "${commands[@]}"; do
		output=${spec%%|*}
		read -r -a args <<<"${spec#*|}"
		shrunk "$source" -1 0 "$GPUCC" "${args[@]}"
		if [ "$rc" = 6 ] && [ "${args[0]}" = embed ]; then
			continue # no LLVM backend in this build
		fi
		clean_rc=$rc
		[ "$rc" = 0 ] || [ "${args[0]}" = devices ] ||
			{ cat err >&2; fail "gpucc ${args[*]} on $source exited $rc uncut"; }
		cp out clean.out
		calls=$(wc -l <reads)
		[ "$calls" -gt 0 ] || fail "gpucc ${args[*]} read nothing of $source"
		# the cut at the first calls, the middle one and the last
		points=$(printf '%s\n' 0 1 2 3 4 5 $((calls / 2)) $((calls - 1)) |
			awk -v n="$calls" '$1 < n' | sort -nu)
		for point in "0:0" $(for at in $points; do echo "$at:8192 $at:$half"; done); do
			at=${point%:*} to=${point#*:}
			shrunk "$source" "$at" "$to" "$GPUCC" "${args[@]}"
			runs=$((runs + 1))
			what="gpucc ${args[*]} on $source cut to $to bytes at read $at"
			grep -q ' 1$' reads || fail "$what: the shim did not cut the file"
			[ "$rc" -lt 128 ] || { cat err >&2; fail "$what: killed by signal $((rc - 128))"; }
			case $rc in
			"$clean_rc")
				# what it printed is what an uncut run prints (cat:
				# the payload, verified)
				[ "${args[0]}" != cat ] || cmp -s out clean.out ||
					fail "$what: cat printed other bytes"
				;;
			3)
				assert_one_line err
				assert_grep "'img.gpucc'" err
				[ "$output" = - ] || assert_no_file "$output"
				failures=$((failures + 1))
				;;
			*)
				cat err >&2
				fail "$what: exited $rc, expected $clean_rc or 3"
				;;
			esac
		done
	done
done
# Most cuts must have been noticed: a test whose cuts all came too late
# would prove nothing.
[ "$failures" -gt $((runs / 2)) ] || fail "only $failures of $runs cut runs failed"
echo "$runs runs with the image cut short: $failures reported it (exit 3), none killed"
