/*
 * lib/compile/compile_source.c -- HIP, CUDA and OpenCL C sources to IR modules
 * (lib/compile/compile_source.h): clang 19 run as a tool, device code only, the
 * front end's IR at the session's -O level (what clang's own device build
 * feeds its optimiser: gpucc links the device libraries and optimises, as
 * for any module), and direct-mode records that lead from a source to the
 * key of the entry its IR compiled to, without running clang or reading IR.
 * Here: the languages, clang's command line and the record's name, the
 * record looked up, running clang, the pool of pairs and the temporary
 * directory.  Which clang a pair gets, and finding clang 19, clang 22 and
 * CUDA: lib/compile/compile_source_tools.c.  The arguments' keyed forms and
 * the environment clang reads: lib/compile/compile_source_args.c;
 * the records' files: lib/compile/compile_source_records.c; what a record
 * lists and checks: lib/compile/compile_source_prepare.c and compile_source_check.c.
 *
 * Direct mode, after ccache's: a record's name is the SHA-256 of the
 * source's bytes, the normalised clang command line, clang's version, the
 * environment clang reads include paths from, and all that an entry's key
 * names besides the IR (the vendor's identity, from lib/compile/compile_keys.c); the
 * record lists, for each key the source led to, every file that compile
 * read (clang -MD) with its SHA-256.  A lookup hashes those files again
 * (through the toolchain's memos, valid while a file's size, times, inode
 * and device hold): all equal, and the IR clang would write is the one
 * that was keyed, so the key is the entry's; when the cache holds it, it
 * is the pair's hit.  One file differs, or the entry is gone, and clang
 * runs.  clang's output itself is never cached: it is a tool's, as
 * ptxas's is.  Normalised means: an absolute path outside the
 * system's directories (/usr, /opt... and the CUDA toolkit's) is written
 * relative to the working directory, in the record's name and in its file
 * list alike, so that a build tree moved elsewhere finds its records; with
 * debug info, whose DWARF names directories, the working directory is part
 * of the name.
 *
 * clang runs in a process group of its own, killed whole past the timeout,
 * and dies with its caller (lib/base/process.h).  Its files live in a
 * temporary directory of this process (lib/base/temp_name.h), which
 * gpucc_leftovers_remove finds when a signal ends the command.
 */
#include "compile_source_run.h"

#include "cache_internal.h"
#include "config_internal.h"
#include "errors.h"
#include "escape.h"
#include "hex.h"
#include "parallel.h"
#include "process.h"
#include "temp_name.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sha256.h"

#include "gpucc_build_config.h"

#define WARNING_LINES 400           /* clang's warning lines kept per pair, then a count */

/* ---- languages -------------------------------------------------------------- */

gpucc_source_language gpucc_source_language_of(const char *path)
{
	const char *dot = strrchr(path, '.');
	const char *slash = strrchr(path, '/');
	if (!dot || (slash && dot < slash))
		return GPUCC_LANGUAGE_FROM_NAME;
	if (strcmp(dot, ".hip") == 0)
		return GPUCC_LANGUAGE_HIP;
	if (strcmp(dot, ".cu") == 0)
		return GPUCC_LANGUAGE_CUDA;
	if (strcmp(dot, ".cl") == 0)
		return GPUCC_LANGUAGE_OPENCL;
	return GPUCC_LANGUAGE_FROM_NAME;
}

const char *gpucc_source_language_name(gpucc_source_language language)
{
	switch (language) {
	case GPUCC_LANGUAGE_HIP: return "HIP";
	case GPUCC_LANGUAGE_CUDA: return "CUDA";
	case GPUCC_LANGUAGE_OPENCL: return "OpenCL C";
	default: return "unknown";
	}
}

bool gpucc_source_language_serves(gpucc_source_language language, gpucc_vendor vendor)
{
	return language == GPUCC_LANGUAGE_OPENCL ||
	       (language == GPUCC_LANGUAGE_HIP && vendor == GPUCC_VENDOR_AMD) ||
	       (language == GPUCC_LANGUAGE_CUDA && vendor == GPUCC_VENDOR_NVIDIA);
}

void gpucc_source_result_release(gpucc_source_result *r)
{
	gpucc_image_free(r->hit);
	free(r->record);
	free(r->ir);
	free(r->note);
	free(r->warnings);
	free(r->error);
	free(r->diagnostics);
	gpucc_strlist_release(&r->reads);
	memset(r, 0, sizeof *r);
}

/* ---- command lines ---------------------------------------------------------- */

/* clang's command line for one pair, outputs into the temporary directory
 * under the pair's index. */
