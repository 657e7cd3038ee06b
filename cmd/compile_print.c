/*
 * cmd/compile_print.c -- what `gpucc compile` prints (cmd/compile_print.h):
 * the backend's diagnostics and clang's lines, warnings, the progress line
 * or a line per job, --explain's key parts and --json's summary.
 */
#include "compile_print.h"
/* The speller of every message (cmd/meson.build compiles it in). */
#include "../formats/escape.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *status_name(gpucc_compile_status s)
{
	switch (s) {
	case GPUCC_COMPILE_HIT: return "hit";
	case GPUCC_COMPILE_COMPILED: return "compiled";
	case GPUCC_COMPILE_FAILED: return "failed";
	case GPUCC_COMPILE_SKIPPED: return "skipped";
	default: return "miss";
	}
}

/* Write the backend's diagnostics (LLVM's, ptxas's and ld.lld's lines,
 * which may quote the module's source: a name, a comment) to f with their
 * control characters spelt as in every message, except the line breaks
 * and tabs that lay them out, so that no escape sequence reaches a
 * terminal.  The module's name in them is spelt already, as in the job's
 * error (libgpucc names modules as they are shown). */
static void compile_put_diagnostics(FILE *f, const char *text)
{
	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		char spelt[GPUCC_ESCAPED_BYTE_MAX];
		if (*p == '\n' || *p == '\t')
			fputc(*p, f);
		else
			fwrite(spelt, 1, gpucc_escape_byte(spelt, *p), f);
	}
}

/* Whether a line of a count that clang adds ("2 warnings generated when
 * compiling for sm_90."), which differs from target to target. */
static bool clang_count_line(const char *line, size_t len)
{
	return len && line[0] >= '1' && line[0] <= '9' && memmem(line, len, " generated", 10) != NULL;
}

/* clang's own lines for a source it refused (a job of a source that failed
 * before its key was known, so in clang), as clang wrote them: its
 * `file:line:col: error:` form is what editors and IDEs parse.  libgpucc
 * gives them as "SOURCE: TARGET: clang: LINE".  clang's count ("1 error
 * generated when compiling for gfx90a.") is left out, and each distinct
 * text is written once, however many targets clang refused it for (shown
 * holds the texts written, *count of them, at most COMPILE_SHOWN_MAX; the caller
 * frees them), then each target's own summary line follows. */
#define COMPILE_SHOWN_MAX 64
static void compile_put_clang_lines(FILE *f, const gpucc_compile_result *r, char **shown, size_t *count)
{
	if (!r->source || r->key_known || !r->diagnostics)
		return;
	const char *mark = strstr(r->diagnostics, ": clang: ");
	if (!mark)
		return;
	size_t prefix = (size_t)(mark - r->diagnostics) + strlen(": clang: ");
	/* The lines without their prefix, clang's count left out. */
	size_t cap = strlen(r->diagnostics) + 1, used = 0;
	char *text = malloc(cap);
	if (!text)
		return;
	for (const char *p = r->diagnostics; *p;) {
		size_t len = strcspn(p, "\n");
		const char *line = len > prefix ? p + prefix : p;
		size_t line_len = len > prefix ? len - prefix : len;
		if (!clang_count_line(line, line_len)) {
			memcpy(text + used, line, line_len);
			used += line_len;
			text[used++] = '\n';
		}
		p += len + (p[len] == '\n');
	}
	text[used] = '\0';
	for (size_t i = 0; i < *count; i++)
		if (strcmp(shown[i], text) == 0) {
			free(text);
			return;
		}
	for (size_t k = 0; k < used; k++) { /* spelt as compile_put_diagnostics spells */
		char spelt[GPUCC_ESCAPED_BYTE_MAX];
		unsigned char byte = (unsigned char)text[k];
		if (byte == '\t' || byte == '\n')
			fputc(byte, f);
		else
			fwrite(spelt, 1, gpucc_escape_byte(spelt, byte), f);
	}
	if (*count < COMPILE_SHOWN_MAX)
		shown[(*count)++] = text;
	else
		free(text);
}

