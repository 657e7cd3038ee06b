/*
 * lib/compile/compile_source_reads.c -- what a compile of a source reads that
 * clang's -MD list does not name, for the direct-mode records of
 * lib/compile/compile_source.c: the files its arguments name (response files and
 * what they hold, configuration files, files given as option values), the
 * include search clang -v reports (the directories searched, in order, and
 * those it dropped as missing), and what a file's text asks of the
 * preprocessor that no -MD list shows (the time macros, __has_include,
 * __has_embed).
 *
 * Response files are read as clang's driver reads them (LLVM's GNU
 * tokenizer: blanks separate, quotes group, a backslash escapes the next
 * character; a nested "@FILE" is relative to the working directory), a
 * configuration file as clang reads one (the same, after '#' comment lines
 * and backslash-newline continuations; a nested "@FILE" is relative to the
 * configuration file's directory).  Where these readings are wider than
 * clang's (a token that is a value rather than a path, a file named but
 * not read), the record lists more than clang read: a needless miss at
 * worst, never a stale hit.
 */
#include "compile_source.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NESTING_MAX 16             /* response files within response files */
#define ARGUMENT_FILE_MAX (1 << 20) /* a larger response file is not expanded */

/* ---- lists of strings ---------------------------------------------------- */

void gpucc_strlist_push(gpucc_strlist *l, const char *text, size_t len)
{
	if (l->failed)
		return;
	if (l->count + 1 >= l->capacity) {
		size_t n = l->capacity ? 2 * l->capacity : 16;
		char **grown = realloc(l->items, n * sizeof *grown);
		if (!grown) {
			l->failed = true;
			return;
		}
		l->items = grown;
		l->capacity = n;
	}
	char *copy = malloc(len + 1);
	if (!copy) {
		l->failed = true;
		return;
	}
	memcpy(copy, text, len);
	copy[len] = '\0';
	l->items[l->count++] = copy;
	l->items[l->count] = NULL;
}

bool gpucc_strlist_has(const gpucc_strlist *l, const char *text)
{
	for (size_t i = 0; i < l->count; i++)
		if (strcmp(l->items[i], text) == 0)
			return true;
	return false;
}

void gpucc_strlist_push_new(gpucc_strlist *l, const char *text)
{
	if (!gpucc_strlist_has(l, text))
		gpucc_strlist_push(l, text, strlen(text));
}

void gpucc_strlist_release(gpucc_strlist *l)
{
	for (size_t i = 0; i < l->count; i++)
		free(l->items[i]);
	free(l->items);
	memset(l, 0, sizeof *l);
}

/* ---- clang -v ---------------------------------------------------------- */

static bool starts(const char *line, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);
	return len >= n && memcmp(line, prefix, n) == 0;
}

/* A directory line of the search list, " DIR" or " DIR (framework
 * directory)", into list. */
static void push_search_dir(gpucc_strlist *list, const char *line, size_t len)
{
	static const char *const suffixes[] = {" (framework directory)", " (headermap)"};
	line++;
	len--;
	for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
		size_t n = strlen(suffixes[i]);
		if (len > n && memcmp(line + len - n, suffixes[i], n) == 0)
			len -= n;
	}
	gpucc_strlist_push(list, line, len);
}

/* The quoted path of 'ignoring nonexistent directory "DIR"', into list. */
static void push_quoted(gpucc_strlist *list, const char *line, size_t len)
{
	const char *open = memchr(line, '"', len);
	const char *close = open ? memchr(open + 1, '"', len - (size_t)(open + 1 - line)) : NULL;
	if (close)
		gpucc_strlist_push(list, open + 1, (size_t)(close - open - 1));
}

/* Whether a line before the search list ends is one of -v's own: what it
 * says of clang, its configuration, the installations it found, and the
 * command lines it runs (which start with a blank). */
