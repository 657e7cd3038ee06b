/*
 * formats/tests/test_key.c -- the key schema: stable across runs, sensitive
 * to every component, insensitive to what is not a component, and refusing
 * non-canonical input.
 */
#include "check.h"

#include "key.h"

#include <gpucc.h>

static gpucc_option options[2] = {{"fast-math", "off"}, {"opt-level", "2"}};
static gpucc_device_lib libs[1];

static gpucc_entry base(void)
{
	gpucc_entry e = {0};
	e.key_schema = 1;
	e.module = "saxpy.ll";
	gpucc_digest_buffer(&e.module_sha256, "module bytes", 12);
	e.target = "sm_90:ptx78";
	e.triple = "nvptx64-nvidia-cuda";
	e.gpucc_version = "0.1.0";
	e.llvm_version = "19.1.7";
	libs[0].name = "libdevice.10.bc";
	gpucc_digest_buffer(&libs[0].sha256, "libdevice", 9);
	e.device_lib_count = 1;
	e.device_libs = libs;
	e.option_count = 2;
	e.options = options;
	return e;
}

static gpucc_digest key_of(const gpucc_entry *e)
{
	gpucc_digest d = {{0}};
	CHECK_INT(gpucc_key_compute(&d, e), 0);
	return d;
}

static void test_known_value(void)
{
	/* The schema is a published format: this value may change only with a
	 * new key-schema version.  It was computed once from formats/key.md. */
	gpucc_entry e = base();
	gpucc_digest d = key_of(&e);
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, &d);
	/* Recompute by hand from the spec's encoding. */
	unsigned char buf[1024];
	size_t n = 0;
	memcpy(buf, "gpucc-key", 10);
	n = 10;
#define FIELD(name, value, len)                                            \
	do {                                                                   \
		size_t nl = strlen(name), vl = (len);                              \
		buf[n++] = 0; buf[n++] = 0; buf[n++] = 0; buf[n++] = (unsigned char)nl; \
		memcpy(buf + n, name, nl); n += nl;                                \
		for (int s = 56; s >= 0; s -= 8) buf[n++] = (unsigned char)(vl >> s); \
		memcpy(buf + n, value, vl); n += vl;                               \
	} while (0)
	char libline[128];
	char libhex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(libhex, &libs[0].sha256);
	int ll = snprintf(libline, sizeof libline, "libdevice.10.bc%c%s\n", 0, libhex);
	FIELD("schema", "1", 1);
	FIELD("gpucc", "0.1.0", 5);
	FIELD("llvm", "19.1.7", 6);
	FIELD("device-libs", libline, (size_t)ll);
	FIELD("target", "sm_90:ptx78", 11);
	FIELD("options", "fast-math=off\nopt-level=2\n", 26);
	FIELD("module", e.module_sha256.bytes, 32);
	gpucc_digest expected;
	gpucc_digest_buffer(&expected, buf, n);
	CHECK_INT(gpucc_digest_compare(&d, &expected), 0);
}

static void test_every_component_matters(void)
{
	gpucc_entry e = base();
	gpucc_digest k0 = key_of(&e), k;
	gpucc_entry v;

	v = base(); v.gpucc_version = "0.1.1"; k = key_of(&v);
	CHECK(gpucc_digest_compare(&k0, &k) != 0);
	v = base(); v.llvm_version = "19.1.8"; k = key_of(&v);
	CHECK(gpucc_digest_compare(&k0, &k) != 0);
	v = base(); v.target = "sm_90:ptx80"; k = key_of(&v);
	CHECK(gpucc_digest_compare(&k0, &k) != 0);
	v = base(); v.module_sha256.bytes[31] ^= 1; k = key_of(&v);
	CHECK(gpucc_digest_compare(&k0, &k) != 0);
	v = base(); v.device_lib_count = 0; k = key_of(&v);
	CHECK(gpucc_digest_compare(&k0, &k) != 0);
	gpucc_option other[2] = {{"fast-math", "on"}, {"opt-level", "2"}};
	v = base(); v.options = other; k = key_of(&v);
	CHECK(gpucc_digest_compare(&k0, &k) != 0);
	/* Moving a byte between option name and value changes the key. */
	gpucc_option shifted[2] = {{"fast-math", "off"}, {"opt-leve", "l2"}};
	v = base(); v.options = shifted; k = key_of(&v);
	CHECK(gpucc_digest_compare(&k0, &k) != 0);

	/* Not components: module name, kernels, payloads, triple. */
	v = base(); v.module = "elsewhere/other-name.ll"; k = key_of(&v);
	CHECK_INT(gpucc_digest_compare(&k0, &k), 0);
	gpucc_kernel kernel = {"k", 1, 2, 3};
	v = base(); v.kernel_count = 1; v.kernels = &kernel; k = key_of(&v);
	CHECK_INT(gpucc_digest_compare(&k0, &k), 0);
}