/* A job's warnings.  clang's ("SOURCE: TARGET: clang: LINE", a job of a
 * source) are written as clang wrote them, its count left out, and each
 * distinct text once per run, however many targets clang warned alike for
 * (shown, *count: as compile_put_clang_lines); every other line is prefixed as
 * every message is.  libgpucc spells their control characters already. */
static void compile_put_warnings(FILE *f, const gpucc_compile_result *r, char **shown, size_t *count)
{
	static const char mark[] = ": clang: ";
	const char *text = r->warnings;
	size_t used = 0;
	char *clang = r->source ? malloc(strlen(text) + 1) : NULL;
	for (const char *p = text; *p;) {
		size_t len = strcspn(p, "\n");
		const char *at = clang ? memmem(p, len, mark, sizeof mark - 1) : NULL;
		if (at) {
			const char *line = at + sizeof mark - 1;
			size_t line_len = len - (size_t)(line - p);
			if (!clang_count_line(line, line_len)) {
				memcpy(clang + used, line, line_len);
				used += line_len;
				clang[used++] = '\n';
			}
		}
		p += len + (p[len] == '\n');
	}
	if (clang) {
		clang[used] = '\0';
		bool seen = used == 0;
		for (size_t i = 0; i < *count && !seen; i++)
			seen = strcmp(shown[i], clang) == 0;
		if (!seen)
			fputs(clang, f);
		if (!seen && *count < COMPILE_SHOWN_MAX)
			shown[(*count)++] = clang;
		else
			free(clang);
	}
	bool grouped = clang != NULL;
	for (const char *p = text; *p;) {
		size_t len = strcspn(p, "\n");
		if (!(grouped && memmem(p, len, mark, sizeof mark - 1)))
			fprintf(f, "gpucc compile: warning: %.*s\n", (int)len, p);
		p += len + (p[len] == '\n');
	}
}

const gpucc_compile_result *compile_put_results(gpucc_compile *c, bool verbose)
{
	const gpucc_compile_result *first_failed = NULL;
	char *clang_shown[COMPILE_SHOWN_MAX];
	size_t clang_shown_count = 0;
	for (size_t i = 0; i < gpucc_compile_result_count(c); i++) {
		const gpucc_compile_result *r = gpucc_compile_result_at(c, i);
		if (r->diagnostics && (verbose || r->status != GPUCC_COMPILE_FAILED))
			compile_put_diagnostics(stderr, r->diagnostics);
		else if (r->status == GPUCC_COMPILE_FAILED)
			compile_put_clang_lines(stderr, r, clang_shown, &clang_shown_count);
		if (r->warnings)
			compile_put_warnings(stderr, r, clang_shown, &clang_shown_count);
		if (r->status == GPUCC_COMPILE_FAILED) {
			fprintf(stderr, "gpucc compile: error: %s\n", r->error);
			if (!first_failed)
				first_failed = r;
		}
	}
	for (size_t i = 0; i < clang_shown_count; i++)
		free(clang_shown[i]);
	return first_failed;
}

/* "MODULE TARGET: compiled in 1.2 s" (hit, remote hit, failed, skipped). */
static void log_line(const gpucc_compile_result *r)
{
	cmd_put_shown(stdout, r->module);
	printf(" %s: ", r->target);
	if (r->status == GPUCC_COMPILE_COMPILED)
		printf("compiled in %.2f s\n", r->seconds);
	else
		printf("%s\n", r->from_remote ? "remote hit" : status_name(r->status));
	fflush(stdout);
}

