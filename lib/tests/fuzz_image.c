/*
 * lib/tests/fuzz_image.c -- fuzz target: an image as bytes, through
 * everything that reads one: open from memory (the ustar reader, the
 * manifest parser and, for compressed or unusual inputs, libarchive), list,
 * look up by key, read and copy payloads, verify, and `gpucc extract` itself
 * (cmd/cmd_extract.c, reading the image from a file) into a scratch
 * directory.
 *
 * The same bytes are opened for lookup too (gpucc_image_open_memory_for_lookup,
 * through the index of a format 1.1 image), and looked up by every key of
 * the full open and by every one-digit prefix.
 *
 * Checked: a refusal carries a message; every entry is found by its key; a
 * lookup through the index returns the entry of the key asked for (its key
 * the one its fields give), with the content the full open sees, or fails;
 * a payload handed out matches its digest and size; verify never passes an
 * image with a payload that cannot be read; extract writes only into its
 * directory, only plain files with sanitised names, one per (entry,
 * payload), each holding a payload of the image, and on failure leaves
 * nothing behind; it succeeds only when every payload reads.
 */
#include "cmd.h"
#include "fuzz.h"
#include "fuzz_images.h"
#include "image_internal.h"

#include <gpucc.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Read every payload of every entry; false when one cannot be read. */
static bool read_payloads(gpucc_image *img)
{
	bool all_read = true;
	for (size_t i = 0; i < gpucc_image_entry_count(img); i++) {
		const gpucc_entry *e = gpucc_image_entry(img, i), *found;
		char hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(hex, &e->key);
		if (gpucc_image_lookup(&found, img, hex) != 0 || found != e)
			fuzz_fail("an entry is not found by its own key");
		for (size_t p = 0; p < e->payload_count; p++) {
			void *bytes;
			size_t n;
			if (gpucc_image_read_payload(&bytes, &n, img, &e->payloads[p]) != 0) {
				all_read = false;
				continue;
			}
			gpucc_digest d;
			gpucc_digest_buffer(&d, bytes, n);
			if (n != e->payloads[p].size || gpucc_digest_compare(&d, &e->payloads[p].sha256) != 0)
				fuzz_fail("a payload handed out does not match its digest");
			gpucc_free(bytes);
		}
	}
	return all_read;
}

/* Stream every payload to /dev/null: the same verdict as reading it. */
static void copy_payloads(gpucc_image *img, bool all_read)
{
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	for (size_t i = 0; i < gpucc_image_entry_count(img); i++) {
		const gpucc_entry *e = gpucc_image_entry(img, i);
		for (size_t p = 0; p < e->payload_count; p++)
			if (gpucc_image_copy_payload(img, &e->payloads[p], fd) != 0 && all_read)
				fuzz_fail("a payload that reads does not copy");
	}
	close(fd);
}

static bool sanitised_name(const char *name)
{
	if (name[0] == '.' || name[0] == '\0')
		return false;
	for (const char *c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
		      *c == '.' || *c == '_' || *c == '+' || *c == '-'))
			return false;
	return true;
}

/* The payload of img with this digest and size, if any entry lists one. */
static bool is_payload_of(const gpucc_image *img, const gpucc_digest *d, uint64_t size)
{
	for (size_t i = 0; i < gpucc_image_entry_count(img); i++) {
		const gpucc_entry *e = gpucc_image_entry(img, i);
		for (size_t p = 0; p < e->payload_count; p++)
			if (e->payloads[p].size == size && gpucc_digest_compare(&e->payloads[p].sha256, d) == 0)
				return true;
	}
	return false;
}

/* Check what extract left in out; the number of files. */
static size_t check_extracted(const char *out, const gpucc_image *img)
{
	DIR *d = opendir(out);
	if (!d)
		fuzz_fail("extract succeeded without its directory");
	size_t files = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", out, de->d_name);
		struct stat st;
		if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
			fuzz_fail("extract wrote something other than a plain file");
		if (!sanitised_name(de->d_name))
			fuzz_fail("extract wrote a file whose name is not sanitised");
		gpucc_digest digest;
		uint64_t size;
		if (img && (gpucc_digest_file(&digest, &size, path) != 0 ||
		            !is_payload_of(img, &digest, size)))
			fuzz_fail("extract wrote a file that is no payload of the image");
		files++;
	}
	closedir(d);
	return files;
}

/* Run `gpucc extract -q -C SCRATCH/out SCRATCH/in/image.gpucc` on the input
 * and check the scratch directory afterwards.  img is the same input opened
 * from memory (NULL when it does not open); all_read whether all its
 * payloads read. */
