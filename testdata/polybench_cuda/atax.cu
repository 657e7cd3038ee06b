// testdata/polybench_cuda/atax.cu -- a PolyBench-like CUDA unit for the PCH test
// (cmd/tests/compile_sources_pch.sh) and scripts/bench/sources: A^T (A x) in two kernels, a warp reduction and atomics.
#include <cuda_runtime.h>
__global__ void atax_ax(int m, int n, const float *a, const float *x, float *tmp)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= m)
		return;
	float sum = 0.0f;
	for (int j = 0; j < n; j++)
		sum += a[i * n + j] * x[j];
	tmp[i] = sum;
}
__global__ void atax_aty(int m, int n, const float *a, const float *tmp, float *y)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	float part = 0.0f;
	for (int i = threadIdx.y; i < m && j < n; i += blockDim.y)
		part += a[i * n + j] * tmp[i];
	for (int offset = 16; offset > 0; offset /= 2)
		part += __shfl_down_sync(0xffffffffu, part, offset);
	if (j < n && (threadIdx.x & 31) == 0)
		atomicAdd(&y[j], part);
}
