/*
 * lib/backend_llvm/compile_state.c -- what every stage of one compile
 * (lib/backend_llvm/compile_state.h) uses: the failure it records, the names
 * the module defines and of its values, function attributes, the job's PTX
 * ISA, the faults a test asks for, and the first error line of a tool's
 * output.
 */
#include "compile_state.h"

#include <llvm-c/Core.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Record the failure: "MODULE: TARGET: <message>", C++ symbol names in the
 * message demangled (LLVM's and the tools' words quote them mangled). */
int fail(compile *c, int code, const char *fmt, ...)
{
	backend_text said = {0};
	va_list ap;
	va_start(ap, fmt);
	backend_text_appendv(&said, fmt, ap);
	va_end(ap);
	char *raw = backend_text_take(&said);
	char *plain = raw ? backend_demangle_names(raw) : NULL;
	backend_text text = {0};
	backend_text_append(&text, "%s: %s: %s", c->job->module_name, c->job->target_name,
	                    plain ? plain : raw ? raw : "out of memory");
	free(plain);
	free(raw);
	free(c->out->message);
	/* One line all the same: libgpucc spells control characters (job_fail,
	 * lib/compile/compile_results.c). */
	c->out->message = backend_text_take(&text);
	c->out->code = code;
	return code;
}

int oom(compile *c)
{
	return fail(c, GPUCC_ERROR, "out of memory");
}

int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

bool is_defined_by_module(const compile *c, const char *name)
{
	return bsearch(&name, c->defined, c->defined_count, sizeof *c->defined, compare_names) != NULL;
}

bool has_prefix(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);
	return strlen(s) >= n && memcmp(s, prefix, n) == 0;
}

const char *value_name(LLVMValueRef v)
{
	size_t len;
	const char *name = LLVMGetValueName2(v, &len);
	return name ? name : "";
}

/* The value of a function attribute such as "target-cpu", or NULL. */
const char *function_attribute(LLVMValueRef f, const char *key, unsigned *len)
{
	*len = 0;
	LLVMAttributeRef a =
		LLVMGetStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, key, (unsigned)strlen(key));
	return a ? LLVMGetStringAttributeValue(a, len) : NULL;
}

/* NVPTX: the job's PTX ISA ("+ptx78" -> 78), which the PTX's .version
 * line comes from; 0 when the features name none. */
unsigned job_ptx_isa(const gpucc_backend_job *job)
{
	unsigned isa = 0;
	return sscanf(job->features, "+ptx%u", &isa) == 1 ? isa : 0;
}

void add_string_attribute(compile *c, LLVMValueRef f, const char *key, const char *value)
{
	LLVMAttributeRef a = LLVMCreateStringAttribute(c->thread->context, key, (unsigned)strlen(key),
	                                               value, (unsigned)strlen(value));
	LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, a);
}

/* Whether the test hook asks for fault `where` in this job
 * (GPUCC_BACKEND_FAULT_ENV, which the worker is given on its command
 * line); never in a build without the hooks. */
bool fault_asked(const gpucc_backend_job *job, const char *where)
{
#ifdef GPUCC_TEST_HOOKS
	const char *fault = backend_fault_hook();
	size_t n = strlen(where);
	return fault && strncmp(fault, where, n) == 0 && fault[n] == ':' && fault[n + 1] &&
	       strstr(job->module_name, fault + n + 1);
#else
	(void)job;
	(void)where;
	return false;
#endif
}

void fault_injection(const gpucc_backend_job *job, const char *where)
{
#ifdef GPUCC_TEST_HOOKS
	if (!fault_asked(job, where))
		return;
	if (strcmp(where, "exit") == 0)
		_exit(3);
	abort();
#else
	(void)job;
	(void)where;
#endif
}

/* A line on stderr, whole (GPUCC_BACKEND_IN_NVJITLINK). */
void mark(const char *line)
{
	char text[128];
	int n = snprintf(text, sizeof text, "%s\n", line);
	ssize_t ignored = write(STDERR_FILENO, text, (size_t)n);
	(void)ignored;
}

/* The first line of a tool's output that mentions "error", else its first
 * line. */
void first_error_line(const char *output, char *line, size_t size)
{
	const char *pick = output;
	for (const char *p = output; *p;) {
		size_t len = strcspn(p, "\n");
		const char *hit = strstr(p, "error");
		if (hit && hit < p + len) {
			pick = p;
			break;
		}
		p += len + (p[len] ? 1 : 0);
	}
	snprintf(line, size, "%.*s", (int)strcspn(pick, "\n"), pick);
}
