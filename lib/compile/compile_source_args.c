/*
 * lib/compile/compile_source_args.c -- what of a pair's clang run names its
 * direct-mode record besides the source and the target
 * (lib/compile/compile_source.c builds the command line and the name): the
 * argument list, each argument beside its keyed form (paths normalised, so
 * that a tree moved elsewhere keys the same; outputs not keyed), the
 * user's arguments as a language takes them, and the environment
 * variables clang reads.
 */
#include "compile_source_run.h"
#include "config_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void arg_push_owned(arglist *a, char *real, char *keyed, bool keep_key)
{
	if (a->failed || !real || (keep_key && !keyed)) {
		a->failed = true;
		free(real);
		free(keyed);
		return;
	}
	if (a->count + 2 > a->capacity) {
		size_t n = a->capacity ? 2 * a->capacity : 64;
		char **r = realloc(a->real, n * sizeof *r);
		if (r)
			a->real = r;
		char **k = r ? realloc(a->keyed, n * sizeof *k) : NULL;
		if (k)
			a->keyed = k;
		if (!r || !k) {
			a->failed = true;
			free(real);
			free(keyed);
			return;
		}
		a->capacity = n;
	}
	a->real[a->count] = real;
	a->keyed[a->count] = keep_key ? keyed : NULL;
	if (!keep_key)
		free(keyed);
	a->count++;
	a->real[a->count] = NULL;
}

/* An argument keyed as it is. */
void arg(arglist *a, const char *text)
{
	arg_push_owned(a, strdup(text), strdup(text), true);
}

/* An argument that is a path: given to clang and keyed normalised, so
 * that what the path puts into the IR (__FILE__, the module's source file
 * name) is the same in a build tree moved elsewhere. */
void arg_path(arglist *a, const context *x, const char *prefix, const char *path)
{
	char *norm = normalise_path(x, path);
	arg_push_owned(a, norm ? string_printf("%s%s", prefix, norm) : NULL,
	               norm ? string_printf("%s%s", prefix, norm) : NULL, true);
	free(norm);
}

/* An argument that is a path, given to clang normalised and not keyed. */
void arg_path_unkeyed(arglist *a, const context *x, const char *path)
{
	arg_push_owned(a, normalise_path(x, path), NULL, false);
}

/* An argument the key does not take (an output file). */
void arg_unkeyed(arglist *a, const char *text)
{
	arg_push_owned(a, strdup(text), NULL, false);
}

/* An argument keyed as placeholder (a file gpucc makes itself). */
void arg_as(arglist *a, const char *text, const char *keyed)
{
	arg_push_owned(a, strdup(text), strdup(keyed), true);
}

void arglist_release(arglist *a)
{
	for (size_t i = 0; i < a->count; i++) {
		free(a->real[i]);
		free(a->keyed[i]);
	}
	free(a->real);
	free(a->keyed);
	memset(a, 0, sizeof *a);
}

/* Options whose value (the next argument, or the rest of this one) is a
 * path. */
static const char *const path_options[] = {"-I", "-isystem", "-iquote", "-idirafter",
                                            "-include", "-imacros", "--cuda-path=",
                                            "--rocm-path=", "-F"};

/* The user's arguments for this language: "-std=" and "-cl-std=" only where
 * they belong; paths keyed normalised. */
void user_args(arglist *a, const context *x, gpucc_source_language lang)
{
	const gpucc_source_settings *s = x->s;
	for (size_t i = 0; i < s->arg_count; i++) {
		const char *v = s->args[i];
		if (strncmp(v, "-std=", 5) == 0 || strncmp(v, "-cl-std=", 8) == 0) {
			bool cl = v[1] == 'c' || strncasecmp(v + 5, "cl", 2) == 0;
			if (cl == (lang == GPUCC_LANGUAGE_OPENCL))
				arg(a, v);
			continue;
		}
		bool done = false;
		for (size_t k = 0; k < sizeof path_options / sizeof path_options[0] && !done; k++) {
			const char *o = path_options[k];
			size_t len = strlen(o);
			if (strcmp(v, o) == 0 && i + 1 < s->arg_count) {
				arg(a, v);
				arg_path(a, x, "", s->args[++i]);
				done = true;
			} else if (strncmp(v, o, len) == 0 && v[len]) {
				char prefix[32];
				snprintf(prefix, sizeof prefix, "%s", o);
				arg_path(a, x, prefix, v + len);
				done = true;
			}
		}
		if (done)
			continue;
		if (v[0] == '/')
			arg_path(a, x, "", v);
		else
			arg(a, v);
	}
}

bool user_gave_cl_std(const context *x)
{
	for (size_t i = 0; i < x->s->arg_count; i++) {
		const char *v = x->s->args[i];
		if (strncmp(v, "-cl-std=", 8) == 0 || strncasecmp(v, "-std=cl", 7) == 0)
			return true;
	}
	return false;
}

/* The environment variables clang 19's driver and front end read that can
 * change the IR of a device-only compile (found in clang's sources and in
 * the strings of libclang-cpp; docs/compile.md lists them with why):
 * each one's value, or its absence, names the record.  SOURCE_DATE_EPOCH
 * changes only what the time macros say: a result of a unit that uses
 * them checks it (environment_line), so that a build setting it anew
 * for each commit still hits the units that do not. */
static const char *const clang_environment[] = {
	"CCC_OVERRIDE_OPTIONS",   /* the driver edits its own command line */
	"CLANG_NO_DEFAULT_CONFIG", /* (gpucc passes --no-default-config too) */
	"COMPILER_PATH",          /* the driver's program search path */
	"CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "OBJC_INCLUDE_PATH",
	"OBJCPLUS_INCLUDE_PATH",  /* include directories */
	"HIP_PATH", "ROCM_PATH", "HIP_DEVICE_LIB_PATH", /* where HIP's headers are */
};

/* x->env_key: "NAME=VALUE\n" for each variable set, "NAME\n" for each
 * unset (an empty value is not an absent one to clang). */
int env_key(context *x)
{
	gpucc_buffer t = GPUCC_BUFFER_INIT;
	for (size_t i = 0; i < sizeof clang_environment / sizeof clang_environment[0]; i++) {
		const char *v = gpucc_tool_environment(clang_environment[i]);
		gpucc_buffer_append_string(&t, clang_environment[i]);
		if (v) {
			gpucc_buffer_append_string(&t, "=");
			gpucc_buffer_append_string(&t, v);
		}
		gpucc_buffer_append_string(&t, "\n");
	}
	if (t.failed) {
		free(t.data);
		return -1;
	}
	x->env_key = t.data;
	return 0;
}