static void build_args(arglist *a, const context *x, const gpucc_source_pair *p, size_t index)
{
	const gpucc_source_settings *s = x->s;
	const gpucc_target *t = p->target;
	bool amd = t->vendor == GPUCC_VENDOR_AMD;
	/* HIP 5.2 loads v4; libclc-19's AMD library is v5, and links into
	 * nothing else, so OpenCL C is v5 unless the run names a version. */
	int code_object = s->code_object_version ? s->code_object_version
	                  : p->language == GPUCC_LANGUAGE_OPENCL ? 5
	                                                         : GPUCC_DEFAULT_CODE_OBJECT_VERSION;
	char buf[PATH_MAX + 64];
	arg_as(a, pair_clang(x, p), "clang");
	arg(a, "-fno-crash-diagnostics");
	arg(a, "-Wno-unused-command-line-argument");
	/* A configuration file clang would find by itself (beside its binary,
	 * named after the target) is read by no -MD list: none, and one the
	 * user names (--config) is hashed as the files arguments name are. */
	arg(a, "--no-default-config");
	switch (p->language) {
	case GPUCC_LANGUAGE_HIP:
		arg(a, "-x");
		arg(a, "hip");
		snprintf(buf, sizeof buf, "--offload-arch=%s", p->target_name);
		arg(a, buf);
		arg(a, "--cuda-device-only");
		arg(a, "--no-gpu-bundle-output");
		arg(a, "-nogpulib");
		arg(a, "-D__HIP_PLATFORM_AMD__");
		/* clang 20 removed the macro HIP 5.2's headers read (docs/compile.md). */
		if (pair_clang22(p))
			arg(a, strncmp(t->processor, "gfx9", 4) == 0 ? "-D__AMDGCN_WAVEFRONT_SIZE=64"
			                                             : "-D__AMDGCN_WAVEFRONT_SIZE=32");
		{
			/* clang's default CUID hashes the output's (temporary) path
			 * into a global's name: the source's normalised path and
			 * bytes instead, the same in a moved tree, and apart for two
			 * copies of one source linked together (--link). */
			gpucc_sha256 h;
			unsigned char d[32];
			char *norm = normalise_path(x, p->path);
			gpucc_sha256_init(&h);
			name_text(&h, norm ? norm : p->path);
			name_field(&h, p->data, p->size);
			gpucc_sha256_final(&h, d);
			free(norm);
			memcpy(buf, "-cuid=", 6);
			gpucc_hex_encode(buf + 6, d, 8);
			buf[6 + 16] = '\0';
			arg(a, buf);
		}
		break;
	case GPUCC_LANGUAGE_CUDA:
		arg(a, "-x");
		arg(a, "cuda");
		snprintf(buf, sizeof buf, "--cuda-gpu-arch=%s", gpucc_target_cpu(t));
		arg(a, buf);
		arg(a, "--cuda-device-only");
		arg(a, "-nocudalib");
		arg(a, "-Wno-unknown-cuda-version");
		/* What clang's driver sets itself for a toolkit it knows; without
		 * it, <<<>>> finds no cudaConfigureCall under -nocudalib. */
		arg(a, "-Xclang");
		arg(a, "-target-sdk-version=12.5");
		if (x->cuda_stub) {
			arg(a, "-isystem");
			arg_as(a, x->stub_dir, "<gpucc-cuda-stubs>");
		}
		if (x->cccl_dir) {
			arg(a, "-isystem");
			arg_path(a, x, "", x->cccl_dir);
		}
		break;
	default:
		arg(a, "-x");
		arg(a, "cl");
		if (!user_gave_cl_std(x))
			arg(a, "-cl-std=CL1.2");
		arg(a, "-nogpulib");
		snprintf(buf, sizeof buf, "--target=%s", gpucc_target_triple(t));
		arg(a, buf);
		if (amd)
			snprintf(buf, sizeof buf, "-mcpu=%s", p->target_name);
		else
			snprintf(buf, sizeof buf, "-march=%s", gpucc_target_cpu(t));
		arg(a, buf);
		break;
	}
	if (x->cuda_dir && !amd)
		arg_path(a, x, "--cuda-path=", x->cuda_dir);
	if (!amd && p->ptx_explicit) {
		/* clang's driver adds the newest PTX ISA of the CUDA it finds
		 * (8.5 for CUDA 13): turned off, with every newer one, in favour
		 * of the one the target names. */
		static const unsigned known[] = {60, 61, 62, 63, 64, 65, 70, 71, 72, 73, 74, 75,
		                                 76, 77, 78, 80, 81, 82, 83, 84, 85, 86, 87, 88, 90};
		size_t known_count = sizeof known / sizeof known[0] - (pair_clang22(p) ? 0 : 4);
		for (size_t i = 0; i < known_count; i++) {
			if (known[i] <= t->ptx_isa)
				continue;
			snprintf(buf, sizeof buf, "-ptx%u", known[i]);
			arg(a, "-Xclang");
			arg(a, "-target-feature");
			arg(a, "-Xclang");
			arg(a, buf);
		}
		snprintf(buf, sizeof buf, "+ptx%u", t->ptx_isa);
		arg(a, "-Xclang");
		arg(a, "-target-feature");
		arg(a, "-Xclang");
		arg(a, buf);
	}
	if (amd) {
		snprintf(buf, sizeof buf, "-mcode-object-version=%d", code_object);
		arg(a, buf);
	}
	snprintf(buf, sizeof buf, "-O%d", s->opt_level);
	arg(a, buf);
	/* The front end's IR: gpucc links the device libraries and optimises. */
	arg(a, "-Xclang");
	arg(a, "-disable-llvm-passes");
	if (s->relocatable && p->language != GPUCC_LANGUAGE_OPENCL)
		arg(a, "-fgpu-rdc"); /* device functions defined in another source */
	if (s->debug_info)
		arg(a, "-g");
	if (s->fast_math)
		arg(a, "-ffast-math");
	if (s->ftz)
		arg(a, p->language == GPUCC_LANGUAGE_OPENCL ? "-cl-denorms-are-zero"
		                                            : "-fgpu-flush-denormals-to-zero");
	user_args(a, x, p->language);
	arg(a, "-emit-llvm");
	arg(a, "-c");
	arg_unkeyed(a, "-v"); /* the include search, and the configuration files read */
	arg_unkeyed(a, "-MD");
	arg_unkeyed(a, "-MF");
	snprintf(buf, sizeof buf, "%s/%zu.d", x->temp_dir, index);
	arg_unkeyed(a, buf);
	arg_unkeyed(a, "-o");
	snprintf(buf, sizeof buf, "%s/%zu.bc", x->temp_dir, index);
	arg_unkeyed(a, buf);
	arg_unkeyed(a, "--");
	arg_path_unkeyed(a, x, p->path); /* keyed by its own field */
}

