/*
 * formats/tests/test_manifest.c -- the manifest: canonical output, round
 * trips through the parser, and every kind of malformed manifest refused
 * with the defect named.
 */
#include "check.h"

#include "arena.h"
#include "key.h"
#include "manifest.h"

#include <gpucc.h>

#include <stdlib.h>

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static gpucc_option options[1] = {{"opt-level", "2"}};
static gpucc_kernel kernels[2] = {{"saxpy", 10, 0, 0}, {"k\"quoted\\", -1, -1, -1}};
static const char *externals[1] = {"vprintf"};
static gpucc_payload payloads[2];

static gpucc_entry sample(const char *module_bytes)
{
	gpucc_entry e = {0};
	e.key_schema = 1;
	e.module = "saxpy.ll";
	gpucc_digest_buffer(&e.module_sha256, module_bytes, strlen(module_bytes));
	e.target = "sm_90:ptx78";
	e.triple = "nvptx64-nvidia-cuda";
	e.gpucc_version = "0.1.0";
	e.llvm_version = "19.1.7";
	e.option_count = 1;
	e.options = options;
	e.kernel_count = 2;
	e.kernels = kernels;
	e.external_count = 1;
	e.externals = externals;
	payloads[0].part = GPUCC_PART_PTX;
	gpucc_digest_buffer(&payloads[0].sha256, "ptx", 3);
	payloads[0].size = 3;
	payloads[1].part = GPUCC_PART_CUBIN;
	gpucc_digest_buffer(&payloads[1].sha256, "cubin", 5);
	payloads[1].size = 5;
	e.payload_count = 2;
	e.payloads = payloads;
	gpucc_key_compute(&e.key, &e);
	return e;
}

static void test_round_trip(void)
{
	gpucc_entry a = sample("a"), b = sample("b");
	const gpucc_entry *list[2];
	bool a_first = gpucc_digest_compare(&a.key, &b.key) < 0;
	list[0] = a_first ? &a : &b;
	list[1] = a_first ? &b : &a;
	char *json;
	size_t size;
	CHECK_INT(gpucc_manifest_write(&json, &size, list, 2), 0);
	CHECK(strncmp(json, "{\"format\":\"gpucc-image\",\"version\":1,", 36) == 0);
	gpucc_manifest m;
	CHECK_INT(gpucc_manifest_parse(&m, json, size, "m.json"), 0);
	CHECK_INT(m.entry_count, 2);
	if (m.entry_count == 2) {
		const gpucc_entry *e = &m.entries[a_first ? 0 : 1];
		CHECK_INT(gpucc_digest_compare(&e->key, &a.key), 0);
		CHECK_STR(e->kernels[1].name, "k\"quoted\\");
		CHECK_INT(e->kernels[0].registers, 10);
		CHECK_INT(e->kernels[1].registers, -1);
		CHECK_STR(e->externals[0], "vprintf");
		CHECK_INT(e->payloads[1].size, 5);
		/* Writing what was read gives the same bytes. */
		const gpucc_entry *again[2] = {&m.entries[0], &m.entries[1]};
		char *json2;
		size_t size2;
		CHECK_INT(gpucc_manifest_write(&json2, &size2, again, 2), 0);
		CHECK(size2 == size && memcmp(json, json2, size) == 0);
		free(json2);
	}
	gpucc_manifest_release(&m);
	free(json);
}

/* Parse json and expect code with needle in the message. */
static void expect_refused(const char *json, int code, const char *needle)
{
	gpucc_manifest m;
	int rc = gpucc_manifest_parse(&m, json, strlen(json), "bad.json");
	if (rc != code)
		fprintf(stderr, "  for %.80s...: rc %d, message %s\n", json, rc, gpucc_error_last()->message);
	CHECK_INT(rc, code);
	CHECK_ERROR_HAS(needle);
	CHECK_ERROR_HAS("bad.json");
	if (rc == 0)
		gpucc_manifest_release(&m);
}

