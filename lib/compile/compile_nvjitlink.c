/*
 * lib/compile/compile_nvjitlink.c -- finding the CUDA toolkit's libnvJitLink, which
 * makes cubins in the compile workers (lib/backend_llvm/nvjitlink.c), and
 * telling its version without loading it: a compile whose every key hits,
 * and every command that does not compile, must not pay for loading ~100 MB
 * of library.  The library carries the toolkit's banner ("Cuda compilation
 * tools, release 13.0, V13.0.88") as ptxas prints it; nvJitLinkVersion()
 * would say only "13.0", and only once loaded.
 */
#include "compile_impl.h"
#include "config_internal.h"

#include "errors.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The toolkit banner, as `ptxas --version` prints it. */
static const char banner[] = "Cuda compilation tools, release ";

static char *regular_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) ? strdup(path) : NULL;
}

/* dir/lib64/libnvJitLink.so, else the highest dir/lib64/libnvJitLink.so.N
 * (a runtime-only install has no unversioned link). */
static char *in_toolkit(const char *dir)
{
	if (!dir || !*dir)
		return NULL;
	char path[4096];
	snprintf(path, sizeof path, "%s/lib64/libnvJitLink.so", dir);
	char *found = regular_file(path);
	if (found)
		return found;
	snprintf(path, sizeof path, "%s/lib64/libnvJitLink.so.[0-9]*", dir);
	glob_t g;
	if (glob(path, 0, NULL, &g) == 0 && g.gl_pathc > 0)
		found = regular_file(g.gl_pathv[g.gl_pathc - 1]);
	globfree(&g);
	return found;
}

char *gpucc_nvjitlink_find(const char *override_path)
{
	if (override_path) /* a named library, or none: never another */
		return *override_path ? regular_file(override_path) : NULL;
	char *found = in_toolkit(gpucc_config_current()->cuda_path);
	return found ? found : in_toolkit("/usr/local/cuda");
}

/* Where .rodata lies in a mapped 64-bit ELF file (the banner is there,
 * ~10 MB into ~100 MB), via its section headers; false when the file is
 * not such an ELF or has none (then the whole file is searched). */
static bool rodata_of(const unsigned char *bytes, size_t length, size_t *offset, size_t *size)
{
	Elf64_Ehdr eh;
	if (length < sizeof eh || memcmp(bytes, ELFMAG, SELFMAG) != 0 || bytes[EI_CLASS] != ELFCLASS64)
		return false;
	memcpy(&eh, bytes, sizeof eh);
	if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shstrndx >= eh.e_shnum ||
	    eh.e_shoff > length || (length - eh.e_shoff) / sizeof(Elf64_Shdr) < eh.e_shnum)
		return false;
	Elf64_Shdr names;
	memcpy(&names, bytes + eh.e_shoff + (size_t)eh.e_shstrndx * sizeof names, sizeof names);
	if (names.sh_offset > length || names.sh_size > length - names.sh_offset)
		return false;
	for (size_t i = 0; i < eh.e_shnum; i++) {
		Elf64_Shdr sh;
		memcpy(&sh, bytes + eh.e_shoff + i * sizeof sh, sizeof sh);
		if (sh.sh_name >= names.sh_size || names.sh_size - sh.sh_name < sizeof ".rodata" ||
		    memcmp(bytes + names.sh_offset + sh.sh_name, ".rodata", sizeof ".rodata") != 0)
			continue;
		if (sh.sh_type != SHT_PROGBITS || sh.sh_offset > length ||
		    sh.sh_size > length - sh.sh_offset)
			return false;
		*offset = (size_t)sh.sh_offset;
		*size = (size_t)sh.sh_size;
		return true;
	}
	return false;
}

/* The version in the first banner of bytes[0..length) whose line ends in
 * ", V" and a version, into out; false when there is none. */
static bool banner_version(const char *bytes, size_t length, char *out, size_t size)
{
	for (const char *p = bytes; p < bytes + length;) {
		const char *hit = memmem(p, length - (size_t)(p - bytes), banner, sizeof banner - 1);
		if (!hit)
			return false;
		const char *end = memchr(hit, '\0', length - (size_t)(hit - bytes));
		if (!end)
			return false;
		const char *v = memmem(hit, (size_t)(end - hit), ", V", 3);
		size_t n = v ? strspn(v + 3, "0123456789.") : 0;
		if (v && n && v + 3 + n == end && n < size && v[3] >= '0' && v[3] <= '9') {
			snprintf(out, size, "%.*s", (int)n, v + 3);
			return true;
		}
		p = end;
	}
	return false;
}

int gpucc_nvjitlink_scan_version(const char *path, char *out, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		int rc = gpucc_error_set_errno("cannot read '%s'", path);
		if (fd >= 0)
			close(fd);
		return rc;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof banner) {
		close(fd);
		return gpucc_error_set(GPUCC_EUNAVAILABLE, "'%s' is no libnvJitLink", path);
	}
	size_t length = (size_t)st.st_size;
	const char *bytes = mmap(NULL, length, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (bytes == MAP_FAILED)
		return gpucc_error_set_errno("cannot read '%s'", path);
	/* The banner's version: the digits and dots after ", V" on its line,
	 * looked for in .rodata, else in the whole file. */
	size_t at = 0, span = 0;
	bool found = rodata_of((const unsigned char *)bytes, length, &at, &span) &&
	             banner_version(bytes + at, span, out, size);
	if (!found)
		found = banner_version(bytes, length, out, size);
	munmap((void *)bytes, length);
	if (!found)
		return gpucc_error_set(GPUCC_EUNAVAILABLE,
		                       "'%s' names no version (no \"%s..., V...\" in it)", path, banner);
	return 0;
}
