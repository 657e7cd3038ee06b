/*
 * gpucc/compile.h -- compiling LLVM IR modules into entries (owned by the compile work).
 */
#ifndef GPUCC_COMPILE_H
#define GPUCC_COMPILE_H

#include "common.h"
#include "image.h"

#endif