static bool verbose_line(const char *line, size_t len)
{
	static const char *const prefixes[] = {
		"Target: ", "Thread model: ", "InstalledDir: ", "Configuration file: ",
		"System configuration file directory: ", "User configuration file directory: ",
		"Found ", "Candidate multilib: ", "Selected multilib: ", "Selected GCC installation",
		"Multilib", "clang -cc1 version ", "ignoring nonexistent directory \"",
		"ignoring duplicate directory \"", "#include \"...\" search starts here:",
		"#include <...> search starts here:", "End of search list.", " "};
	for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
		if (starts(line, len, prefixes[i]))
			return true;
	/* "clang version 19.1.7", "Debian clang version 19.1.7 (...)" */
	const char *v = len ? strstr(line, "clang version ") : NULL;
	return v && v < line + len && !memchr(line, ':', (size_t)(v - line));
}

/* "PATH, version X" -> PATH (owned). */
static char *found_path(const char *text, size_t len)
{
	for (size_t i = len; i >= 10; i--)
		if (memcmp(text + i - 10, ", version ", 10) == 0)
			return strndup(text, i - 10);
	return strndup(text, len);
}

/* The value after option (" -resource-dir ") in a command line clang -v
 * printed, unquoted, or NULL. */
static char *option_value(const char *line, size_t len, const char *option)
{
	char *copy = strndup(line, len);
	char *at = copy ? strstr(copy, option) : NULL;
	char *out = NULL;
	if (at) {
		at += strlen(option);
		if (*at == '"') {
			char *end = strchr(at + 1, '"');
			out = end ? strndup(at + 1, (size_t)(end - at - 1)) : NULL;
		} else {
			out = strndup(at, strcspn(at, " "));
		}
	}
	free(copy);
	return out;
}

void gpucc_clang_verbose_take(char *err, gpucc_clang_search *s)
{
	enum { BEFORE, QUOTE, ANGLE, AFTER } state = BEFORE;
	char *out = err;
	for (char *p = err; *p;) {
		size_t len = strcspn(p, "\n");
		bool newline = p[len] == '\n';
		char *line = p;
		p += len + newline;
		bool drop = false;
		if (state != AFTER) {
			if (starts(line, len, "#include \"...\" search starts here:"))
				state = QUOTE;
			else if (starts(line, len, "#include <...> search starts here:"))
				state = ANGLE;
			else if (starts(line, len, "End of search list."))
				state = AFTER;
			else if (starts(line, len, " ") && state == QUOTE)
				push_search_dir(&s->quote, line, len);
			else if (starts(line, len, " ") && state == ANGLE)
				push_search_dir(&s->angle, line, len);
			else if (starts(line, len, "ignoring nonexistent directory \""))
				push_quoted(&s->missing, line, len);
			else if (starts(line, len, "Configuration file: "))
				gpucc_strlist_push(&s->configs, line + 20, len - 20);
			else if (starts(line, len, "InstalledDir: ") && !s->installed_dir)
				s->installed_dir = strndup(line + 14, len - 14);
			else if (starts(line, len, "Found HIP installation: ") && !s->hip_found)
				s->hip_found = found_path(line + 24, len - 24);
			else if (starts(line, len, " \"") && !s->resource_dir)
				s->resource_dir = option_value(line, len, " -resource-dir ");
			drop = verbose_line(line, len);
		}
		if (!drop) {
			memmove(out, line, len + newline);
			out += len + newline;
		}
	}
	*out = '\0';
}

void gpucc_clang_search_release(gpucc_clang_search *s)
{
	gpucc_strlist_release(&s->configs);
	gpucc_strlist_release(&s->quote);
	gpucc_strlist_release(&s->angle);
	gpucc_strlist_release(&s->missing);
	free(s->installed_dir);
	free(s->resource_dir);
	free(s->hip_found);
	s->installed_dir = s->resource_dir = s->hip_found = NULL;
}

/* ---- the files arguments name ------------------------------------------- */

char *gpucc_read_small_file(const char *path, size_t max, size_t *size)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
		close(fd);
		return NULL;
	}
	size_t want = (size_t)st.st_size, used = 0;
	char *buf = malloc(want + 1);
	while (buf && used < want) {
		ssize_t n = read(fd, buf + used, want - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
	}
	close(fd);
	if (!buf || used != want) {
		free(buf);
		return NULL;
	}
	buf[used] = '\0';
	*size = used;
	return buf;
}

