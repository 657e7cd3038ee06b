/*
 * lib/backend_llvm/lld_link.cpp -- backend_lld_link through LLD's library
 * entry point (lld/Common/Driver.h), ELF driver only: the same code as the
 * ld.lld-N of the worker's own LLVM build, so the same bytes (libgpucc
 * chooses it only for that ld.lld: lib/compile/compile_toolchain.c).  One link at a time per process (a worker runs one job at a
 * time); LLD says when a link left it unable to run again.
 */
#include "lld_link.h"

#include "lld/Common/Driver.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <string>
#include <vector>

LLD_HAS_DRIVER(elf)

static bool lld_spent; /* a link left LLD unable to run again */

int backend_lld_link(const char *const *argv, size_t argc, char *log, size_t log_size)
{
	if (lld_spent)
		return -1;
	std::vector<const char *> args(argv, argv + argc);
	std::string messages;
	llvm::raw_string_ostream out(messages);
	lld::Result r = lld::lldMain(args, out, out, {{lld::Gnu, &lld::elf::link}});
	out.flush();
	if (!r.canRunAgain)
		lld_spent = true;
	if (log_size) {
		size_t n = messages.size() < log_size - 1 ? messages.size() : log_size - 1;
		std::memcpy(log, messages.data(), n);
		log[n] = '\0';
	}
	return r.retCode;
}
