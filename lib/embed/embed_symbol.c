/*
 * lib/embed/embed_symbol.c -- which names gpucc embed may give the image: a C
 * identifier that the header it writes can declare, in C and in C++, in a
 * program that includes any standard header beside it, and that the object
 * can define without taking another definition's place.  The rules and
 * tables are C's and C++'s (keywords, reserved spellings, <stdint.h>, the C
 * standard library); contract in gpucc/runtime.h.
 */
#include "errors.h"
#include "gpucc/runtime.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define SYMBOL_MAX 200

/* Keywords of C (C23) and C++ (C++20), which the header could not
 * declare.  Keywords spelt with a leading underscore are refused as
 * reserved. */
static const char *const keywords[] = {
	"alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
	"case", "catch", "char", "char16_t", "char32_t", "char8_t", "class", "co_await",
	"co_return", "co_yield", "compl", "concept", "const", "const_cast", "consteval",
	"constexpr", "constinit", "continue", "decltype", "default", "delete", "do", "double",
	"dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
	"friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept",
	"not", "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected", "public",
	"register", "reinterpret_cast", "requires", "restrict", "return", "short", "signed",
	"sizeof", "static", "static_assert", "static_cast", "struct", "switch", "template", "this",
	"thread_local", "throw", "true", "try", "typedef", "typeid", "typename", "typeof",
	"typeof_unqual", "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t",
	"while", "xor", "xor_eq",
};

/* The names the C standard library (C17: <assert.h> to <wctype.h>)
 * declares or defines -- functions, objects, macros and types; not struct
 * tags, which live apart -- and main, sorted by strcmp for bsearch.
 * Keywords, names reserved by their underscores and <stdint.h>'s are
 * refused above by rule; a few appear here as well. */
