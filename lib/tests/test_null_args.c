/*
 * lib/tests/test_null_args.c -- NULL where a public function's contract
 * requires a pointer (gpucc/common.h): every int-returning function of
 * <gpucc.h> is called with each required pointer NULL in turn, the others
 * valid, and must return GPUCC_EINVALID with a message naming the function
 * and the argument ("gpucc_image_open: 'path' is NULL"), and leave a
 * `**out` it was given NULL; accessors given a NULL handle return NULL, 0
 * or false; void functions return; every _free accepts NULL; and the
 * arguments documented as optional still take NULL.  A caller through a
 * foreign-function interface (Julia's ccall and C_NULL) got a segfault.
 *
 * Linked as test_api is, against libgpucc.so and <gpucc.h> alone.  Nothing
 * here loads a GPU runtime or LLVM: each NULL is refused before that.
 */
#include "check.h"

#include <gpucc.h>

#include <fcntl.h>
#include <stddef.h>
#include <sys/file.h>
#include <unistd.h>

/* The NULL under test, read through a volatile so that the compiler cannot
 * see it: GCC warns (-Wnonnull) about a literal NULL given for an array
 * parameter such as gpucc_digest_to_hex's out[65]. */
static void *volatile null_pointer;
#define NONE ((void *)null_pointer)

/* What a call that fails must not have touched, or must have cleared. */
static max_align_t sentinel_object;
#define SENTINEL ((void *)&sentinel_object)

#define HEX64 "0000000000000000000000000000000000000000000000000000000000000000"

static const char hsaco_bytes[] = "code object of the NULL-argument case";

/* Valid arguments for every call, and places for what calls return. */
typedef struct fixture {
	char image_path[96], cache_dir[96], out_path[96], header_path[96], object_path[96];
	int null_fd;
	gpucc_image *img;
	gpucc_cache *cache;
	gpucc_image_writer *writer;
	gpucc_snapshot *snapshot;
	gpucc_operand *source;
	gpucc_compile *compile;
	const gpucc_entry *entry;
	const gpucc_payload *payload;
	gpucc_digest digest;
	gpucc_target target;
	gpucc_device device;
	gpucc_payload_source payload_source;
	gpucc_snapshot_item item;
	gpucc_embed_options embed;
	gpucc_entry_files entry_files, entry_files_null_external;
	const char *null_external[1];
	const char *paths[2];                  /* {image_path, NULL} */
	gpucc_operand *sources[2];              /* {source, NULL} */
	const gpucc_entry *entries[2];         /* {entry, NULL} */
	/* Outputs of plain types. */
	gpucc_digest digest_out;
	gpucc_part part_out;
	gpucc_target target_out;
	gpucc_image_limits limits_out;
	gpucc_cache_stats stats_out;
	gpucc_selection selection_out;
	gpucc_entry entry_draft;
	size_t size_out;
	int int_out;
	const char *paths_out[2];
	uint64_t u64_out;
	unsigned unsigned_out;
	char text_out[GPUCC_DIGEST_HEX_SIZE + GPUCC_TARGET_NAME_SIZE + 64];
	/* `**out` outputs: SENTINEL before each call, NULL when a failing call
	 * cleared them. */
	gpucc_image *image_out;
	gpucc_cache *cache_out;
	gpucc_image_writer *writer_out;
	gpucc_snapshot *snapshot_out;
	gpucc_operand *source_out;
	gpucc_operand *source_array_out[2];
	gpucc_compile *compile_out;
	gpucc_module *module_out;
	gpucc_device *devices_out;
	const gpucc_entry *entry_out;
	void *data_out;
	char *string_out;
} fixture;

static fixture fx;

static void outs_reset(fixture *f)
{
	f->image_out = SENTINEL;
	f->cache_out = SENTINEL;
	f->writer_out = SENTINEL;
	f->snapshot_out = SENTINEL;
	f->source_out = SENTINEL;
	f->source_array_out[0] = f->source_array_out[1] = SENTINEL;
	f->compile_out = SENTINEL;
	f->module_out = SENTINEL;
	f->devices_out = SENTINEL;
	f->entry_out = SENTINEL;
	f->data_out = SENTINEL;
	f->string_out = SENTINEL;
}

/* How many `**out` outputs a call set to NULL; -1 when one holds anything
 * but NULL or SENTINEL (a failing call returned an object). */
static int outs_cleared(const fixture *f)
{
	const void *outs[] = {f->image_out,    f->cache_out,  f->writer_out, f->snapshot_out,
	                      f->source_out,   f->source_array_out[0], f->source_array_out[1],
	                      f->compile_out,  f->module_out, f->devices_out, f->entry_out,
	                      f->data_out,     f->string_out};
	int cleared = 0;
	for (size_t i = 0; i < sizeof outs / sizeof *outs; i++) {
		if (outs[i] == NULL)
			cleared++;
		else if (outs[i] != SENTINEL)
			return -1;
	}
	return cleared;
}

static int count_entry(void *ctx, const gpucc_digest *key)
{
	(void)key;
	++*(int *)ctx;
	return 0;
}

/* The image every case reads: one gfx90a entry with a code object. */
static int write_image(fixture *f)
{
	gpucc_image_writer *w = NULL;
	int rc = gpucc_image_writer_new(&w, f->image_path, NULL);
	gpucc_kernel kernel = {"saxpy", -1, -1, -1};
	gpucc_entry e;
	memset(&e, 0, sizeof e);
	e.key_schema = 1;
	e.module = "saxpy.ll";
	gpucc_digest_buffer(&e.module_sha256, "saxpy", 5);
	e.target = "gfx90a";
	e.triple = "amdgcn-amd-amdhsa";
	e.gpucc_version = gpucc_version();
	e.llvm_version = "19.1.7";
	e.kernel_count = 1;
	e.kernels = &kernel;
	if (rc == 0)
		rc = gpucc_entry_compute_key(&e.key, &e);
	gpucc_payload_source src = {GPUCC_PART_HSACO, NULL, hsaco_bytes, sizeof hsaco_bytes - 1};
	if (rc == 0)
		rc = gpucc_image_writer_add(w, &e, &src, 1);
	if (rc == 0)
		rc = gpucc_image_writer_commit(w);
	gpucc_image_writer_free(w);
	return rc;
}

