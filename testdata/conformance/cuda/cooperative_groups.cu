// testdata/conformance/cuda/cooperative_groups.cu -- the toolkit's
// cooperative groups, for the conformance suite
// (cmd/tests/conformance_cuda.sh): thread blocks, tiled partitions with
// shuffles, votes and cg::reduce, and a grid-stride loop over this_grid()
// (without grid.sync(), which needs the device runtime library).
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

__global__ void tile_sum(const int *in, int *out)
{
	cg::thread_block block = cg::this_thread_block();
	cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
	int v = in[block.group_index().x * block.size() + block.thread_rank()];
	int s = cg::reduce(warp, v, cg::plus<int>());
	if (warp.thread_rank() == 0)
		atomicAdd(out, s);
}

__global__ void tile_scan(float *data)
{
	auto tile = cg::tiled_partition<16>(cg::this_thread_block());
	float v = data[threadIdx.x];
	for (unsigned d = 1; d < tile.size(); d *= 2) {
		float o = tile.shfl_up(v, d);
		if (tile.thread_rank() >= d)
			v += o;
	}
	tile.sync();
	data[threadIdx.x] = v + (tile.any(v > 100.f) ? 1.f : 0.f);
}

__global__ void grid_double(float *data, int n)
{
	cg::grid_group grid = cg::this_grid();
	for (unsigned long long i = grid.thread_rank(); i < (unsigned long long)n; i += grid.size())
		data[i] *= 2.f;
}