void compile_on_progress(void *ctx, const gpucc_compile_progress *p)
{
	compile_progress *s = ctx;
	if (s->lines && p->last && p->total)
		log_line(p->last);
	if (!s->tty)
		return;
	/* Hits, skips and jobs failed while planning are all reported before
	 * the first compile ends, in no time: the jobs left are compiles, at
	 * the pace of those done so far (none done: no estimate yet). */
	if (p->total == 0 && p->sources_total) { /* clang, while the run is planned */
		fprintf(stderr, "\r\033[Kgpucc compile: clang %zu/%zu (source, target) pairs, %.1fs",
		        p->sources_done, p->sources_total, p->elapsed);
		fflush(stderr);
		s->drawn = true;
		return;
	}
	if (p->last->seconds > 0)
		s->compiled++;
	fprintf(stderr, "\r\033[Kgpucc compile: %zu/%zu done, %zu hit%s, %zu failed, %.1fs",
	        p->done, p->total, p->hits, p->hits == 1 ? "" : "s", p->failed, p->elapsed);
	if (p->done < p->total && s->compiled)
		fprintf(stderr, ", ETA %.0fs",
		        p->elapsed / (double)s->compiled * (double)(p->total - p->done));
	fflush(stderr);
	s->drawn = true;
}

void compile_print_explain(gpucc_compile *c)
{
	for (size_t i = 0; i < gpucc_compile_result_count(c); i++) {
		const gpucc_compile_result *r = gpucc_compile_result_at(c, i);
		char hex[GPUCC_DIGEST_HEX_SIZE] = "-";
		if (r->key_known)
			gpucc_digest_to_hex(hex, &r->key);
		const char *status = r->status == GPUCC_COMPILE_PENDING || r->status == GPUCC_COMPILE_COMPILED
		                         ? "miss" : status_name(r->status);
		cmd_put_shown(stdout, r->module);
		printf(" %s: %s %s\n", r->target, status, hex);
		if (r->source) { /* how a source's IR was found: a record's hit, or why not */
			printf("  %-12s ", "source");
			cmd_put_shown(stdout, r->source);
			putchar('\n');
		}
		for (size_t k = 0; k < r->key_part_count; k++) {
			/* Values may span lines (device-libs, options): indent them. */
			printf("  %-12s ", r->key_parts[k].name);
			const char *v = r->key_parts[k].value;
			if (!*v)
				printf("(none)");
			for (; *v; v++) {
				if (*v == '\n' && v[1])
					printf("\n  %-12s ", "");
				else if (*v == '\0' + 0 || (unsigned char)*v < 0x20) {
					if (*v != '\n')
						putchar(' ');
				} else
					putchar(*v);
			}
			putchar('\n');
		}
	}
}

static void json_result(FILE *f, const gpucc_compile_result *r)
{
	char hex[GPUCC_DIGEST_HEX_SIZE];
	fprintf(f, "{\"module\":");
	cmd_json_string(f, r->module);
	fprintf(f, ",\"target\":");
	cmd_json_string(f, r->target);
	fprintf(f, ",\"status\":\"%s\"", status_name(r->status));
	if (r->from_remote)
		fprintf(f, ",\"remote\":true");
	if (r->key_known) {
		gpucc_digest_to_hex(hex, &r->key);
		fprintf(f, ",\"key\":\"%s\"", hex);
	}
	fprintf(f, ",\"seconds\":%.6f", r->seconds);
	if (r->error) {
		fprintf(f, ",\"error\":");
		cmd_json_string(f, r->error);
	}
	if (r->diagnostics) {
		fprintf(f, ",\"diagnostics\":");
		cmd_json_string(f, r->diagnostics);
	}
	if (r->warnings) {
		fprintf(f, ",\"warnings\":");
		cmd_json_string(f, r->warnings);
	}
	if (r->source) {
		fprintf(f, ",\"source\":");
		cmd_json_string(f, r->source);
	}
	if (r->entry) {
		const gpucc_entry *e = r->entry;
		fprintf(f, ",\"kernels\":[");
		for (size_t k = 0; k < e->kernel_count; k++) {
			const gpucc_kernel *kn = &e->kernels[k];
			fprintf(f, "%s{\"name\":", k ? "," : "");
			cmd_json_string(f, kn->name);
			if (kn->registers >= 0)
				fprintf(f, ",\"registers\":%lld", (long long)kn->registers);
			if (kn->shared_bytes >= 0)
				fprintf(f, ",\"shared_bytes\":%lld", (long long)kn->shared_bytes);
			if (kn->scratch_bytes >= 0)
				fprintf(f, ",\"scratch_bytes\":%lld", (long long)kn->scratch_bytes);
			fputc('}', f);
		}
		fprintf(f, "],\"externals\":[");
		for (size_t k = 0; k < e->external_count; k++) {
			if (k)
				fputc(',', f);
			cmd_json_string(f, e->externals[k]);
		}
		fprintf(f, "],\"payloads\":[");
		for (size_t k = 0; k < e->payload_count; k++) {
			gpucc_digest_to_hex(hex, &e->payloads[k].sha256);
			fprintf(f, "%s{\"part\":\"%s\",\"size\":%llu,\"sha256\":\"%s\"}", k ? "," : "",
			        gpucc_part_name(e->payloads[k].part),
			        (unsigned long long)e->payloads[k].size, hex);
		}
		fputc(']', f);
	}
	fputc('}', f);
}