static char *replace(const char *s, const char *from, const char *to)
{
	const char *at = strstr(s, from);
	if (!at)
		return strdup(s);
	size_t n = strlen(s) - strlen(from) + strlen(to) + 1;
	char *out = malloc(n);
	snprintf(out, n, "%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
	return out;
}

static void test_refusals(void)
{
	expect_refused("not json", GPUCC_ECORRUPT, "not valid JSON");
	expect_refused("{\"format\":\"tar\",\"version\":1,\"entries\":[]}", GPUCC_ECORRUPT,
	               "not a gpucc image manifest");
	expect_refused("{\"format\":\"gpucc-image\",\"version\":2,\"entries\":[]}", GPUCC_EVERSION,
	               "version 2");
	expect_refused("{\"format\":\"gpucc-image\",\"version\":1}", GPUCC_ECORRUPT, "entries");
	/* A version that is not one is a mistyped field, not another version. */
	expect_refused("{\"format\":\"gpucc-image\",\"version\":\"1\",\"entries\":[]}", GPUCC_ECORRUPT,
	               "corrupt manifest: 'version' is not a non-negative integer");
	expect_refused("{\"format\":\"gpucc-image\",\"version\":1.0,\"entries\":[]}", GPUCC_ECORRUPT,
	               "corrupt manifest: 'version' is not a non-negative integer");
	expect_refused("{\"format\":\"gpucc-image\",\"entries\":[]}", GPUCC_ECORRUPT,
	               "corrupt manifest: no 'version'");
	expect_refused("{\"format\":\"gpucc-image\",\"version\":12345678901,\"entries\":[]}",
	               GPUCC_EVERSION, "manifest version 12345678901 is not supported");
	expect_refused("{\"format\":\"gpucc-image\",\"format\":\"gpucc-image\",\"version\":1,"
	               "\"entries\":[]}", GPUCC_ECORRUPT, "'format' appears twice");
	expect_refused("{\"format\":\"gpucc-image\",\"version\":2,\"version\":1,\"entries\":[]}",
	               GPUCC_ECORRUPT, "'version' appears twice");
	expect_refused("{\"format\":\"gpucc-image\",\"version\":1,\"entries\":[],\"version\":1}",
	               GPUCC_ECORRUPT, "'version' appears twice");
	expect_refused("{\"version\":1,\"entries\":[],\"format\":\"gpucc-image\",\"version\":1}",
	               GPUCC_ECORRUPT, "'version' appears twice");
	/* Members come in any order; each once is not twice. */
	const char *const orders[] = {
		"{\"entries\":[],\"version\":1,\"format\":\"gpucc-image\"}",
		"{\"format\":\"gpucc-image\",\"entries\":[],\"version\":1}",
		"{\"version\":1,\"entries\":[],\"note\":0,\"format\":\"gpucc-image\"}",
	};
	for (size_t i = 0; i < sizeof orders / sizeof orders[0]; i++) {
		gpucc_manifest any_order;
		int rc = gpucc_manifest_parse(&any_order, orders[i], strlen(orders[i]), "order.json");
		if (rc)
			fprintf(stderr, "  for %s: %s\n", orders[i], gpucc_error_last()->message);
		CHECK_INT(rc, 0);
		gpucc_manifest_release(&any_order);
	}

	gpucc_entry e = sample("x");
	const gpucc_entry *list[1] = {&e};
	char *json;
	size_t size;
	CHECK_INT(gpucc_manifest_write(&json, &size, list, 1), 0);
	struct {
		const char *from, *to, *needle;
	} cases[] = {
		{"\"key_schema\":1", "\"key_schema\":\"1\"", "key_schema"},
		{"\"target\":\"sm_90:ptx78\"", "\"target\":\"sm_90\"", "not canonical"},
		{"\"target\":\"sm_90:ptx78\"", "\"target\":\"sm_99:ptx78\"", "unknown target"},
		{"\"triple\":\"nvptx64-nvidia-cuda\"", "\"triple\":\"amdgcn-amd-amdhsa\"", "triple"},
		{"\"size\":3", "\"size\":-3", "size"},
		{"\"size\":3", "\"size\":3.5", "size"},
		{"\"registers\":10", "\"registers\":1099511627777",
		 "a kernel resource count is not an integer from 0 to 2^40"},
		{"\"part\":\"ptx\"", "\"part\":\"elf\"", "part"},
		{"\"llvm\":\"19.1.7\"", "\"llvm\":19", "toolchain"},
		{"\"kernels\":[", "\"kernels\":\"none\",\"unknown\":[", "kernels"},
		{"\"name\":\"saxpy\"", "\"name\":\"\"", "kernel"},
		/* A field twice in any object: JSON parsers disagree on which
		 * counts, so a reader that took one would see another entry. */
		{"\"gpucc\":", "\"gpucc\":\"9\",\"gpucc\":", "'toolchain.gpucc' appears twice"},
		{"\"device_libs\":[]", "\"device_libs\":[],\"device_libs\":[]",
		 "'toolchain.device_libs' appears twice"},
		{"\"name\":\"saxpy\"", "\"name\":\"x\",\"name\":\"saxpy\"", "kernel's 'name' appears twice"},
		{"\"registers\":10", "\"registers\":10,\"registers\":11",
		 "kernel's 'registers' appears twice"},
		{"\"device_libs\":[]",
		 "\"device_libs\":[{\"name\":\"a.bc\",\"name\":\"b.bc\",\"sha256\":\"" HEX64 "\"}]",
		 "device library's 'name' appears twice"},
		/* Options and device libraries sorted and unique, as key.md
		 * hashes them: refused on opening, not only by the key check. */
		{"\"opt-level\":\"2\"", "\"opt-level\":\"2\",\"opt-level\":\"3\"",
		 "options must be sorted by name and unique ('opt-level')"},
		{"\"opt-level\":\"2\"", "\"opt-level\":\"2\",\"debug\":\"on\"",
		 "options must be sorted by name and unique ('debug')"},
		{"\"opt-level\":\"2\"", "\"a=b\":\"1\",\"opt-level\":\"2\"", "'=' in its name"},
		{"\"opt-level\":\"2\"", "\"\":\"1\",\"opt-level\":\"2\"", "an option has an empty name"},
		{"\"device_libs\":[]", "\"device_libs\":[{\"name\":\"\",\"sha256\":\"" HEX64 "\"}]",
		 "a device library has an empty name"},
		{"\"name\":\"saxpy\"", "\"name\":\"sa\\u0007xpy\"",
		 "a kernel's name 'sa\\x07xpy' holds a control character"},
		{"\"name\":\"saxpy\"", "\"name\":\"sa\x7fxpy\"",
		 "a kernel's name 'sa\\x7fxpy' holds a control character"},
		{"\"device_libs\":[]",
		 "\"device_libs\":[{\"name\":\"b.bc\",\"sha256\":\"" HEX64 "\"},"
		 "{\"name\":\"a.bc\",\"sha256\":\"" HEX64 "\"}]",
		 "device libraries must be sorted by name and unique ('a.bc')"},
		{"\"device_libs\":[]",
		 "\"device_libs\":[{\"name\":\"a.bc\",\"sha256\":\"" HEX64 "\"},"
		 "{\"name\":\"a.bc\",\"sha256\":\"" HEX64 "\"}]",
		 "device libraries must be sorted by name and unique ('a.bc')"},
		/* Payloads: each an object of its three fields, each once. */
		{"\"payloads\":[", "\"payloads\":[1,", "a payload is not an object"},
		{"\"part\":\"ptx\"", "\"part\":\"ptx\",\"part\":\"ptx\"",
		 "entry 0: a payload field appears twice"},
		{"\"size\":3}", "\"sizes\":3}", "entry 0: a payload lacks 'part', 'sha256' or 'size'"},
		{",\"size\":3}", ",@\"size\":3}", "not valid JSON"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *bad = replace(json, cases[i].from, cases[i].to);
		CHECK(strcmp(bad, json) != 0);
		expect_refused(bad, GPUCC_ECORRUPT, cases[i].needle);
		free(bad);
	}
	/* Digests have one spelling: uppercase hex is refused, naming the
	 * field, though it would decode to the same bytes. */
	const char *digest_fields[] = {"\"key\":\"", "\"module_sha256\":\"", "\"sha256\":\""};
	for (size_t i = 0; i < sizeof digest_fields / sizeof digest_fields[0]; i++) {
		char *upper = strdup(json);
		char *digits = strstr(upper, digest_fields[i]) + strlen(digest_fields[i]);
		char *letter = digits + strspn(digits, "0123456789");
		CHECK(letter < digits + 64 && *letter >= 'a' && *letter <= 'f');
		*letter = (char)(*letter - 'a' + 'A');
		expect_refused(upper, GPUCC_ECORRUPT, "64 lowercase hex digits");
		CHECK_ERROR_HAS(i == 0 ? "'key'" : i == 1 ? "'module_sha256'" : "'sha256'");
		free(upper);
	}
	/* ... and so is a digit written as an escape, the same string to JSON. */
	char *escaped = replace(json, "\"key\":\"", "\"key\":\"\\u0030");
	char *first_digit = strstr(escaped, "\\u0030") + 6; /* dropped: still 64 digits */
	memmove(first_digit, first_digit + 1, strlen(first_digit + 1) + 1);
	expect_refused(escaped, GPUCC_ECORRUPT, "'key' is not 64 lowercase hex digits");
	free(escaped);

	/* The strings of unknown fields need only be valid JSON; a writer
	 * refuses the control characters a reader would. */
	char *unknown = replace(json, "{\"key\":", "{\"note\":\"a\\u0007\\n\x7f\",\"key\":");
	gpucc_manifest um;
	CHECK_INT(gpucc_manifest_parse(&um, unknown, strlen(unknown), "unknown.json"), 0);
	gpucc_manifest_release(&um);
	free(unknown);
	gpucc_kernel bell[1] = {{"sa\axpy", -1, -1, -1}};
	gpucc_entry with_bell = sample("bell");
	with_bell.kernel_count = 1;
	with_bell.kernels = bell;
	CHECK_INT(gpucc_key_compute(&with_bell.key, &with_bell), 0);
	CHECK_INT(gpucc_entry_validate(&with_bell), GPUCC_EINVALID);
	CHECK_ERROR_HAS("a kernel's name 'sa\\x07xpy' holds a control character");

	/* A key that its components do not give parses, and fails the key
	 * check that verify and writers make. */
	char *changed = replace(json, "\"opt-level\":\"2\"", "\"opt-level\":\"3\"");
	gpucc_manifest m;
	CHECK_INT(gpucc_manifest_parse(&m, changed, strlen(changed), "bad.json"), 0);
	CHECK_INT(gpucc_manifest_check_keys(&m, "bad.json"), GPUCC_ECORRUPT);
	CHECK_ERROR_HAS("does not match");
	gpucc_manifest_release(&m);
	free(changed);
	CHECK_INT(gpucc_manifest_parse(&m, json, size, "good.json"), 0);
	CHECK_INT(gpucc_manifest_check_keys(&m, "good.json"), 0);
	gpucc_manifest_release(&m);
	/* Another key schema opens (list reports it, cache prune removes such
	 * entries), and the key check names it rather than a mismatch. */
	changed = replace(json, "\"key_schema\":1", "\"key_schema\":2");
	CHECK_INT(gpucc_manifest_parse(&m, changed, strlen(changed), "schema.json"), 0);
	CHECK_INT(m.entry_count ? m.entries[0].key_schema : 0, 2);
	CHECK_INT(gpucc_manifest_check_keys(&m, "schema.json"), GPUCC_EVERSION);
	CHECK_ERROR_HAS("'schema.json': corrupt manifest: entry 0: key schema 2 is not supported");
	gpucc_manifest_release(&m);
	free(changed);
	/* Any schema number is one (up to the field's 32 bits). */
	changed = replace(json, "\"key_schema\":1", "\"key_schema\":4294967295");
	CHECK_INT(gpucc_manifest_parse(&m, changed, strlen(changed), "schema.json"), 0);
	CHECK_INT(gpucc_manifest_check_keys(&m, "schema.json"), GPUCC_EVERSION);
	CHECK_ERROR_HAS("key schema 4294967295 is not supported");
	gpucc_manifest_release(&m);
	free(changed);
	changed = replace(json, "\"key_schema\":1", "\"key_schema\":4294967296");
	expect_refused(changed, GPUCC_ECORRUPT, "'key_schema' is not an integer from 0 to 2^32-1");
	free(changed);

	/* Duplicated and unsorted entries. */
	char *twice = malloc(2 * size + 8);
	const char *start = strchr(json, '\n');
	size_t body = (size_t)(strstr(json, "\n]}") - start);
	snprintf(twice, 2 * size + 8, "%.*s,%.*s\n]}", (int)(start - json + body), json, (int)body, start);
	expect_refused(twice, GPUCC_ECORRUPT, "sorted");
	free(twice);
	free(json);
}

/* JSON bounds no member name: an unknown field with a long name is skipped
 * like any other, and a long option name (which writers accept, up to the
 * string limit) reads back as it was written. */
static void test_long_member_names(void)
{
	char long_name[201];
	memset(long_name, 'o', sizeof long_name - 1);
	long_name[sizeof long_name - 1] = '\0';
	gpucc_option two[2] = {{long_name, "1"}, {"opt-level", "2"}};
	gpucc_entry e = sample("long");
	e.option_count = 2;
	e.options = two;
	CHECK_INT(gpucc_key_compute(&e.key, &e), 0);
	const gpucc_entry *list[1] = {&e};
	char *json;
	size_t size;
	CHECK_INT(gpucc_manifest_write(&json, &size, list, 1), 0);
	gpucc_manifest m;
	CHECK_INT(gpucc_manifest_parse(&m, json, size, "long.json"), 0);
	if (m.entry_count == 1 && m.entries[0].option_count == 2) {
		CHECK_STR(m.entries[0].options[0].name, long_name);
		const gpucc_entry *again[1] = {&m.entries[0]};
		char *json2;
		size_t size2;
		CHECK_INT(gpucc_manifest_write(&json2, &size2, again, 1), 0);
		CHECK(size2 == size && memcmp(json, json2, size) == 0);
		free(json2);
	} else {
		CHECK(!"the long option name did not read back");
	}
	gpucc_manifest_release(&m);

	/* Unknown fields with long names, one of them escaped, at the top, in
	 * an entry and in a kernel. */
	char unknown[400];
	snprintf(unknown, sizeof unknown, "{\"%s\":[1],\"key\":", long_name);
	char *a = replace(json, "{\"key\":", unknown);
	snprintf(unknown, sizeof unknown, "{\"\\u0078%s\":{},\"name\":", long_name);
	char *b = replace(a, "{\"name\":", unknown);
	snprintf(unknown, sizeof unknown, "{\"%s\":\"\",\"format\":", long_name);
	char *c = replace(b, "{\"format\":", unknown);
	CHECK(strlen(c) > strlen(json) + 3 * sizeof long_name);
	CHECK_INT(gpucc_manifest_parse(&m, c, strlen(c), "unknown.json"), 0);
	CHECK_INT(m.entry_count, 1);
	gpucc_manifest_release(&m);
	free(a);
	free(b);
	free(c);
	free(json);

	/* Long unknown names take no memory: 20,000 of 200 bytes after
	 * 'entries' (walked twice, since 'entries' comes first) leave the
	 * parsed form as small as it is without them. */
	size_t count = 20000, many_size = 64 + count * (sizeof long_name + 4);
	char *many = malloc(many_size), *at = many;
	at += sprintf(at, "{\"entries\":[]");
	for (size_t i = 0; i < count; i++)
		at += sprintf(at, ",\"%s\":0", long_name);
	sprintf(at, ",\"version\":1,\"format\":\"gpucc-image\"}");
	CHECK_INT(gpucc_manifest_parse(&m, many, strlen(many), "many.json"), 0);
	CHECK(m.arena && gpucc_arena_bytes(m.arena) < (size_t)1 << 20);
	gpucc_manifest_release(&m);
	free(many);
}

/* Writers refuse what readers would: a kernel resource count past 2^40
 * (2^40 itself passes both). */
static void test_kernel_resource_bound(void)
{
	gpucc_kernel big[1] = {{"big", 0, 0, 0}};
	gpucc_entry e = sample("resources");
	e.kernel_count = 1;
	e.kernels = big;
	int64_t *counts[3] = {&big[0].registers, &big[0].shared_bytes, &big[0].scratch_bytes};
	for (int i = 0; i < 3; i++) {
		*counts[i] = GPUCC_KERNEL_RESOURCE_MAX + 1;
		CHECK_INT(gpucc_key_compute(&e.key, &e), 0);
		CHECK_INT(gpucc_entry_validate(&e), GPUCC_EINVALID);
		CHECK_ERROR_HAS("kernel 'big' has a resource count over 2^40");
		*counts[i] = GPUCC_KERNEL_RESOURCE_MAX;
	}
	CHECK_INT(gpucc_key_compute(&e.key, &e), 0);
	CHECK_INT(gpucc_entry_validate(&e), 0);
	const gpucc_entry *list[1] = {&e};
	char *json;
	size_t size;
	CHECK_INT(gpucc_manifest_write(&json, &size, list, 1), 0);
	gpucc_manifest m;
	CHECK_INT(gpucc_manifest_parse(&m, json, size, "bound.json"), 0);
	CHECK(m.entry_count == 1 && m.entries[0].kernels[0].scratch_bytes == GPUCC_KERNEL_RESOURCE_MAX);
	gpucc_manifest_release(&m);
	free(json);
}

static void test_payload_member_name(void)
{
	gpucc_payload p = {GPUCC_PART_HSACO, {{0}}, 0};
	gpucc_digest_buffer(&p.sha256, "abc", 3);
	char name[GPUCC_PAYLOAD_MEMBER_SIZE];
	gpucc_payload_member_name(name, &p);
	CHECK_STR(name, "payloads/ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad.hsaco");
}

/* Names a manifest cannot carry: gpucc_entry_names_check refuses them
 * before any key or payload exists (as a compile plans), naming the string
 * spelt and the defect, and gpucc_entry_validate, which every writer
 * calls, refuses them with the same message; a module's file name is
 * spelt into one that a manifest carries (manifest.md, "Names"). */
static void test_names(void)
{
	static const struct {
		const char *kernel, *message;
	} refused[] = {
		{"sin\001exp", "a kernel's name 'sin\\x01exp' holds a control character, which a "
		               "manifest cannot carry (formats/manifest.md, Names)"},
		{"sin\nexp", "a kernel's name 'sin\\nexp' holds a control character"},
		{"sin\xe9xp", "a kernel's name 'sin\\xe9xp' is not UTF-8"},
		{"\xc0\xaf", "a kernel's name '\\xc0\\xaf' is not UTF-8"}, /* overlong '/' */
	};
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		gpucc_kernel k[1] = {{refused[i].kernel, -1, -1, -1}};
		gpucc_entry e = {0}; /* nothing else: what a plan has */
		e.kernel_count = 1;
		e.kernels = k;
		CHECK_INT(gpucc_entry_names_check(&e), GPUCC_EINVALID);
		CHECK_ERROR_HAS(refused[i].message);
		char first[512];
		snprintf(first, sizeof first, "%s", gpucc_error_last()->message);
		gpucc_entry full = sample("names");
		full.kernel_count = 1;
		full.kernels = k;
		CHECK_INT(gpucc_key_compute(&full.key, &full), 0);
		CHECK_INT(gpucc_entry_validate(&full), GPUCC_EINVALID);
		CHECK_STR(gpucc_error_last()->message, first);
	}
	/* The module name, an external, an option value: each named as what it is. */
	gpucc_entry e = sample("names");
	e.module = "a\nb.ll";
	CHECK_INT(gpucc_entry_names_check(&e), GPUCC_EINVALID);
	CHECK_ERROR_HAS("the module name 'a\\nb.ll' holds a control character");
	e = sample("names");
	const char *bad_external[1] = {"caf\xe9"};
	e.externals = bad_external;
	CHECK_INT(gpucc_entry_names_check(&e), GPUCC_EINVALID);
	CHECK_ERROR_HAS("an external's name 'caf\\xe9' is not UTF-8");
	e = sample("names");
	CHECK_INT(gpucc_entry_names_check(&e), 0);
	gpucc_entry empty = {0};
	CHECK_INT(gpucc_entry_names_check(&empty), 0);
	/* A long name is cut in the message, which stays short. */
	char *long_name = malloc(GPUCC_MANIFEST_STRING_MAX + 2);
	memset(long_name, 'k', GPUCC_MANIFEST_STRING_MAX + 1);
	long_name[GPUCC_MANIFEST_STRING_MAX + 1] = '\0';
	gpucc_kernel lk[1] = {{long_name, -1, -1, -1}};
	e.kernel_count = 1;
	e.kernels = lk;
	CHECK_INT(gpucc_entry_names_check(&e), GPUCC_EINVALID);
	CHECK_ERROR_HAS("kkk...' is a string of 65537 bytes");
	CHECK(strlen(gpucc_error_last()->message) < 256);
	free(long_name);

	/* Spelling: control characters as the messages spell them, bytes that
	 * are not UTF-8 as \xHH, valid UTF-8 and backslashes as they are; what
	 * comes out passes the check. */
	static const struct {
		const char *name, *spelt;
	} spellings[] = {
		{"saxpy.ll", "saxpy.ll"},
		{"x\ny\t.ll", "x\\ny\\t.ll"},
		{"\x01\x7f", "\\x01\\x7f"},
		{"caf\xe9.ll", "caf\\xe9.ll"},
		{"caf\xc3\xa9.ll", "caf\xc3\xa9.ll"},       /* UTF-8 */
		{"\xe2\x82", "\\xe2\\x82"},               /* a sequence cut short */
		{"\xed\xa0\x80", "\\xed\\xa0\\x80"},   /* a surrogate */
		{"a\\x41", "a\\x41"},
		{"", ""},
	};
	for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
		char *spelt = gpucc_manifest_spell_name(spellings[i].name);
		CHECK_STR(spelt, spellings[i].spelt);
		gpucc_entry m = {0};
		m.module = spelt;
		CHECK_INT(gpucc_entry_names_check(&m), 0);
		free(spelt);
	}
	/* The public form takes the base name of a path. */
	static const struct {
		const char *path, *name;
	} paths[] = {
		{"dir/sub/k.ll", "k.ll"}, {"k.ll", "k.ll"}, {"dir/\xff.ll", "\\xff.ll"}, {"dir/", "dir/"},
	};
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		char *name = NULL;
		CHECK_INT(gpucc_module_name_from_path(&name, paths[i].path), 0);
		CHECK_STR(name, paths[i].name);
		gpucc_free(name);
	}
}