static void test_refuses_unsorted(void)
{
	gpucc_option unsorted[2] = {{"opt-level", "2"}, {"fast-math", "off"}};
	gpucc_entry e = base();
	e.options = unsorted;
	gpucc_digest d;
	CHECK_INT(gpucc_key_compute(&d, &e), GPUCC_EINVALID);
	CHECK_ERROR_HAS("sorted");
	e = base();
	e.key_schema = 2;
	CHECK_INT(gpucc_key_compute(&d, &e), GPUCC_EVERSION);
	/* One name twice is not "sorted and unique"; nor are device
	 * libraries out of order or listed twice. */
	gpucc_option twice[2] = {{"opt-level", "2"}, {"opt-level", "3"}};
	e = base();
	e.options = twice;
	CHECK_INT(gpucc_key_compute(&d, &e), GPUCC_EINVALID);
	CHECK_ERROR_HAS("options must be sorted by name and unique ('opt-level')");
	gpucc_device_lib two[2] = {{"ocml.bc", {{0}}}, {"ockl.bc", {{0}}}};
	e = base();
	e.device_libs = two;
	e.device_lib_count = 2;
	CHECK_INT(gpucc_key_compute(&d, &e), GPUCC_EINVALID);
	CHECK_ERROR_HAS("device libraries must be sorted by name and unique ('ockl.bc')");
	two[0].name = "ockl.bc";
	CHECK_INT(gpucc_key_compute(&d, &e), GPUCC_EINVALID);
	two[1].name = "ocml.bc";
	CHECK_INT(gpucc_key_compute(&d, &e), 0);
	/* An option whose name holds '=' or a line break, or whose value
	 * holds a line break, would spell another option list. */
	gpucc_option spelt[1] = {{"a=b", "1"}};
	for (int i = 0; i < 3; i++) {
		spelt[0] = i == 0 ? (gpucc_option){"a=b", "1"}
		         : i == 1 ? (gpucc_option){"a\nb", "1"} : (gpucc_option){"a", "1\nb=2"};
		e = base();
		e.options = spelt;
		e.option_count = 1;
		CHECK_INT(gpucc_key_compute(&d, &e), GPUCC_EINVALID);
		CHECK_ERROR_HAS("has '=' or a newline in it");
	}
	/* No versions or no target: no key. */
	for (int i = 0; i < 3; i++) {
		e = base();
		*(i == 0 ? &e.gpucc_version : i == 1 ? &e.llvm_version : &e.target) = NULL;
		CHECK_INT(gpucc_key_compute(&d, &e), GPUCC_EINVALID);
		CHECK_ERROR_HAS("an entry needs gpucc and llvm versions and a target");
	}
}

static void test_components(void)
{
	gpucc_entry e = base();
	gpucc_key_component c[GPUCC_KEY_COMPONENTS];
	CHECK_INT(gpucc_key_components(c, &e), 0);
	CHECK_STR(c[0].name, "schema");
	CHECK_STR(c[0].value, "1");
	CHECK_STR(c[4].name, "target");
	CHECK_STR(c[4].value, "sm_90:ptx78");
	CHECK_STR(c[5].value, "fast-math=off\nopt-level=2\n");
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, &e.module_sha256);
	CHECK_STR(c[6].value, hex);
	CHECK(strncmp(c[3].value, "libdevice.10.bc ", 16) == 0);
	gpucc_key_components_free(c);
}

int main(void)
{
	RUN(test_known_value);
	RUN(test_every_component_matters);
	RUN(test_refuses_unsorted);
	RUN(test_components);
	return CHECK_DONE();
}
