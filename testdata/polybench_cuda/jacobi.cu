// testdata/polybench_cuda/jacobi.cu -- a PolyBench-like CUDA unit for the PCH test
// (cmd/tests/compile_sources_pch.sh) and scripts/bench/sources: A 2-D Jacobi sweep, templated on the element type.
template <typename T>
__global__ void jacobi(int n, const T *in, T *out)
{
	int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
	if (i > 0 && j > 0 && i < n - 1 && j < n - 1)
		out[i * n + j] = T(0.2) * (in[i * n + j] + in[(i - 1) * n + j] + in[(i + 1) * n + j] +
		                           in[i * n + j - 1] + in[i * n + j + 1]);
}
template __global__ void jacobi<float>(int, const float *, float *);
template __global__ void jacobi<double>(int, const double *, double *);
