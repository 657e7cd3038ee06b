/*
 * lib/backend_llvm/lld_none.c -- backend_lld_link where LLD is not linked
 * in (lib/backend_llvm/lld_link.h): always the ld.lld process.
 */
#include "lld_link.h"

int backend_lld_link(const char *const *argv, size_t argc, char *log, size_t log_size)
{
	(void)argv;
	(void)argc;
	(void)log;
	(void)log_size;
	return -1;
}
