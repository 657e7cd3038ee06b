// testdata/conformance/hip/rocrand_generators.hip -- rocRAND's device
// generators (librocrand-dev) in kernels, for the conformance suite
// (cmd/tests/conformance_hip.sh): Philox4x32-10 uniforms and XORWOW
// normals (whose skip-ahead reads rocRAND's precomputed matrices).
#include <hip/hip_runtime.h>
#include <rocrand/rocrand_kernel.h>

__global__ void philox_uniform(float *out, unsigned long long seed, unsigned n)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	rocrand_state_philox4x32_10 state;
	rocrand_init(seed, i, 0, &state);
	if (i < n)
		out[i] = rocrand_uniform(&state);
}

__global__ void xorwow_normal(float2 *out, unsigned long long seed, unsigned n)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	rocrand_state_xorwow state;
	rocrand_init(seed, i, 0, &state);
	if (i < n)
		out[i] = rocrand_normal2(&state);
}