/* ---- record names ------------------------------------------------------------ */

static int record_name(gpucc_digest *out, const context *x, const gpucc_source_pair *p,
                       const arglist *a)
{
	gpucc_sha256 h;
	gpucc_sha256_init(&h);
	name_text(&h, RECORD_MAGIC);
	name_text(&h, gpucc_version());
	name_text(&h, pair_clang22(p) ? x->clang22_version : x->clang_version);
	name_text(&h, gpucc_source_language_name(p->language));
	name_text(&h, p->target_name);
	if (p->parts) /* the entry a record leads to holds these parts alone */
		name_text(&h, p->parts);
	for (size_t i = 0; i < a->count; i++)
		if (a->keyed[i])
			name_text(&h, a->keyed[i]);
	name_text(&h, "--");
	char *source = normalise_path(x, p->path);
	if (!source)
		return gpucc_error_oom();
	name_text(&h, source);
	free(source);
	gpucc_digest d;
	gpucc_digest_buffer(&d, p->data, p->size);
	name_field(&h, d.bytes, sizeof d.bytes);
	name_text(&h, x->env_key);
	const gpucc_digest *identity = &x->s->identity[p->target->vendor];
	name_field(&h, identity->bytes, sizeof identity->bytes);
	if (x->s->debug_info)
		name_text(&h, x->cwd); /* DWARF names the directory */
	gpucc_sha256_final(&h, out->bytes);
	return 0;
}

/* ---- records ------------------------------------------------------------------ */

/* Look the record up: on a hit, the entry of its key in r->hit; either way
 * a note.  A result whose files are unchanged but whose entry the cache no
 * longer holds is a miss, its key kept in r->missed.  A damaged record is
 * a miss. */
static void record_lookup(context *x, const gpucc_source_pair *p, const gpucc_digest *name,
                          gpucc_source_result *r)
{
	char *path = record_path(x->records_dir, name);
	record_view v;
	const char *defect = path ? record_view_open(&v, path) : "no record";
	free(path);
	if (defect) {
		r->note = strcmp(defect, "no record") == 0 ? strdup("miss: no record")
		                                            : string_printf("miss: the record is "
		                                                            "damaged: %s", defect);
		return;
	}
	char *why = NULL;
	for (size_t i = 0; i < v.rs.count && !r->hit; i++) {
		const record_result *res = &v.rs.items[i];
		/* Each result's lines are its count lines, each ending with a
		 * line break (record_view_open parsed them): files_unchanged
		 * reads them, and stops at their end. */
		char *line = (char *)res->lines;
		gpucc_strlist_release(&r->reads);
		bool unchanged = files_unchanged(x, &line, res->count, &why, &r->reads);
		if (!unchanged) {
			gpucc_strlist_release(&r->reads);
			continue;
		}
		char key_hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(key_hex, &res->key);
		gpucc_image *img = NULL;
		pthread_mutex_lock(&x->lock); /* the cache's counters are the handle's */
		int rc = gpucc_cache_lookup(&img, x->s->cache, &res->key);
		pthread_mutex_unlock(&x->lock);
		if (rc != 0) {
			gpucc_error_clear();
			gpucc_strlist_release(&r->reads);
			r->missed = res->key;
			r->missed_key = true;
			if (!why)
				why = string_printf("miss: the record's entry %.16s is no longer cached",
				                    key_hex);
			continue;
		}
		char hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(hex, name);
		if (pair_clang(x, p))
			gpucc_strlist_push_new(&r->reads, pair_clang(x, p));
		r->hit = img;
		r->note = string_printf("hit: record %.16s, %lu files unchanged", hex, res->count);
	}
	if (record_view_close(&v)) {
		/* Cut short while read: what was checked is not the record. */
		gpucc_image_free(r->hit);
		r->hit = NULL;
		free(r->note);
		r->note = NULL;
		r->missed_key = false;
		gpucc_strlist_release(&r->reads);
		free(why);
		why = strdup("miss: the record was cut short while it was read");
	}
	if (r->hit)
		free(why);
	else
		r->note = why ? why : strdup("miss: the record holds no usable result");
}

