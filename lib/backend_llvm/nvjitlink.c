/*
 * lib/backend_llvm/nvjitlink.c -- cubins from PTX in process, with the CUDA
 * toolkit's libnvJitLink, instead of one ptxas process per job.
 *
 * The library is loaded (lib/base/library_loader.h) the first time a job
 * asks for it and kept for the life of the process (a gpucc-compile-worker,
 * so that its crash is one job's failure): its loading costs about one ptxas process, a small PTX then a
 * fraction of one.  The load starts on a thread of its own when the first
 * NVIDIA job arrives (backend_nvjitlink_preload), while LLVM compiles it.
 * Only the handful of entry points used here are declared, by hand; the
 * library versions its symbols by release ("__nvJitLinkCreate_13_0"), so
 * their names are built from what nvJitLinkVersion() says.
 *
 * A PTX goes in alone, with -arch=sm_XY[a], -verbose (the "ptxas info"
 * lines give resources, as `ptxas -v` does), -lineinfo with debug info,
 * and -no-cache (libgpucc's cache is the one that counts; without it the
 * library answers a repeated PTX from its own and reports no resources).
 * The linked cubin is an executable image, as ptxas's whole-program one.
 * Plain C: nothing here uses LLVM or libgpucc (the loader is compiled in).
 */
#include "backend_llvm.h"
#include "library_loader.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* nvJitLinkResult codes this file tells apart (the others are failures). */
enum {
	NVJL_SUCCESS = 0,
	NVJL_ERROR_UNRECOGNIZED_ARCH = 16,
	NVJL_ERROR_UNSUPPORTED_ARCH = 17,
};
enum { NVJL_INPUT_PTX = 2 };

typedef struct nvjl_handle *nvjl_handle;
typedef int (*nvjl_version_fn)(unsigned *major, unsigned *minor);
typedef int (*nvjl_create_fn)(nvjl_handle *h, uint32_t count, const char *const *options);
typedef int (*nvjl_destroy_fn)(nvjl_handle *h);
typedef int (*nvjl_add_data_fn)(nvjl_handle h, int type, const void *data, size_t size,
                                const char *name);
typedef int (*nvjl_complete_fn)(nvjl_handle h);
typedef int (*nvjl_size_fn)(nvjl_handle h, size_t *size);
typedef int (*nvjl_copy_fn)(nvjl_handle h, void *out);

typedef struct nvjl_library {
	char *path;
	bool loaded;
	nvjl_create_fn create;
	nvjl_destroy_fn destroy;
	nvjl_add_data_fn add_data;
	nvjl_complete_fn complete;
	nvjl_size_fn cubin_size, error_log_size, info_log_size;
	nvjl_copy_fn cubin, error_log, info_log;
	char error[384]; /* why it did not load; "" when loaded */
} nvjl_library;

static pthread_mutex_t library_lock = PTHREAD_MUTEX_INITIALIZER;
static nvjl_library library;
static bool preload_started; /* under library_lock */
static bool preload_running;  /* under library_lock; preload_ended signals its end */
static pthread_cond_t preload_ended = PTHREAD_COND_INITIALIZER;

static gpucc_library loader = GPUCC_LIBRARY_INIT;

/* The library at path (ctx) into library's functions, through loader.  A
 * versioned function is "__nvJitLink<name>_<major>_<minor>", else the
 * major's ".0" one (a minor release that kept its predecessor's API). */
