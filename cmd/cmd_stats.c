/*
 * cmd/cmd_stats.c -- `gpucc stats IMAGE [--json]`: what an image holds, in
 * numbers: entries, distinct payloads and their bytes per part, entries per
 * target, whether it is compressed, its file size, and what storing each
 * identical payload once saved.  Reads the manifest only.
 */
#include "cmd.h"

#include <gpucc.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const cmd_option stats_options[] = {
	{"json", 0, NULL, false, "print the numbers as a JSON object"},
	{0},
};

typedef struct target_count {
	const char *target;
	size_t entries;
} target_count;

typedef struct image_stats {
	bool file_size_known; /* false for a pipe, whose size stat cannot tell */
	uint64_t file_size;
	size_t entries, payloads;
	uint64_t stored_bytes;     /* each distinct payload once */
	uint64_t referenced_bytes; /* each entry's payloads, shared ones again */
	size_t part_payloads[GPUCC_PART_COUNT];
	uint64_t part_bytes[GPUCC_PART_COUNT];
	target_count *targets; /* sorted by target */
	size_t target_count;
} image_stats;

static int compare_target_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Count entries per target: sort the names, then count runs. */
static int count_targets(image_stats *s, const gpucc_image *img)
{
	const char **names = calloc(s->entries + 1, sizeof *names);
	s->targets = calloc(s->entries + 1, sizeof *s->targets);
	if (!names || !s->targets) {
		free(names);
		return -1;
	}
	for (size_t i = 0; i < s->entries; i++)
		names[i] = gpucc_image_entry(img, i)->target;
	qsort(names, s->entries, sizeof *names, compare_target_name);
	for (size_t i = 0; i < s->entries; i++) {
		if (s->target_count && strcmp(s->targets[s->target_count - 1].target, names[i]) == 0)
			s->targets[s->target_count - 1].entries++;
		else
			s->targets[s->target_count++] = (target_count){names[i], 1};
	}
	free(names);
	return 0;
}


static void print_text(const image_stats *s, const char *path, bool compressed)
{
	uint64_t saved = s->referenced_bytes - s->stored_bytes;
	fputs("image:          ", stdout);
	cmd_put_shown(stdout, path); /* a newline in it would end the row */
	putchar('\n');
	if (s->file_size_known)
		printf("file size:      %" PRIu64 " %s\n", s->file_size,
		       cmd_plural(s->file_size, "byte", "bytes"));
	else
		printf("file size:      unknown (not a regular file)\n");
	printf("compressed:     %s\n", compressed ? "zstd" : "no");
	printf("entries:        %zu\n", s->entries);
	printf("payloads:       %zu distinct, %" PRIu64 " %s\n", s->payloads, s->stored_bytes,
	       cmd_plural(s->stored_bytes, "byte", "bytes"));
	for (int p = 0; p < GPUCC_PART_COUNT; p++)
		if (s->part_payloads[p])
			printf("  %-12s  %zu, %" PRIu64 " %s\n", gpucc_part_name((gpucc_part)p),
			       s->part_payloads[p], s->part_bytes[p],
			       cmd_plural(s->part_bytes[p], "byte", "bytes"));
	printf("dedup savings:  %" PRIu64 " %s (%" PRIu64 " referenced, %" PRIu64 " stored)\n", saved,
	       cmd_plural(saved, "byte", "bytes"), s->referenced_bytes, s->stored_bytes);
	printf("targets:%s\n", s->target_count ? "" : "        (none)");
	for (size_t i = 0; i < s->target_count; i++)
		printf("  %-24s  %zu\n", s->targets[i].target, s->targets[i].entries);
}