/* The writer's checks of one entry (gpucc_entry_validate), each with its
 * words; the reader refuses most of these while parsing, before. */
static void expect_invalid(gpucc_entry *e, const char *needle)
{
	gpucc_key_compute(&e->key, e);
	CHECK_INT(gpucc_entry_validate(e), GPUCC_EINVALID);
	CHECK_ERROR_HAS(needle);
}

static void test_validate_entry(void)
{
	gpucc_entry e = sample("validate");
	CHECK_INT(gpucc_entry_validate(&e), 0);
	e.target = NULL;
	CHECK_INT(gpucc_entry_validate(&e), GPUCC_EINVALID);
	CHECK_ERROR_HAS("an entry needs a target and a triple");
	e = sample("validate");
	e.triple = NULL;
	CHECK_INT(gpucc_entry_validate(&e), GPUCC_EINVALID);
	CHECK_ERROR_HAS("an entry needs a target and a triple");

	gpucc_kernel unnamed[1] = {{"", -1, -1, -1}};
	e = sample("validate");
	e.kernels = unnamed;
	e.kernel_count = 1;
	expect_invalid(&e, "a kernel has an empty name");

	const char *unsorted[2] = {"vprintf", "malloc"}, *twice[2] = {"malloc", "malloc"};
	e = sample("validate");
	e.externals = unsorted;
	e.external_count = 2;
	expect_invalid(&e, "externals must be sorted and unique ('malloc')");
	e.externals = twice;
	expect_invalid(&e, "externals must be sorted and unique ('malloc')");

	gpucc_payload kinds[2];
	memcpy(kinds, payloads, sizeof kinds);
	e = sample("validate");
	e.payloads = kinds;
	kinds[1].part = (gpucc_part)GPUCC_PART_COUNT;
	expect_invalid(&e, "unknown payload kind");
	kinds[1].part = GPUCC_PART_PTX; /* one kind twice */
	expect_invalid(&e, "payloads must be sorted by kind, one of each");
	kinds[0].part = GPUCC_PART_CUBIN; /* two kinds, out of order */
	expect_invalid(&e, "payloads must be sorted by kind, one of each");

	/* Names: at most GPUCC_MANIFEST_STRING_MAX bytes, a blank allowed, a
	 * control character not. */
	char *name = malloc(GPUCC_MANIFEST_STRING_MAX + 2);
	memset(name, 'm', GPUCC_MANIFEST_STRING_MAX + 1);
	name[GPUCC_MANIFEST_STRING_MAX] = '\0';
	e = sample("validate");
	e.module = name;
	gpucc_key_compute(&e.key, &e);
	CHECK_INT(gpucc_entry_validate(&e), 0);
	name[GPUCC_MANIFEST_STRING_MAX] = 'm';
	name[GPUCC_MANIFEST_STRING_MAX + 1] = '\0';
	expect_invalid(&e, "is a string of 65537 bytes, longer than the 65536 a manifest allows");
	free(name);
	e = sample("validate");
	e.module = "my kernels.ll";
	gpucc_key_compute(&e.key, &e);
	CHECK_INT(gpucc_entry_validate(&e), 0);
	e.module = "my\x1fkernels.ll";
	expect_invalid(&e, "holds a control character");
	/* A key schema this gpucc does not know: no key to check it by. */
	e = sample("validate");
	e.key_schema = 2;
	CHECK_INT(gpucc_entry_validate(&e), GPUCC_EVERSION);
	CHECK_ERROR_HAS("key schema 2 is not supported");
}