/* ---- running clang ----------------------------------------------------------- */

/* Run argv with stdin and stdout on /dev/null and stderr into err_fd, in a
 * process group of its own that dies with this thread.  *status as
 * waitpid gives it; *timed_out when it ran past timeout_seconds (0: no
 * limit) and was killed.  Returns 0, or an error when it could not start. */
static int run_tool(char *const *argv, int err_fd, unsigned timeout_seconds, int *status,
                    bool *timed_out)
{
	*status = 0;
	*timed_out = false;
	gpucc_process_options o = {
		.streams = {{.kind = GPUCC_PROCESS_NULL},
		            {.kind = GPUCC_PROCESS_NULL},
		            {.kind = GPUCC_PROCESS_FD, .fd = err_fd}},
		.own_group = true,
		.die_with_caller = true,
	};
	gpucc_process p;
	int err = gpucc_process_start(&p, argv, &o);
	if (err) {
		errno = err;
		return gpucc_error_set_errno("cannot run '%s'", argv[0]);
	}
	gpucc_process_wait(&p, (unsigned long)timeout_seconds * 1000, status, timed_out);
	return 0;
}

/* The first line of text that says "error:" (else the first line), into
 * out. */
static void first_error_line(char *out, size_t size, const char *message)
{
	const char *line = NULL;
	for (const char *p = message; p && *p;) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *e = strstr(p, "error:");
		if (e && e < p + len) {
			line = p;
			break;
		}
		p = end ? end + 1 : NULL;
	}
	if (!line)
		line = message;
	size_t len = strcspn(line, "\n");
	snprintf(out, size, "%.*s", (int)(len < size ? len : size - 1), line);
}