static int load(gpucc_library *lib, void *ctx)
{
	const char *path = ctx;
	nvjl_library *l = &library;
	const char *const names[] = {path, NULL};
	const char *why, *missing;
	if (gpucc_library_open(lib, names, 0, &why) != 0)
		return gpucc_library_fail(lib, 1, "cannot load '%s': %s", path, why ? why : "?");
	nvjl_version_fn version = NULL;
	const gpucc_library_symbol version_symbol[] = {
		{"nvJitLinkVersion", &version, NULL, false},
		{NULL, NULL, NULL, false},
	};
	unsigned major = 0, minor = 0;
	if (gpucc_library_resolve(lib, version_symbol, &missing) != 0 ||
	    version(&major, &minor) != NVJL_SUCCESS)
		return gpucc_library_fail(lib, 1, "'%s' has no nvJitLinkVersion()", path);
	const struct {
		const char *name;
		void *slot;
	} functions[] = {
		{"Create", &l->create},
		{"Destroy", &l->destroy},
		{"AddData", &l->add_data},
		{"Complete", &l->complete},
		{"GetLinkedCubinSize", &l->cubin_size},
		{"GetLinkedCubin", &l->cubin},
		{"GetErrorLogSize", &l->error_log_size},
		{"GetErrorLog", &l->error_log},
		{"GetInfoLogSize", &l->info_log_size},
		{"GetInfoLog", &l->info_log},
	};
	enum { COUNT = sizeof functions / sizeof functions[0] };
	char versioned[COUNT][2][96];
	gpucc_library_symbol symbols[COUNT + 1];
	for (size_t i = 0; i < COUNT; i++) {
		snprintf(versioned[i][0], sizeof versioned[i][0], "__nvJitLink%s_%u_%u",
		         functions[i].name, major, minor);
		snprintf(versioned[i][1], sizeof versioned[i][1], "__nvJitLink%s_%u_0",
		         functions[i].name, major);
		symbols[i] = (gpucc_library_symbol){versioned[i][0], functions[i].slot, versioned[i][1],
		                                    false};
	}
	symbols[COUNT] = (gpucc_library_symbol){NULL, NULL, NULL, false};
	if (gpucc_library_resolve(lib, symbols, &missing) != 0)
		return gpucc_library_fail(lib, 1,
		                          "'%s' (nvJitLink %u.%u) lacks the functions of nvJitLink %u.%u",
		                          path, major, minor, major, minor);
	return 0;
}

/* Load path once per process (under library_lock).  A path other than the
 * loaded one (a caller that changed its mind) is refused. */
static bool library_load(const char *path)
{
	nvjl_library *l = &library;
	if (l->path)
		return strcmp(l->path, path) == 0 ? l->loaded : false;
	l->path = strdup(path);
	if (!l->path) {
		snprintf(l->error, sizeof l->error, "out of memory");
		return false;
	}
	l->loaded = gpucc_library_load(&loader, load, l->path) == 0;
	if (!l->loaded)
		snprintf(l->error, sizeof l->error, "%s", gpucc_library_error(&loader));
	return l->loaded;
}

/* Append one of the handle's logs to text. */
static void append_log(backend_text *text, nvjl_handle h, nvjl_size_fn size_of, nvjl_copy_fn copy)
{
	size_t size = 0;
	if (!h || size_of(h, &size) != NVJL_SUCCESS || size <= 1)
		return;
	char *log = calloc(1, size + 1);
	if (!log) {
		text->failed = true;
		return;
	}
	if (copy(h, log) == NVJL_SUCCESS)
		backend_text_append(text, "%s%s", log, log[strlen(log) - 1] == '\n' ? "" : "\n");
	free(log);
}

static void preload_end(void)
{
	pthread_mutex_lock(&library_lock);
	preload_running = false;
	pthread_cond_broadcast(&preload_ended);
	pthread_mutex_unlock(&library_lock);
}

static void *preload_main(void *path)
{
	pthread_mutex_lock(&library_lock);
	library_load(path);
	pthread_mutex_unlock(&library_lock);
	free(path);
	preload_end();
	return NULL;
}

void backend_nvjitlink_preload(const char *path)
{
	pthread_mutex_lock(&library_lock);
	bool start = !preload_started && !library.path;
	preload_started = true;
	preload_running = start;
	pthread_mutex_unlock(&library_lock);
	if (!start)
		return;
	char *copy = strdup(path);
	pthread_attr_t attr;
	pthread_t thread;
	bool attr_made = copy && pthread_attr_init(&attr) == 0;
	bool started = attr_made && pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0 &&
	               pthread_create(&thread, &attr, preload_main, copy) == 0;
	if (attr_made)
		pthread_attr_destroy(&attr);
	if (!started) { /* the first job loads it itself */
		free(copy);
		preload_end();
	}
}

void backend_nvjitlink_settle(void)
{
	pthread_mutex_lock(&library_lock);
	while (preload_running)
		pthread_cond_wait(&preload_ended, &library_lock);
	pthread_mutex_unlock(&library_lock);
}

void backend_nvjitlink_result_release(backend_nvjitlink_result *r)
{
	free(r->cubin);
	free(r->log);
	free(r->info);
	memset(r, 0, sizeof *r);
}