/* A payload of 2^40 bytes is the largest a manifest may list, in both
 * places that hold to it: the writer's check (gpucc_entry_validate) and
 * the reader's parse, each with its own words for one byte more. */
static void test_payload_size_bound(void)
{
	gpucc_entry e = sample("payload sizes");
	payloads[1].size = GPUCC_PAYLOAD_MAX_SIZE + 1;
	CHECK_INT(gpucc_key_compute(&e.key, &e), 0);
	CHECK_INT(gpucc_entry_validate(&e), GPUCC_EINVALID);
	CHECK_ERROR_HAS("payload of 1099511627777 bytes is too large");
	payloads[1].size = GPUCC_PAYLOAD_MAX_SIZE;
	CHECK_INT(gpucc_key_compute(&e.key, &e), 0);
	CHECK_INT(gpucc_entry_validate(&e), 0);
	const gpucc_entry *list[1] = {&e};
	char *json;
	size_t size;
	CHECK_INT(gpucc_manifest_write(&json, &size, list, 1), 0);
	gpucc_manifest m;
	CHECK_INT(gpucc_manifest_parse(&m, json, size, "bound.json"), 0);
	CHECK(m.entry_count == 1 && m.entries[0].payloads[1].size == GPUCC_PAYLOAD_MAX_SIZE);
	gpucc_manifest_release(&m);
	char *over = replace(json, "\"size\":1099511627776", "\"size\":1099511627777");
	CHECK(strcmp(over, json) != 0);
	expect_refused(over, GPUCC_ECORRUPT, "a payload's 'size' is not a sane byte count");
	free(over);
	free(json);
	payloads[1].size = 5;
}

