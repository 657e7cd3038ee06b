/* lib/tests/lsan_globals.c -- linked into the programs the test suite runs
 * thousands of times (gpucc, gpucc-compile-worker), in a build with
 * AddressSanitizer only (meson.build); no other build has it.
 *
 * At every exit, LeakSanitizer scans the writable globals of each loaded
 * module for pointers into the heap, the sanitizer runtime's own among
 * them: gcc's libasan has ~5.5 MiB of .bss (its stack depot's table alone
 * is 4.4 MiB), nearly all of it never written.  Read for the first time by
 * that scan, it faults in one page at a time: ~1,400 faults, which on a
 * virtual machine, where a fault costs ~10 us, were a third of what a short
 * ASan process costs over an uninstrumented one.  At start-up, this asks
 * the kernel to back that .bss with huge pages (MADV_COLLAPSE: no sysfs
 * setting needed, unless transparent huge pages are off) and to populate
 * what lies outside them in one call: `gpucc list` under ASan takes 40 ms
 * of CPU before, 28 ms after.  The scan reads the same memory as before;
 * only its faults are gone.
 *
 * Each call may fail (a kernel before 6.1, huge pages off, another
 * architecture's page sizes) and is then without effect; a sanitizer
 * runtime linked statically (clang's) is not a module of its own and is
 * left alone. */
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25 /* Linux 6.1 */
#endif

#define HUGE_PAGE ((uintptr_t)2 << 20)

static uintptr_t align_down(uintptr_t at, uintptr_t to)
{
	return at & ~(to - 1);
}

static uintptr_t align_up(uintptr_t at, uintptr_t to)
{
	return align_down(at + to - 1, to);
}

/* The anonymous, zero-filled part of libasan's writable segment (past the
 * file's bytes), as huge pages where they fit, the rest populated. */
static int populate_asan_bss(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	if (!strstr(info->dlpi_name, "/libasan.so"))
		return 0;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W) || ph->p_memsz <= ph->p_filesz)
			continue;
		uintptr_t from = align_up(info->dlpi_addr + ph->p_vaddr + ph->p_filesz, page);
		uintptr_t to = align_up(info->dlpi_addr + ph->p_vaddr + ph->p_memsz, page);
		uintptr_t huge_from = align_up(from, HUGE_PAGE), huge_to = align_down(to, HUGE_PAGE);
		if (huge_to > huge_from)
			(void)madvise((void *)huge_from, huge_to - huge_from, MADV_COLLAPSE);
		if (to > from)
			(void)madvise((void *)from, to - from, MADV_POPULATE_WRITE);
	}
	return 1;
}

__attribute__((constructor)) static void populate_sanitizer_globals(void)
{
	dl_iterate_phdr(populate_asan_bss, NULL);
}
