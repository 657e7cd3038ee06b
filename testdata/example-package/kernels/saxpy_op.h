// kernels/saxpy_op.h -- what both kernels compute for one element, shared
// by saxpy.cu and saxpy.hip.  gpucc's dependency file names it, so that
// editing it rebuilds the image (meson.build's depfile:, CMake's DEPFILE
// through gpucc_add_image).
static __device__ inline float saxpy_op(float a, float x, float y)
{
	return a * x + y;
}
