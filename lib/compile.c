/* lib/compile.c -- placeholder, filled in by its owner. */
typedef int gpucc_placeholder_compile;
