// testdata/conformance/opencl/kernels.cl -- OpenCL C 1.2 kernels whose
// builtins libclc defines, for the conformance suite
// (cmd/tests/conformance_opencl.sh): work-item functions, math (sin, cos,
// exp, sqrt, native_divide, half_cos; not native_sin, whose llvm.sin
// clang-19 cannot select for NVPTX), vector types and dot, mad, clamp,
// local memory (static, and an argument sized at launch) with barriers, a
// work-group reduction, and 32-bit atomics on local and global memory, a
// compare-and-swap loop among them.  One file: each module costs gpucc a
// libclc link per target.

kernel void wave(global float *out, global const float *in, float t)
{
	size_t i = get_global_id(0);
	float x = in[i];
	out[i] = sin(x * t) * exp(-t) + cos(t) + sqrt(fabs(x)) + native_divide(x, t) + half_cos(x);
}

kernel void histogram(global const uint *in, global uint *bins, uint n)
{
	local uint counts[64];
	size_t l = get_local_id(0);
	if (l < 64)
		counts[l] = 0;
	barrier(CLK_LOCAL_MEM_FENCE);
	for (size_t i = get_global_id(0); i < n; i += get_global_size(0))
		atomic_inc(&counts[in[i] % 64]);
	barrier(CLK_LOCAL_MEM_FENCE);
	if (l < 64)
		atomic_add(&bins[l], counts[l]);
}

kernel void minmax(global const int *in, volatile global int *lo, volatile global int *hi)
{
	int v = in[get_global_id(0)];
	atomic_min(lo, v);
	atomic_max(hi, v);
}

kernel void dot_partial(global const float4 *a, global const float4 *b, global float *partial,
                        local float *scratch)
{
	size_t l = get_local_id(0);
	scratch[l] = dot(a[get_global_id(0)], b[get_global_id(0)]);
	barrier(CLK_LOCAL_MEM_FENCE);
	for (size_t s = get_local_size(0) / 2; s > 0; s /= 2) {
		if (l < s)
			scratch[l] += scratch[l + s];
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	if (l == 0)
		partial[get_group_id(0)] = scratch[0];
}

kernel void add_float(volatile global float *sum, global const float *in)
{
	float v = clamp(mad(in[get_global_id(0)], 2.0f, 1.0f), -8.0f, 8.0f);
	volatile global int *word = (volatile global int *)sum;
	int old = *word, seen;
	do {
		seen = old;
		old = atomic_cmpxchg(word, seen, as_int(as_float(seen) + v));
	} while (old != seen);
}