/* The tokens of a response file (config: of a configuration file) into
 * out. */
static void tokenize(const char *text, size_t size, bool config, gpucc_strlist *out)
{
	char *token = malloc(size + 1);
	if (!token) {
		out->failed = true;
		return;
	}
	size_t len = 0;
	bool in_token = false, line_start = true;
	char quote = 0;
	for (size_t i = 0; i < size; i++) {
		char c = text[i];
		if (config && line_start && !quote && !in_token) {
			if (c == ' ' || c == '\t')
				continue;
			if (c == '#') {
				while (i < size && text[i] != '\n')
					i++;
				continue;
			}
		}
		line_start = c == '\n';
		if (c == '\\' && i + 1 < size) {
			char next = text[++i];
			if (next == '\n' || (next == '\r' && i + 1 < size && text[i + 1] == '\n')) {
				i += next == '\r'; /* a continued line */
				line_start = false;
				continue;
			}
			token[len++] = next;
			in_token = true;
			continue;
		}
		if (quote) {
			if (c == quote)
				quote = 0;
			else
				token[len++] = c;
			continue;
		}
		if (c == '"' || c == '\'') {
			quote = c;
			in_token = true;
			continue;
		}
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			if (in_token)
				gpucc_strlist_push(out, token, len);
			len = 0;
			in_token = false;
			continue;
		}
		token[len++] = c;
		in_token = true;
	}
	if (in_token)
		gpucc_strlist_push(out, token, len);
	free(token);
}

static bool regular_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static void scan_arguments(const char *const *args, size_t count, const char *nested_dir, int depth,
                           gpucc_strlist *files, gpucc_strlist *absent);

/* The file at path, expanded (a response file, or a configuration file
 * when config), its tokens scanned in turn. */
static void expand_file(const char *path, bool config, int depth, gpucc_strlist *files,
                        gpucc_strlist *absent)
{
	if (!regular_file(path)) {
		gpucc_strlist_push_new(absent, path);
		return;
	}
	/* Each file is read once: a file naming itself, or two naming each
	 * other many times, ends. */
	if (gpucc_strlist_has(files, path) || depth >= NESTING_MAX) {
		gpucc_strlist_push_new(files, path);
		return;
	}
	gpucc_strlist_push(files, path, strlen(path));
	size_t size = 0;
	char *text = gpucc_read_small_file(path, ARGUMENT_FILE_MAX, &size);
	if (!text)
		return;
	gpucc_strlist tokens = {0};
	tokenize(text, size, config, &tokens);
	free(text);
	char *dir = NULL;
	if (config) {
		const char *slash = strrchr(path, '/');
		dir = slash ? strndup(path, (size_t)(slash - path + (slash == path))) : strdup(".");
	}
	if (tokens.failed || (config && !dir))
		files->failed = true;
	else
		scan_arguments((const char *const *)tokens.items, tokens.count, dir, depth + 1, files,
		               absent);
	free(dir);
	gpucc_strlist_release(&tokens);
}

/* nested_dir: where a nested "@FILE" is relative to (NULL: the working
 * directory). */
