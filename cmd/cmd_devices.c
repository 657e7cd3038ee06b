/*
 * cmd/cmd_devices.c -- `gpucc devices [--json] [--image IMAGE [--target T...]
 * [--cuda-driver VERSION]]`: the GPUs the HIP runtime and the CUDA driver see
 * on this machine, with their target IDs, and, given an image, the entry the
 * loader would pick on each for each kernel of the image (gpucc_image_select,
 * the rules of gpucc/runtime.h).
 *
 * The runtimes are loaded only by this command (and by programs that load
 * kernels); without a GPU it says why, per runtime, and exits 6
 * (EXIT_UNAVAILABLE) -- also with --json, after printing an empty list.
 * With --target it answers for the named device targets instead and loads no
 * runtime at all, so that a machine without a GPU (a package's CI) can ask
 * whether an image serves every kernel on sm_75 or gfx90a:xnack-.  A kernel
 * that no entry serves on some device is exit 2 (EXIT_NOT_FOUND), after the
 * whole table.
 */
#include "cmd.h"

#include <gpucc.h>

#include <stdlib.h>
#include <string.h>

static const cmd_option devices_options[] = {
	{"json", 0, NULL, false, "print a JSON object instead of a table"},
	{"image", 'i', "IMAGE", false, "for each device, the entry of IMAGE each kernel loads from"},
	{"target", 't', "TARGET", false, "answer for a device of TARGET, not the GPUs here (repeatable)"},
	{"cuda-driver", 0, "VERSION", false, "the driver of NVIDIA --targets, e.g. 12.4 (default: newest)"},
	{"hip-version", 0, "VERSION", false,
	 "the HIP runtime of AMD --targets, e.g. 5.2, which bounds the code objects it loads (default: newest)"},
	{0},
};

/* Big enough for any selection message (two bounded lists and a path). */
#define WHY_SIZE 2048

static const char *runtime_name(gpucc_runtime_kind kind)
{
	return kind == GPUCC_RUNTIME_HIP ? "hip" : "cuda";
}

/* ---- the kernels of an image ------------------------------------------------- */

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The distinct kernel names of img, sorted: *out (release with free) holds
 * *count names borrowed from the image.  -1 when out of memory. */
static int image_kernels(const char ***out, size_t *count, const gpucc_image *img)
{
	size_t total = 0;
	for (size_t e = 0; e < gpucc_image_entry_count(img); e++)
		total += gpucc_image_entry(img, e)->kernel_count;
	const char **names = malloc((total ? total : 1) * sizeof *names);
	if (!names)
		return -1;
	size_t n = 0;
	for (size_t e = 0; e < gpucc_image_entry_count(img); e++) {
		const gpucc_entry *entry = gpucc_image_entry(img, e);
		for (size_t k = 0; k < entry->kernel_count; k++)
			names[n++] = entry->kernels[k].name;
	}
	qsort(names, n, sizeof *names, compare_names);
	size_t distinct = 0;
	for (size_t i = 0; i < n; i++)
		if (distinct == 0 || strcmp(names[distinct - 1], names[i]) != 0)
			names[distinct++] = names[i];
	*out = names;
	*count = distinct;
	return 0;
}

/* ---- what loads ---------------------------------------------------------------- */

/* The image and its kernels, and the rows that had no fit (the first one's
 * message is kept for the closing error). */
typedef struct image_report {
	const gpucc_image *img;
	const char **kernels;
	size_t kernel_count;
	size_t rows, misses;
	char first_miss[WHY_SIZE];
} image_report;

/* The entry d loads kernel from (true), or why none (false, in why). */
static bool select_kernel(gpucc_selection *s, char why[WHY_SIZE], image_report *r,
                          const char *kernel, const gpucc_device *d)
{
	r->rows++;
	bool ok = false;
	if (!d->target_known)
		snprintf(why, WHY_SIZE, "the device's architecture '%s' is unknown to gpucc", d->arch);
	else if (gpucc_image_select(s, r->img, kernel, &d->target) != 0)
		snprintf(why, WHY_SIZE, "%s", gpucc_error_last()->message);
	else
		ok = true;
	if (!ok && r->misses++ == 0)
		snprintf(r->first_miss, sizeof r->first_miss, "%s", why);
	return ok;
}