static void print_json(const image_stats *s, const char *path, bool compressed)
{
	printf("{\n  \"image\": ");
	cmd_json_string(stdout, path);
	if (s->file_size_known)
		printf(",\n  \"file_size\": %" PRIu64 ",\n", s->file_size);
	else
		printf(",\n  \"file_size\": null,\n");
	printf("  \"compressed\": %s,\n", compressed ? "true" : "false");
	printf("  \"entries\": %zu,\n", s->entries);
	printf("  \"payloads\": %zu,\n", s->payloads);
	printf("  \"payload_bytes\": %" PRIu64 ",\n", s->stored_bytes);
	printf("  \"referenced_bytes\": %" PRIu64 ",\n", s->referenced_bytes);
	printf("  \"dedup_savings\": %" PRIu64 ",\n", s->referenced_bytes - s->stored_bytes);
	printf("  \"parts\": {");
	bool first = true;
	for (int p = 0; p < GPUCC_PART_COUNT; p++) {
		if (!s->part_payloads[p])
			continue;
		printf("%s\"%s\": {\"payloads\": %zu, \"bytes\": %" PRIu64 "}", first ? "" : ", ",
		       gpucc_part_name((gpucc_part)p), s->part_payloads[p], s->part_bytes[p]);
		first = false;
	}
	printf("},\n  \"targets\": {");
	for (size_t i = 0; i < s->target_count; i++) {
		printf("%s", i ? ", " : "");
		cmd_json_string(stdout, s->targets[i].target);
		printf(": %zu", s->targets[i].entries);
	}
	printf("}\n}\n");
}

static int run_stats(const cmd_args *args)
{
	const char *path = args->positional[0];
	gpucc_image *img = NULL;
	image_stats s = {0};
	int rc = EXIT_OK;

	if (gpucc_image_open(&img, path) != 0) {
		rc = cmd_fail(args);
		goto cleanup;
	}
	struct stat st;
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
		s.file_size = (uint64_t)st.st_size;
		s.file_size_known = true;
	}
	s.entries = gpucc_image_entry_count(img);
	/* The payload list is built here, from the manifest, which may
	 * list one payload with two sizes. */
	if (gpucc_image_count_payloads(&s.payloads, img) != 0) {
		rc = cmd_fail(args);
		goto cleanup;
	}
	for (size_t i = 0; i < s.payloads; i++) {
		const gpucc_payload *p = gpucc_image_payload(img, i);
		s.stored_bytes += p->size;
		if ((unsigned)p->part < GPUCC_PART_COUNT) {
			s.part_payloads[p->part]++;
			s.part_bytes[p->part] += p->size;
		}
	}
	for (size_t i = 0; i < s.entries; i++) {
		const gpucc_entry *e = gpucc_image_entry(img, i);
		for (size_t j = 0; j < e->payload_count; j++)
			s.referenced_bytes += e->payloads[j].size;
	}
	if (count_targets(&s, img) != 0) {
		rc = cmd_error(args, EXIT_FAIL, "out of memory");
		goto cleanup;
	}
	if (cmd_flag(args, "json"))
		print_json(&s, path, gpucc_image_is_compressed(img));
	else
		print_text(&s, path, gpucc_image_is_compressed(img));
cleanup:
	free(s.targets);
	gpucc_image_free(img);
	return rc;
}

const cmd_spec cmd_stats_spec = {
	.name = "stats",
	.synopsis = "IMAGE [--json]",
	.summary = "count what an image holds",
	.description =
		"Prints the file size, whether it is zstd-compressed, the number of entries\n"
		"and of distinct payloads, payload count and bytes per part, entries per\n"
		"target, and the dedup savings: the bytes that storing each identical\n"
		"payload once saved.  Reads the manifest only; exits 3 when it is corrupt.\n"
		"The file size of an IMAGE that is not a regular file (a pipe) is unknown\n"
		"(null in JSON).  --json prints one object: {\"image\", \"file_size\",\n"
		"\"compressed\", \"entries\", \"payloads\", \"payload_bytes\",\n"
		"\"referenced_bytes\", \"dedup_savings\", \"parts\": {PART: {\"payloads\",\n"
		"\"bytes\"}}, \"targets\": {TARGET: entries}}; bytes of IMAGE that are not\n"
		"UTF-8 are written as U+FFFD.  In the text, control characters of IMAGE\n"
		"are escaped (\\n, \\t, \\xHH), so that each row stays one line.",
	.options = stats_options,
	.min_positional = 1,
	.max_positional = 1,
	.run = run_stats,
};
