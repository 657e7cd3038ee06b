/*
 * lib/backend_llvm/nvidia.c -- the NVIDIA output of a job: the PTX LLVM
 * emitted, checked, and its cubin made by ptxas (`ptxas -arch=sm_XY -v`,
 * whole program: per-kernel resources from its -v lines) or by libnvJitLink
 * (lib/backend_llvm/nvjitlink.c), which falls back to ptxas for a target it
 * does not know.
 */
#include "compile_state.h"

#include <llvm-c/Core.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether ptxas's first error says it does not know the processor (CUDA 13
 * has no sm_50..sm_72: "Value 'sm_70' is not defined for option
 * 'gpu-name'") or the PTX ISA ("Unsupported .version 8.5; current version
 * is '8.4'"): what another CUDA's ptxas compiles, not a defect of the PTX. */
static bool ptxas_lacks_target(const char *line)
{
	return (strstr(line, "is not defined for option 'gpu-name'") != NULL) ||
	       (strstr(line, "Unsupported .version") != NULL);
}

/* ptxas: record what it says (less the -v "info" lines) as diagnostics,
 * resources per kernel, and the cubin. */
static int run_ptxas(compile *c, const char *ptx, size_t ptx_size)
{
	char in[PATH_MAX + 80], out_path[PATH_MAX + 80], log[PATH_MAX + 80], arch[32];
	snprintf(in, sizeof in, "%s.ptx", c->path_base);
	snprintf(out_path, sizeof out_path, "%s.cubin", c->path_base);
	snprintf(log, sizeof log, "%s.ptxas.log", c->path_base);
	snprintf(arch, sizeof arch, "-arch=%s", c->job->cpu); /* "sm_90a", "sm_100f" */
	if (backend_file_write(in, ptx, ptx_size) != 0)
		return fail(c, GPUCC_ERROR, "cannot write '%s': %s", in, strerror(errno));
	char *argv[12];
	int n = 0;
	argv[n++] = (char *)c->job->ptxas;
	argv[n++] = arch;
	argv[n++] = (char *)"-v";
	/* Whole-program mode, whatever the externals: the cubin is what the PTX
	 * JIT would make of the same PTX, an executable image the driver loads
	 * (binding its system calls) with cuModuleLoadData.  ptxas -c would give
	 * a relocatable one, which only cuLink* loads. */
	if (c->job->debug_info)
		argv[n++] = (char *)"-lineinfo";
	argv[n++] = (char *)"-o";
	argv[n++] = out_path;
	argv[n++] = in;
	argv[n] = NULL;
	int status = backend_run_tool(argv, log);
	if (status < 0)
		return fail(c, GPUCC_EUNAVAILABLE, "cannot run '%s': %s", c->job->ptxas, strerror(errno));
	void *output = NULL;
	size_t output_size = 0;
	if (backend_file_read(log, &output, &output_size) != 0)
		output = NULL;
	char prefix[512];
	snprintf(prefix, sizeof prefix, "%s: %s: ", c->job->module_name, c->job->target_name);
	const char *text = output ? output : "";
	/* Keep warnings and errors; the info lines become resources. */
	for (const char *p = text; *p;) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len && strncmp(p, "ptxas info", 10) != 0 && (p[0] != ' ' || status != 0))
			backend_text_append(&c->thread->diagnostics, "%s%.*s\n", prefix, (int)len, p);
		p += len + (end ? 1 : 0);
	}
	if (status != 0) {
		char line[400];
		first_error_line(text, line, sizeof line);
		free(output);
		if (ptxas_lacks_target(line)) {
			/* Another CUDA's ptxas: the PTX is what the target needs, and
			 * the driver compiles it at load.  Said once, as a warning. */
			c->out->ptxas_refused = strdup(line);
			if (!c->out->ptxas_refused)
				return oom(c);
			backend_text_release(&c->thread->diagnostics);
			return 0;
		}
		return fail(c, GPUCC_ECOMPILE, "ptxas failed (exit %d): %s", status, line);
	}
	backend_ptxas_resources(text, c->out->kernels, c->out->kernel_count);
	free(output);
	void *cubin;
	size_t cubin_size;
	if (backend_file_read(out_path, &cubin, &cubin_size) != 0)
		return fail(c, GPUCC_ERROR, "ptxas left no cubin: %s", strerror(errno));
	c->out->payloads[GPUCC_PART_CUBIN] = cubin;
	c->out->payload_sizes[GPUCC_PART_CUBIN] = cubin_size;
	return 0;
}

/* libnvJitLink, in this process: its error log and the warnings of its
 * info log as diagnostics, resources from its "ptxas info" lines, and the
 * cubin.
 * PTX that refers to what it does not define (a variable the loader is to
 * bind) goes to ptxas, whose whole-program cubin leaves that to the
 * loader, when there is one; a target it does not know gives PTX only, as
 * with ptxas. */