static const char *const library_names[] = {
	"ATOMIC_BOOL_LOCK_FREE", "ATOMIC_CHAR16_T_LOCK_FREE", "ATOMIC_CHAR32_T_LOCK_FREE",
	"ATOMIC_CHAR_LOCK_FREE", "ATOMIC_FLAG_INIT", "ATOMIC_INT_LOCK_FREE", "ATOMIC_LLONG_LOCK_FREE",
	"ATOMIC_LONG_LOCK_FREE", "ATOMIC_POINTER_LOCK_FREE", "ATOMIC_SHORT_LOCK_FREE",
	"ATOMIC_VAR_INIT", "ATOMIC_WCHAR_T_LOCK_FREE", "BUFSIZ", "CHAR_BIT", "CHAR_MAX", "CHAR_MIN",
	"CLOCKS_PER_SEC", "CMPLX", "CMPLXF", "CMPLXL", "DBL_DECIMAL_DIG", "DBL_DIG", "DBL_EPSILON",
	"DBL_HAS_SUBNORM", "DBL_MANT_DIG", "DBL_MAX", "DBL_MAX_10_EXP", "DBL_MAX_EXP", "DBL_MIN",
	"DBL_MIN_10_EXP", "DBL_MIN_EXP", "DBL_TRUE_MIN", "DECIMAL_DIG", "EDOM", "EILSEQ", "EOF",
	"ERANGE", "EXIT_FAILURE", "EXIT_SUCCESS", "FE_ALL_EXCEPT", "FE_DFL_ENV", "FE_DIVBYZERO",
	"FE_DOWNWARD", "FE_INEXACT", "FE_INVALID", "FE_OVERFLOW", "FE_TONEAREST", "FE_TOWARDZERO",
	"FE_UNDERFLOW", "FE_UPWARD", "FILE", "FILENAME_MAX", "FLT_DECIMAL_DIG", "FLT_DIG",
	"FLT_EPSILON", "FLT_EVAL_METHOD", "FLT_HAS_SUBNORM", "FLT_MANT_DIG", "FLT_MAX",
	"FLT_MAX_10_EXP", "FLT_MAX_EXP", "FLT_MIN", "FLT_MIN_10_EXP", "FLT_MIN_EXP", "FLT_RADIX",
	"FLT_ROUNDS", "FLT_TRUE_MIN", "FOPEN_MAX", "FP_FAST_FMA", "FP_FAST_FMAF", "FP_FAST_FMAL",
	"FP_ILOGB0", "FP_ILOGBNAN", "FP_INFINITE", "FP_NAN", "FP_NORMAL", "FP_SUBNORMAL", "FP_ZERO",
	"HUGE_VAL", "HUGE_VALF", "HUGE_VALL", "I", "INFINITY", "INT_MAX", "INT_MIN", "LC_ALL",
	"LC_COLLATE", "LC_CTYPE", "LC_MONETARY", "LC_NUMERIC", "LC_TIME", "LDBL_DECIMAL_DIG",
	"LDBL_DIG", "LDBL_EPSILON", "LDBL_HAS_SUBNORM", "LDBL_MANT_DIG", "LDBL_MAX",
	"LDBL_MAX_10_EXP", "LDBL_MAX_EXP", "LDBL_MIN", "LDBL_MIN_10_EXP", "LDBL_MIN_EXP",
	"LDBL_TRUE_MIN", "LLONG_MAX", "LLONG_MIN", "LONG_MAX", "LONG_MIN", "L_tmpnam",
	"MATH_ERREXCEPT", "MATH_ERRNO", "MB_CUR_MAX", "MB_LEN_MAX", "NAN", "NDEBUG", "NULL",
	"ONCE_FLAG_INIT", "RAND_MAX", "SCHAR_MAX", "SCHAR_MIN", "SEEK_CUR", "SEEK_END", "SEEK_SET",
	"SHRT_MAX", "SHRT_MIN", "SIGABRT", "SIGFPE", "SIGILL", "SIGINT", "SIGSEGV", "SIGTERM",
	"SIG_DFL", "SIG_ERR", "SIG_IGN", "TIME_UTC", "TMP_MAX", "TSS_DTOR_ITERATIONS", "UCHAR_MAX",
	"UINT_MAX", "ULLONG_MAX", "ULONG_MAX", "USHRT_MAX", "WCHAR_MAX", "WCHAR_MIN", "WEOF", "abort",
	"abs", "acos", "acosf", "acosh", "acoshf", "acoshl", "acosl", "alignas", "aligned_alloc",
	"alignof", "and", "and_eq", "asctime", "asin", "asinf", "asinh", "asinhf", "asinhl", "asinl",
	"assert", "at_quick_exit", "atan", "atan2", "atan2f", "atan2l", "atanf", "atanh", "atanhf",
	"atanhl", "atanl", "atexit", "atof", "atoi", "atol", "atoll", "atomic_bool", "atomic_char",
	"atomic_char16_t", "atomic_char32_t", "atomic_compare_exchange_strong",
	"atomic_compare_exchange_strong_explicit", "atomic_compare_exchange_weak",
	"atomic_compare_exchange_weak_explicit", "atomic_exchange", "atomic_exchange_explicit",
	"atomic_fetch_add", "atomic_fetch_add_explicit", "atomic_fetch_and",
	"atomic_fetch_and_explicit", "atomic_fetch_or", "atomic_fetch_or_explicit",
	"atomic_fetch_sub", "atomic_fetch_sub_explicit", "atomic_fetch_xor",
	"atomic_fetch_xor_explicit", "atomic_flag", "atomic_flag_clear", "atomic_flag_clear_explicit",
	"atomic_flag_test_and_set", "atomic_flag_test_and_set_explicit", "atomic_init", "atomic_int",
	"atomic_int_fast16_t", "atomic_int_fast32_t", "atomic_int_fast64_t", "atomic_int_fast8_t",
	"atomic_int_least16_t", "atomic_int_least32_t", "atomic_int_least64_t", "atomic_int_least8_t",
	"atomic_intmax_t", "atomic_intptr_t", "atomic_is_lock_free", "atomic_llong", "atomic_load",
	"atomic_load_explicit", "atomic_long", "atomic_ptrdiff_t", "atomic_schar", "atomic_short",
	"atomic_signal_fence", "atomic_size_t", "atomic_store", "atomic_store_explicit",
	"atomic_thread_fence", "atomic_uchar", "atomic_uint", "atomic_uint_fast16_t",
	"atomic_uint_fast32_t", "atomic_uint_fast64_t", "atomic_uint_fast8_t",
	"atomic_uint_least16_t", "atomic_uint_least32_t", "atomic_uint_least64_t",
	"atomic_uint_least8_t", "atomic_uintmax_t", "atomic_uintptr_t", "atomic_ullong",
	"atomic_ulong", "atomic_ushort", "atomic_wchar_t", "bitand", "bitor", "bool", "bsearch",
	"btowc", "c16rtomb", "c32rtomb", "cabs", "cabsf", "cabsl", "cacos", "cacosf", "cacosh",
	"cacoshf", "cacoshl", "cacosl", "call_once", "calloc", "carg", "cargf", "cargl", "casin",
	"casinf", "casinh", "casinhf", "casinhl", "casinl", "catan", "catanf", "catanh", "catanhf",
	"catanhl", "catanl", "cbrt", "cbrtf", "cbrtl", "ccos", "ccosf", "ccosh", "ccoshf", "ccoshl",
	"ccosl", "ceil", "ceilf", "ceill", "cexp", "cexpf", "cexpl", "char16_t", "char32_t", "cimag",
	"cimagf", "cimagl", "clearerr", "clock", "clock_t", "clog", "clogf", "clogl", "cnd_broadcast",
	"cnd_destroy", "cnd_init", "cnd_signal", "cnd_t", "cnd_timedwait", "cnd_wait", "compl",
	"complex", "conj", "conjf", "conjl", "copysign", "copysignf", "copysignl", "cos", "cosf",
	"cosh", "coshf", "coshl", "cosl", "cpow", "cpowf", "cpowl", "cproj", "cprojf", "cprojl",
	"creal", "crealf", "creall", "csin", "csinf", "csinh", "csinhf", "csinhl", "csinl", "csqrt",
	"csqrtf", "csqrtl", "ctan", "ctanf", "ctanh", "ctanhf", "ctanhl", "ctanl", "ctime",
	"difftime", "div", "div_t", "double_t", "erf", "erfc", "erfcf", "erfcl", "erff", "erfl",
	"errno", "exit", "exp", "exp2", "exp2f", "exp2l", "expf", "expl", "expm1", "expm1f", "expm1l",
	"fabs", "fabsf", "fabsl", "false", "fclose", "fdim", "fdimf", "fdiml", "feclearexcept",
	"fegetenv", "fegetexceptflag", "fegetround", "feholdexcept", "fenv_t", "feof",
	"feraiseexcept", "ferror", "fesetenv", "fesetexceptflag", "fesetround", "fetestexcept",
	"feupdateenv", "fexcept_t", "fflush", "fgetc", "fgetpos", "fgets", "fgetwc", "fgetws",
	"float_t", "floor", "floorf", "floorl", "fma", "fmaf", "fmal", "fmax", "fmaxf", "fmaxl",
	"fmin", "fminf", "fminl", "fmod", "fmodf", "fmodl", "fopen", "fpclassify", "fpos_t",
	"fprintf", "fputc", "fputs", "fputwc", "fputws", "fread", "free", "freopen", "frexp",
	"frexpf", "frexpl", "fscanf", "fseek", "fsetpos", "ftell", "fwide", "fwprintf", "fwrite",
	"fwscanf", "getc", "getchar", "getenv", "getwc", "getwchar", "gmtime", "hypot", "hypotf",
	"hypotl", "ilogb", "ilogbf", "ilogbl", "imaginary", "imaxabs", "imaxdiv", "imaxdiv_t",
	"isalnum", "isalpha", "isblank", "iscntrl", "isdigit", "isfinite", "isgraph", "isgreater",
	"isgreaterequal", "isinf", "isless", "islessequal", "islessgreater", "islower", "isnan",
	"isnormal", "isprint", "ispunct", "isspace", "isunordered", "isupper", "iswalnum", "iswalpha",
	"iswblank", "iswcntrl", "iswctype", "iswdigit", "iswgraph", "iswlower", "iswprint",
	"iswpunct", "iswspace", "iswupper", "iswxdigit", "isxdigit", "jmp_buf", "kill_dependency",
	"labs", "ldexp", "ldexpf", "ldexpl", "ldiv", "ldiv_t", "lgamma", "lgammaf",
	"lgammal", "llabs", "lldiv", "lldiv_t", "llrint", "llrintf", "llrintl", "llround", "llroundf",
	"llroundl", "localeconv", "localtime", "log", "log10", "log10f", "log10l", "log1p", "log1pf",
	"log1pl", "log2", "log2f", "log2l", "logb", "logbf", "logbl", "logf", "logl", "longjmp",
	"lrint", "lrintf", "lrintl", "lround", "lroundf", "lroundl", "main", "malloc",
	"math_errhandling", "max_align_t", "mblen", "mbrlen", "mbrtoc16", "mbrtoc32", "mbrtowc",
	"mbsinit", "mbsrtowcs", "mbstate_t", "mbstowcs", "mbtowc", "memchr", "memcmp", "memcpy",
	"memmove", "memory_order", "memory_order_acq_rel", "memory_order_acquire",
	"memory_order_consume", "memory_order_relaxed", "memory_order_release",
	"memory_order_seq_cst", "memset", "mktime", "modf", "modff", "modfl", "mtx_destroy",
	"mtx_init", "mtx_lock", "mtx_plain", "mtx_recursive", "mtx_t", "mtx_timed", "mtx_timedlock",
	"mtx_trylock", "mtx_unlock", "nan", "nanf", "nanl", "nearbyint", "nearbyintf", "nearbyintl",
	"nextafter", "nextafterf", "nextafterl", "nexttoward", "nexttowardf", "nexttowardl",
	"noreturn", "not", "not_eq", "offsetof", "once_flag", "or", "or_eq", "perror", "pow", "powf",
	"powl", "printf", "ptrdiff_t", "putc", "putchar", "puts", "putwc", "putwchar", "qsort",
	"quick_exit", "raise", "rand", "realloc", "remainder", "remainderf", "remainderl", "remove",
	"remquo", "remquof", "remquol", "rename", "rewind", "rint", "rintf", "rintl", "round",
	"roundf", "roundl", "scalbln", "scalblnf", "scalblnl", "scalbn", "scalbnf", "scalbnl",
	"scanf", "setbuf", "setjmp", "setlocale", "setvbuf", "sig_atomic_t", "signal", "signbit",
	"sin", "sinf", "sinh", "sinhf", "sinhl", "sinl", "size_t", "snprintf", "sprintf", "sqrt",
	"sqrtf", "sqrtl", "srand", "sscanf", "static_assert", "stderr", "stdin", "stdout", "strcat",
	"strchr", "strcmp", "strcoll", "strcpy", "strcspn", "strerror", "strftime", "strlen",
	"strncat", "strncmp", "strncpy", "strpbrk", "strrchr", "strspn", "strstr", "strtod", "strtof",
	"strtoimax", "strtok", "strtol", "strtold", "strtoll", "strtoul", "strtoull", "strtoumax",
	"strxfrm", "swprintf", "swscanf", "system", "tan", "tanf", "tanh", "tanhf", "tanhl", "tanl",
	"tgamma", "tgammaf", "tgammal", "thrd_busy", "thrd_create", "thrd_current", "thrd_detach",
	"thrd_equal", "thrd_error", "thrd_exit", "thrd_join", "thrd_nomem", "thrd_sleep",
	"thrd_start_t", "thrd_success", "thrd_t", "thrd_timedout", "thrd_yield", "thread_local",
	"time", "time_t", "timespec_get", "tmpfile", "tmpnam", "tolower", "toupper",
	"towctrans", "towlower", "towupper", "true", "trunc", "truncf", "truncl", "tss_create",
	"tss_delete", "tss_dtor_t", "tss_get", "tss_set", "tss_t", "ungetc", "ungetwc", "va_arg",
	"va_copy", "va_end", "va_list", "va_start", "vfprintf", "vfscanf", "vfwprintf", "vfwscanf",
	"vprintf", "vscanf", "vsnprintf", "vsprintf", "vsscanf", "vswprintf", "vswscanf", "vwprintf",
	"vwscanf", "wchar_t", "wcrtomb", "wcscat", "wcschr", "wcscmp", "wcscoll", "wcscpy", "wcscspn",
	"wcsftime", "wcslen", "wcsncat", "wcsncmp", "wcsncpy", "wcspbrk", "wcsrchr", "wcsrtombs",
	"wcsspn", "wcsstr", "wcstod", "wcstof", "wcstoimax", "wcstok", "wcstol", "wcstold", "wcstoll",
	"wcstombs", "wcstoul", "wcstoull", "wcstoumax", "wcsxfrm", "wctob", "wctomb", "wctrans",
	"wctrans_t", "wctype", "wctype_t", "wint_t", "wmemchr", "wmemcmp", "wmemcpy", "wmemmove",
	"wmemset", "wprintf", "wscanf", "xor", "xor_eq",
};

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t len = strlen(s), n = strlen(suffix);
	return len >= n && strcmp(s + len - n, suffix) == 0;
}

