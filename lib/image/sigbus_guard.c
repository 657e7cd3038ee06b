/*
 * lib/image/sigbus_guard.c -- reading a mapping of a file that may be cut short
 * meanwhile (lib/image/sigbus_guard.h).
 *
 * Nothing is installed until the program turns guards on: until then every
 * guard is refused.  Guards live in a fixed table of slots that the SIGBUS handler reads
 * without locks (atomics only, as a handler may); taking and giving back a
 * slot, and installing and restoring the handler, happen under a mutex.
 * The handler runs on the thread whose access faulted, so a fault inside a
 * guarded range always finds that range's slot filled.  It replaces the
 * vanished page with the raw mmap system call, which sanitizer runtimes do
 * not intercept and which is safe in a signal handler.
 */
#include "sigbus_guard.h"

#include "gpucc/image.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Guards held at once, by all threads together: beyond this, readers
 * read the file into memory instead. */
#define SLOTS 64

typedef struct guard_slot {
	atomic_uintptr_t start; /* 0: free */
	atomic_uintptr_t end;
	atomic_bool faulted;
} guard_slot;

static guard_slot slots[SLOTS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Under lock: guards held, and the disposition of SIGBUS before ours was
 * installed (valid while guards > 0; the handler reads it). */
static size_t guards;
static struct sigaction previous;
static atomic_uintptr_t page_size;
/* Set by gpucc_image_set_sigbus_guard: whether guards may be had at all. */
static atomic_bool enabled;

void gpucc_image_set_sigbus_guard(bool enable)
{
	atomic_store(&enabled, enable);
}

bool gpucc_sigbus_guard_enabled(void)
{
	return atomic_load(&enabled);
}

/* A SIGBUS outside every guard: what would have happened without ours. */
static void pass_on(int sig, siginfo_t *info, void *context)
{
	if (previous.sa_flags & SA_SIGINFO) {
		previous.sa_sigaction(sig, info, context);
		return;
	}
	if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
		previous.sa_handler(sig);
		return;
	}
	if (previous.sa_handler == SIG_IGN && info->si_code <= 0)
		return; /* sent by a process, and ignored before us */
	/* The default action (a SIGBUS from a fault cannot be ignored): put
	 * it back and raise the signal again, which ends the process once
	 * this handler returns (as the faulting access, made again, would). */
	struct sigaction fallback;
	memset(&fallback, 0, sizeof fallback);
	fallback.sa_handler = SIG_DFL;
	sigemptyset(&fallback.sa_mask);
	sigaction(SIGBUS, &fallback, NULL);
	raise(sig);
}

static void on_sigbus(int sig, siginfo_t *info, void *context)
{
	int saved_errno = errno;
	uintptr_t at = (uintptr_t)info->si_addr, page = atomic_load(&page_size);
	/* Only a fault has an address (si_code > 0); a SIGBUS sent by a
	 * process (kill, sigqueue) is never a guard's. */
	for (size_t i = 0; info->si_code > 0 && i < SLOTS; i++) {
		uintptr_t start = atomic_load(&slots[i].start), end = atomic_load(&slots[i].end);
		if (start == 0 || at < start || at >= end)
			continue;
		uintptr_t base = at - at % page;
		long m = syscall(SYS_mmap, base, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		                 -1, 0);
		if (m == (long)base) {
			atomic_store(&slots[i].faulted, true);
			errno = saved_errno;
			return; /* the access is made again, and reads zeros */
		}
		break;
	}
	errno = saved_errno;
	pass_on(sig, info, context);
}

int gpucc_sigbus_guard_begin(gpucc_sigbus_guard *g, const void *start, size_t size)
{
	if (!atomic_load(&enabled))
		return -1;
	pthread_mutex_lock(&lock);
	size_t i = 0;
	while (i < SLOTS && atomic_load(&slots[i].start) != 0)
		i++;
	if (i == SLOTS) {
		pthread_mutex_unlock(&lock);
		return -1;
	}
	if (guards == 0) {
		long page = sysconf(_SC_PAGESIZE);
		atomic_store(&page_size, (uintptr_t)(page > 0 ? page : 4096));
		struct sigaction ours;
		memset(&ours, 0, sizeof ours);
		ours.sa_sigaction = on_sigbus;
		ours.sa_flags = SA_SIGINFO | SA_RESTART;
		sigemptyset(&ours.sa_mask);
		if (sigaction(SIGBUS, &ours, &previous) != 0) {
			pthread_mutex_unlock(&lock);
			return -1;
		}
	}
	guards++;
	atomic_store(&slots[i].faulted, false);
	atomic_store(&slots[i].end, (uintptr_t)start + size);
	atomic_store(&slots[i].start, (uintptr_t)start);
	g->slot = i;
	pthread_mutex_unlock(&lock);
	return 0;
}

bool gpucc_sigbus_guard_end(gpucc_sigbus_guard *g)
{
	guard_slot *s = &slots[g->slot];
	bool faulted = atomic_load(&s->faulted);
	pthread_mutex_lock(&lock);
	atomic_store(&s->start, 0);
	atomic_store(&s->end, 0);
	if (--guards == 0) {
		/* Put back what was there, unless someone has replaced ours
		 * meanwhile: theirs stays. */
		struct sigaction now;
		if (sigaction(SIGBUS, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) &&
		    now.sa_sigaction == on_sigbus)
			sigaction(SIGBUS, &previous, NULL);
	}
	pthread_mutex_unlock(&lock);
	return faulted;
}