/* The target as the selection rules see it. */
static void device_target(char *out, size_t size, const gpucc_device *d)
{
	if (!d->target_known)
		snprintf(out, size, "%s (unknown to gpucc)", d->arch);
	else if (d->target.vendor == GPUCC_VENDOR_NVIDIA && d->target.ptx_isa == 0)
		snprintf(out, size, "sm_%u (no PTX)", d->target.sm);
	else if (d->target.vendor == GPUCC_VENDOR_NVIDIA)
		snprintf(out, size, "sm_%u (PTX <= %u.%u)", d->target.sm, d->target.ptx_isa / 10,
		         d->target.ptx_isa % 10);
	else
		gpucc_target_format(out, &d->target);
}

static void print_device_line(const gpucc_device *d, int index)
{
	char target[96];
	device_target(target, sizeof target, d);
	if (d->runtime != GPUCC_RUNTIME_NONE) {
		printf("%s:%d  %s  %s  (%s, driver %d)\n", runtime_name(d->runtime), d->ordinal, target,
		       d->name, d->arch, d->driver_version);
	} else if (d->target.vendor == GPUCC_VENDOR_NVIDIA && d->driver_version) {
		printf("target:%d  %s  (--target %s, CUDA driver %d.%d)\n", index, target, d->arch,
		       d->driver_version / 1000, d->driver_version % 1000 / 10);
	} else if (d->target.vendor == GPUCC_VENDOR_NVIDIA) {
		printf("target:%d  %s  (--target %s, newest CUDA driver)\n", index, target, d->arch);
	} else {
		printf("target:%d  %s  (--target %s)\n", index, target, d->arch);
	}
}

/* The columns name takes on a terminal: its UTF-8 characters, not its
 * bytes (manifest strings are UTF-8 without control characters; wide
 * characters are rare enough in kernel names to count as one). */
static size_t columns(const char *name)
{
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		n += (*p & 0xc0) != 0x80;
	return n;
}

static void print_table(const gpucc_device *devices, size_t count, image_report *r)
{
	size_t width = 0;
	for (size_t k = 0; r && k < r->kernel_count; k++)
		if (columns(r->kernels[k]) > width)
			width = columns(r->kernels[k]);
	for (size_t i = 0; i < count; i++) {
		const gpucc_device *d = &devices[i];
		print_device_line(d, (int)i);
		if (!r)
			continue;
		if (r->kernel_count == 0) {
			printf("  '");
			cmd_put_shown(stdout, gpucc_image_name(r->img));
			printf("' holds no kernels\n");
		}
		for (size_t k = 0; k < r->kernel_count; k++) {
			gpucc_selection s;
			char why[WHY_SIZE];
			printf("  %s%*s  ", r->kernels[k], (int)(width - columns(r->kernels[k])), "");
			if (!select_kernel(&s, why, r, r->kernels[k], d)) {
				printf("no fit: %s\n", why);
				continue;
			}
			char hex[GPUCC_DIGEST_HEX_SIZE];
			gpucc_digest_to_hex(hex, &s.entry->key);
			printf("%.12s  %-24s %-6s %s\n", hex, s.entry->target, gpucc_part_name(s.part),
			       s.exact ? "exact" : "fallback");
		}
	}
}

static void print_json_kernels(const gpucc_device *d, image_report *r)
{
	printf(", \"kernels\": [");
	for (size_t k = 0; k < r->kernel_count; k++) {
		gpucc_selection s;
		char why[WHY_SIZE];
		printf("%s\n    {\"kernel\": ", k ? "," : "");
		cmd_json_string(stdout, r->kernels[k]);
		if (!select_kernel(&s, why, r, r->kernels[k], d)) {
			printf(", \"error\": ");
			cmd_json_string(stdout, why);
			printf("}");
			continue;
		}
		char hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(hex, &s.entry->key);
		printf(", \"key\": \"%s\", \"target\": ", hex);
		cmd_json_string(stdout, s.entry->target);
		printf(", \"part\": \"%s\", \"exact\": %s}", gpucc_part_name(s.part),
		       s.exact ? "true" : "false");
	}
	printf("%s]", r->kernel_count ? "\n  " : "");
}

/* A --target's fields are null where a GPU has them from its runtime
 * (runtime, name; driver_version without --cuda-driver); arch is the
 * spelling given. */
