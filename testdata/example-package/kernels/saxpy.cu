// kernels/saxpy.cu -- the example package's NVIDIA kernel: y[i] = a * x[i] + y[i].
// `gpucc compile` turns it into PTX and a cubin for every sm target of the
// build (meson.build, CMakeLists.txt); extern "C" keeps the name "saxpy".
#include "saxpy_op.h"

extern "C" __global__ void saxpy(int n, float a, const float *x, float *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = saxpy_op(a, x[i], y[i]);
}