void compile_print_json(gpucc_compile *c, const char *output, double seconds, bool dry_run)
{
	size_t counts[5] = {0}, remote_hits = 0;
	/* The payload bytes of the entries compiled, hit locally and hit on a
	 * remote: what a dashboard charts of a run's cache. */
	uint64_t bytes[3] = {0};
	size_t n = gpucc_compile_result_count(c);
	for (size_t i = 0; i < n; i++) {
		const gpucc_compile_result *r = gpucc_compile_result_at(c, i);
		counts[r->status]++;
		remote_hits += r->from_remote;
		size_t which = r->status == GPUCC_COMPILE_COMPILED ? 0 : r->from_remote ? 2 : 1;
		for (size_t k = 0; r->entry && k < r->entry->payload_count; k++)
			bytes[which] += r->entry->payloads[k].size;
	}
	printf("{\"jobs\":%zu,\"hits\":%zu,\"remote_hits\":%zu,\"compiled\":%zu,\"failed\":%zu,"
	       "\"skipped\":%zu,\"misses\":%zu,\"dry_run\":%s,\"threads\":%u,\"llvm_loaded\":%s,"
	       "\"seconds\":%.6f,\"bytes\":{\"compiled\":%" PRIu64 ",\"hits\":%" PRIu64
	       ",\"remote_hits\":%" PRIu64 "},\"output\":",
	       n, counts[GPUCC_COMPILE_HIT], remote_hits, counts[GPUCC_COMPILE_COMPILED],
	       counts[GPUCC_COMPILE_FAILED], counts[GPUCC_COMPILE_SKIPPED],
	       counts[GPUCC_COMPILE_PENDING] + counts[GPUCC_COMPILE_COMPILED],
	       dry_run ? "true" : "false", gpucc_compile_threads_used(c),
	       gpucc_compile_backend_loaded(c) ? "true" : "false", seconds, bytes[0], bytes[1],
	       bytes[2]);
	if (output)
		cmd_json_string(stdout, output);
	else
		printf("null");
	printf(",\"results\":[");
	for (size_t i = 0; i < n; i++) {
		printf("%s\n", i ? "," : "");
		json_result(stdout, gpucc_compile_result_at(c, i));
	}
	printf("\n]}\n");
}

/* A warning of the cache's (a corrupt entry, a failed insert), on a line
 * of its own: the progress line it would end is cleared first, and drawn
 * again by the next progress report.  Called under the compile's lock, as
 * compile_on_progress is, or before any thread starts. */
void compile_cache_warning(void *ctx, const char *message)
{
	compile_progress *s = ctx;
	if (s && s->drawn) {
		fputs("\r\033[K", stderr);
		s->drawn = false;
	}
	fprintf(stderr, "gpucc compile: warning: cache: %s\n", message);
}