static void print_json(const gpucc_device *devices, size_t count, image_report *r,
                       const char *reason)
{
	printf("{\"devices\": [");
	for (size_t i = 0; i < count; i++) {
		const gpucc_device *d = &devices[i];
		bool gpu = d->runtime != GPUCC_RUNTIME_NONE;
		char target[GPUCC_TARGET_NAME_SIZE] = "";
		if (d->target_known && d->target.vendor == GPUCC_VENDOR_AMD)
			gpucc_target_format(target, &d->target);
		else if (d->target_known)
			snprintf(target, sizeof target, "sm_%u", d->target.sm);
		printf("%s\n  {\"runtime\": ", i ? "," : "");
		if (gpu)
			printf("\"%s\"", runtime_name(d->runtime));
		else
			printf("null");
		printf(", \"ordinal\": %d, \"name\": ", gpu ? d->ordinal : (int)i);
		if (gpu)
			cmd_json_string(stdout, d->name);
		else
			printf("null");
		printf(", \"arch\": ");
		cmd_json_string(stdout, d->arch);
		printf(", \"target\": ");
		if (d->target_known)
			cmd_json_string(stdout, target);
		else
			printf("null");
		if (d->target_known && d->target.vendor == GPUCC_VENDOR_NVIDIA)
			printf(", \"max_ptx_isa\": %u", d->target.ptx_isa);
		/* The LLVM that would compile native code for it. */
		const char *llvm = d->target_known ? cmd_backend_for(&d->target) : NULL;
		printf(", \"llvm\": ");
		if (llvm)
			cmd_json_string(stdout, llvm);
		else
			printf("null");
		if (gpu || d->driver_version)
			printf(", \"driver_version\": %d", d->driver_version);
		else
			printf(", \"driver_version\": null");
		if (r)
			print_json_kernels(d, r);
		printf("}");
	}
	printf("%s]", count ? "\n" : "");
	if (reason) {
		printf(", \"reason\": ");
		cmd_json_string(stdout, reason);
	}
	printf("}\n");
}

/* ---- the command ----------------------------------------------------------------- */

/* The --targets as devices: *out (release with free) holds one per
 * --target.  EXIT_OK; else, after saying which argument is bad,
 * EXIT_USAGE for a version not of its form, EXIT_BAD_INPUT for a target
 * that names no device gpucc knows (as an unknown target is in every
 * command). */
static int devices_from_targets(gpucc_device **out, size_t *count, const cmd_args *args)
{
	gpucc_device_target_options opts = GPUCC_DEVICE_TARGET_OPTIONS_INIT;
	const char *driver_arg, *hip_arg;
	if (cmd_single_value(&driver_arg, args, "cuda-driver") != EXIT_OK ||
	    cmd_single_value(&hip_arg, args, "hip-version") != EXIT_OK)
		return EXIT_USAGE;
	if (driver_arg && gpucc_cuda_version_parse(&opts.cuda_driver_version, driver_arg) != 0)
		return cmd_error(args, EXIT_USAGE,
		                 "bad --cuda-driver '%s': expected the driver's CUDA version, e.g. 12.4",
		                 driver_arg);
	if (hip_arg && gpucc_hip_version_parse(&opts.hip_version, hip_arg) != 0)
		return cmd_error(args, EXIT_USAGE,
		                 "bad --hip-version '%s': expected the HIP runtime's version, e.g. 5.2",
		                 hip_arg);
	size_t n = (size_t)cmd_value_count(args, "target");
	gpucc_device *devices = calloc(n, sizeof *devices);
	if (!devices)
		return cmd_error(args, EXIT_FAIL, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if (gpucc_device_from_target(&devices[i], cmd_value_at(args, "target", (int)i), &opts) !=
		    0) {
			free(devices);
			return cmd_error(args, EXIT_BAD_INPUT, "bad --target: %s",
			                 gpucc_error_last()->message);
		}
	}
	*out = devices;
	*count = n;
	return EXIT_OK;
}

