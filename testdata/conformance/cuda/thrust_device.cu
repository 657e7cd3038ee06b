// testdata/conformance/cuda/thrust_device.cu -- Thrust's device code (the
// toolkit's CCCL), for the conformance suite (cmd/tests/conformance_cuda.sh):
// thrust::complex math in a kernel, and the kernels that thrust::reduce on
// the device policy instantiates (CUB's DeviceReduce) from a host function,
// which a device-only compile emits without the host code.
#include <thrust/complex.h>
#include <thrust/execution_policy.h>
#include <thrust/reduce.h>

__global__ void rotate(thrust::complex<float> *z, float angle)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	z[i] = z[i] * thrust::exp(thrust::complex<float>(0.f, angle));
}

float total(const float *p, int n)
{
	return thrust::reduce(thrust::device, p, p + n);
}
