#!/bin/sh
# build-image.sh GPUCC OUTDIR TARGETS MODULE... -- the example package's
# kernels, as the workflow of docs/design.md: record what the cache holds (snapshot),
# compile the package's kernels through it, take exactly what that added
# (delta), and embed the result as a host object with a header.  Prints one
# line per step; gpucc's own errors go to stderr, as they are.
#
# The cache is private to the build directory and starts empty on every
# build: a delta from a warm shared cache would miss entries that were
# already there (a hit adds nothing).  A fresh cache has no snapshot of its
# own yet, so the "before" snapshot is the empty key list.
set -eu
gpucc=$1 out=$2 targets=$3
shift 3
cache=$out/gpucc-cache
rm -rf "$cache" && mkdir -p "$cache"
echo "snapshot: the empty cache -> before.snap"
"$gpucc" snapshot -q --keys /dev/null -o "$out/before.snap"
target_args=
for t in $(echo "$targets" | tr ',' ' '); do target_args="$target_args -t $t"; done
names=
for m in "$@"; do names="$names ${m##*/}"; done
echo "compile:$names for $targets, into the cache"
# shellcheck disable=SC2086
"$gpucc" compile "$@" $target_args --cache "$cache" >/dev/null
echo "delta: what the compile added since before.snap -> saxpy.gpucc"
"$gpucc" delta -q "$cache" --since "$out/before.snap" -o "$out/saxpy.gpucc"
echo "embed: saxpy.gpucc -> saxpy_kernels.o (symbol saxpy_kernels_image) and saxpy_kernels_image.h"
"$gpucc" embed "$out/saxpy.gpucc" -o "$out/saxpy_kernels.o" --symbol saxpy_kernels_image \
	--header "$out/saxpy_kernels_image.h"
