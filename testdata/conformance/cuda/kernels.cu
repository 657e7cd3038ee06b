// testdata/conformance/cuda/kernels.cu -- hand-written CUDA kernels for the
// conformance suite (cmd/tests/conformance_cuda.sh): indices, static and
// dynamic shared memory with __syncthreads, warp shuffles and votes, float
// and integer atomics, libdevice math (sinf, expf, sqrtf, erff), printf
// (the driver's vprintf), __constant__ data and a template kernel with
// launch bounds.
#include <cstdio>

__constant__ float weights[16];

__global__ void saxpy(float a, const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}

__global__ __launch_bounds__(256) void reverse_block(float *data)
{
	__shared__ float tile[256];
	int i = blockIdx.x * 256 + threadIdx.x;
	tile[threadIdx.x] = data[i];
	__syncthreads();
	data[i] = tile[255 - threadIdx.x];
}

__global__ void block_sum(const float *in, float *total, int n)
{
	extern __shared__ float partial[];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	partial[threadIdx.x] = i < n ? in[i] : 0.f;
	__syncthreads();
	for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
		if (threadIdx.x < s)
			partial[threadIdx.x] += partial[threadIdx.x + s];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd(total, partial[0]);
}

__global__ void warp_max(const int *in, int *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int v = in[i];
	for (int d = 16; d > 0; d /= 2)
		v = max(v, __shfl_down_sync(0xffffffffu, v, d));
	if (__all_sync(0xffffffffu, v >= 0) && threadIdx.x % 32 == 0)
		atomicMax(out, v);
}

__device__ float damp(float x, float t)
{
	return expf(-t) * sinf(x) + sqrtf(fabsf(x)) + erff(x);
}

__global__ void wave_field(float *y, float t, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = damp(y[i], t) * weights[i % 16];
}

__global__ void report(const int *flags)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (flags[i])
		printf("thread %d of block %d raised flag %d\n", (int)threadIdx.x, (int)blockIdx.x, flags[i]);
}

template <typename T, int Block>
__global__ __launch_bounds__(Block) void scale(T *data, T factor)
{
	data[blockIdx.x * Block + threadIdx.x] *= factor;
}

template __global__ void scale<double, 128>(double *, double);
template __global__ void scale<int, 1024>(int *, int);