static int run_devices(const cmd_args *args)
{
	const char *image_path;
	if (cmd_single_value(&image_path, args, "image") != EXIT_OK)
		return EXIT_USAGE;
	bool targets = cmd_value_count(args, "target") > 0;
	if (targets && !image_path)
		return cmd_error(args, EXIT_USAGE, "--target needs --image: say which image to check");
	if (cmd_value(args, "cuda-driver") && !targets)
		return cmd_error(args, EXIT_USAGE,
		                 "--cuda-driver describes --target devices: the GPUs here report their own");
	if (cmd_value(args, "hip-version") && !targets)
		return cmd_error(args, EXIT_USAGE,
		                 "--hip-version describes --target devices: the GPUs here report their own");

	gpucc_device *devices = NULL; /* from the runtimes (gpucc_free), or targets (free) */
	size_t count = 0;
	gpucc_image *img = NULL;
	image_report report = {0};
	int rc = targets ? devices_from_targets(&devices, &count, args) : EXIT_OK;
	if (rc != EXIT_OK)
		return rc;
	/* Read, not mapped (gpucc_image_open_mapped): an image cut short in
	 * place meanwhile is then reported, where a mapping would die of
	 * SIGBUS. */
	if (image_path && gpucc_image_open(&img, image_path) != 0) {
		rc = cmd_fail(args);
		goto cleanup;
	}
	if (img) {
		report.img = img;
		if (image_kernels(&report.kernels, &report.kernel_count, img) != 0) {
			rc = cmd_error(args, EXIT_FAIL, "out of memory");
			goto cleanup;
		}
	}
	if (!targets && gpucc_devices_list(&devices, &count) != 0) {
		if (cmd_flag(args, "json"))
			print_json(NULL, 0, img ? &report : NULL, gpucc_error_last()->message);
		else
			printf("no GPUs\n");
		rc = cmd_fail(args);
		goto cleanup;
	}
	if (cmd_flag(args, "json"))
		print_json(devices, count, img ? &report : NULL, NULL);
	else
		print_table(devices, count, img ? &report : NULL);
	if (report.misses)
		rc = cmd_error(args, EXIT_NOT_FOUND,
		               "no fit for %zu of %zu kernel rows; the first: %s",
		               report.misses, report.rows, report.first_miss);
cleanup:
	if (targets)
		free(devices);
	else
		gpucc_free(devices);
	free(report.kernels);
	gpucc_image_free(img);
	return rc;
}

const cmd_spec cmd_devices_spec = {
	.name = "devices",
	.synopsis = "[--json] [--image IMAGE [--target TARGET]... [--cuda-driver VERSION] "
	            "[--hip-version VERSION]]",
	.summary = "list the GPUs (or given targets) and the entry each kernel would load",
	.description =
		"One line per GPU: RUNTIME:ORDINAL, the target selection uses (AMD target ID;\n"
		"NVIDIA sm with the newest PTX ISA its driver JITs), the name, the architecture\n"
		"as the runtime reports it and the driver version.\n"
		"\n"
		"With --image, below each device one row per kernel of IMAGE: the entry the\n"
		"loader picks for it (gpucc_image_select: key, target, part) and whether that\n"
		"is an exact fit or a fallback (PTX to JIT; a cubin for an earlier minor\n"
		"revision of the device's major; a code object built for sramecc/xnack\n"
		"\"any\"), or \"no fit\" and why, listing the image's targets of the device's\n"
		"vendor (NVIDIA sm_ or AMD gfx), or saying it has none.  A cubin made by a\n"
		"ptxas of a newer CUDA major than the driver's never loads (its PTX may), nor\n"
		"does a code object of a version the HIP runtime does not load (v5 before HIP\n"
		"6: HIP 5.2 loads v4).\n"
		"When some kernel has no fit on some device, the whole table is printed and\n"
		"the command exits 2.\n"
		"\n"
		"With --target, no runtime is loaded and no GPU is needed: the rows are for\n"
		"a device of each TARGET.  AMD: a target ID such as gfx90a:xnack-; a feature\n"
		"left out means the device may run either way, so only entries that leave\n"
		"it out too fit; --hip-version gives the HIP runtime (5.2), which bounds the\n"
		"code object versions it loads (default: any).  NVIDIA: sm_XY, the compute\n"
		"capability X.Y (10.0 is sm_100; also one no LLVM of gpucc's compiles for: it\n"
		"runs older PTX); the driver is the newest\n"
		"unless --cuda-driver gives its CUDA version (12.4, as nvidia-smi shows it),\n"
		"which bounds the PTX ISA it JITs and the cubins it loads.  An sm_XYa entry\n"
		"runs only on sm_XY; an sm_XYf one on its family (sm_100f on sm_100 and\n"
		"sm_103).  A PTX ISA belongs to code, not to devices: sm_90:ptx78, sm_90a and\n"
		"sm_100f are refused.\n"
		"\n"
		"The runtimes (libamdhip64.so.5, libcuda.so.1) are loaded only by this command\n"
		"without --target and by programs that load kernels.  Without a GPU (and\n"
		"without --target), says why per runtime and exits 6.  --json gives each\n"
		"device's \"llvm\": the LLVM of the newest backend present that compiles native\n"
		"code for it, or null.\n"
		"\n"
		"exit codes: 0 success, 2 some kernel has no fit on some device, or IMAGE does\n"
		"not exist, 3 IMAGE is not a valid gpucc image, or a --target names no device\n"
		"gpucc knows, 6 no GPU (without --target), 129 usage (a --cuda-driver or\n"
		"--hip-version that is no version, --target without --image).",
	.options = devices_options,
	.min_positional = 0,
	.max_positional = 0,
	.run = run_devices,
};
