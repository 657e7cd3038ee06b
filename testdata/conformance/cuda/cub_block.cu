// testdata/conformance/cuda/cub_block.cu -- CUB's block and warp templates
// (the toolkit's CCCL) instantiated in kernels, for the conformance suite
// (cmd/tests/conformance_cuda.sh): BlockReduce, BlockScan, WarpReduce.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/warp/warp_reduce.cuh>

struct max_op {
	__device__ unsigned operator()(unsigned a, unsigned b) const { return a > b ? a : b; }
};

template <int Block, int Items>
__global__ __launch_bounds__(Block) void block_sum(const int *in, int *out)
{
	using reduce = cub::BlockReduce<int, Block>;
	__shared__ typename reduce::TempStorage storage;
	int v[Items];
	for (int i = 0; i < Items; i++)
		v[i] = in[(blockIdx.x * Block + threadIdx.x) * Items + i];
	int sum = reduce(storage).Sum(v);
	if (threadIdx.x == 0)
		out[blockIdx.x] = sum;
}

template <int Block>
__global__ __launch_bounds__(Block) void block_prefix(const float *in, float *out)
{
	using scan = cub::BlockScan<float, Block>;
	__shared__ typename scan::TempStorage storage;
	int i = blockIdx.x * Block + threadIdx.x;
	float v = in[i];
	scan(storage).InclusiveSum(v, v);
	out[i] = v;
}

__global__ __launch_bounds__(256) void warp_max(const unsigned *in, unsigned *out)
{
	using reduce = cub::WarpReduce<unsigned>;
	__shared__ typename reduce::TempStorage storage[256 / 32];
	int i = blockIdx.x * 256 + threadIdx.x;
	unsigned m = reduce(storage[threadIdx.x / 32]).Reduce(in[i], max_op());
	if (threadIdx.x % 32 == 0)
		out[i / 32] = m;
}

template __global__ void block_sum<256, 4>(const int *, int *);
template __global__ void block_sum<128, 1>(const int *, int *);
template __global__ void block_prefix<256>(const float *, float *);