static void extract(const uint8_t *data, size_t size, const gpucc_image *img, bool all_read)
{
	const char *scratch = fuzz_scratch_dir();
	char in[160], image_path[192], out[160];
	snprintf(in, sizeof in, "%s/in", scratch);
	snprintf(image_path, sizeof image_path, "%s/image.gpucc", in);
	snprintf(out, sizeof out, "%s/out", scratch);
	fuzz_remove_tree(scratch);
	FILE *f = (mkdir(in, 0700) == 0) ? fopen(image_path, "wb") : NULL;
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		fuzz_fail("cannot write the input to the scratch directory");

	char *argv[] = {"extract", "-q", "-C", out, image_path, NULL};
	cmd_args args;
	fuzz_quiet_begin();
	int rc = cmd_parse(&args, &cmd_extract_spec, 5, argv);
	if (rc == EXIT_OK)
		rc = cmd_extract_spec.run(&args);
	cmd_args_release(&args);
	fuzz_quiet_end();

	/* The scratch directory holds in/ with the input alone, and out/ only
	 * when extract succeeded: nothing was written anywhere else in it. */
	DIR *d = opendir(scratch);
	struct dirent *de;
	while (d && (de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
		    strcmp(de->d_name, "in") != 0 && (strcmp(de->d_name, "out") != 0 || rc != EXIT_OK))
			fuzz_fail(rc == EXIT_OK ? "extract wrote outside its directory"
			                        : "a failed extract left files behind");
	if (d)
		closedir(d);
	if (check_extracted(in, NULL) != 1)
		fuzz_fail("extract wrote beside its input");
	if (rc != EXIT_OK)
		return;
	if (!img || !all_read)
		fuzz_fail("extract succeeded on an image that does not read");
	size_t expected = 0;
	for (size_t i = 0; i < gpucc_image_entry_count(img); i++)
		expected += gpucc_image_entry(img, i)->payload_count;
	if (check_extracted(out, img) != expected)
		fuzz_fail("extract did not write one file per payload of every entry");
}

/* Its payloads, read through the handle: each handed out matches. */
static void check_payloads_of(gpucc_image *img, const gpucc_entry *e)
{
	for (size_t p = 0; p < e->payload_count; p++) {
		void *bytes;
		size_t n;
		if (gpucc_image_read_payload(&bytes, &n, img, &e->payloads[p]) != 0)
			continue;
		gpucc_digest d;
		gpucc_digest_buffer(&d, bytes, n);
		if (n != e->payloads[p].size || gpucc_digest_compare(&d, &e->payloads[p].sha256) != 0)
			fuzz_fail("a payload found through the index does not match its digest");
		gpucc_free(bytes);
	}
}

/* The input opened for lookup: what a lookup returns is the entry asked
 * for (full, when the full open read it: its content the same). */
static void lookups(const uint8_t *data, size_t size, const gpucc_image *full)
{
	gpucc_image *img;
	if (gpucc_image_open_memory_for_lookup(&img, data, size, "fuzz.gpucc") != 0) {
		if (!gpucc_error_last()->message[0])
			fuzz_fail("a refusal without a message");
		return;
	}
	size_t count = full ? gpucc_image_entry_count(full) : 0;
	for (size_t i = 0; i < count; i++) {
		const gpucc_entry *want = gpucc_image_entry(full, i), *e;
		char hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(hex, &want->key);
		if (gpucc_image_lookup(&e, img, hex) != 0)
			continue;
		gpucc_digest a, b;
		if (gpucc_digest_compare(&e->key, &want->key) != 0 ||
		    gpucc_entry_content_digest(&a, e) != 0 || gpucc_entry_content_digest(&b, want) != 0 ||
		    gpucc_digest_compare(&a, &b) != 0)
			fuzz_fail("a lookup through the index returned another entry");
		check_payloads_of(img, e);
	}
	/* Selection may parse the whole manifest (when no entry the index
	 * names fits): the prefix lookups come first. */
	const gpucc_entry *found[16];
	size_t found_count = 0;
	for (const char *p = "0123456789abcdef"; *p; p++) {
		char prefix[2] = {*p, '\0'};
		const gpucc_entry *e;
		bool by_index = gpucc_image_reads_by_index(img);
		if (gpucc_image_lookup(&e, img, prefix) != 0)
			continue;
		gpucc_digest key;
		if (e->key.bytes[0] >> 4 != (p - "0123456789abcdef"))
			fuzz_fail("a prefix lookup returned an entry not of its prefix");
		if (by_index &&
		    (gpucc_entry_compute_key(&key, e) != 0 || gpucc_digest_compare(&key, &e->key) != 0))
			fuzz_fail("a lookup through the index returned an entry not of its key");
		check_payloads_of(img, e);
		found[found_count++] = e;
	}
	for (size_t i = 0; i < found_count; i++) {
		const gpucc_entry *e = found[i];
		gpucc_target device;
		gpucc_selection s;
		if (e->kernel_count && gpucc_target_parse(&device, e->target) == 0 &&
		    gpucc_image_select(&s, img, e->kernels[0].name, &device) == 0) {
			bool has = false;
			for (size_t k = 0; k < s.entry->kernel_count; k++)
				has = has || strcmp(s.entry->kernels[k].name, e->kernels[0].name) == 0;
			if (!has)
				fuzz_fail("a selection by kernel returned an entry without it");
		}
	}
	gpucc_image_free(img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gpucc_image *img;
	if (gpucc_image_open_memory(&img, data, size, "fuzz.gpucc") != 0) {
		if (!gpucc_error_last()->message[0])
			fuzz_fail("a refusal without a message");
		lookups(data, size, NULL);
		extract(data, size, NULL, false);
		return 0;
	}
	lookups(data, size, img);
	bool all_read = read_payloads(img);
	copy_payloads(img, all_read);
	int structure = gpucc_image_verify_structure(img);
	if (structure != 0 && !gpucc_error_last()->message[0])
		fuzz_fail("a structure refusal without a message");
	if (gpucc_image_verify(img) == 0) {
		if (!all_read)
			fuzz_fail("verify passed an image whose payloads cannot all be read");
		if (structure != 0)
			fuzz_fail("verify passed an image whose structure it refused");
	}
	extract(data, size, img, all_read);
	gpucc_image_free(img);
	return 0;
}

void fuzz_seeds(void (*add)(const void *data, size_t size))
{
	static const struct {
		size_t entries;
		int zstd_level;
	} images[] = {{3, 0}, {3, 3}, {0, 0}, {7, 0}, {1, 0}};
	for (size_t i = 0; i < sizeof images / sizeof images[0]; i++) {
		size_t size;
		unsigned char *bytes = fuzz_make_image(&size, images[i].entries, images[i].zstd_level);
		add(bytes, size);
		free(bytes);
	}
}
