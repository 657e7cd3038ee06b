/*
 * cmd/tests/lookup_probe.c -- what the runtime's readers serve from an
 * image: opened mapped (gpucc_image_open_mapped) and from memory
 * (gpucc_image_open_memory_for_lookup, as an embedded image is), a lookup
 * of KEY and the selection of KERNEL for the device TARGET, one line each:
 *
 *   lookup_probe IMAGE KEY KERNEL TARGET
 *   mapped lookup: KEY-OF-ENTRY TARGET-OF-ENTRY       (or: mapped lookup: error: ...)
 *   mapped select: KEY-OF-ENTRY TARGET-OF-ENTRY PART
 *   memory lookup: ...
 *   memory select: ...
 *
 * Exit 0 whatever is served (hostile_images.sh reads the lines), 2 for bad
 * arguments or an unreadable file.
 */
#include <gpucc.h>

#include <stdio.h>
#include <stdlib.h>

static void report(const char *how, const char *what, int rc, const gpucc_entry *e,
                   const char *part)
{
	if (rc) {
		printf("%s %s: error: %s\n", how, what, gpucc_error_last()->message);
		return;
	}
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, &e->key);
	printf("%s %s: %s %s%s%s\n", how, what, hex, e->target, part ? " " : "", part ? part : "");
}

static void probe(const char *how, gpucc_image *img, const char *key, const char *kernel,
                  const gpucc_target *device)
{
	const gpucc_entry *e = NULL;
	int rc = gpucc_image_lookup(&e, img, key);
	report(how, "lookup", rc, e, NULL);
	gpucc_selection s;
	rc = gpucc_image_select(&s, img, kernel, device);
	report(how, "select", rc, rc ? NULL : s.entry, rc ? NULL : gpucc_part_name(s.part));
}

int main(int argc, char **argv)
{
	gpucc_target device;
	if (argc != 5 || gpucc_target_parse(&device, argv[4]) != 0) {
		fprintf(stderr, "usage: lookup_probe IMAGE KEY KERNEL TARGET\n");
		return 2;
	}
	gpucc_image *img;
	if (gpucc_image_open_mapped(&img, argv[1]) != 0) {
		printf("mapped open: error: %s\n", gpucc_error_last()->message);
	} else {
		probe("mapped", img, argv[2], argv[3], &device);
		gpucc_image_free(img);
	}
	FILE *f = fopen(argv[1], "rb");
	if (!f || fseek(f, 0, SEEK_END) != 0) {
		perror(argv[1]);
		return 2;
	}
	long size = ftell(f);
	char *data = size >= 0 ? malloc((size_t)size + 1) : NULL;
	rewind(f);
	if (!data || fread(data, 1, (size_t)size, f) != (size_t)size) {
		perror(argv[1]);
		return 2;
	}
	fclose(f);
	if (gpucc_image_open_memory_for_lookup(&img, data, (size_t)size, argv[1]) != 0) {
		printf("memory open: error: %s\n", gpucc_error_last()->message);
	} else {
		probe("memory", img, argv[2], argv[3], &device);
		gpucc_image_free(img);
	}
	free(data);
	return 0;
}