static int fixture_open(fixture *f)
{
	if (check_dir_create("test_null_args") != 0)
		return -1;
	snprintf(f->image_path, sizeof f->image_path, "%s/one.gpucc", check_dir);
	snprintf(f->cache_dir, sizeof f->cache_dir, "%s/cache", check_dir);
	snprintf(f->out_path, sizeof f->out_path, "%s/out.gpucc", check_dir);
	snprintf(f->header_path, sizeof f->header_path, "%s/image.h", check_dir);
	snprintf(f->object_path, sizeof f->object_path, "%s/image.o", check_dir);
	f->null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (f->null_fd < 0 || write_image(f) != 0 || gpucc_image_open(&f->img, f->image_path) != 0 ||
	    gpucc_cache_open(&f->cache, f->cache_dir, 0) != 0 ||
	    gpucc_image_writer_new(&f->writer, f->out_path, NULL) != 0 ||
	    gpucc_operand_from_image(&f->source, f->img) != 0 ||
	    gpucc_compile_new(&f->compile, NULL) != 0 ||
	    gpucc_target_parse(&f->target, "gfx90a") != 0)
		return -1;
	f->entry = gpucc_image_entry(f->img, 0);
	f->payload = gpucc_image_payload(f->img, 0);
	if (!f->entry || !f->payload)
		return -1;
	f->digest = f->entry->key;
	f->payload_source = (gpucc_payload_source){GPUCC_PART_HSACO, NULL, hsaco_bytes,
	                                           sizeof hsaco_bytes - 1};
	f->item.key = f->entry->key;
	if (gpucc_entry_content_digest(&f->item.content, f->entry) != 0 ||
	    gpucc_snapshot_new(&f->snapshot, &f->item, 1) != 0)
		return -1;
	memset(&f->device, 0, sizeof f->device);
	f->device.runtime = GPUCC_RUNTIME_HIP;
	snprintf(f->device.name, sizeof f->device.name, "stand-in");
	snprintf(f->device.arch, sizeof f->device.arch, "gfx90a");
	f->device.target_known = true;
	f->device.target = f->target;
	gpucc_embed_options_init(&f->embed);
	f->embed.symbol = "kernels";
	gpucc_entry_files_init(&f->entry_files);
	f->entry_files_null_external = f->entry_files;
	f->entry_files_null_external.externals = f->null_external; /* {NULL} */
	f->entry_files_null_external.external_count = 1;
	f->paths[0] = f->image_path;
	f->sources[0] = f->source;
	f->entries[0] = f->entry;
	return 0;
}

static void fixture_close(fixture *f)
{
	gpucc_compile_free(f->compile);
	gpucc_operand_free(f->source);
	gpucc_snapshot_free(f->snapshot);
	gpucc_image_writer_free(f->writer);
	gpucc_cache_free(f->cache);
	gpucc_image_free(f->img);
	if (f->null_fd >= 0)
		close(f->null_fd);
	if (check_dir[0])
		CHECK_INT(check_dir_remove(), 0);
}

/*
 * Every int-returning public function, once per pointer argument its
 * contract requires: X(function, argument, cleared, message, call).
 * cleared: how many `**out` outputs the call must leave NULL (those it was
 * given); message: what the message must contain when it is not the
 * uniform "function: 'argument' is NULL" -- the parsers of text take NULL
 * as malformed text, as they take "" (test_api's test_parsers_take_null).
 * The argument under test is NONE; plain NULLs are optional arguments.
 */
