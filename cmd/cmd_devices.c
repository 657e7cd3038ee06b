/*
 * cmd/cmd_devices.c -- `gpucc devices [--json] [--image IMAGE]`: the GPUs
 * the HIP runtime and the CUDA driver see on this machine, with their target
 * IDs, and, given an image, which of its entries would load on each (the
 * rules of gpucc/runtime.h).
 *
 * The runtimes are loaded only by this command (and by programs that load
 * kernels); without a GPU it says why, per runtime, and exits 6
 * (EXIT_UNAVAILABLE) -- also with --json, after printing an empty list.
 */
#include "cmd.h"

#include <gpucc.h>

#include <stdlib.h>
#include <string.h>

static const cmd_option devices_options[] = {
	{"json", 0, NULL, false, "print a JSON object instead of a table"},
	{"image", 'i', "IMAGE", false, "also show which entries of IMAGE would load on each device"},
	{0},
};

static const char *runtime_name(gpucc_runtime_kind kind)
{
	return kind == GPUCC_RUNTIME_HIP ? "hip" : "cuda";
}

/* The target as the selection rules see it. */
static void device_target(char *out, size_t size, const gpucc_device *d)
{
	if (!d->target_known)
		snprintf(out, size, "%s (unknown to gpucc)", d->arch);
	else if (d->target.vendor == GPUCC_VENDOR_NVIDIA)
		snprintf(out, size, "sm_%u (PTX <= %u.%u)", d->target.sm, d->target.ptx_isa / 10,
		         d->target.ptx_isa % 10);
	else
		gpucc_target_format(out, &d->target);
}

static bool fits(gpucc_selection *s, const gpucc_entry *e, const gpucc_device *d)
{
	return d->target_known && gpucc_entry_fits(s, e, &d->target);
}

static void print_table(const gpucc_device *devices, size_t count, const gpucc_image *img)
{
	for (size_t i = 0; i < count; i++) {
		const gpucc_device *d = &devices[i];
		char target[96];
		device_target(target, sizeof target, d);
		printf("%s:%d  %s  %s  (%s, driver %d)\n", runtime_name(d->runtime), d->ordinal, target,
		       d->name, d->arch, d->driver_version);
		if (!img)
			continue;
		size_t loads = 0;
		for (size_t e = 0; e < gpucc_image_entry_count(img); e++) {
			const gpucc_entry *entry = gpucc_image_entry(img, e);
			gpucc_selection s;
			if (!fits(&s, entry, d))
				continue;
			char hex[GPUCC_DIGEST_HEX_SIZE];
			gpucc_digest_to_hex(hex, &entry->key);
			printf("  loads %.12s  %-24s %-6s %-8s", hex, entry->target, gpucc_part_name(s.part),
			       s.exact ? "exact" : "fallback");
			for (size_t k = 0; k < entry->kernel_count; k++)
				printf("%s%s", k ? "," : " ", entry->kernels[k].name);
			putchar('\n');
			loads++;
		}
		if (loads == 0)
			printf("  no entry of '%s' loads on this device\n", gpucc_image_name(img));
	}
}

static void print_json(const gpucc_device *devices, size_t count, const gpucc_image *img,
                       const char *reason)
{
	printf("{\"devices\": [");
	for (size_t i = 0; i < count; i++) {
		const gpucc_device *d = &devices[i];
		char target[GPUCC_TARGET_NAME_SIZE] = "";
		if (d->target_known && d->target.vendor == GPUCC_VENDOR_AMD)
			gpucc_target_format(target, &d->target);
		else if (d->target_known)
			snprintf(target, sizeof target, "sm_%u", d->target.sm);
		printf("%s\n  {\"runtime\": \"%s\", \"ordinal\": %d, \"name\": ", i ? "," : "",
		       runtime_name(d->runtime), d->ordinal);
		cmd_json_string(stdout, d->name);
		printf(", \"arch\": ");
		cmd_json_string(stdout, d->arch);
		printf(", \"target\": ");
		if (d->target_known)
			cmd_json_string(stdout, target);
		else
			printf("null");
		if (d->target_known && d->target.vendor == GPUCC_VENDOR_NVIDIA)
			printf(", \"max_ptx_isa\": %u", d->target.ptx_isa);
		printf(", \"driver_version\": %d", d->driver_version);
		if (img) {
			printf(", \"loads\": [");
			size_t n = 0;
			for (size_t e = 0; e < gpucc_image_entry_count(img); e++) {
				const gpucc_entry *entry = gpucc_image_entry(img, e);
				gpucc_selection s;
				if (!fits(&s, entry, d))
					continue;
				char hex[GPUCC_DIGEST_HEX_SIZE];
				gpucc_digest_to_hex(hex, &entry->key);
				printf("%s{\"key\": \"%s\", \"target\": ", n++ ? ", " : "", hex);
				cmd_json_string(stdout, entry->target);
				printf(", \"part\": \"%s\", \"exact\": %s}", gpucc_part_name(s.part),
				       s.exact ? "true" : "false");
			}
			printf("]");
		}
		printf("}");
	}
	printf("%s]", count ? "\n" : "");
	if (reason) {
		printf(", \"reason\": ");
		cmd_json_string(stdout, reason);
	}
	printf("}\n");
}

static int run_devices(const cmd_args *args)
{
	gpucc_image *img = NULL;
	const char *image_path = cmd_value(args, "image");
	if (image_path && gpucc_image_open_mapped(&img, image_path) != 0)
		return cmd_fail(args);
	gpucc_device *devices = NULL;
	size_t count = 0;
	int rc = EXIT_OK;
	if (gpucc_devices_list(&devices, &count) != 0) {
		if (cmd_flag(args, "json"))
			print_json(NULL, 0, img, gpucc_error_last()->message);
		else
			printf("no GPUs\n");
		rc = cmd_fail(args);
	} else if (cmd_flag(args, "json")) {
		print_json(devices, count, img, NULL);
	} else {
		print_table(devices, count, img);
	}
	gpucc_free(devices);
	gpucc_image_free(img);
	return rc;
}

const cmd_spec cmd_devices_spec = {
	.name = "devices",
	.synopsis = "[--json] [--image IMAGE]",
	.summary = "list the GPUs the HIP runtime and CUDA driver see, and what would load",
	.description =
		"One line per GPU: RUNTIME:ORDINAL, the target selection uses (AMD target ID;\n"
		"NVIDIA sm with the newest PTX ISA its driver JITs), the name, the architecture\n"
		"as the runtime reports it and the driver version.  With --image, the entries\n"
		"of IMAGE that would load on each device, and whether each is an exact fit or\n"
		"a fallback (PTX to JIT; a cubin for an earlier minor revision of the device's\n"
		"major; a code object built for sramecc/xnack \"any\").  A cubin made by a\n"
		"ptxas of a newer CUDA major than the driver's never loads (its PTX may).\n"
		"The runtimes (libamdhip64.so.5, libcuda.so.1) are loaded only by this command\n"
		"and by programs that load kernels.  Without a GPU, says why per runtime and\n"
		"exits 6.",
	.options = devices_options,
	.min_positional = 0,
	.max_positional = 0,
	.run = run_devices,
};