backend_nvjitlink_status backend_nvjitlink_cubin(const gpucc_backend_job *job, const char *ptx,
                                                 size_t ptx_size, backend_nvjitlink_result *out)
{
	memset(out, 0, sizeof *out);
	pthread_mutex_lock(&library_lock);
	bool loaded = library_load(job->nvjitlink);
	if (!loaded)
		snprintf(out->line, sizeof out->line, "%s",
		         library.path && strcmp(library.path, job->nvjitlink) != 0
		                 ? "another libnvJitLink is loaded in this process"
		                 : library.error);
	pthread_mutex_unlock(&library_lock);
	if (!loaded)
		return BACKEND_NVJITLINK_UNAVAILABLE;
	const nvjl_library *l = &library;

	char arch[32];
	snprintf(arch, sizeof arch, "-arch=%s", job->cpu); /* "sm_90a", "sm_100f" */
	const char *options[4] = {arch, "-verbose", "-no-cache", "-lineinfo"};
	uint32_t option_count = job->debug_info ? 4 : 3;
	backend_text log = {0}, info = {0};
	backend_nvjitlink_status status = BACKEND_NVJITLINK_FAILED;
	nvjl_handle h = NULL;
	int rc = l->create(&h, option_count, options);
	if (rc == NVJL_ERROR_UNRECOGNIZED_ARCH || rc == NVJL_ERROR_UNSUPPORTED_ARCH) {
		snprintf(out->line, sizeof out->line, "-arch=%s: %s architecture", arch + 6,
		         rc == NVJL_ERROR_UNSUPPORTED_ARCH ? "unsupported" : "unrecognized");
		status = BACKEND_NVJITLINK_REFUSED;
		goto done;
	}
	if (rc != NVJL_SUCCESS) {
		append_log(&log, h, l->error_log_size, l->error_log);
		snprintf(out->line, sizeof out->line, "nvJitLinkCreate returned %d", rc);
		goto done;
	}
	/* The PTX as one input, named as ptxas names a file it reads. */
	rc = l->add_data(h, NVJL_INPUT_PTX, ptx, ptx_size, "input.ptx");
	if (rc == NVJL_SUCCESS)
		rc = l->complete(h);
	append_log(&log, h, l->error_log_size, l->error_log);
	append_log(&info, h, l->info_log_size, l->info_log);
	if (rc != NVJL_SUCCESS) {
		/* The error log's first line: the PTX compiler's or the linker's
		 * own words ("...; fatal : Unsupported .version 9.9; current
		 * version is '9.0'", "error : Undefined reference to 'x'"); the
		 * library's summary ("ERROR NVJITLINK_ERROR_PTX_COMPILE: ...")
		 * follows them. */
		const char *text = log.data ? log.data : "";
		if (*text)
			snprintf(out->line, sizeof out->line, "%.*s", (int)strcspn(text, "\n"), text);
		else
			snprintf(out->line, sizeof out->line, "error %d and an empty error log", rc);
		if (strstr(text, "Unsupported .version"))
			status = BACKEND_NVJITLINK_REFUSED;
		else if (strstr(out->line, "Undefined reference"))
			status = BACKEND_NVJITLINK_UNDEFINED;
		goto done;
	}
	size_t size = 0;
	if (l->cubin_size(h, &size) != NVJL_SUCCESS || size == 0) {
		snprintf(out->line, sizeof out->line, "it linked no cubin");
		goto done;
	}
	out->cubin = malloc(size);
	if (!out->cubin) {
		snprintf(out->line, sizeof out->line, "out of memory");
		goto done;
	}
	if (l->cubin(h, out->cubin) != NVJL_SUCCESS) {
		snprintf(out->line, sizeof out->line, "nvJitLinkGetLinkedCubin failed");
		goto done;
	}
	out->cubin_size = size;
	status = BACKEND_NVJITLINK_OK;
done:
	if (h)
		l->destroy(&h);
	if ((log.failed || info.failed) && status == BACKEND_NVJITLINK_OK) {
		snprintf(out->line, sizeof out->line, "out of memory");
		status = BACKEND_NVJITLINK_FAILED;
	}
	out->log = backend_text_take(&log);
	out->info = backend_text_take(&info);
	if (status != BACKEND_NVJITLINK_OK) {
		free(out->cubin);
		out->cubin = NULL;
		out->cubin_size = 0;
	}
	return status;
}