#define NULL_ARGUMENT_CASES(X)                                                                   \
	/* common.h */                                                                               \
	X(gpucc_digest_file, out, 0, NULL, gpucc_digest_file(NONE, &f->u64_out, f->image_path))     \
	X(gpucc_digest_file, path, 0, NULL, gpucc_digest_file(&f->digest_out, NULL, NONE))          \
	X(gpucc_digest_from_hex, out, 0, NULL, gpucc_digest_from_hex(NONE, HEX64))                  \
	X(gpucc_digest_from_hex, hex, 0, "is not a SHA-256 digest",                                 \
	  gpucc_digest_from_hex(&f->digest_out, NONE))                                              \
	X(gpucc_part_from_name, out, 0, NULL, gpucc_part_from_name(NONE, "ptx"))                    \
	X(gpucc_part_from_name, name, 0, "unknown payload kind ''",                                 \
	  gpucc_part_from_name(&f->part_out, NONE))                                                 \
	X(gpucc_target_parse, out, 0, NULL, gpucc_target_parse(NONE, "sm_90"))                      \
	X(gpucc_target_parse, spelling, 0, "empty target", gpucc_target_parse(&f->target_out, NONE)) \
	X(gpucc_entry_compute_key, out, 0, NULL, gpucc_entry_compute_key(NONE, f->entry))           \
	X(gpucc_entry_compute_key, e, 0, NULL, gpucc_entry_compute_key(&f->digest_out, NONE))       \
	X(gpucc_entry_content_digest, out, 0, NULL, gpucc_entry_content_digest(NONE, f->entry))     \
	X(gpucc_entry_content_digest, e, 0, NULL, gpucc_entry_content_digest(&f->digest_out, NONE)) \
	X(gpucc_module_name_from_path, out, 0, NULL, gpucc_module_name_from_path(NONE, "a.ll"))     \
	X(gpucc_module_name_from_path, path, 1, NULL,                                               \
	  gpucc_module_name_from_path(&f->string_out, NONE))                                        \
	/* image.h */                                                                                \
	X(gpucc_image_default_limits, out, 0, NULL, gpucc_image_default_limits(NONE))               \
	X(gpucc_image_limits_parse, out, 0, NULL, gpucc_image_limits_parse(NONE, "ratio=1"))        \
	X(gpucc_image_limits_parse, text, 0, NULL, gpucc_image_limits_parse(&f->limits_out, NONE))  \
	X(gpucc_image_open, out, 0, NULL, gpucc_image_open(NONE, f->image_path))                    \
	X(gpucc_image_open, path, 1, NULL, gpucc_image_open(&f->image_out, NONE))                   \
	X(gpucc_image_open_limited, out, 0, NULL, gpucc_image_open_limited(NONE, f->image_path, NULL)) \
	X(gpucc_image_open_limited, path, 1, NULL, gpucc_image_open_limited(&f->image_out, NONE, NULL)) \
	X(gpucc_image_open_fd, out, 0, NULL, gpucc_image_open_fd(NONE, f->null_fd, NULL))           \
	X(gpucc_image_open_memory, out, 0, NULL, gpucc_image_open_memory(NONE, "x", 1, NULL))       \
	X(gpucc_image_open_memory, data, 1, NULL, gpucc_image_open_memory(&f->image_out, NONE, 5, NULL)) \
	X(gpucc_image_lookup, out, 0, NULL, gpucc_image_lookup(NONE, f->img, "00"))                 \
	X(gpucc_image_lookup, img, 1, NULL, gpucc_image_lookup(&f->entry_out, NONE, "00"))          \
	X(gpucc_image_lookup, key_prefix, 1, "is not a key or key prefix",                          \
	  gpucc_image_lookup(&f->entry_out, f->img, NONE))                                          \
	X(gpucc_image_count_payloads, out, 0, NULL, gpucc_image_count_payloads(NONE, f->img))       \
	X(gpucc_image_count_payloads, img, 0, NULL, gpucc_image_count_payloads(&f->size_out, NONE)) \
	X(gpucc_image_read_payload, out, 0, NULL,                                                   \
	  gpucc_image_read_payload(NONE, &f->size_out, f->img, f->payload))                         \
	X(gpucc_image_read_payload, out_size, 1, NULL,                                              \
	  gpucc_image_read_payload(&f->data_out, NONE, f->img, f->payload))                         \
	X(gpucc_image_read_payload, img, 1, NULL,                                                   \
	  gpucc_image_read_payload(&f->data_out, &f->size_out, NONE, f->payload))                   \
	X(gpucc_image_read_payload, payload, 1, NULL,                                               \
	  gpucc_image_read_payload(&f->data_out, &f->size_out, f->img, NONE))                       \
	X(gpucc_image_copy_payload, img, 0, NULL, gpucc_image_copy_payload(NONE, f->payload, f->null_fd)) \
	X(gpucc_image_copy_payload, payload, 0, NULL, gpucc_image_copy_payload(f->img, NONE, f->null_fd)) \
	X(gpucc_image_verify, img, 0, NULL, gpucc_image_verify(NONE))                               \
	X(gpucc_image_verify_structure, img, 0, NULL, gpucc_image_verify_structure(NONE))           \
	X(gpucc_image_writer_new, out, 0, NULL, gpucc_image_writer_new(NONE, f->out_path, NULL))    \
	X(gpucc_image_writer_new, path, 1, NULL, gpucc_image_writer_new(&f->writer_out, NONE, NULL)) \
	X(gpucc_image_writer_add_files, w, 0, NULL,                                                 \
	  gpucc_image_writer_add_files(NONE, &f->entry_files, NULL))                                \
	X(gpucc_image_writer_add_files, files, 0, NULL,                                             \
	  gpucc_image_writer_add_files(f->writer, NONE, NULL))                                      \
	X(gpucc_image_writer_add_files, files->externals[0], 0, NULL,                               \
	  gpucc_image_writer_add_files(f->writer, &f->entry_files_null_external, NULL))             \
	X(gpucc_image_writer_add, w, 0, NULL,                                                       \
	  gpucc_image_writer_add(NONE, f->entry, &f->payload_source, 1))                            \
	X(gpucc_image_writer_add, e, 0, NULL,                                                       \
	  gpucc_image_writer_add(f->writer, NONE, &f->payload_source, 1))                           \
	X(gpucc_image_writer_add, sources, 0, NULL, gpucc_image_writer_add(f->writer, f->entry, NONE, 1)) \
	X(gpucc_image_extract, img, 0, NULL, gpucc_image_extract(NONE, check_dir, NULL))            \
	X(gpucc_image_extract, dir, 0, NULL, gpucc_image_extract(f->img, NONE, NULL))               \
	X(gpucc_entry_prepare, e, 0, NULL, gpucc_entry_prepare(NONE, &f->payload_source, 1))        \
	X(gpucc_entry_prepare, sources, 0, NULL, gpucc_entry_prepare(&f->entry_draft, NONE, 1))       \
	X(gpucc_code_object_check, name, 0, NULL,                                                   \
	  gpucc_code_object_check(GPUCC_PART_CUBIN, f->null_fd, NONE))                               \
	X(gpucc_image_writer_add_from, w, 0, NULL, gpucc_image_writer_add_from(NONE, f->img, f->entry)) \
	X(gpucc_image_writer_add_from, src, 0, NULL,                                                \
	  gpucc_image_writer_add_from(f->writer, NONE, f->entry))                                   \
	X(gpucc_image_writer_add_from, e, 0, NULL, gpucc_image_writer_add_from(f->writer, f->img, NONE)) \
	X(gpucc_image_writer_remove, w, 0, NULL, gpucc_image_writer_remove(NONE, &f->digest))      \
	X(gpucc_image_writer_remove, key, 0, NULL, gpucc_image_writer_remove(f->writer, NONE))     \
	X(gpucc_image_writer_commit, w, 0, NULL, gpucc_image_writer_commit(NONE))                  \
	/* cache.h */                                                                                \
	X(gpucc_cache_default_dir, out, 0, NULL, gpucc_cache_default_dir(NONE))                     \
	X(gpucc_cache_open, out, 0, NULL, gpucc_cache_open(NONE, f->cache_dir, 0))                  \
	X(gpucc_cache_lookup, out, 0, NULL, gpucc_cache_lookup(NONE, f->cache, &f->digest))         \
	X(gpucc_cache_lookup, c, 1, NULL, gpucc_cache_lookup(&f->image_out, NONE, &f->digest))      \
	X(gpucc_cache_lookup, key, 1, NULL, gpucc_cache_lookup(&f->image_out, f->cache, NONE))      \
	X(gpucc_cache_open_entry, out, 0, NULL, gpucc_cache_open_entry(NONE, f->cache, &f->digest)) \
	X(gpucc_cache_open_entry, c, 1, NULL, gpucc_cache_open_entry(&f->image_out, NONE, &f->digest)) \
	X(gpucc_cache_open_entry, key, 1, NULL, gpucc_cache_open_entry(&f->image_out, f->cache, NONE)) \
	X(gpucc_cache_insert, c, 0, NULL,                                                           \
	  gpucc_cache_insert(NONE, f->entry, &f->payload_source, 1, GPUCC_CONFLICT_FAIL))           \
	X(gpucc_cache_insert, e, 0, NULL,                                                           \
	  gpucc_cache_insert(f->cache, NONE, &f->payload_source, 1, GPUCC_CONFLICT_FAIL))           \
	X(gpucc_cache_insert, sources, 0, NULL,                                                     \
	  gpucc_cache_insert(f->cache, f->entry, NONE, 1, GPUCC_CONFLICT_FAIL))                     \
	X(gpucc_cache_insert_from, c, 0, NULL,                                                      \
	  gpucc_cache_insert_from(NONE, f->img, f->entry, GPUCC_CONFLICT_FAIL))                     \
	X(gpucc_cache_insert_from, src, 0, NULL,                                                    \
	  gpucc_cache_insert_from(f->cache, NONE, f->entry, GPUCC_CONFLICT_FAIL))                   \
	X(gpucc_cache_insert_from, e, 0, NULL,                                                      \
	  gpucc_cache_insert_from(f->cache, f->img, NONE, GPUCC_CONFLICT_FAIL))                     \
	X(gpucc_cache_stats_get, out, 0, NULL, gpucc_cache_stats_get(NONE, f->cache))               \
	X(gpucc_cache_stats_get, c, 0, NULL, gpucc_cache_stats_get(&f->stats_out, NONE))            \
	X(gpucc_cache_stats_reset, c, 0, NULL, gpucc_cache_stats_reset(NONE))                       \
	X(gpucc_cache_flush, c, 0, NULL, gpucc_cache_flush(NONE))                                   \
	X(gpucc_cache_set_max_size, c, 0, NULL, gpucc_cache_set_max_size(NONE, 1 << 30))            \
	X(gpucc_size_parse, out, 0, NULL, gpucc_size_parse(NONE, "5G"))                             \
	X(gpucc_size_parse, text, 0, "is not a size", gpucc_size_parse(&f->u64_out, NONE))          \
	X(gpucc_cache_gc, c, 0, NULL, gpucc_cache_gc(NONE, 0, NULL))                                \
	X(gpucc_cache_verify, c, 0, NULL, gpucc_cache_verify(NONE, NULL, NULL, NULL))               \
	X(gpucc_cache_clear, c, 0, NULL, gpucc_cache_clear(NONE))                                   \
	X(gpucc_cache_prune, c, 0, NULL,                                                            \
	  gpucc_cache_prune(NONE, -1, GPUCC_PRUNE_DRY_RUN, NULL, NULL, NULL))                       \
	X(gpucc_cache_foreach, c, 0, NULL, gpucc_cache_foreach(NONE, count_entry, NULL))            \
	X(gpucc_cache_foreach, fn, 0, NULL, gpucc_cache_foreach(f->cache, NULL, NULL))              \
	/* snapshot.h */                                                                             \
	X(gpucc_snapshot_new, out, 0, NULL, gpucc_snapshot_new(NONE, &f->item, 1))                  \
	X(gpucc_snapshot_new, items, 1, NULL, gpucc_snapshot_new(&f->snapshot_out, NONE, 1))        \
	X(gpucc_snapshot_read, out, 0, NULL, gpucc_snapshot_read(NONE, f->image_path))              \
	X(gpucc_snapshot_read, path, 1, NULL, gpucc_snapshot_read(&f->snapshot_out, NONE))          \
	X(gpucc_snapshot_parse_text, out, 0, NULL, gpucc_snapshot_parse_text(NONE, "", 0, "text"))  \
	X(gpucc_snapshot_parse_text, text, 1, NULL,                                                 \
	  gpucc_snapshot_parse_text(&f->snapshot_out, NONE, 5, "text"))                             \
	X(gpucc_snapshot_write, s, 0, NULL, gpucc_snapshot_write(NONE, f->out_path))                \
	X(gpucc_snapshot_write, path, 0, NULL, gpucc_snapshot_write(f->snapshot, NONE))             \
	X(gpucc_snapshot_write_text, s, 0, NULL, gpucc_snapshot_write_text(NONE, f->null_fd))       \
	X(gpucc_operand_open, out, 0, NULL, gpucc_operand_open(NONE, f->image_path, NULL, NULL))      \
	X(gpucc_operand_open, path, 1, NULL, gpucc_operand_open(&f->source_out, NONE, NULL, NULL))    \
	X(gpucc_operands_open, out, 0, NULL, gpucc_operands_open(NONE, f->paths, 1, NULL, NULL))      \
	X(gpucc_operands_open, paths, 1, NULL,                                                       \
	  gpucc_operands_open(f->source_array_out, NONE, 1, NULL, NULL))                             \
	X(gpucc_operands_open, paths[1], 2, NULL,                                                    \
	  gpucc_operands_open(f->source_array_out, f->paths, 2, NULL, NULL))                         \
	X(gpucc_operand_from_cache, out, 0, NULL, gpucc_operand_from_cache(NONE, f->cache))           \
	X(gpucc_operand_from_cache, c, 1, NULL, gpucc_operand_from_cache(&f->source_out, NONE))       \
	X(gpucc_operand_from_image, out, 0, NULL, gpucc_operand_from_image(NONE, f->img))             \
	X(gpucc_operand_from_image, img, 1, NULL, gpucc_operand_from_image(&f->source_out, NONE))     \
	X(gpucc_snapshot_of, out, 0, NULL, gpucc_snapshot_of(NONE, f->source))                      \
	X(gpucc_snapshot_of, s, 1, NULL, gpucc_snapshot_of(&f->snapshot_out, NONE))                 \
	X(gpucc_operand_check_whole, s, 0, NULL, gpucc_operand_check_whole(NONE))                     \
	X(gpucc_delta_write, out_path, 0, NULL,                                                     \
	  gpucc_delta_write(NONE, f->source, f->snapshot, NULL, NULL, NULL))                        \
	X(gpucc_delta_write, source, 0, NULL,                                                       \
	  gpucc_delta_write(f->out_path, NONE, f->snapshot, NULL, NULL, NULL))                      \
	X(gpucc_delta_write, base, 0, NULL,                                                         \
	  gpucc_delta_write(f->out_path, f->source, NONE, NULL, NULL, NULL))                        \
	X(gpucc_snapshot_delta, out, 0, NULL,                                                       \
	  gpucc_snapshot_delta(NONE, f->snapshot, NULL, f->snapshot, NULL, NULL, NULL))             \
	X(gpucc_snapshot_delta, source, 1, NULL,                                                    \
	  gpucc_snapshot_delta(&f->snapshot_out, NONE, NULL, f->snapshot, NULL, NULL, NULL))        \
	X(gpucc_snapshot_delta, base, 1, NULL,                                                      \
	  gpucc_snapshot_delta(&f->snapshot_out, f->snapshot, NULL, NONE, NULL, NULL, NULL))        \
	X(gpucc_merge_write, out_path, 0, NULL, gpucc_merge_write(NONE, f->sources, 1, NULL, NULL)) \
	X(gpucc_merge_write, sources, 0, NULL, gpucc_merge_write(f->out_path, NONE, 1, NULL, NULL)) \
	X(gpucc_merge_write, sources[1], 0, NULL,                                                   \
	  gpucc_merge_write(f->out_path, f->sources, 2, NULL, NULL))                                \
	X(gpucc_merge_into_cache, cache, 0, NULL,                                                   \
	  gpucc_merge_into_cache(NONE, f->sources, 1, NULL, NULL))                                  \
	X(gpucc_merge_into_cache, sources, 0, NULL,                                                 \
	  gpucc_merge_into_cache(f->cache, NONE, 1, NULL, NULL))                                    \
	X(gpucc_merge_into_cache, sources[1], 0, NULL,                                              \
	  gpucc_merge_into_cache(f->cache, f->sources, 2, NULL, NULL))                              \
	X(gpucc_merge_lock_acquire, out_path, 0, NULL, gpucc_merge_lock_acquire(NONE))              \
	/* compile.h: refused before LLVM or any tool is looked for */                               \
	X(gpucc_compile_new, out, 0, NULL, gpucc_compile_new(NONE, NULL))                           \
	X(gpucc_compile_add_target, c, 0, NULL, gpucc_compile_add_target(NONE, "sm_90"))            \
	X(gpucc_compile_add_target, spelling, 0, "empty target",                                    \
	  gpucc_compile_add_target(f->compile, NONE))                                               \
	X(gpucc_compile_set_cubin_tool, c, 0, NULL,                                                 \
	  gpucc_compile_set_cubin_tool(NONE, GPUCC_CUBIN_AUTO))                                     \
	X(gpucc_compile_set_before_clang, c, 0, NULL,                                               \
	  gpucc_compile_set_before_clang(NONE, NULL, NULL))                                         \
	X(gpucc_compile_add_file, c, 0, NULL, gpucc_compile_add_file(NONE, f->image_path))          \
	X(gpucc_compile_add_file, path, 0, NULL, gpucc_compile_add_file(f->compile, NONE))          \
	X(gpucc_compile_add_source, c, 0, NULL,                                                     \
	  gpucc_compile_add_source(NONE, "k.hip", GPUCC_LANGUAGE_FROM_NAME))                          \
	X(gpucc_compile_add_source, path, 0, NULL,                                                  \
	  gpucc_compile_add_source(f->compile, NONE, GPUCC_LANGUAGE_HIP))                           \
	X(gpucc_compile_add_memory, c, 0, NULL, gpucc_compile_add_memory(NONE, "m.ll", "x", 1))     \
	X(gpucc_compile_add_memory, data, 0, NULL, gpucc_compile_add_memory(f->compile, "m.ll", NONE, 1)) \
	X(gpucc_compile_plan, c, 0, NULL, gpucc_compile_plan(NONE))                                 \
	X(gpucc_compile_run, c, 0, NULL, gpucc_compile_run(NONE))                                   \
	X(gpucc_compile_write_depfile, c, 0, NULL, gpucc_compile_write_depfile(NONE, "d", "t"))     \
	X(gpucc_compile_write_depfile, path, 0, NULL,                                               \
	  gpucc_compile_write_depfile(f->compile, NONE, "t"))                                       \
	X(gpucc_compile_write_depfile, rule_target, 0, NULL,                                         \
	  gpucc_compile_write_depfile(f->compile, "d", NONE))                                       \
	/* runtime.h: refused before a GPU runtime is opened */                                      \
	X(gpucc_image_open_mapped, out, 0, NULL, gpucc_image_open_mapped(NONE, f->image_path))      \
	X(gpucc_image_open_mapped, path, 1, NULL, gpucc_image_open_mapped(&f->image_out, NONE))     \
	X(gpucc_image_fetch_payload, out, 0, NULL,                                                  \
	  gpucc_image_fetch_payload(NONE, &f->size_out, f->image_path, &f->digest, GPUCC_PART_HSACO)) \
	X(gpucc_image_fetch_payload, out_size, 1, NULL,                                             \
	  gpucc_image_fetch_payload(&f->data_out, NONE, f->image_path, &f->digest, GPUCC_PART_HSACO)) \
	X(gpucc_image_fetch_payload, path, 1, NULL,                                                 \
	  gpucc_image_fetch_payload(&f->data_out, &f->size_out, NONE, &f->digest, GPUCC_PART_HSACO)) \
	X(gpucc_image_fetch_payload, sha256, 1, NULL,                                               \
	  gpucc_image_fetch_payload(&f->data_out, &f->size_out, f->image_path, NONE, GPUCC_PART_HSACO)) \
	X(gpucc_image_fetch_payload_memory, out, 0, NULL,                                           \
	  gpucc_image_fetch_payload_memory(NONE, &f->size_out, "x", 1, NULL, &f->digest,            \
	                                   GPUCC_PART_HSACO))                                       \
	X(gpucc_image_fetch_payload_memory, out_size, 1, NULL,                                      \
	  gpucc_image_fetch_payload_memory(&f->data_out, NONE, "x", 1, NULL, &f->digest,            \
	                                   GPUCC_PART_HSACO))                                       \
	X(gpucc_image_fetch_payload_memory, data, 1, NULL,                                          \
	  gpucc_image_fetch_payload_memory(&f->data_out, &f->size_out, NONE, 5, NULL, &f->digest,   \
	                                   GPUCC_PART_HSACO))                                       \
	X(gpucc_image_fetch_payload_memory, sha256, 1, NULL,                                        \
	  gpucc_image_fetch_payload_memory(&f->data_out, &f->size_out, "x", 1, NULL, NONE,          \
	                                   GPUCC_PART_HSACO))                                       \
	X(gpucc_paths_distinct, out, 0, NULL, gpucc_paths_distinct(NONE, &f->size_out, f->paths, 1)) \
	X(gpucc_paths_distinct, out_count, 0, NULL,                                                 \
	  gpucc_paths_distinct(f->paths_out, NONE, f->paths, 1))                                    \
	X(gpucc_paths_distinct, paths, 0, NULL,                                                     \
	  gpucc_paths_distinct(f->paths_out, &f->size_out, NONE, 1))                                \
	X(gpucc_paths_distinct, paths[1], 0, NULL,                                                  \
	  gpucc_paths_distinct(f->paths_out, &f->size_out, f->paths, 2))                            \
	X(gpucc_compile_add_input, c, 0, NULL,                                                      \
	  gpucc_compile_add_input(NONE, "a.ll", GPUCC_LANGUAGE_FROM_NAME, NULL))                    \
	X(gpucc_compile_add_input, path, 0, NULL,                                                   \
	  gpucc_compile_add_input(f->compile, NONE, GPUCC_LANGUAGE_FROM_NAME, NULL))                \
	X(gpucc_select, out, 0, NULL, gpucc_select(NONE, f->entries, 1, NULL, &f->target, NULL))    \
	X(gpucc_select, entries, 0, NULL,                                                           \
	  gpucc_select(&f->selection_out, NONE, 1, NULL, &f->target, NULL))                         \
	X(gpucc_select, entries[1], 0, NULL,                                                        \
	  gpucc_select(&f->selection_out, f->entries, 2, NULL, &f->target, NULL))                   \
	X(gpucc_select, device, 0, NULL,                                                            \
	  gpucc_select(&f->selection_out, f->entries, 1, NULL, NONE, NULL))                         \
	X(gpucc_image_select, out, 0, NULL, gpucc_image_select(NONE, f->img, NULL, &f->target))     \
	X(gpucc_image_select, img, 0, NULL,                                                         \
	  gpucc_image_select(&f->selection_out, NONE, NULL, &f->target))                            \
	X(gpucc_image_select, device, 0, NULL,                                                      \
	  gpucc_image_select(&f->selection_out, f->img, NULL, NONE))                                \
	X(gpucc_target_from_hip_arch, out, 0, NULL, gpucc_target_from_hip_arch(NONE, "gfx90a"))     \
	X(gpucc_target_from_hip_arch, gcn_arch_name, 0, "reported no architecture name",           \
	  gpucc_target_from_hip_arch(&f->target_out, NONE))                                         \
	X(gpucc_target_from_cuda, out, 0, NULL, gpucc_target_from_cuda(NONE, 9, 0, 12040))          \
	X(gpucc_cuda_version_parse, out, 0, NULL, gpucc_cuda_version_parse(NONE, "12.4"))          \
	X(gpucc_cuda_version_parse, text, 0, NULL, gpucc_cuda_version_parse(&f->int_out, NONE))    \
	X(gpucc_hip_version_parse, out, 0, NULL, gpucc_hip_version_parse(NONE, "5.2"))             \
	X(gpucc_hip_version_parse, text, 0, NULL, gpucc_hip_version_parse(&f->int_out, NONE))      \
	X(gpucc_device_compile_target, out, 0, NULL, gpucc_device_compile_target(NONE, &f->device)) \
	X(gpucc_device_compile_target, d, 0, NULL, gpucc_device_compile_target(f->text_out, NONE))  \
	X(gpucc_device_from_target, out, 0, NULL, gpucc_device_from_target(NONE, "sm_90", NULL))   \
	X(gpucc_device_from_target, spelling, 0, NULL,                                              \
	  gpucc_device_from_target(&f->device, NONE, NULL))                                         \
	X(gpucc_devices_list, out, 0, NULL, gpucc_devices_list(NONE, &f->size_out))                 \
	X(gpucc_devices_list, count, 1, NULL, gpucc_devices_list(&f->devices_out, NONE))            \
	X(gpucc_module_load, out, 0, NULL, gpucc_module_load(NONE, f->img, "saxpy", &f->device))    \
	X(gpucc_module_load, img, 1, NULL,                                                          \
	  gpucc_module_load(&f->module_out, NONE, "saxpy", &f->device))                             \
	X(gpucc_module_load, kernel, 1, NULL,                                                       \
	  gpucc_module_load(&f->module_out, f->img, NONE, &f->device))                              \
	X(gpucc_module_function, out, 0, NULL, gpucc_module_function(NONE, NULL, "saxpy"))          \
	X(gpucc_module_function, m, 1, NULL, gpucc_module_function(&f->data_out, NONE, "saxpy"))    \
	X(gpucc_embed_image, image_path, 0, NULL,                                                   \
	  gpucc_embed_image(NONE, f->object_path, &f->embed))                                       \
	X(gpucc_embed_image, obj_path, 0, NULL, gpucc_embed_image(f->image_path, NONE, &f->embed))  \
	X(gpucc_embed_image, opts, 0, NULL,                                                         \
	  gpucc_embed_image(f->image_path, f->object_path, NONE))                                   \
	X(gpucc_embed_write_header, header_path, 0, NULL, gpucc_embed_write_header(NONE, "kernels")) \
	X(gpucc_embed_check_symbol, symbol, 0, "symbol '' is not a C identifier",                  \
	  gpucc_embed_check_symbol(NONE))                                                           \
	X(gpucc_embed_write_header, symbol, 0, NULL, gpucc_embed_write_header(f->header_path, NONE))


