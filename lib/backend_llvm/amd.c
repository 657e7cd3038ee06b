/*
 * lib/backend_llvm/amd.c -- the AMD output of a job: the relocatable object
 * LLVM emitted, linked by `ld.lld -shared` (the ld.lld of this LLVM's major,
 * which libgpucc names, or the same LLD linked into the worker:
 * lib/backend_llvm/lld_link.h) into a code object whose metadata
 * note gives kernels and resources, and whose target ID must be the job's.
 */
#include "compile_state.h"
#include "lld_link.h"

#include <llvm-c/Core.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A backstop behind check_function_targets: the code object's own target
 * ID (its metadata note's amdhsa.target) must be the job's, processor and
 * sramecc/xnack as the job asks ("any" stays unwritten).  LLVM narrows an
 * "any" to the setting of the first function that has one, which would
 * put code built for xnack+ under a label that also loads it on xnack-. */
static int check_code_object_target(compile *c, const char *target)
{
	char want[160];
	snprintf(want, sizeof want, "%s--%s", c->job->triple, c->job->target_name);
	if (strcmp(target, want) == 0)
		return 0;
	if (!*target)
		return fail(c, GPUCC_ECOMPILE, "the code object records no target ID (expected %s)",
		            c->job->target_name);
	const char *id = strstr(target, "--");
	return fail(c, GPUCC_ECOMPILE,
	            "the code object's target ID is '%s', not %s: a function's \"target-features\" "
	            "set xnack or sramecc where the target leaves them open (compile for that target "
	            "ID, or drop the setting)",
	            id ? id + 2 : target, c->job->target_name);
}

int finish_amdgpu(compile *c, LLVMMemoryBufferRef buffer)
{
	char object[PATH_MAX + 80], hsaco[PATH_MAX + 80], log[PATH_MAX + 80];
	snprintf(object, sizeof object, "%s.o", c->path_base);
	snprintf(hsaco, sizeof hsaco, "%s.hsaco", c->path_base);
	snprintf(log, sizeof log, "%s.lld.log", c->path_base);
	if (!c->job->ld_lld) {
		unsigned major, minor, patch;
		LLVMGetVersion(&major, &minor, &patch);
		return fail(c, GPUCC_EUNAVAILABLE, "ld.lld-%u was not found: it links AMDGPU code objects",
		            major);
	}
	if (backend_file_write(object, LLVMGetBufferStart(buffer), LLVMGetBufferSize(buffer)) != 0)
		return fail(c, GPUCC_ERROR, "cannot write '%s': %s", object, strerror(errno));
	/* One thread: a tiny link, and no thread pool left in the worker. */
	char *argv[] = {(char *)c->job->ld_lld, (char *)"-shared", (char *)"-o", hsaco, object,
	                (char *)"--threads=1", NULL};
	void *output = NULL;
	size_t output_size = 0;
	int status = -1;
	if (c->job->ld_lld_in_process) {
		/* The same link in this process; -1: LLD cannot, run ld.lld. */
		char messages[8192];
		status = backend_lld_link((const char *const *)argv, sizeof argv / sizeof *argv - 1,
		                          messages, sizeof messages);
		if (status >= 0 && (output = strdup(messages)) != NULL)
			output_size = strlen(messages);
	}
	if (status < 0) {
		if ((status = backend_run_tool(argv, log)) < 0)
			return fail(c, GPUCC_EUNAVAILABLE, "cannot run '%s': %s", c->job->ld_lld,
			            strerror(errno));
		if (backend_file_read(log, &output, &output_size) != 0) {
			output = NULL;
			output_size = 0;
		}
	}
	if (output_size) {
		char prefix[512];
		snprintf(prefix, sizeof prefix, "%s: %s: ", c->job->module_name, c->job->target_name);
		backend_text_append_lines(&c->thread->diagnostics, prefix, output, output_size);
	}
	if (status != 0) {
		char line[400];
		first_error_line(output ? output : "", line, sizeof line);
		free(output);
		return fail(c, GPUCC_ECOMPILE, "ld.lld failed (exit %d): %s", status, line);
	}
	free(output);
	void *code_object;
	size_t code_object_size;
	if (backend_file_read(hsaco, &code_object, &code_object_size) != 0)
		return fail(c, GPUCC_ERROR, "ld.lld left no code object: %s", strerror(errno));
	c->out->payloads[GPUCC_PART_HSACO] = code_object;
	c->out->payload_sizes[GPUCC_PART_HSACO] = code_object_size;
	char target[128], why[256];
	if (backend_amdgpu_kernels(code_object, code_object_size, &c->out->kernels,
	                           &c->out->kernel_count, target, sizeof target, why, sizeof why) != 0)
		return fail(c, GPUCC_ECOMPILE, "%s", why);
	int rc = check_code_object_target(c, target);
	if (rc != 0)
		return rc;
	if (c->out->kernel_count == 0)
		return fail(c, GPUCC_ECOMPILE, "no kernels: the code object lists none");
	return 0;
}
