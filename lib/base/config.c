/*
 * lib/base/config.c -- the settings libgpucc takes from its caller
 * (gpucc/config.h): building them from the environment when asked, and the
 * copy in force for the process.  The only file of libgpucc that reads the
 * environment (lib/tests/check_layers.py checks it, its compile worker
 * included): gpucc_config_from_env for the settings,
 * gpucc_tool_environment and gpucc_tool_environment_with for what the
 * tools it starts inherit, and, in test builds, gpucc_test_hook for the
 * test hooks' variables.
 */
#include "config_internal.h"

#include "errors.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The string fields and the variable each is read from (ca_bundle, read
 * from two, is done apart). */
static const struct {
	size_t offset;
	const char *variable;
} string_fields[] = {
	{offsetof(gpucc_config, tmpdir), "TMPDIR"},
	{offsetof(gpucc_config, path), "PATH"},
	{offsetof(gpucc_config, cuda_path), "CUDA_PATH"},
	{offsetof(gpucc_config, cache_dir), "GPUCC_CACHE_DIR"},
	{offsetof(gpucc_config, xdg_cache_home), "XDG_CACHE_HOME"},
	{offsetof(gpucc_config, home), "HOME"},
	{offsetof(gpucc_config, cache_max_size), "GPUCC_CACHE_MAX_SIZE"},
	{offsetof(gpucc_config, backend), "GPUCC_BACKEND"},
	{offsetof(gpucc_config, libarchive), "GPUCC_LIBARCHIVE"},
	{offsetof(gpucc_config, hip_library), "GPUCC_HIP_LIBRARY"},
	{offsetof(gpucc_config, cuda_library), "GPUCC_CUDA_LIBRARY"},
	{offsetof(gpucc_config, rocm_device_libs), "GPUCC_ROCM_DEVICE_LIBS"},
	{offsetof(gpucc_config, libclc_dir), "GPUCC_LIBCLC_DIR"},
	{offsetof(gpucc_config, nvjitlink), "GPUCC_NVJITLINK"},
	{offsetof(gpucc_config, ca_bundle), NULL},
};
#define STRING_FIELDS (sizeof string_fields / sizeof string_fields[0])

static const char **field(gpucc_config *cfg, size_t i)
{
	return (const char **)(void *)((char *)cfg + string_fields[i].offset);
}

static const char *const *const_field(const gpucc_config *cfg, size_t i)
{
	return (const char *const *)(const void *)((const char *)cfg + string_fields[i].offset);
}

/* A copy of cfg in one allocation, its strings after the struct; NULL when
 * out of memory. */
static gpucc_config *copy_config(const gpucc_config *cfg)
{
	size_t size = sizeof *cfg;
	for (size_t i = 0; i < STRING_FIELDS; i++)
		if (*const_field(cfg, i))
			size += strlen(*const_field(cfg, i)) + 1;
	gpucc_config *copy = malloc(size);
	if (!copy)
		return NULL;
	*copy = *cfg;
	char *next = (char *)(copy + 1);
	for (size_t i = 0; i < STRING_FIELDS; i++) {
		const char *value = *const_field(cfg, i);
		if (!value)
			continue;
		size_t n = strlen(value) + 1;
		memcpy(next, value, n);
		*field(copy, i) = next;
		next += n;
	}
	return copy;
}

void gpucc_config_init(gpucc_config *cfg)
{
	GPUCC_REQUIRE_VOID(cfg);
	memset(cfg, 0, sizeof *cfg);
	cfg->version = GPUCC_CONFIG_VERSION;
}

/* SOURCE_DATE_EPOCH: decimal digits only (no sign, no spaces), at most
 * GPUCC_SOURCE_DATE_EPOCH_MAX.  0, or -1 when it is anything else. */
static int parse_epoch(const char *text, int64_t *out)
{
	int64_t v = 0;
	for (const char *c = text; *c; c++) {
		if (*c < '0' || *c > '9')
			return -1;
		v = v * 10 + (*c - '0');
		if (v > GPUCC_SOURCE_DATE_EPOCH_MAX)
			return -1;
	}
	*out = v;
	return 0;
}

int gpucc_config_from_env(gpucc_config **out)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	gpucc_config found = GPUCC_CONFIG_INIT;
	const char *epoch = getenv("SOURCE_DATE_EPOCH");
	if (epoch && *epoch) {
		if (parse_epoch(epoch, &found.source_date_epoch) != 0)
			return gpucc_error_set(GPUCC_EINVALID,
			                       "SOURCE_DATE_EPOCH='%s' is not a non-negative integer "
			                       "of at most %lld",
			                       epoch, (long long)GPUCC_SOURCE_DATE_EPOCH_MAX);
		found.source_date_epoch_set = true;
	}
	for (size_t i = 0; i < STRING_FIELDS; i++)
		if (string_fields[i].variable)
			*field(&found, i) = getenv(string_fields[i].variable);
	/* curl's own variable, then OpenSSL's, which libcurl does not read. */
	found.ca_bundle = gpucc_config_or(getenv("CURL_CA_BUNDLE"), getenv("SSL_CERT_FILE"));
	gpucc_config *copy = copy_config(&found);
	if (!copy)
		return gpucc_error_oom();
	*out = copy;
	return 0;
}

void gpucc_config_free(gpucc_config *cfg)
{
	free(cfg);
}

/* ---- the settings in force ------------------------------------------------ */

static const gpucc_config unset = GPUCC_CONFIG_INIT;
static _Atomic(gpucc_config *) current;

int gpucc_set_config(const gpucc_config *cfg)
{
	gpucc_config *copy = NULL;
	if (cfg) {
		if (gpucc_options_version_check("config", cfg->version, GPUCC_CONFIG_VERSION) != 0)
			return GPUCC_EINVALID;
		if (cfg->source_date_epoch_set &&
		    (cfg->source_date_epoch < 0 ||
		     cfg->source_date_epoch > GPUCC_SOURCE_DATE_EPOCH_MAX))
			return gpucc_error_set(GPUCC_EINVALID,
			                       "source_date_epoch %lld is not between 0 and %lld",
			                       (long long)cfg->source_date_epoch,
			                       (long long)GPUCC_SOURCE_DATE_EPOCH_MAX);
		if (!(copy = copy_config(cfg)))
			return gpucc_error_oom();
	}
	free(atomic_exchange(&current, copy));
	return 0;
}

const gpucc_config *gpucc_config_current(void)
{
	const gpucc_config *cfg = atomic_load(&current);
	return cfg ? cfg : &unset;
}

const char *gpucc_config_or(const char *value, const char *fallback)
{
	return value && *value ? value : fallback && *fallback ? fallback : NULL;
}

const char *gpucc_tool_environment(const char *name)
{
	return getenv(name);
}

extern char **environ;

char **gpucc_tool_environment_with(char *assignment)
{
	size_t name_size = strcspn(assignment, "=") + 1; /* "NAME=" */
	size_t count = 0;
	while (environ[count])
		count++;
	char **envp = calloc(count + 2, sizeof *envp);
	if (!envp)
		return NULL;
	size_t kept = 0;
	for (size_t i = 0; i < count; i++)
		if (strncmp(environ[i], assignment, name_size) != 0)
			envp[kept++] = environ[i];
	envp[kept] = assignment;
	return envp;
}

#ifdef GPUCC_TEST_HOOKS
const char *gpucc_test_hook(const char *name)
{
	return getenv(name);
}
#endif

const char *gpucc_temp_parent(void)
{
	return gpucc_config_or(gpucc_config_current()->tmpdir, "/tmp");
}
