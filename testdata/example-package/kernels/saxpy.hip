// kernels/saxpy.hip -- the example package's AMD kernel: y[i] = a * x[i] + y[i].
// `gpucc compile` turns it into a code object for every gfx target of the
// build (meson.build, CMakeLists.txt); extern "C" keeps the name "saxpy".
#include <hip/hip_runtime.h>

#include "saxpy_op.h"

extern "C" __global__ void saxpy(int n, float a, const float *x, float *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = saxpy_op(a, x[i], y[i]);
}
