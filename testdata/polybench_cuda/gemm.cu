// testdata/polybench_cuda/gemm.cu -- a PolyBench-like CUDA unit for the PCH test
// (cmd/tests/compile_sources_pch.sh) and scripts/bench/sources: A tiled matrix product: shared memory and barriers.
#define TILE 16
__global__ void gemm(int n, float alpha, float beta, const float *a, const float *b, float *c)
{
	__shared__ float as[TILE][TILE], bs[TILE][TILE];
	int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
	float sum = 0.0f;
	for (int t = 0; t < n; t += TILE) {
		as[threadIdx.y][threadIdx.x] = row < n && t + threadIdx.x < n ? a[row * n + t + threadIdx.x] : 0.0f;
		bs[threadIdx.y][threadIdx.x] = col < n && t + threadIdx.y < n ? b[(t + threadIdx.y) * n + col] : 0.0f;
		__syncthreads();
		for (int k = 0; k < TILE; k++)
			sum += as[threadIdx.y][k] * bs[k][threadIdx.x];
		__syncthreads();
	}
	if (row < n && col < n)
		c[row * n + col] = alpha * sum + beta * c[row * n + col];
}