static void scan_arguments(const char *const *args, size_t count, const char *nested_dir, int depth,
                           gpucc_strlist *files, gpucc_strlist *absent)
{
	for (size_t i = 0; i < count; i++) {
		const char *a = args[i];
		if (a[0] == '@' && a[1]) {
			char *path = nested_dir && a[1] != '/' ? NULL : strdup(a + 1);
			if (nested_dir && a[1] != '/') {
				size_t n = strlen(nested_dir) + strlen(a) + 1;
				path = malloc(n);
				if (path)
					snprintf(path, n, "%s/%s", nested_dir, a + 1);
			}
			if (!path) {
				files->failed = true;
				return;
			}
			expand_file(path, false, depth, files, absent);
			free(path);
			continue;
		}
		/* A value that names a file: an argument of its own, or after an
		 * option's '='. */
		const char *value = a;
		if (a[0] == '-') {
			const char *eq = strchr(a, '=');
			value = eq ? eq + 1 : "";
		}
		if (value[0] && value[0] != '-' && regular_file(value))
			gpucc_strlist_push_new(files, value);
		/* A profile option naming a directory reads default.profdata in it. */
		struct stat st;
		if ((strncmp(a, "-fprofile-use=", 14) == 0 || strncmp(a, "-fprofile-instr-use=", 20) == 0) &&
		    stat(value, &st) == 0 && S_ISDIR(st.st_mode)) {
			size_t n = strlen(value) + sizeof "/default.profdata";
			char *profile = malloc(n);
			if (!profile) {
				files->failed = true;
				return;
			}
			snprintf(profile, n, "%s/default.profdata", value);
			gpucc_strlist_push_new(regular_file(profile) ? files : absent, profile);
			free(profile);
		}
	}
}

void gpucc_argument_files(const char *const *args, size_t count, const gpucc_strlist *configs,
                          gpucc_strlist *files, gpucc_strlist *absent)
{
	scan_arguments(args, count, NULL, 0, files, absent);
	for (size_t i = 0; i < configs->count; i++)
		expand_file(configs->items[i], true, 0, files, absent);
}

/* ---- what a file's text asks of the preprocessor -------------------------- */

static bool identifier_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Whether text[at, at + len) is a whole identifier. */
static bool whole_word(const char *text, size_t size, size_t at, size_t len)
{
	return (at == 0 || !identifier_char(text[at - 1])) &&
	       (at + len >= size || !identifier_char(text[at + len]));
}

void gpucc_source_text_scan(const char *text, size_t size, const char **time_macro,
                            gpucc_strlist *has_include)
{
	static const char *const macros[] = {"__DATE__", "__TIME__", "__TIMESTAMP__"};
	for (size_t i = 0; i < size; i++) {
		if (text[i] != '_' || i + 8 > size || text[i + 1] != '_')
			continue;
		for (size_t k = 0; k < sizeof macros / sizeof macros[0] && !*time_macro; k++) {
			size_t len = strlen(macros[k]);
			if (i + len <= size && memcmp(text + i, macros[k], len) == 0 &&
			    whole_word(text, size, i, len))
				*time_macro = macros[k];
		}
		/* __has_include, __has_include_next, __has_embed */
		static const char include_word[] = "__has_include", embed_word[] = "__has_embed";
		size_t j = i;
		if (i && identifier_char(text[i - 1]))
			continue;
		if (i + sizeof include_word - 1 <= size &&
		    memcmp(text + i, include_word, sizeof include_word - 1) == 0) {
			j = i + sizeof include_word - 1;
			if (j + 5 <= size && memcmp(text + j, "_next", 5) == 0)
				j += 5;
		} else if (i + sizeof embed_word - 1 <= size &&
		           memcmp(text + i, embed_word, sizeof embed_word - 1) == 0) {
			j = i + sizeof embed_word - 1;
		} else {
			continue;
		}
		while (j < size && (text[j] == ' ' || text[j] == '\t'))
			j++;
		if (j >= size || text[j] != '(')
			continue;
		j++;
		while (j < size && (text[j] == ' ' || text[j] == '\t'))
			j++;
		if (j >= size || (text[j] != '<' && text[j] != '"'))
			continue; /* a macro's name: not followed (docs/compile.md) */
		char close = text[j] == '<' ? '>' : '"';
		size_t start = ++j;
		while (j < size && text[j] != close && text[j] != '\n')
			j++;
		if (j < size && text[j] == close && j > start) {
			/* Not strndup: the text is not a C string, and ASan's
			 * strndup reads the byte after n looking for its end. */
			char *name = malloc(j - start + 1);
			if (!name) {
				has_include->failed = true;
			} else {
				memcpy(name, text + start, j - start);
				name[j - start] = '\0';
				gpucc_strlist_push_new(has_include, name);
			}
			free(name);
		}
	}
}