/* Whether <stdint.h>, which the header includes, declares symbol or
 * reserves it for later (C17 7.31.10, C23 7.33.20): typedef names
 * int*_t and uint*_t, macros INT* and UINT* ending in _MAX, _MIN, _WIDTH
 * or _C, and its other limits.  The header could not declare such a
 * name beside it (uint64_t is a type, SIZE_MAX a number). */
static bool stdint_name(const char *symbol)
{
	static const char *const limits[] = {
		"PTRDIFF_MIN", "PTRDIFF_MAX", "PTRDIFF_WIDTH", "SIG_ATOMIC_MIN", "SIG_ATOMIC_MAX",
		"SIG_ATOMIC_WIDTH", "SIZE_MAX", "SIZE_WIDTH", "WCHAR_MIN", "WCHAR_MAX",
		"WCHAR_WIDTH", "WINT_MIN", "WINT_MAX", "WINT_WIDTH",
	};
	if ((has_prefix(symbol, "int") || has_prefix(symbol, "uint")) && has_suffix(symbol, "_t"))
		return true;
	if ((has_prefix(symbol, "INT") || has_prefix(symbol, "UINT")) &&
	    (has_suffix(symbol, "_MAX") || has_suffix(symbol, "_MIN") ||
	     has_suffix(symbol, "_WIDTH") || has_suffix(symbol, "_C")))
		return true;
	for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++)
		if (strcmp(symbol, limits[i]) == 0)
			return true;
	return false;
}