/* The canonical manifest of three entries (made from modules "a", "b",
 * "c"), sorted by key. */
static char *three_entries(size_t *size)
{
	gpucc_entry e[3] = {sample("a"), sample("b"), sample("c")};
	const gpucc_entry *list[3] = {&e[0], &e[1], &e[2]};
	for (int i = 0; i < 3; i++)
		for (int j = i + 1; j < 3; j++)
			if (gpucc_digest_compare(&list[j]->key, &list[i]->key) < 0) {
				const gpucc_entry *t = list[i];
				list[i] = list[j];
				list[j] = t;
			}
	char *json = NULL;
	CHECK_INT(gpucc_manifest_write(&json, size, list, 3), 0);
	return json;
}

/* json parsed (it must be) and checked against the layout: 0, or the
 * error with "not laid out" and needle. */
static void expect_layout(const char *json, const char *needle)
{
	gpucc_manifest m;
	CHECK_INT(gpucc_manifest_parse(&m, json, strlen(json), "m.json"), 0);
	int rc = gpucc_manifest_check_layout(&m, json, strlen(json), "m.json");
	if (!needle) {
		CHECK_INT(rc, 0);
	} else {
		if (rc != GPUCC_ECORRUPT)
			fprintf(stderr, "  for %s: rc %d\n", needle, rc);
		CHECK_INT(rc, GPUCC_ECORRUPT);
		CHECK_ERROR_HAS("'m.json': corrupt manifest: not laid out one entry per line");
		CHECK_ERROR_HAS(needle);
	}
	gpucc_manifest_release(&m);
}

