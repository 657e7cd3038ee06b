/*
 * lib/runtime/runtime.c -- the runtime API of gpucc/runtime.h: images opened by
 * mapping, the devices the GPU runtimes see, and modules loaded on them.
 * Selection is in runtime_select.c; each runtime is a driver table
 * (runtime_driver.h) in runtime_hip.c and runtime_cuda.c, whose library
 * runtime_dlopen.c opens, with dlopen(), only when a device is asked for.
 */
#include "errors.h"
#include "image_internal.h"
#include "input_file.h"
#include "runtime_driver.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- mapped images --------------------------------------------------------- */

typedef struct mapping {
	void *address;
	size_t size;
} mapping;

static void mapping_release(void *ctx)
{
	mapping *m = ctx;
	munmap(m->address, m->size);
	free(m);
}

int gpucc_image_open_mapped(gpucc_image **out, const char *path)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	GPUCC_REQUIRE(path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gpucc_error_set_open(NULL, path); /* as gpucc_image_open words it */
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int rc = gpucc_error_set_errno("cannot stat '%s'", path);
		close(fd);
		return rc;
	}
	if (!S_ISREG(st.st_mode) || st.st_size == 0 || (uint64_t)st.st_size > SIZE_MAX) {
		/* Not mappable: the ordinary reader reads it, or says what is
		 * wrong, on this descriptor (opening a FIFO's name again would
		 * wait for another writer). */
		int rc = gpucc_image_open_fd(out, fd, path);
		close(fd);
		return rc;
	}
	mapping *m = malloc(sizeof *m);
	if (!m) {
		close(fd);
		return gpucc_error_oom();
	}
	m->size = (size_t)st.st_size;
	m->address = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m->address == MAP_FAILED) {
		free(m);
		return gpucc_error_set_errno("cannot map '%s'", path);
	}
	/* For lookups: the runtime finds entries by kernel through the
	 * image's index, and parses the rest of the manifest only when it
	 * must. */
	int rc = gpucc_image_open_memory_for_lookup(out, m->address, m->size, path);
	if (rc) {
		mapping_release(m);
		return rc;
	}
	gpucc_image_on_free(*out, mapping_release, m);
	return 0;
}

/* ---- devices ---------------------------------------------------------------- */

static const runtime_driver *const drivers[] = {
	&gpucc_runtime_hip_driver,
	&gpucc_runtime_cuda_driver,
};
#define DRIVER_COUNT (sizeof drivers / sizeof drivers[0])

static const runtime_driver *driver_of(gpucc_runtime_kind kind)
{
	for (size_t i = 0; i < DRIVER_COUNT; i++)
		if (drivers[i]->kind == kind)
			return drivers[i];
	return NULL;
}

int gpucc_devices_list(gpucc_device **out, size_t *count)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	GPUCC_REQUIRE(count);
	*count = 0;
	gpucc_device *devices = NULL;
	size_t total = 0;
	char why[1024] = "";
	size_t why_used = 0;
	for (size_t d = 0; d < DRIVER_COUNT; d++) {
		int n = 0;
		int rc = drivers[d]->device_count(&n);
		if (rc == 0 && n > 0) {
			gpucc_device *grown = realloc(devices, (total + (size_t)n) * sizeof *grown);
			if (!grown) {
				free(devices);
				return gpucc_error_oom();
			}
			devices = grown;
			for (int i = 0; i < n; i++) {
				gpucc_device *dev = &devices[total];
				memset(dev, 0, sizeof *dev);
				dev->runtime = drivers[d]->kind;
				if (drivers[d]->device_describe(i, dev) == 0)
					total++;
				else
					rc = GPUCC_EUNAVAILABLE;
			}
		}
		if (rc != 0) {
			int w = snprintf(why + why_used, sizeof why - why_used, "%s%s",
			                 why_used ? "; " : "", gpucc_error_last()->message);
			if (w > 0 && (size_t)w < sizeof why - why_used)
				why_used += (size_t)w;
		}
	}
	if (total == 0) {
		free(devices);
		return gpucc_error_set(GPUCC_EUNAVAILABLE, "no GPU found: %s", why);
	}
	*out = devices;
	*count = total;
	return 0;
}

/* ---- modules ---------------------------------------------------------------- */

struct gpucc_module {
	const runtime_driver *driver;
	runtime_loaded loaded;
	gpucc_device device;
	gpucc_selection selection;
};

typedef struct code_buffer {
	unsigned char *data;
	size_t used, size;
} code_buffer;

static int to_code_buffer(void *ctx, const void *data, size_t size)
{
	code_buffer *b = ctx;
	if (size > b->size - b->used)
		return gpucc_error_set(GPUCC_ECORRUPT, "payload is larger than the manifest lists");
	memcpy(b->data + b->used, data, size);
	b->used += size;
	return 0;
}

/* The payload's verified bytes with a NUL after them (PTX must end in one
 * for the CUDA driver). */
