/*
 * lib/backend_llvm/demangle.c -- C++ symbol names in the backend's messages,
 * as c++filt writes them.
 *
 * The demangler is the C++ runtime's __cxa_demangle, which every process
 * that runs LLVM has loaded (libLLVM needs libstdc++): it is looked up at
 * run time, not linked, so that this C module asks nothing more of the
 * system than LLVM does.  Where it is not there, names stay mangled.
 */
#include "backend_llvm.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*demangle_fn)(const char *mangled, char *buffer, size_t *length, int *status);

static demangle_fn demangler;
static pthread_once_t demangler_once = PTHREAD_ONCE_INIT;

static void find_demangler(void)
{
	void *symbol = dlsym(RTLD_DEFAULT, "__cxa_demangle");
	memcpy(&demangler, &symbol, sizeof demangler);
}

bool backend_can_demangle(void)
{
	pthread_once(&demangler_once, find_demangler);
	return demangler != NULL;
}

/* A byte of a symbol name as LLVM, ptxas and nvJitLink print them. */
static bool name_byte(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
	       c == '$' || c == '.';
}

char *backend_demangle_names(const char *text)
{
	backend_text out = {0};
	bool can = backend_can_demangle();
	for (const char *p = text; *p;) {
		bool starts = can && p[0] == '_' && p[1] == 'Z' && (p == text || !name_byte(p[-1]));
		if (!starts) {
			size_t run = 1;
			while (p[run] && !(p[run] == '_' && p[run + 1] == 'Z'))
				run++;
			backend_text_append(&out, "%.*s", (int)run, p);
			p += run;
			continue;
		}
		size_t len = 0;
		while (name_byte(p[len]))
			len++;
		/* A sentence's full stop is no part of the name. */
		while (len > 2 && p[len - 1] == '.')
			len--;
		char *name = strndup(p, len);
		int status = -1;
		char *plain = name ? demangler(name, NULL, NULL, &status) : NULL;
		if (status == 0 && plain)
			backend_text_append(&out, "%s", plain);
		else
			backend_text_append(&out, "%.*s", (int)len, p);
		free(plain);
		free(name);
		p += len;
	}
	char *result = backend_text_take(&out);
	return result ? result : strdup(text);
}