typedef struct null_argument_case {
	const char *function, *argument;
	int cleared;
	const char *message;
} null_argument_case;

#define NULL_ARGUMENT_ROW(function, argument, cleared, message, call) \
	{#function, #argument, cleared, message},
static const null_argument_case null_argument_cases[] = {NULL_ARGUMENT_CASES(NULL_ARGUMENT_ROW)};

/* Make the call of case index. */
static int null_argument_call(fixture *f, size_t index)
{
	size_t i = 0;
#define NULL_ARGUMENT_CALL(function, argument, cleared, message, call) \
	if (index == i++)                                                   \
		return call;
	NULL_ARGUMENT_CASES(NULL_ARGUMENT_CALL)
	return 0;
}

/* The message must be the uniform one, or hold the row's own words. */
static bool message_names(const null_argument_case *c)
{
	char expected[160];
	if (c->message)
		snprintf(expected, sizeof expected, "%s", c->message);
	else
		snprintf(expected, sizeof expected, "%s: '%s' is NULL", c->function, c->argument);
	const char *message = gpucc_error_last()->message;
	return c->message ? strstr(message, expected) != NULL : strcmp(message, expected) == 0;
}

static void test_required_pointers_are_einvalid(void)
{
	size_t count = sizeof null_argument_cases / sizeof *null_argument_cases;
	for (size_t i = 0; i < count; i++) {
		const null_argument_case *c = &null_argument_cases[i];
		outs_reset(&fx);
		gpucc_error_clear();
		int rc = null_argument_call(&fx, i);
		int cleared = outs_cleared(&fx);
		bool named = message_names(c);
		if (rc != GPUCC_EINVALID || gpucc_error_last()->code != GPUCC_EINVALID || !named ||
		    cleared != c->cleared) {
			fprintf(stderr, "%s with '%s' NULL: returned %s, cleared %d of %d outputs, "
			        "message: %s\n", c->function, c->argument, gpucc_error_name(rc), cleared,
			        c->cleared, gpucc_error_last()->message);
			check_failures++;
		}
	}
	/* Nothing was added, written or inserted by a refused call. */
	CHECK_INT(gpucc_image_writer_entry_count(fx.writer), 0);
	CHECK_INT(access(fx.out_path, F_OK), -1);
	int entries = 0;
	CHECK_INT(gpucc_cache_foreach(fx.cache, count_entry, &entries), 0);
	CHECK_INT(entries, 0);
}

/*
 * Accessors and void functions given NULL: X(function, argument, holds),
 * holds being true when the call returned NULL, 0 or false (or, for a void
 * function writing a string, left the empty string).  The last error says
 * which argument, as for the int-returning functions.
 */
#define NULL_HANDLE_CASES(X)                                                                     \
	/* common.h */                                                                               \
	X(gpucc_digest_buffer, out, (gpucc_digest_buffer(NONE, "x", 1), true))                       \
	X(gpucc_digest_buffer, data, (gpucc_digest_buffer(&f->digest_out, NONE, 1), true))           \
	X(gpucc_digest_to_hex, out, (gpucc_digest_to_hex(NONE, &f->digest), true))                   \
	X(gpucc_digest_to_hex, d, (gpucc_digest_to_hex(f->text_out, NONE), f->text_out[0] == '\0'))  \
	/* An order, not a status: NULL sorts first. */                                             \
	X(gpucc_digest_compare, a, gpucc_digest_compare(NONE, &f->digest) < 0)                       \
	X(gpucc_digest_compare, b, gpucc_digest_compare(&f->digest, NONE) > 0)                       \
	X(gpucc_target_format, out, (gpucc_target_format(NONE, &f->target), true))                   \
	X(gpucc_target_format, t, (gpucc_target_format(f->text_out, NONE), f->text_out[0] == '\0'))  \
	X(gpucc_target_triple, t, gpucc_target_triple(NONE) == NULL)                                 \
	X(gpucc_target_cpu, t, gpucc_target_cpu(NONE) == NULL)                                       \
	X(gpucc_target_llvm_features, out, (gpucc_target_llvm_features(NONE, &f->target), true))     \
	X(gpucc_target_llvm_features, t,                                                             \
	  (gpucc_target_llvm_features(f->text_out, NONE), f->text_out[0] == '\0'))                   \
	X(gpucc_target_llvm_major, t, gpucc_target_llvm_major(NONE, &f->unsigned_out) == 0)         \
	X(gpucc_entry_payload, e, gpucc_entry_payload(NONE, GPUCC_PART_HSACO) == NULL)               \
	X(gpucc_entry_option, e, gpucc_entry_option(NONE, "opt-level") == NULL)                      \
	X(gpucc_entry_option, name, gpucc_entry_option(f->entry, NONE) == NULL)                      \
	X(gpucc_output_is_input, output, !gpucc_output_is_input(NONE, f->image_path))               \
	X(gpucc_output_is_input, input, !gpucc_output_is_input(f->image_path, NONE))                \
	X(gpucc_output_is_input_fd, output, !gpucc_output_is_input_fd(NONE, 0))                     \
	/* image.h */                                                                                \
	X(gpucc_image_name, img, gpucc_image_name(NONE) == NULL)                                     \
	X(gpucc_image_is_compressed, img, !gpucc_image_is_compressed(NONE))                          \
	X(gpucc_image_entry_count, img, gpucc_image_entry_count(NONE) == 0)                          \
	X(gpucc_image_entry, img, gpucc_image_entry(NONE, 0) == NULL)                                \
	X(gpucc_image_find, img, gpucc_image_find(NONE, &f->digest) == NULL)                         \
	X(gpucc_image_find, key, gpucc_image_find(f->img, NONE) == NULL)                             \
	X(gpucc_image_payload, img, gpucc_image_payload(NONE, 0) == NULL)                            \
	X(gpucc_image_writer_find, w, gpucc_image_writer_find(NONE, &f->digest) == NULL)             \
	X(gpucc_image_writer_find, key, gpucc_image_writer_find(f->writer, NONE) == NULL)            \
	X(gpucc_image_writer_entry_count, w, gpucc_image_writer_entry_count(NONE) == 0)              \
	/* cache.h */                                                                                \
	X(gpucc_cache_dir, c, gpucc_cache_dir(NONE) == NULL)                                         \
	X(gpucc_cache_writable, c, !gpucc_cache_writable(NONE))                                      \
	X(gpucc_cache_set_warning_handler, c, (gpucc_cache_set_warning_handler(NONE, NULL, NULL), true)) \
	X(gpucc_cache_max_size, c, gpucc_cache_max_size(NONE) == 0)                                  \
	/* snapshot.h */                                                                             \
	X(gpucc_snapshot_count, s, gpucc_snapshot_count(NONE) == 0)                                  \
	X(gpucc_snapshot_items, s, gpucc_snapshot_items(NONE) == NULL)                               \
	X(gpucc_snapshot_find, s, gpucc_snapshot_find(NONE, &f->digest) == NULL)                     \
	X(gpucc_snapshot_find, key, gpucc_snapshot_find(f->snapshot, NONE) == NULL)                  \
	X(gpucc_operand_kind_of, s, gpucc_operand_kind_of(NONE) == 0)                                  \
	X(gpucc_operand_name, s, gpucc_operand_name(NONE) == NULL)                                     \
	X(gpucc_operand_is_file, s, !gpucc_operand_is_file(NONE, f->image_path))                       \
	X(gpucc_operand_is_file, path, !gpucc_operand_is_file(f->source, NONE))                        \
	X(gpucc_operand_snapshot, s, gpucc_operand_snapshot(NONE) == NULL)                             \
	/* compile.h */                                                                              \
	X(gpucc_compile_options_init, opts, (gpucc_compile_options_init(NONE), true))                \
	X(gpucc_write_options_init, opts, (gpucc_write_options_init(NONE), true))                    \
	X(gpucc_algebra_options_init, opts, (gpucc_algebra_options_init(NONE), true))                \
	X(gpucc_embed_options_init, opts, (gpucc_embed_options_init(NONE), true))                    \
	X(gpucc_extract_options_init, opts, (gpucc_extract_options_init(NONE), true))                \
	X(gpucc_entry_files_init, files, (gpucc_entry_files_init(NONE), true))                      \
	X(gpucc_device_target_options_init, opts, (gpucc_device_target_options_init(NONE), true))    \
	X(gpucc_compile_result_count, c, gpucc_compile_result_count(NONE) == 0)                      \
	X(gpucc_compile_result_at, c, gpucc_compile_result_at(NONE, 0) == NULL)                      \
	X(gpucc_compile_threads_used, c, gpucc_compile_threads_used(NONE) == 0)                      \
	X(gpucc_compile_backend_loaded, c, !gpucc_compile_backend_loaded(NONE))                      \
	/* runtime.h */                                                                              \
	X(gpucc_entry_fits, e, !gpucc_entry_fits(&f->selection_out, NONE, &f->target))               \
	X(gpucc_entry_fits, device, !gpucc_entry_fits(&f->selection_out, f->entry, NONE))            \
	X(gpucc_module_handle, m, gpucc_module_handle(NONE) == NULL)                                 \
	X(gpucc_module_selection, m, gpucc_module_selection(NONE) == NULL)                           \
	X(gpucc_module_device, m, gpucc_module_device(NONE) == NULL)

typedef struct null_handle_case {
	const char *function, *argument;
} null_handle_case;

#define NULL_HANDLE_ROW(function, argument, holds) {#function, #argument},
static const null_handle_case null_handle_cases[] = {NULL_HANDLE_CASES(NULL_HANDLE_ROW)};

static bool null_handle_call(fixture *f, size_t index)
{
	size_t i = 0;
#define NULL_HANDLE_CALL(function, argument, holds) \
	if (index == i++)                               \
		return holds;
	NULL_HANDLE_CASES(NULL_HANDLE_CALL)
	return false;
}

static void test_accessors_take_null(void)
{
	size_t count = sizeof null_handle_cases / sizeof *null_handle_cases;
	for (size_t i = 0; i < count; i++) {
		const null_handle_case *c = &null_handle_cases[i];
		snprintf(fx.text_out, sizeof fx.text_out, "not written");
		gpucc_error_clear();
		bool holds = null_handle_call(&fx, i);
		char expected[160];
		snprintf(expected, sizeof expected, "%s: '%s' is NULL", c->function, c->argument);
		if (!holds || gpucc_error_last()->code != GPUCC_EINVALID ||
		    strcmp(gpucc_error_last()->message, expected) != 0) {
			fprintf(stderr, "%s with '%s' NULL: %s, message: %s\n", c->function, c->argument,
			        holds ? "returned NULL, 0 or false" : "returned something",
			        gpucc_error_last()->message);
			check_failures++;
		}
	}
	/* Comparing two NULLs: equal, so that a sort stays consistent. */
	CHECK_INT(gpucc_digest_compare(NONE, NONE), 0);
}

/* Every _free accepts NULL, and sets no error. */
static void test_free_accepts_null(void)
{
	gpucc_error_clear();
	gpucc_free(NONE);
	gpucc_image_free(NONE);
	gpucc_image_writer_free(NONE);
	gpucc_cache_free(NONE);
	gpucc_snapshot_free(NONE);
	gpucc_operand_free(NONE);
	gpucc_compile_free(NONE);
	gpucc_module_free(NONE);
	CHECK_INT(gpucc_error_last()->code, 0);
}

/* gpucc_merge_lock_release without the path still releases the lock, as
 * closing it does: a lock kept until the process ends would make every
 * other writer of that output wait for it. */
static void test_lock_release_without_path(void)
{
	char lock_file[128];
	snprintf(lock_file, sizeof lock_file, "%s/.locked.gpucc.lock", check_dir);
	char output[128];
	snprintf(output, sizeof output, "%s/locked.gpucc", check_dir);
	int lock = gpucc_merge_lock_acquire(output);
	CHECK(lock >= 0);
	gpucc_error_clear();
	gpucc_merge_lock_release(NONE, lock);
	CHECK_INT(gpucc_error_last()->code, GPUCC_EINVALID);
	CHECK_STR(gpucc_error_last()->message, "gpucc_merge_lock_release: 'out_path' is NULL");
	int fd = open(lock_file, O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK_INT(flock(fd, LOCK_EX | LOCK_NB), 0);
		close(fd);
	}
	gpucc_error_clear();
	gpucc_merge_lock_release(NONE, -1); /* no lock: nothing to say */
	CHECK_INT(gpucc_error_last()->code, 0);
}

/* What the headers call optional (NULL: the default, or none) still takes
 * NULL, and (NULL, 0) is still an empty buffer. */
static void test_optional_arguments_take_null(void)
{
	fixture *f = &fx;
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open_limited(&img, f->image_path, NULL), 0);
	gpucc_image_free(img);
	img = NULL;
	int fd = open(f->image_path, O_RDONLY | O_CLOEXEC);
	CHECK_INT(gpucc_image_open_fd(&img, fd, NULL), 0);
	if (fd >= 0)
		close(fd);
	gpucc_image_free(img);
	img = NULL;
	CHECK_INT(gpucc_image_open_memory(&img, NULL, 0, NULL), GPUCC_ECORRUPT);
	gpucc_digest d, empty;
	CHECK_INT(gpucc_digest_file(&d, NULL, f->image_path), 0);
	gpucc_digest_buffer(&d, NULL, 0);
	gpucc_digest_buffer(&empty, "", 0);
	CHECK_INT(gpucc_digest_compare(&d, &empty), 0);

	/* The LLVM majors a target or processor needs, a backend's facts. */
	CHECK_INT(gpucc_target_llvm_major(&f->target, NULL), 19);
	CHECK(gpucc_target_processor_name(GPUCC_VENDOR_AMD, 0, NULL, NULL) != NULL);
	if (gpucc_llvm_backend(0, NULL, NULL))
		CHECK(gpucc_llvm_backend(0, NULL, NULL)[0] != '\0');

	CHECK_INT(gpucc_cache_gc(f->cache, 0, NULL), 0);
	CHECK_INT(gpucc_cache_verify(f->cache, NULL, NULL, NULL), 0);
	gpucc_error_clear();
	gpucc_cache_set_warning_handler(f->cache, NULL, NULL);
	CHECK_INT(gpucc_error_last()->code, 0);
	gpucc_config cfg = GPUCC_CONFIG_INIT;
	cfg.cache_dir = f->cache_dir;
	CHECK_INT(gpucc_set_config(&cfg), 0);
	gpucc_cache *cache = NULL;
	CHECK_INT(gpucc_cache_open(&cache, NULL, GPUCC_CACHE_READ_ONLY), 0);
	CHECK_STR(gpucc_cache_dir(cache), f->cache_dir);
	gpucc_cache_free(cache);
	CHECK_INT(gpucc_set_config(NULL), 0);

	gpucc_image_writer *w = NULL;
	char path[128];
	snprintf(path, sizeof path, "%s/optional.gpucc", check_dir);
	CHECK_INT(gpucc_image_writer_new(&w, path, NULL), 0);
	CHECK_INT(gpucc_image_writer_add(w, f->entry, NULL, 0), 0);
	gpucc_image_writer_free(w);

	gpucc_compile *c = NULL;
	CHECK_INT(gpucc_compile_new(&c, NULL), 0);
	CHECK_INT(gpucc_compile_add_memory(c, NULL, "x", 1), 0);
	CHECK_INT(gpucc_compile_add_memory(c, "empty.ll", NULL, 0), 0);
	gpucc_compile_free(c);

	gpucc_snapshot *s = NULL;
	CHECK_INT(gpucc_snapshot_new(&s, NULL, 0), 0);
	gpucc_snapshot_free(s);
	s = NULL;
	CHECK_INT(gpucc_snapshot_parse_text(&s, NULL, 0, NULL), 0);
	gpucc_snapshot_free(s);
	s = NULL;
	/* A name left out is no "(null)" in the message. */
	CHECK_INT(gpucc_snapshot_parse_text(&s, "x\n", 2, NULL), GPUCC_ECORRUPT);
	CHECK(strstr(gpucc_error_last()->message, "(null)") == NULL);
	CHECK_INT(gpucc_snapshot_delta(&s, f->snapshot, NULL, f->snapshot, NULL, NULL, NULL), 0);
	CHECK(s != NULL && gpucc_snapshot_count(s) == 0);
	gpucc_snapshot_free(s);
	snprintf(path, sizeof path, "%s/delta.gpucc", check_dir);
	CHECK_INT(gpucc_delta_write(path, f->source, f->snapshot, NULL, NULL, NULL), 0);

	gpucc_operand *source = NULL;
	CHECK_INT(gpucc_operand_open(&source, f->image_path, NULL, NULL), 0);
	gpucc_operand_free(source);
	CHECK_INT(gpucc_operands_open(NULL, NULL, 0, NULL, NULL), 0);

	gpucc_selection sel;
	CHECK_INT(gpucc_select(&sel, NULL, 0, NULL, &f->target, NULL), GPUCC_ENOTFOUND);
	CHECK_INT(gpucc_select(&sel, f->entries, 1, NULL, &f->target, NULL), 0);
	CHECK_INT(gpucc_image_select(&sel, f->img, NULL, &f->target), 0);
	CHECK(gpucc_entry_fits(NULL, f->entry, &f->target));

	void *data = NULL;
	size_t size = 0;
	CHECK_INT(gpucc_image_fetch_payload_memory(&data, &size, NULL, 0, NULL, &f->digest,
	                                           GPUCC_PART_HSACO),
	          GPUCC_ECORRUPT);
}

int main(void)
{
	if (fixture_open(&fx) != 0) {
		fprintf(stderr, "cannot set up: %s\n", gpucc_error_last()->message);
		fixture_close(&fx);
		return 1;
	}
	RUN(test_required_pointers_are_einvalid);
	RUN(test_accessors_take_null);
	RUN(test_free_accepts_null);
	RUN(test_lock_release_without_path);
	RUN(test_optional_arguments_take_null);
	fixture_close(&fx);
	return CHECK_DONE();
}