static int read_code(code_buffer *out, gpucc_image *img, const gpucc_payload *p)
{
	memset(out, 0, sizeof *out);
	if (p->size > SIZE_MAX - 1)
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': payload too large", gpucc_image_name(img));
	out->size = (size_t)p->size;
	out->data = malloc(out->size + 1);
	if (!out->data)
		return gpucc_error_oom();
	int rc = gpucc_image_stream_payload(img, p, to_code_buffer, out);
	if (rc == 0 && out->used != out->size)
		rc = gpucc_error_set(GPUCC_ECORRUPT, "'%s': payload shorter than the manifest lists",
		                     gpucc_image_name(img));
	if (rc) {
		free(out->data);
		out->data = NULL;
		return rc;
	}
	out->data[out->size] = '\0';
	return 0;
}

/* The device to use when the caller names none: the first on which some
 * entry with kernel fits; else the first whose architecture gpucc knows, so
 * that the error is the selection's for it (a device it does not know
 * fits nothing, and says so only when it is the only kind there is). */
static int choose_device(gpucc_device *out, gpucc_selection *sel, const gpucc_image *img,
                         const char *kernel)
{
	gpucc_device *devices = NULL;
	size_t count = 0;
	int rc = gpucc_devices_list(&devices, &count);
	if (rc)
		return rc;
	for (size_t i = 0; i < count; i++) {
		if (devices[i].target_known &&
		    gpucc_image_select(sel, img, kernel, &devices[i].target) == 0) {
			*out = devices[i];
			free(devices);
			return 0;
		}
	}
	size_t first_known = 0;
	while (first_known < count && !devices[first_known].target_known)
		first_known++;
	*out = devices[first_known < count ? first_known : 0];
	free(devices);
	if (!out->target_known)
		return gpucc_error_set(GPUCC_EUNAVAILABLE, "device %d (%s) has an architecture gpucc does not know: '%s'",
		                       out->ordinal, out->name, out->arch);
	return gpucc_image_select(sel, img, kernel, &out->target);
}

int gpucc_module_load(gpucc_module **out, gpucc_image *img, const char *kernel,
                      const gpucc_device *device)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	GPUCC_REQUIRE(img);
	GPUCC_REQUIRE(kernel);
	gpucc_module *m = calloc(1, sizeof *m);
	if (!m)
		return gpucc_error_oom();
	int rc;
	if (device) {
		m->device = *device;
		if (!device->target_known)
			rc = gpucc_error_set(GPUCC_EINVALID, "device '%s' has an unknown architecture '%s'",
			                     device->name, device->arch);
		else
			rc = gpucc_image_select(&m->selection, img, kernel, &device->target);
	} else {
		rc = choose_device(&m->device, &m->selection, img, kernel);
	}
	m->driver = driver_of(m->device.runtime);
	if (rc == 0 && !m->driver)
		rc = gpucc_error_set(GPUCC_EINVALID, "gpucc_module_load: the device has no runtime");
	code_buffer code = {0};
	if (rc == 0)
		rc = read_code(&code, img, m->selection.payload);
	if (rc == 0)
		rc = m->driver->module_load(&m->loaded, m->device.ordinal, code.data, code.size,
		                            m->selection.part);
	free(code.data);
	/* The CUDA driver loads lazily by default (CUDA_MODULE_LOADING=LAZY,
	 * since CUDA 12.2): it may take code at cuModuleLoadDataEx and refuse
	 * it only at cuModuleGetFunction.  Resolving the kernel now keeps the
	 * promise that a refused load fails here.  A kernel the manifest lists
	 * and the code lacks makes the image corrupt. */
	if (rc == 0) {
		void *function;
		rc = m->driver->module_function(&function, &m->loaded, kernel);
		if (rc == GPUCC_ENOTFOUND) {
			char key[GPUCC_DIGEST_HEX_SIZE];
			gpucc_digest_to_hex(key, &m->selection.entry->key);
			rc = gpucc_error_set(GPUCC_ECORRUPT, "'%s': entry %.12s lists kernel '%s', which its %s lacks",
			                     gpucc_image_name(img), key, kernel, gpucc_part_name(m->selection.part));
		}
		if (rc)
			m->driver->module_unload(&m->loaded);
	}
	if (rc) {
		free(m);
		return rc;
	}
	*out = m;
	return 0;
}

int gpucc_module_function(void **out, gpucc_module *m, const char *kernel)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	GPUCC_REQUIRE(m);
	GPUCC_REQUIRE(kernel);
	return m->driver->module_function(out, &m->loaded, kernel);
}

void *gpucc_module_handle(const gpucc_module *m)
{
	GPUCC_REQUIRE_OR(m, NULL);
	return m->loaded.module;
}

const gpucc_selection *gpucc_module_selection(const gpucc_module *m)
{
	GPUCC_REQUIRE_OR(m, NULL);
	return &m->selection;
}

const gpucc_device *gpucc_module_device(const gpucc_module *m)
{
	GPUCC_REQUIRE_OR(m, NULL);
	return &m->device;
}

void gpucc_module_free(gpucc_module *m)
{
	if (!m)
		return;
	m->driver->module_unload(&m->loaded);
	free(m);
}
