/* formats/snapshot_format.c -- placeholder, filled in by its owner. */
typedef int gpucc_placeholder_snapshot_format;
