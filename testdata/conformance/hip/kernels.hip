// testdata/conformance/hip/kernels.hip -- hand-written HIP kernels for the
// conformance suite (cmd/tests/conformance_hip.sh): global and thread
// indices, static and dynamic LDS with __syncthreads, warp shuffles, float
// and integer atomics, ocml math (sinf, expf, sqrtf), printf through the
// hostcall buffer, and a template kernel with launch bounds.
#include <hip/hip_runtime.h>

__global__ void saxpy(float a, const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}

// Reverses each block's slice through static LDS.
__global__ __launch_bounds__(256) void reverse_block(float *data)
{
	__shared__ float tile[256];
	int i = blockIdx.x * 256 + threadIdx.x;
	tile[threadIdx.x] = data[i];
	__syncthreads();
	data[i] = tile[255 - threadIdx.x];
}

// Dynamic LDS, sized at launch; a tree reduction and one atomic per block.
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

// Warp shuffles: the wave size comes from the target (64 on gfx9, 32 on gfx10+).
__global__ void wave_max(const int *in, int *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int v = in[i];
	for (int d = warpSize / 2; d > 0; d /= 2)
		v = max(v, __shfl_down(v, d));
	if (threadIdx.x % warpSize == 0)
		atomicMax(out, v);
}

__global__ void histogram(const unsigned char *in, unsigned *bins, int n)
{
	__shared__ unsigned local[256];
	local[threadIdx.x] = 0;
	__syncthreads();
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		atomicAdd(&local[in[i]], 1u);
	__syncthreads();
	atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}

__device__ float damp(float x, float t)
{
	return expf(-t) * sinf(x) + sqrtf(fabsf(x));
}

__global__ void wave_field(float *y, float t, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = damp(y[i], t);
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
