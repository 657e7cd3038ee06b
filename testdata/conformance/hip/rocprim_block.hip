// testdata/conformance/hip/rocprim_block.hip -- rocPRIM's block and warp
// templates (librocprim-dev) instantiated in kernels, for the conformance
// suite (cmd/tests/conformance_hip.sh).  rocPRIM 5.3 reduces across a wave
// with DPP row broadcasts on every processor its config.hpp does not count
// as Navi (gfx1010 to gfx1031); gfx11 and gfx12 have no such broadcasts, so
// clang-19 refuses them there and the test lists those pairs as skipped.
#include <hip/hip_runtime.h>
#include <rocprim/block/block_reduce.hpp>
#include <rocprim/block/block_scan.hpp>
#include <rocprim/warp/warp_reduce.hpp>

template <unsigned Block, unsigned Items>
__global__ __launch_bounds__(Block) void block_sum(const int *in, int *out)
{
	using reduce = rocprim::block_reduce<int, Block>;
	__shared__ typename reduce::storage_type storage;
	int v[Items];
	for (unsigned i = 0; i < Items; i++)
		v[i] = in[(blockIdx.x * Block + threadIdx.x) * Items + i];
	int sum;
	reduce().reduce(v, sum, storage);
	if (threadIdx.x == 0)
		out[blockIdx.x] = sum;
}

template <unsigned Block>
__global__ __launch_bounds__(Block) void block_prefix(const float *in, float *out)
{
	using scan = rocprim::block_scan<float, Block>;
	__shared__ typename scan::storage_type storage;
	unsigned i = blockIdx.x * Block + threadIdx.x;
	float v = in[i];
	scan().inclusive_scan(v, v, storage, rocprim::plus<float>());
	out[i] = v;
}

__global__ __launch_bounds__(256) void warp_max(const unsigned *in, unsigned *out)
{
	using reduce = rocprim::warp_reduce<unsigned, 32>;
	__shared__ typename reduce::storage_type storage[256 / 32];
	unsigned i = blockIdx.x * 256 + threadIdx.x;
	unsigned m;
	reduce().reduce(in[i], m, storage[threadIdx.x / 32], rocprim::maximum<unsigned>());
	if (threadIdx.x % 32 == 0)
		out[i / 32] = m;
}

template __global__ void block_sum<256, 4>(const int *, int *);
template __global__ void block_sum<128, 1>(const int *, int *);
template __global__ void block_prefix<256>(const float *, float *);
