/*
 * lib/image/code_object.c -- is a cubin or an AMD code object one a GPU runtime
 * loads?  Checked where an image is made from files another tool wrote
 * (`gpucc pack`), so that the usual slips fail the package's build rather
 * than its users' start-up: a relocatable cubin (`ptxas -c`, `nvcc -rdc`),
 * which the CUDA driver refuses (CUDA_ERROR_INVALID_IMAGE), an AMDGPU object
 * not yet linked by `ld.lld -shared`, or the two swapped.
 */
#include "errors.h"

#include "gpucc/image.h"

#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

int gpucc_code_object_check(gpucc_part part, int fd, const char *name)
{
	GPUCC_REQUIRE(name);
	if (part != GPUCC_PART_CUBIN && part != GPUCC_PART_HSACO)
		return 0;
	unsigned char h[20]; /* e_ident, e_type and e_machine */
	ssize_t n = pread(fd, h, sizeof h, 0);
	if (n < 0)
		return gpucc_error_set_errno("cannot read '%s'", name);
	if ((size_t)n < sizeof h || memcmp(h, ELFMAG, SELFMAG) != 0)
		return 0; /* not an ELF: a fatbin, test data, taken as given */
	bool cubin = part == GPUCC_PART_CUBIN;
	unsigned type = h[16] | (unsigned)h[17] << 8, machine = h[18] | (unsigned)h[19] << 8;
	const char *what = cubin ? "a cubin" : "an AMDGPU code object";
	if (h[EI_CLASS] != ELFCLASS64 || h[EI_DATA] != ELFDATA2LSB)
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s' is not %s: a %s-bit %s-endian ELF", name, what,
		                       h[EI_CLASS] == ELFCLASS32 ? "32" : "64",
		                       h[EI_DATA] == ELFDATA2MSB ? "big" : "little");
	const char *known = machine == EM_CUDA     ? " (CUDA: a cubin)"
	                    : machine == EM_AMDGPU ? " (AMDGPU: an hsaco)"
	                                           : "";
	if (machine != (cubin ? EM_CUDA : EM_AMDGPU))
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s' is not %s: an ELF for machine %u%s", name, what,
		                       machine, known);
	if (cubin && type != ET_EXEC)
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "'%s' is a %s cubin, which the CUDA driver does not load: give the "
		                       "executable one (ptxas without -c, or linked by nvlink)",
		                       name, type == ET_REL ? "relocatable" : "non-executable");
	if (!cubin && type != ET_DYN)
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "'%s' is %s AMDGPU ELF, which HIP does not load: give the code "
		                       "object (linked by ld.lld -shared)",
		                       name, type == ET_REL ? "a relocatable" : "a non-shared");
	return 0;
}