static int run_nvjitlink(compile *c, const char *ptx, size_t ptx_size)
{
	backend_nvjitlink_result r;
	mark(GPUCC_BACKEND_IN_NVJITLINK);
	fault_injection(c->job, "nvjitlink");
	backend_nvjitlink_status status = backend_nvjitlink_cubin(c->job, ptx, ptx_size, &r);
	mark(GPUCC_BACKEND_OUT_OF_NVJITLINK);
	char prefix[512];
	snprintf(prefix, sizeof prefix, "%s: %s: ", c->job->module_name, c->job->target_name);
	bool to_ptxas = status == BACKEND_NVJITLINK_UNDEFINED && c->job->ptxas;
	for (int info = to_ptxas ? 1 : 0; info < 2; info++) {
		for (const char *p = info ? (r.info ? r.info : "") : (r.log ? r.log : ""); *p;) {
			size_t len = strcspn(p, "\n");
			if (len && (!info || memmem(p, len, "warning", 7)))
				backend_text_append(&c->thread->diagnostics, "%snvJitLink: %.*s\n", prefix,
				                    (int)len, p);
			p += len + (p[len] ? 1 : 0);
		}
	}
	int rc = 0;
	switch (status) {
	case BACKEND_NVJITLINK_OK:
		backend_ptxas_resources(r.info ? r.info : "", c->out->kernels, c->out->kernel_count);
		c->out->payloads[GPUCC_PART_CUBIN] = r.cubin;
		c->out->payload_sizes[GPUCC_PART_CUBIN] = r.cubin_size;
		r.cubin = NULL;
		break;
	case BACKEND_NVJITLINK_REFUSED:
		backend_text_release(&c->thread->diagnostics);
		if (!(c->out->ptxas_refused = strdup(r.line)))
			rc = oom(c);
		break;
	case BACKEND_NVJITLINK_UNDEFINED:
		if (to_ptxas) {
			backend_text_append(&c->thread->diagnostics,
			                    "%snvJitLink: %s: the cubin is ptxas's, which leaves what the "
			                    "PTX does not define to the loader\n", prefix, r.line);
			rc = run_ptxas(c, ptx, ptx_size);
			break;
		}
		rc = fail(c, GPUCC_ECOMPILE, "nvJitLink failed: %s", r.line);
		break;
	case BACKEND_NVJITLINK_FAILED:
		rc = fail(c, GPUCC_ECOMPILE, "nvJitLink failed: %s", r.line);
		break;
	case BACKEND_NVJITLINK_UNAVAILABLE:
		rc = fail(c, GPUCC_EUNAVAILABLE, "nvJitLink: %s", r.line);
		break;
	}
	backend_nvjitlink_result_release(&r);
	return rc;
}

/* With full debug info LLVM 19 writes the DWARF name tables
 * (.debug_pubnames, .debug_pubtypes) as label differences, which ptxas
 * and the driver's JIT accept only from PTX ISA 7.5: refuse here, the same
 * with or without ptxas, rather than store PTX no GPU would load. */
static int check_debug_sections(compile *c, const char *ptx, size_t size)
{
	static const char pub[] = ".section\t.debug_pub";
	unsigned isa = job_ptx_isa(c->job);
	if (!c->job->debug_info || isa >= 75 || !memmem(ptx, size, pub, sizeof pub - 1))
		return 0;
	return fail(c, GPUCC_ECOMPILE,
	            "full debug info (-g) needs PTX ISA 7.5 or later, and the target asks for "
	            "%u.%u: LLVM writes its DWARF name tables as label differences, which ptxas and "
	            "the driver refuse before 7.5 (compile for %s:ptx75 or later, or give the "
	            "module line tables only)",
	            isa / 10, isa % 10, c->job->cpu);
}

int finish_nvptx(compile *c, LLVMMemoryBufferRef buffer)
{
	size_t size = 0;
	char *copy = backend_ptx_renumber_calls(LLVMGetBufferStart(buffer), LLVMGetBufferSize(buffer),
	                                        &size);
	if (!copy)
		return oom(c);
	c->out->payloads[GPUCC_PART_PTX] = copy;
	c->out->payload_sizes[GPUCC_PART_PTX] = size;
	if (backend_ptx_entries(copy, size, &c->out->kernels, &c->out->kernel_count) != 0)
		return oom(c);
	if (c->out->kernel_count == 0)
		return fail(c, GPUCC_ECOMPILE, "no kernels: the PTX has no .entry");
	int rc = check_debug_sections(c, copy, size);
	if (rc != 0)
		return rc;
	if (c->job->nvjitlink)
		return run_nvjitlink(c, copy, size);
	if (c->job->ptxas)
		return run_ptxas(c, copy, size);
	return 0;
}