/* An indexed image's manifest is laid out one entry per line: what the
 * writer makes, and no other JSON text of the same entries. */
static void test_layout(void)
{
	size_t size;
	char *json = three_entries(&size);
	if (!json)
		return;
	expect_layout(json, NULL);
	expect_layout("{\"format\":\"gpucc-image\",\"version\":1,\"entries\":[\n]}\n", NULL);
	struct {
		const char *from, *to, *needle;
	} cases[] = {
		{"{\"format\":", "{ \"format\":", "another first line at byte 0"},
		{"\"entries\":[\n", "\"entries\":[\n\n", "an entry that does not begin a line"},
		{"\"entries\":[\n{", "\"entries\":[\n {", "an entry that does not begin a line"},
		{"},\n{", "} ,\n{", "something else than ','"},
		{"},\n{", "},\r\n{", "an entry that does not begin a line"},
		{"\"key_schema\"", "\n\"key_schema\"", "a newline inside an entry"},
		{"\n]}\n", "\n]}\n\n", "another end than the line ']}'"},
		{"\n]}\n", "\n]}", "another end than the line ']}'"},
		{"\n]}\n", "]}\n", "another end than the line ']}'"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *edited = replace(json, cases[i].from, cases[i].to);
		CHECK(strcmp(edited, json) != 0);
		expect_layout(edited, cases[i].needle);
		free(edited);
	}
	/* Spaces inside an entry's line are JSON the layout takes. */
	char *spaced = replace(json, "\"key_schema\"", " \"key_schema\" ");
	expect_layout(spaced, NULL);
	free(spaced);
	free(json);
}

/* gpucc_manifest_entry_on_line: from the bytes around an object alone. */
static void test_entry_on_line(void)
{
	size_t size;
	char *json = three_entries(&size);
	gpucc_manifest m;
	if (!json || gpucc_manifest_parse(&m, json, size, "m.json") != 0) {
		CHECK(0);
		free(json);
		return;
	}
	for (size_t i = 0; i < 3; i++) {
		size_t from = m.spans[2 * i] - 1, len = m.spans[2 * i + 1];
		size_t to = from + 1 + len + 4 < size ? from + 1 + len + 4 : size;
		CHECK(gpucc_manifest_entry_on_line(json + from, to - from, len, to == size));
		/* the last entry's line, not said to end the manifest or cut
		 * short */
		if (i == 2) {
			CHECK(!gpucc_manifest_entry_on_line(json + from, to - from, len, false));
			CHECK(!gpucc_manifest_entry_on_line(json + from, to - from - 1, len, true));
		}
		/* a range one byte off either way */
		CHECK(!gpucc_manifest_entry_on_line(json + from + 1, to - from - 1, len - 1, to == size));
		CHECK(!gpucc_manifest_entry_on_line(json + from, to - from, len - 1, to == size));
	}
	/* An entry held in a field of another, on that entry's line. */
	const char *held = "\n{\"a\":{\"key\":1}},\n";
	CHECK(gpucc_manifest_entry_on_line(held, strlen(held), strlen(held) - 3, false));
	CHECK(!gpucc_manifest_entry_on_line(held + 6, strlen(held) - 6, 9, false));
	gpucc_manifest_release(&m);
	free(json);
}

int main(void)
{
	RUN(test_round_trip);
	RUN(test_layout);
	RUN(test_entry_on_line);
	RUN(test_refusals);
	RUN(test_long_member_names);
	RUN(test_kernel_resource_bound);
	RUN(test_payload_size_bound);
	RUN(test_validate_entry);
	RUN(test_payload_member_name);
	RUN(test_names);
	return CHECK_DONE();
}
