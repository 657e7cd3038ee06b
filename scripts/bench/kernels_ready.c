/*
 * scripts/bench/kernels_ready.c -- the in-process side of the
 * scripts/bench/kernels-ready benchmark: what a package does at start-up
 * with an embedded image, up to the call into the GPU's runtime, timed on
 * a large image and on a small one holding the same kernel.  Each image
 * file is read into memory first (aligned as `gpucc embed` aligns its
 * symbol), so that what is timed is what an embedded image costs:
 *
 *   open    gpucc_image_open_memory_for_lookup (as gpucc_image_open_mapped
 *           opens an image for the runtime), or with --whole
 *           gpucc_image_open_memory, which parses the whole manifest
 *   select  gpucc_image_select of KERNEL for TARGET (NVIDIA: a CUDA 12.4
 *           driver's PTX ISA, as testdata/example-package assumes)
 *   fetch   gpucc_image_read_payload of the chosen payload (read, verified)
 *   close   gpucc_image_free and the payload's release
 *
 *   kernels_ready [--whole] BIG SMALL KERNEL TARGET REPEAT
 *
 * The two images are timed in turn, REPEAT times each, every repetition on
 * a fresh open, so that a busy machine's load falls on both alike.  Prints
 * on stdout the median of the whole sequence per repetition in ms, BIG's
 * then SMALL's; on stderr the medians of each step, per image.  Fails when
 * the two images give the kernel different payload bytes.
 */
#define _POSIX_C_SOURCE 200809L
#include <gpucc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { STEP_OPEN, STEP_SELECT, STEP_FETCH, STEP_CLOSE, STEP_COUNT };
static const char *const step_names[STEP_COUNT] = {"open", "select", "fetch", "close"};

typedef struct image_run {
	const char *path;
	void *data;
	size_t size;
	double *steps[STEP_COUNT]; /* each repetition's time per step, ms */
	double *total;             /* each repetition's whole time, ms */
	void *payload;             /* the last repetition's payload */
	size_t payload_size;
} image_run;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The file's bytes in a 64-byte-aligned buffer, as an embedded image's. */
static int read_image(image_run *r)
{
	FILE *f = fopen(r->path, "rb");
	if (!f || fseek(f, 0, SEEK_END) != 0) {
		fprintf(stderr, "kernels_ready: cannot read '%s'\n", r->path);
		return -1;
	}
	long size = ftell(f);
	rewind(f);
	r->size = size > 0 ? (size_t)size : 0;
	r->data = r->size ? aligned_alloc(64, (r->size + 63) / 64 * 64) : NULL;
	int ok = r->data && fread(r->data, 1, r->size, f) == r->size;
	fclose(f);
	if (!ok)
		fprintf(stderr, "kernels_ready: cannot read '%s' (empty, or short read)\n", r->path);
	return ok ? 0 : -1;
}

static int fail(const char *path, const char *step)
{
	fprintf(stderr, "kernels_ready: %s of '%s': %s\n", step, path, gpucc_error_last()->message);
	return -1;
}

/* One repetition: open, select, fetch, close, each step timed. */
static int ready_once(image_run *r, long rep, bool whole, const char *kernel,
                      const gpucc_target *device)
{
	gpucc_image *img = NULL;
	gpucc_selection sel;
	double t0 = now_ms();
	int rc = whole ? gpucc_image_open_memory(&img, r->data, r->size, r->path)
	               : gpucc_image_open_memory_for_lookup(&img, r->data, r->size, r->path);
	if (rc)
		return fail(r->path, "open");
	double t1 = now_ms();
	if (gpucc_image_select(&sel, img, kernel, device) != 0) {
		gpucc_image_free(img);
		return fail(r->path, "select");
	}
	double t2 = now_ms();
	gpucc_free(r->payload);
	r->payload = NULL;
	rc = gpucc_image_read_payload(&r->payload, &r->payload_size, img, sel.payload);
	double t3 = now_ms();
	gpucc_image_free(img);
	double t4 = now_ms();
	if (rc)
		return fail(r->path, "fetch");
	r->steps[STEP_OPEN][rep] = t1 - t0;
	r->steps[STEP_SELECT][rep] = t2 - t1;
	r->steps[STEP_FETCH][rep] = t3 - t2;
	r->steps[STEP_CLOSE][rep] = t4 - t3;
	r->total[rep] = t4 - t0;
	return 0;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, long n)
{
	qsort(v, (size_t)n, sizeof *v, by_value);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int alloc_times(image_run *r, long repeat)
{
	r->total = calloc((size_t)repeat, sizeof *r->total);
	for (int s = 0; s < STEP_COUNT; s++)
		r->steps[s] = calloc((size_t)repeat, sizeof *r->steps[s]);
	for (int s = 0; s < STEP_COUNT; s++)
		if (!r->steps[s])
			return -1;
	return r->total ? 0 : -1;
}

static void release(image_run *r)
{
	free(r->data);
	free(r->total);
	for (int s = 0; s < STEP_COUNT; s++)
		free(r->steps[s]);
	gpucc_free(r->payload);
}

/* The device TARGET names; an NVIDIA one's driver JITs PTX up to CUDA
 * 12.4's ISA. */
static int parse_device(gpucc_target *device, const char *spelling)
{
	if (gpucc_target_parse(device, spelling) != 0) {
		fprintf(stderr, "kernels_ready: target '%s': %s\n", spelling,
		        gpucc_error_last()->message);
		return -1;
	}
	if (device->vendor == GPUCC_VENDOR_NVIDIA)
		device->ptx_isa = gpucc_cuda_max_ptx_isa(12040);
	return 0;
}

static int run(image_run runs[2], bool whole, const char *kernel, const char *target,
               long repeat)
{
	gpucc_target device;
	if (parse_device(&device, target) != 0)
		return -1;
	for (int i = 0; i < 2; i++)
		if (read_image(&runs[i]) != 0 || alloc_times(&runs[i], repeat) != 0)
			return -1;
	for (long rep = 0; rep < repeat; rep++)
		for (int i = 0; i < 2; i++)
			if (ready_once(&runs[i], rep, whole, kernel, &device) != 0)
				return -1;
	if (runs[0].payload_size != runs[1].payload_size ||
	    memcmp(runs[0].payload, runs[1].payload, runs[0].payload_size) != 0) {
		fprintf(stderr, "kernels_ready: '%s' and '%s' give kernel '%s' different payloads\n",
		        runs[0].path, runs[1].path, kernel);
		return -1;
	}
	for (int i = 0; i < 2; i++) {
		fprintf(stderr, "%s:", runs[i].path);
		for (int s = 0; s < STEP_COUNT; s++)
			fprintf(stderr, " %s %.4f", step_names[s], median(runs[i].steps[s], repeat));
		fprintf(stderr, " ms (medians of %ld)\n", repeat);
	}
	printf("%.4f %.4f\n", median(runs[0].total, repeat), median(runs[1].total, repeat));
	return 0;
}

int main(int argc, char **argv)
{
	bool whole = argc > 1 && strcmp(argv[1], "--whole") == 0;
	char **arg = argv + 1 + whole;
	long repeat = argc - 1 - whole == 5 ? atol(arg[4]) : 0;
	if (repeat <= 0) {
		fprintf(stderr, "usage: kernels_ready [--whole] BIG SMALL KERNEL TARGET REPEAT (REPEAT >= 1)\n");
		return 2;
	}
	image_run runs[2] = {{.path = arg[0]}, {.path = arg[1]}};
	int rc = run(runs, whole, arg[2], arg[3], repeat);
	release(&runs[0]);
	release(&runs[1]);
	return rc ? 1 : 0;
}