/* Whether symbol is a name of the C standard library: a program
 * that includes the header beside <stdio.h> or <errno.h> would see a macro
 * (NULL, errno, EOF) or a type (size_t, FILE) where the header declares an
 * array, and the object's NAME would take the place of the library's own
 * definition (malloc, main) when linked. */
static bool library_name(const char *symbol)
{
	return bsearch(&symbol, library_names, sizeof library_names / sizeof library_names[0],
	               sizeof library_names[0], compare_names) != NULL;
}

int gpucc_embed_check_symbol(const char *symbol)
{
	size_t len = symbol ? strlen(symbol) : 0;
	bool ok = len > 0 && len <= SYMBOL_MAX && !isdigit((unsigned char)symbol[0]);
	for (size_t i = 0; ok && i < len; i++)
		ok = isalnum((unsigned char)symbol[i]) || symbol[i] == '_';
	if (!ok)
		return gpucc_error_set(GPUCC_EINVALID,
		                       "symbol '%.64s%s' is not a C identifier of at most %d characters",
		                       symbol ? symbol : "", len > 64 ? "..." : "", SYMBOL_MAX);
	if (symbol[0] == '_' || symbol[len - 1] == '_' || strstr(symbol, "__"))
		return gpucc_error_set(GPUCC_EINVALID,
		                       "symbol '%s' is reserved in C or C++: it must not begin or end "
		                       "with '_' nor hold '__'",
		                       symbol);
	for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
		if (strcmp(symbol, keywords[i]) == 0)
			return gpucc_error_set(GPUCC_EINVALID, "symbol '%s' is a C or C++ keyword", symbol);
	/* NAME_size belongs to image NAME: were NAME itself OTHER_size, the
	 * objects of embeds NAME and OTHER would both define it. */
	if (has_suffix(symbol, "_size"))
		return gpucc_error_set(GPUCC_EINVALID,
		                       "symbol '%s' ends in '_size', which names the size of another "
		                       "image ('%.*s'): two embedded images could not then be linked together",
		                       symbol, (int)(len - 5), symbol);
	if (stdint_name(symbol))
		return gpucc_error_set(GPUCC_EINVALID,
		                       "symbol '%s' is declared or reserved by <stdint.h>, which the "
		                       "header includes",
		                       symbol);
	if (strcmp(symbol, "main") == 0)
		return gpucc_error_set(GPUCC_EINVALID,
		                       "symbol 'main' is the program's entry point: choose another name");
	if (library_name(symbol))
		return gpucc_error_set(GPUCC_EINVALID,
		                       "symbol '%s' is a name the C standard library declares: beside "
		                       "its headers the header would not compile, or the object would "
		                       "replace the library's definition; choose another name",
		                       symbol);
	return 0;
}