static void set_error(gpucc_source_result *r, int code, const gpucc_source_pair *p,
                      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void set_error(gpucc_source_result *r, int code, const gpucc_source_pair *p,
                      const char *fmt, ...)
{
	char message[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	free(r->error);
	r->error = string_printf("%s: %s: %s", p->shown, p->target_shown ? p->target_shown : p->target_name,
	                         message);
	r->error_code = code;
	free(r->ir);
	r->ir = NULL;
}

/* clang's warning lines, prefixed "SOURCE: TARGET: clang: ", at most
 * WARNING_LINES of them, then a line that says how many more there were. */
static char *warning_lines(const gpucc_source_pair *p, const char *err)
{
	gpucc_buffer t = GPUCC_BUFFER_INIT;
	size_t lines = 0;
	for (const char *q = err; *q;) {
		size_t len = strcspn(q, "\n");
		if (len && ++lines <= WARNING_LINES) {
			gpucc_buffer_append_string(&t, p->shown);
			gpucc_buffer_append_string(&t, ": ");
			gpucc_buffer_append_string(&t, p->target_shown ? p->target_shown : p->target_name);
			gpucc_buffer_append_string(&t, ": clang: ");
			gpucc_buffer_append(&t, q, len);
			gpucc_buffer_append_string(&t, "\n");
		}
		q += len + (q[len] == '\n');
	}
	if (lines > WARNING_LINES) {
		char more[96];
		snprintf(more, sizeof more, "(%zu more lines of clang's not shown)",
		         lines - WARNING_LINES);
		gpucc_buffer_append_string(&t, p->shown);
		gpucc_buffer_append_string(&t, ": ");
		gpucc_buffer_append_string(&t, p->target_shown ? p->target_shown : p->target_name);
		gpucc_buffer_append_string(&t, ": clang: ");
		gpucc_buffer_append_string(&t, more);
		gpucc_buffer_append_string(&t, "\n");
	}
	if (t.failed) {
		free(t.data);
		return NULL;
	}
	return t.data;
}

static bool temp_dir_ready(context *x);

/* The first half of a pair: its record's name, and the record looked up.
 * Whether clang must run (no hit, nothing failed). */
static bool look_up_pair(context *x, size_t index)
{
	gpucc_source_pair *p = &x->pairs[index];
	gpucc_source_result *r = &p->result;
	arglist a = {0};
	if (p->language == GPUCC_LANGUAGE_CUDA && !x->cuda_dir) {
		set_error(r, GPUCC_EUNAVAILABLE, p,
		          "CUDA sources need the CUDA toolkit's headers, and no toolkit was found "
		          "(include/cuda_runtime.h in $CUDA_PATH or /usr/local/cuda)");
		return false;
	}
	if (!pair_clang(x, p)) {
		set_error(r, GPUCC_EUNAVAILABLE, p, "%s", pair_clang22(p) ? x->clang22_error : x->clang_error);
		return false;
	}
	/* Every record is looked up before clang runs, so no temporary
	 * directory exists yet: the record's name reads the keyed forms only. */
	build_args(&a, x, p, index);
	int rc = a.failed ? GPUCC_ERROR : record_name(&x->names[index], x, p, &a);
	arglist_release(&a);
	if (rc != 0) {
		set_error(r, GPUCC_ERROR, p, "out of memory");
		return false;
	}
	if (x->records_dir) {
		record_lookup(x, p, &x->names[index], r);
		return !r->hit;
	}
	r->note = strdup(x->s->relocatable && x->s->cache ? "miss: linked sources are not recorded"
	                                                  : "miss: no cache");
	return true;
}

/* The second half of a pair whose record missed: clang. */
/* What a compile clang ran read, into r->reads for a dependency file:
 * its clang, clang's -MD list (deps; NULL when it wrote none) but gpucc's own
 * temporary files, and the files its arguments name. */
static void source_reads(context *x, const gpucc_source_pair *p, const gpucc_depfile *deps,
                         const gpucc_clang_search *search, gpucc_source_result *r)
{
	gpucc_strlist files = {0}, absent = {0};
	for (size_t i = 0; deps && i < deps->count; i++)
		if (!x->temp_dir[0] || !under(deps->paths[i], x->temp_dir))
			gpucc_strlist_push_new(&files, deps->paths[i]);
	gpucc_argument_files(x->s->args, x->s->arg_count, &search->configs, &files, &absent);
	/* Spelt as a record spells them, so that a hit names the same. */
	for (size_t i = 0; i < files.count; i++) {
		char *norm = normalise_path(x, files.items[i]);
		if (norm)
			gpucc_strlist_push_new(&r->reads, norm);
		r->reads.failed |= !norm;
		free(norm);
	}
	if (pair_clang(x, p))
		gpucc_strlist_push_new(&r->reads, pair_clang(x, p));
	gpucc_strlist_release(&files);
	gpucc_strlist_release(&absent);
}

/* clang -MD lists a PCH's headers before the unit itself: the unit first,
 * as without one, so that the record is the same. */
static void unit_first(gpucc_depfile *deps, const char *unit)
{
	for (size_t i = 1; i < deps->count; i++)
		if (strcmp(deps->paths[i], unit) == 0) {
			char *path = deps->paths[i];
			memmove(deps->paths + 1, deps->paths, i * sizeof *deps->paths);
			deps->paths[0] = path;
			return;
		}
}

/* clang for one pair, with the run's precompiled prelude when its group
 * may have one (lib/compile/compile_source_pch.c): a compile that fails with it
 * runs again without, so that what fails, and what it says, is what it
 * would be without a PCH; when that one succeeds, clang refused the PCH
 * (a header changed under it), and the group makes another.  IR the PCH
 * may have changed (gpucc_source_pch_ir_trusted) is made again without.  *pch: the
 * PCH the IR was compiled with, owned, or NULL; *runtime: it is the
 * extended prelude's.  *start: when the clang that wrote the outputs
 * started.  As run_tool returns. */
static int run_with_prelude(context *x, const gpucc_source_pair *p, const arglist *a, int err_fd,
                            int *status, bool *timed_out, int64_t *start, char **pch,
                            bool *runtime)
{
	const gpucc_source_settings *s = x->s;
	*pch = NULL;
	char **with = NULL;
	/* A unit of a small group reads the cache's PCH, but makes none. */
	bool shared = x->shares_prelude && x->shares_prelude[p - x->pairs];
	if (x->pch && (shared || x->records_dir) &&
	    gpucc_source_pch_applies(p->language, s->debug_info, s->relocatable, s->args,
	                             s->arg_count) &&
	    gpucc_source_pch_worth(p->data, p->size))
		*pch = gpucc_source_pch_get(x->pch, x, p, a, shared, runtime);
	if (*pch && (with = calloc(a->count + 7, sizeof *with)) != NULL) {
		/* Its -include-pch before the unit's name ("--"); unkeyed.  clang
		 * checks the sizes and times of a PCH's system headers only when
		 * asked to: a header changed since refuses the PCH. */
		size_t k = 0;
		for (size_t i = 0; i < a->count; i++) {
			if (strcmp(a->real[i], "--") == 0) {
				with[k++] = "-Xclang";
				with[k++] = "-fmodules-validate-system-headers";
				with[k++] = "-Xclang";
				with[k++] = "-include-pch";
				with[k++] = "-Xclang";
				with[k++] = *pch;
			}
			with[k++] = a->real[i];
		}
		with[k] = NULL;
	}
	if (!with) {
		free(*pch);
		*pch = NULL;
		return run_tool(a->real, err_fd, s->timeout_seconds, status, timed_out);
	}
	*start = file_clock_ns();
	int rc = run_tool(with, err_fd, s->timeout_seconds, status, timed_out);
	free(with);
	bool refused = true;
	if (rc == 0 && !*timed_out && WIFEXITED(*status) && WEXITSTATUS(*status) == 0) {
		/* Kept only when it is the IR a compile without the PCH writes. */
		const char *out = NULL;
		for (size_t i = 0; i + 1 < a->count && !out; i++)
			if (strcmp(a->real[i], "-o") == 0)
				out = a->real[i + 1];
		size_t size = 0;
		char *ir = out ? gpucc_read_small_file(out, (size_t)1 << 32, &size) : NULL;
		bool trusted = ir && gpucc_source_pch_ir_trusted((const unsigned char *)ir, size);
		free(ir);
		if (trusted)
			return 0;
		gpucc_error_clear();
		refused = false;
	}
	if (rc != 0)
		gpucc_error_clear();
	if (ftruncate(err_fd, 0) != 0 || lseek(err_fd, 0, SEEK_SET) != 0) {
		free(*pch);
		*pch = NULL;
		return gpucc_error_set_errno("cannot reuse clang's message file");
	}
	*start = file_clock_ns();
	rc = run_tool(a->real, err_fd, s->timeout_seconds, status, timed_out);
	if (refused && rc == 0 && !*timed_out && WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
		gpucc_source_pch_refused(x->pch, *pch);
	free(*pch);
	*pch = NULL;
	return rc;
}

static void compile_pair(context *x, size_t index)
{
	gpucc_source_pair *p = &x->pairs[index];
	gpucc_source_result *r = &p->result;
	const gpucc_digest name = x->names[index];
	arglist a = {0};
	/* The name depends only on the arguments' keyed forms; the paths clang
	 * is given exist once the temporary directory does. */
	if (!temp_dir_ready(x)) {
		set_error(r, GPUCC_EUNAVAILABLE, p, "%s", x->temp_error);
		return;
	}
	build_args(&a, x, p, index);
	if (a.failed) {
		set_error(r, GPUCC_ERROR, p, "out of memory");
		arglist_release(&a);
		return;
	}
	char err_path[PATH_MAX + 32], out_path[PATH_MAX + 32], dep_path[PATH_MAX + 32];
	snprintf(err_path, sizeof err_path, "%s/%zu.err", x->temp_dir, index);
	snprintf(out_path, sizeof out_path, "%s/%zu.bc", x->temp_dir, index);
	snprintf(dep_path, sizeof dep_path, "%s/%zu.d", x->temp_dir, index);
	int err_fd = open(err_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (err_fd < 0) {
		set_error(r, GPUCC_ERROR, p, "cannot create '%s': %s", err_path, strerror(errno));
		arglist_release(&a);
		return;
	}
	int status = 0;
	bool timed_out = false;
	int64_t start = file_clock_ns();
	char *pch = NULL;
	bool pch_runtime = false;
	int rc = run_with_prelude(x, p, &a, err_fd, &status, &timed_out, &start, &pch, &pch_runtime);
	close(err_fd);
	size_t err_size = 0;
	char *err = gpucc_read_small_file(err_path, 1 << 20, &err_size);
	unlink(err_path);
	gpucc_clang_search search = {0};
	if (err) {
		gpucc_clang_verbose_take(err, &search); /* -v's lines: the include search */
		err_size = strlen(err);
	}
	const char *clang = pair_clang(x, p);
	const char *clang_name = strrchr(clang, '/') ? strrchr(clang, '/') + 1 : clang;
	char first[512] = "";
	if (err)
		first_error_line(first, sizeof first, err);
	if (rc != 0) {
		set_error(r, GPUCC_EUNAVAILABLE, p, "%s", gpucc_error_last()->message);
		gpucc_error_clear();
	} else if (timed_out) {
		set_error(r, GPUCC_ECOMPILE, p, "%s ran past the job timeout (%u s) and was killed",
		          clang_name, x->s->timeout_seconds);
	} else if (WIFSIGNALED(status)) {
		char signal_buf[GPUCC_SIGNAL_NAME_SIZE];
		set_error(r, GPUCC_ECOMPILE, p, "%s crashed (%s)%s%s", clang_name,
		          gpucc_signal_name(WTERMSIG(status), signal_buf), first[0] ? ": " : "", first);
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && !first[0]) {
		set_error(r, GPUCC_EUNAVAILABLE, p, "cannot run '%s'", clang);
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		set_error(r, GPUCC_ECOMPILE, p, "%s: %s", clang_name,
		          first[0] ? first : "failed without a message");
	} else {
		size_t size = 0;
		char *ir = gpucc_read_small_file(out_path, (size_t)1 << 32, &size);
		if (!ir) {
			set_error(r, GPUCC_ECOMPILE, p, "%s wrote no IR", clang_name);
		} else {
			r->ir = (unsigned char *)ir;
			r->ir_size = size;
		}
	}
	if (r->error && err && err_size)
		r->diagnostics = warning_lines(p, err);
	else if (r->ir && err && err_size)
		r->warnings = warning_lines(p, err);
	free(err);
	size_t dep_size = 0;
	char *dep_text = r->ir ? gpucc_read_small_file(dep_path, RECORD_MAX_BYTES, &dep_size) : NULL;
	gpucc_depfile deps = {0};
	bool have_deps = dep_text && gpucc_depfile_parse(&deps, dep_text, dep_size) == 0;
	if (have_deps && pch) {
		gpucc_source_pch_rehome(&deps, x->temp_dir);
		unit_first(&deps, a.real[a.count - 1]);
	}
	if (r->ir)
		source_reads(x, p, have_deps ? &deps : NULL, &search, r);
	if (r->ir && x->records_dir && x->records_writable) {
		char *why = NULL;
		if (!have_deps) {
			why = strdup("not recorded: clang wrote no dependency list");
			gpucc_error_clear();
		} else {
			why = search.quote.failed || search.angle.failed || search.missing.failed ||
			              search.configs.failed
			          ? strdup("not recorded: out of memory")
			      /* Every compile searches somewhere: a -v that listed no
			       * directory is one gpucc does not read. */
			      : search.angle.count == 0
			          ? strdup("not recorded: clang -v listed no include search")
			          : record_prepare(x, p, &deps, &search, start, r);
			r->record_name = name;
		}
		if (why) {
			char *note = string_printf("%s; %s", r->note ? r->note : "miss", why);
			if (note) {
				free(r->note);
				r->note = note;
			}
			free(why);
		}
	}
	if (r->ir && pch) {
		char *note = string_printf("%s; prelude precompiled%s", r->note ? r->note : "miss",
		                           pch_runtime ? " with hip/hip_runtime.h" : "");
		if (note) {
			free(r->note);
			r->note = note;
		}
	}
	free(pch);
	if (have_deps)
		gpucc_depfile_release(&deps);
	free(dep_text);
	gpucc_clang_search_release(&search);
	unlink(out_path);
	unlink(dep_path);
	arglist_release(&a);
}

static void pair_finished(context *x, size_t i)
{
	if (!x->s->pair_done)
		return;
	pthread_mutex_lock(&x->lock);
	x->s->pair_done(x->s->pair_done_ctx, &x->pairs[i], ++x->finished, x->count);
	pthread_mutex_unlock(&x->lock);
}

/* A thread of the pool (gpucc_pool_start), or the calling thread when none
 * started. */
static int pair_thread(void *arg, size_t thread)
{
	(void)thread;
	context *x = arg;
	for (;;) {
		pthread_mutex_lock(&x->lock);
		while (x->next < x->count && !x->to_run[x->next])
			x->next++;
		size_t i = x->next < x->count ? x->next++ : (size_t)-1;
		pthread_mutex_unlock(&x->lock);
		if (i == (size_t)-1)
			return 0;
		compile_pair(x, i);
		pair_finished(x, i);
	}
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

/* TMPDIR/gpucc-backend-PID-XXXXXX (the config's tmpdir, else /tmp), and in
 * it the CUDA stubs. */
static int make_temp_dir(context *x)
{
	if (gpucc_temp_dir_create(x->temp_dir, sizeof x->temp_dir, gpucc_temp_parent()) != 0)
		return gpucc_error_set_errno("cannot make a temporary directory in '%s'",
		                             gpucc_temp_parent());
	if (!x->cuda_stub)
		return 0;
	snprintf(x->stub_dir, sizeof x->stub_dir, "%s/stubs", x->temp_dir);
	char stub[PATH_MAX + 64 + 16];
	snprintf(stub, sizeof stub, "%s/texture_fetch_functions.h", x->stub_dir);
	int fd = mkdir(x->stub_dir, 0700) == 0 ? open(stub, O_WRONLY | O_CREAT | O_CLOEXEC, 0600) : -1;
	if (fd < 0)
		return gpucc_error_set_errno("cannot write '%s'", stub);
	close(fd);
	return 0;
}

/* Whether the temporary directory exists, made by the first pair that
 * needs it: a run whose records all hit makes none. */
static bool temp_dir_ready(context *x)
{
	pthread_mutex_lock(&x->lock);
	if (!x->temp_dir[0] && !x->temp_error[0] && make_temp_dir(x) != 0) {
		snprintf(x->temp_error, sizeof x->temp_error, "%s", gpucc_error_last()->message);
		gpucc_error_clear();
	}
	bool ready = x->temp_dir[0] != '\0';
	pthread_mutex_unlock(&x->lock);
	return ready;
}

/* Whether CUDA sources need the stub header: CUDA 13 removed
 * texture_fetch_functions.h, which clang-19's CUDA wrapper includes, and an
 * empty one stands in. */
static bool needs_cuda_stub(const context *x)
{
	bool cuda = false;
	for (size_t i = 0; i < x->count; i++)
		cuda |= x->pairs[i].language == GPUCC_LANGUAGE_CUDA;
	if (!cuda || !x->cuda_dir)
		return false;
	char *have = string_printf("%s/include/texture_fetch_functions.h", x->cuda_dir);
	bool present = have && is_regular(have);
	free(have);
	return !present;
}

int gpucc_sources_resolve(gpucc_source_pair *pairs, size_t count, const gpucc_source_settings *s)
{
	if (count == 0)
		return 0;
	context x;
	memset(&x, 0, sizeof x);
	x.s = s;
	x.pairs = pairs;
	x.count = count;
	pthread_mutex_init(&x.lock, NULL);
	struct timespec res;
	x.clock_granularity_ns = clock_getres(CLOCK_REALTIME_COARSE, &res) == 0
	                             ? (long)ns_of(res) : 10000000L;
	if (x.clock_granularity_ns < 1000000L)
		x.clock_granularity_ns = 1000000L;
	if (!getcwd(x.cwd, sizeof x.cwd))
		snprintf(x.cwd, sizeof x.cwd, "/");
	if (env_key(&x) != 0) {
		pthread_mutex_destroy(&x.lock);
		return gpucc_error_oom();
	}
	find_clang(&x);
	find_clang22(&x);
	find_cuda(&x);
	x.cuda_stub = needs_cuda_stub(&x);
	if (!s->no_pch && gpucc_source_pch_set_new(&x.pch, run_tool, s->timeout_seconds) != 0)
		x.pch = NULL; /* out of memory: no PCH, the same IR */
	if (s->cache && !s->relocatable) {
		x.records_dir = string_printf("%s/v1/sources", gpucc_cache_dir(s->cache));
		x.records_writable = gpucc_cache_writable(s->cache);
		if (!x.records_dir) {
			free(x.env_key);
			pthread_mutex_destroy(&x.lock);
			return gpucc_error_oom();
		}
	}
	x.names = calloc(count, sizeof *x.names);
	x.to_run = calloc(count, sizeof *x.to_run);
	if (!x.names || !x.to_run) {
		free(x.names);
		free(x.to_run);
		free(x.records_dir);
		free(x.env_key);
		pthread_mutex_destroy(&x.lock);
		return gpucc_error_oom();
	}
	/* First every record, on this thread (stats of the files each lists:
	 * a run whose records all hit starts no thread and no process); then
	 * clang for the pairs that missed, jobs at a time, once the caller
	 * was told. */
	size_t misses = 0;
	for (size_t i = 0; i < count; i++) {
		x.to_run[i] = look_up_pair(&x, i);
		misses += x.to_run[i];
		if (!x.to_run[i])
			pair_finished(&x, i);
	}
	if (misses && s->before_clang && !s->before_clang(s->before_clang_ctx)) {
		for (size_t i = 0; i < count; i++) {
			if (!x.to_run[i])
				continue;
			set_error(&pairs[i].result, GPUCC_ERROR, &pairs[i],
			          "stopped by the caller before clang ran");
			pair_finished(&x, i);
		}
		misses = 0;
	}
	/* A PCH with its probe costs about three parses of the prelude: made
	 * only for a prelude that at least GPUCC_PCH_GROUP_MIN units of the
	 * run that may read it (one language, one target, the plain or the
	 * extended prelude) share. */
	x.shares_prelude = x.pch && misses > 1 ? calloc(count, sizeof *x.shares_prelude) : NULL;
	/* 0: reads none; 1: the plain prelude; 2: the extended one. */
	unsigned char *prelude = x.shares_prelude ? calloc(count, 1) : NULL;
	for (size_t i = 0; prelude && i < count; i++)
		if (x.to_run[i] && gpucc_source_pch_worth(pairs[i].data, pairs[i].size))
			prelude[i] = 1 + gpucc_source_prelude_runtime(pairs[i].language, pairs[i].data,
			                                              pairs[i].size);
	for (size_t i = 0; prelude && i < count; i++) {
		size_t sharing = 0;
		for (size_t j = 0; prelude[i] && j < count; j++)
			sharing += prelude[j] == prelude[i] && pairs[j].language == pairs[i].language &&
			           strcmp(pairs[j].target_name, pairs[i].target_name) == 0;
		x.shares_prelude[i] = sharing >= GPUCC_PCH_GROUP_MIN;
	}
	free(prelude);
	unsigned n = s->jobs ? s->jobs : 1;
	if (n > misses)
		n = (unsigned)misses;
	/* One at a time: on this thread. */
	gpucc_pool threads;
	size_t started = gpucc_pool_start(&threads, n > 1 ? n : 0, 0, pair_thread, &x);
	if (started == 0 && misses)
		pair_thread(&x, 0);
	gpucc_pool_join(&threads); /* pair_thread fails no pair of its own: 0 */
	free(x.names);
	free(x.to_run);
	gpucc_source_pch_set_free(x.pch);
	free(x.shares_prelude);
	if (x.temp_dir[0])
		nftw(x.temp_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	for (size_t i = 0; i < count; i++)
		if (!pairs[i].result.hit && !pairs[i].result.ir && !pairs[i].result.error) {
			set_error(&pairs[i].result, GPUCC_ERROR, &pairs[i], "out of memory");
		}
	free(x.clang);
	free(x.clang22);
	free(x.cuda_dir);
	free(x.cccl_dir);
	free(x.records_dir);
	free(x.env_key);
	pthread_mutex_destroy(&x.lock);
	return 0;
}
