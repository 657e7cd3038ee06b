// testdata/polybench_cuda/correlation.cu -- a PolyBench-like CUDA unit for the PCH test
// (cmd/tests/compile_sources_pch.sh) and scripts/bench/sources: Column means and deviations: math functions and atomics.
#include <cuda_runtime.h>
__device__ float square(float x) { return x * x; }
__global__ void stddev(int m, int n, const float *data, const float *mean, float *out, float *total)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= m)
		return;
	float s = 0.0f;
	for (int i = 0; i < n; i++)
		s += square(data[i * m + j] - mean[j]);
	s = sqrtf(s / n);
	out[j] = s <= 0.1f ? 1.0f : s * expf(0.0f) + sinf(0.0f);
	atomicAdd(total, out[j]);
}
