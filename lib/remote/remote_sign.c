/*
 * lib/remote/remote_sign.c -- Ed25519 signatures on remote objects
 * (formats/remote.md, "Signatures"): a writer configured with a signing key
 * appends a fixed trailer to each object it uploads; a reader configured
 * with trusted public keys accepts only objects whose trailer names one of
 * them and whose signature verifies.  libcrypto (OpenSSL 3) does the
 * cryptography: it is loaded with dlopen (libcrypto.so.3) the first time a
 * key is read, made or checked, so that a process that never signs nor
 * verifies does not pay for loading it; only its headers are needed to
 * build.
 */
#include "remote_impl.h"

#include "errors.h"
#include "hex.h"
#include "library_loader.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TRAILER_MAGIC "gpucc-sig-v1\0\0\0\0"
#define MAGIC_SIZE 16
#define PUBLIC_SIZE 32
#define SIGNATURE_SIZE 64
#define TRAILER_SIZE (PUBLIC_SIZE + SIGNATURE_SIZE + MAGIC_SIZE)
#define MESSAGE_PREFIX "gpucc-remote-entry-v1"
#define CRYPTO_SONAME "libcrypto.so.3"

/* The libcrypto functions used, resolved by name: none of them is a macro
 * in OpenSSL 3's headers. */
static struct {
	EVP_PKEY *(*pem_read_private_key)(FILE *, EVP_PKEY **, pem_password_cb *, void *);
	int (*pem_write_private_key)(FILE *, const EVP_PKEY *, const EVP_CIPHER *,
	                             const unsigned char *, int, pem_password_cb *, void *);
	int (*pkey_get_id)(const EVP_PKEY *);
	void (*pkey_free)(EVP_PKEY *);
	int (*pkey_get_raw_public_key)(const EVP_PKEY *, unsigned char *, size_t *);
	EVP_PKEY *(*pkey_new_raw_public_key)(int, ENGINE *, const unsigned char *, size_t);
	EVP_PKEY_CTX *(*pkey_ctx_new_id)(int, ENGINE *);
	void (*pkey_ctx_free)(EVP_PKEY_CTX *);
	int (*pkey_keygen_init)(EVP_PKEY_CTX *);
	int (*pkey_keygen)(EVP_PKEY_CTX *, EVP_PKEY **);
	EVP_MD_CTX *(*md_ctx_new)(void);
	void (*md_ctx_free)(EVP_MD_CTX *);
	int (*digest_sign_init)(EVP_MD_CTX *, EVP_PKEY_CTX **, const EVP_MD *, ENGINE *,
	                        EVP_PKEY *);
	int (*digest_sign)(EVP_MD_CTX *, unsigned char *, size_t *, const unsigned char *, size_t);
	int (*digest_verify_init)(EVP_MD_CTX *, EVP_PKEY_CTX **, const EVP_MD *, ENGINE *,
	                          EVP_PKEY *);
	int (*digest_verify)(EVP_MD_CTX *, const unsigned char *, size_t, const unsigned char *,
	                     size_t);
} crypto;

static gpucc_library library = GPUCC_LIBRARY_INIT;

static const gpucc_library_symbol symbols[] = {
	{"PEM_read_PrivateKey", &crypto.pem_read_private_key, NULL, false},
	{"PEM_write_PrivateKey", &crypto.pem_write_private_key, NULL, false},
	{"EVP_PKEY_get_id", &crypto.pkey_get_id, NULL, false},
	{"EVP_PKEY_free", &crypto.pkey_free, NULL, false},
	{"EVP_PKEY_get_raw_public_key", &crypto.pkey_get_raw_public_key, NULL, false},
	{"EVP_PKEY_new_raw_public_key", &crypto.pkey_new_raw_public_key, NULL, false},
	{"EVP_PKEY_CTX_new_id", &crypto.pkey_ctx_new_id, NULL, false},
	{"EVP_PKEY_CTX_free", &crypto.pkey_ctx_free, NULL, false},
	{"EVP_PKEY_keygen_init", &crypto.pkey_keygen_init, NULL, false},
	{"EVP_PKEY_keygen", &crypto.pkey_keygen, NULL, false},
	{"EVP_MD_CTX_new", &crypto.md_ctx_new, NULL, false},
	{"EVP_MD_CTX_free", &crypto.md_ctx_free, NULL, false},
	{"EVP_DigestSignInit", &crypto.digest_sign_init, NULL, false},
	{"EVP_DigestSign", &crypto.digest_sign, NULL, false},
	{"EVP_DigestVerifyInit", &crypto.digest_verify_init, NULL, false},
	{"EVP_DigestVerify", &crypto.digest_verify, NULL, false},
	{NULL, NULL, NULL, false},
};

static int load(gpucc_library *lib, void *unused)
{
	(void)unused;
	static const char *const names[] = {CRYPTO_SONAME, NULL};
	const char *why, *missing;
	if (gpucc_library_open(lib, names, 0, &why) != 0)
		return gpucc_library_fail(lib, GPUCC_EUNAVAILABLE, "cannot load %s: %s", CRYPTO_SONAME,
		                          why ? why : "dlopen failed");
	if (gpucc_library_resolve(lib, symbols, &missing) != 0)
		return gpucc_library_fail(lib, GPUCC_EUNAVAILABLE, "%s lacks %s", CRYPTO_SONAME, missing);
	return 0;
}

/* Load libcrypto once; false, with load_error() saying why, when it
 * cannot be used. */
static bool crypto_ready(void)
{
	return gpucc_library_load(&library, load, NULL) == 0;
}

static const char *load_error(void)
{
	return gpucc_library_error(&library);
}

/* What is signed: a fixed prefix (with its NUL), the key, the SHA-256 of
 * the entry file's bytes. */
static void message_of(unsigned char out[sizeof MESSAGE_PREFIX + 64], const gpucc_digest *key,
                       const unsigned char *data, size_t size)
{
	gpucc_digest content;
	gpucc_digest_buffer(&content, data, size);
	memcpy(out, MESSAGE_PREFIX, sizeof MESSAGE_PREFIX);
	memcpy(out + sizeof MESSAGE_PREFIX, key, 32);
	memcpy(out + sizeof MESSAGE_PREFIX + 32, &content, 32);
}

/* bytes[0..n) as lowercase hex, NUL-terminated. */
static void to_hex(char *out, const unsigned char *bytes, size_t n)
{
	gpucc_hex_encode(out, bytes, n);
	out[2 * n] = '\0';
}

int gpucc_remote_load_signing_key(remote *r, const char *path)
{
	if (!crypto_ready())
		return gpucc_error_set(GPUCC_EUNAVAILABLE, "cannot read signing key '%s': %s", path,
		                       load_error());
	FILE *f = fopen(path, "re");
	if (!f)
		return gpucc_error_set_errno("cannot open signing key '%s'", path);
	EVP_PKEY *k = crypto.pem_read_private_key(f, NULL, NULL, NULL);
	fclose(f);
	if (!k || crypto.pkey_get_id(k) != EVP_PKEY_ED25519) {
		crypto.pkey_free(k);
		return gpucc_error_set(GPUCC_EINVALID, "'%s' is not an Ed25519 private key in PEM", path);
	}
	crypto.pkey_free(r->sign_key);
	r->sign_key = k;
	return 0;
}

int gpucc_remote_parse_trusted_keys(const char *text, size_t size, unsigned char (**keys)[32],
                                    size_t *count, size_t *line, const char **why)
{
	*keys = NULL;
	*count = 0;
	*line = 0;
	*why = NULL;
	const char *p = text, *end = text + size;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *stop = nl ? nl : end;
		++*line;
		/* The line without its comment, then without blanks around. */
		const char *hash = memchr(p, '#', (size_t)(stop - p));
		const char *last = hash ? hash : stop;
		if (memchr(p, '\0', (size_t)(stop - p))) {
			*why = "a NUL byte (not a text file)";
			goto bad;
		}
		while (p < last && (*p == ' ' || *p == '\t'))
			p++;
		while (last > p && (last[-1] == ' ' || last[-1] == '\t' || last[-1] == '\r'))
			last--;
		size_t n = (size_t)(last - p);
		if (n) {
			unsigned char key[PUBLIC_SIZE];
			if (n != 2 * PUBLIC_SIZE || !gpucc_hex_decode(key, p, PUBLIC_SIZE, false)) {
				*why = "not a public key (64 hex digits)";
				goto bad;
			}
			unsigned char(*grown)[PUBLIC_SIZE] = realloc(*keys, (*count + 1) * sizeof *grown);
			if (!grown) {
				*why = "out of memory";
				goto bad;
			}
			*keys = grown;
			memcpy((*keys)[(*count)++], key, PUBLIC_SIZE);
		}
		p = nl ? nl + 1 : end;
	}
	if (*count == 0) {
		*line = 0;
		*why = "holds no public key";
		return -1;
	}
	return 0;
bad:
	free(*keys);
	*keys = NULL;
	*count = 0;
	return -1;
}

/* A defect of the trust file: the remote is disabled at its first use
 * with this reason (r->fault), not the run failed. */
static int trust_fault(remote *r, const char *path, size_t line, const char *why)
{
	free(r->fault);
	r->fault = NULL;
	int n = line ? asprintf(&r->fault, "trusted keys '%s', line %zu: %s", path, line, why)
	             : asprintf(&r->fault, "trusted keys '%s': %s", path, why);
	if (n < 0) {
		r->fault = NULL;
		return gpucc_error_oom();
	}
	return 0;
}

int gpucc_remote_load_trusted_keys(remote *r, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		int err = errno;
		if (fd >= 0)
			close(fd);
		return trust_fault(r, path, 0, strerror(err));
	}
	if (!S_ISREG(st.st_mode) || st.st_size > REMOTE_TRUST_FILE_MAX) {
		close(fd);
		return trust_fault(r, path, 0, !S_ISREG(st.st_mode) ? "not a regular file"
		                                                     : "larger than 1 MiB");
	}
	/* Whole, in one piece: a line of any length is one line. */
	size_t size = (size_t)st.st_size, done = 0;
	char *text = malloc(size ? size : 1);
	if (!text) {
		close(fd);
		return gpucc_error_oom();
	}
	while (done < size) {
		ssize_t n = read(fd, text + done, size - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	int err = errno;
	close(fd);
	if (done != size) {
		free(text);
		return trust_fault(r, path, 0, done < size && err ? strerror(err) : "changed while read");
	}
	unsigned char(*keys)[PUBLIC_SIZE] = NULL;
	size_t count = 0, line = 0;
	const char *why = NULL;
	int rc = gpucc_remote_parse_trusted_keys(text, size, &keys, &count, &line, &why);
	free(text);
	if (rc != 0)
		return trust_fault(r, path, line, why);
	free(r->trusted);
	r->trusted = keys;
	r->trusted_count = count;
	return 0;
}

void gpucc_remote_free_keys(remote *r)
{
	/* A key was only ever read with libcrypto loaded. */
	if (r->sign_key)
		crypto.pkey_free(r->sign_key);
	r->sign_key = NULL;
	free(r->trusted);
	r->trusted = NULL;
	r->trusted_count = 0;
}

int gpucc_remote_sign(remote *r, const gpucc_digest *key, const remote_blob *in, remote_blob *out)
{
	unsigned char message[sizeof MESSAGE_PREFIX + 64];
	if (!crypto_ready()) {
		gpucc_error_set(GPUCC_EUNAVAILABLE, "cannot sign: %s", load_error());
		return -1;
	}
	message_of(message, key, in->data, in->size);
	out->size = in->size + TRAILER_SIZE;
	out->data = malloc(out->size);
	if (!out->data)
		return -1;
	memcpy(out->data, in->data, in->size);
	unsigned char *trailer = out->data + in->size;
	size_t public_size = PUBLIC_SIZE, signature_size = SIGNATURE_SIZE;
	EVP_MD_CTX *ctx = crypto.md_ctx_new();
	bool ok = ctx && crypto.pkey_get_raw_public_key(r->sign_key, trailer, &public_size) == 1 &&
	          crypto.digest_sign_init(ctx, NULL, NULL, NULL, r->sign_key) == 1 &&
	          crypto.digest_sign(ctx, trailer + PUBLIC_SIZE, &signature_size, message,
	                             sizeof message) == 1;
	crypto.md_ctx_free(ctx);
	if (!ok) {
		free(out->data);
		out->data = NULL;
		return -1;
	}
	memcpy(trailer + PUBLIC_SIZE + SIGNATURE_SIZE, TRAILER_MAGIC, MAGIC_SIZE);
	return 0;
}

int gpucc_remote_check_signature(remote *r, const gpucc_digest *key, remote_blob *b)
{
	bool has_trailer = b->size >= TRAILER_SIZE &&
	                   memcmp(b->data + b->size - MAGIC_SIZE, TRAILER_MAGIC, MAGIC_SIZE) == 0;
	size_t entry_size = has_trailer ? b->size - TRAILER_SIZE : b->size;
	const unsigned char *trailer = b->data + entry_size;
	int rc = 0;
	if (r->trusted_count == 0) {
		/* No trust configured: a signature is neither needed nor read. */
	} else if (!has_trailer) {
		b->untrusted = true;
		rc = gpucc_error_set(GPUCC_ECORRUPT, "not signed, and only signed entries are trusted");
	} else {
		bool trusted = false;
		for (size_t i = 0; i < r->trusted_count && !trusted; i++)
			trusted = memcmp(r->trusted[i], trailer, PUBLIC_SIZE) == 0;
		char hex[2 * PUBLIC_SIZE + 1];
		to_hex(hex, trailer, PUBLIC_SIZE);
		if (!trusted) {
			b->untrusted = true;
			rc = gpucc_error_set(GPUCC_ECORRUPT, "signed by key %.16s..., which is not trusted",
			                     hex);
		} else if (!crypto_ready()) {
			rc = gpucc_error_set(GPUCC_EUNAVAILABLE, "cannot verify its signature: %s",
			                     load_error());
		} else {
			unsigned char message[sizeof MESSAGE_PREFIX + 64];
			message_of(message, key, b->data, entry_size);
			EVP_PKEY *pub = crypto.pkey_new_raw_public_key(EVP_PKEY_ED25519, NULL, trailer,
			                                               PUBLIC_SIZE);
			EVP_MD_CTX *ctx = crypto.md_ctx_new();
			bool ok = pub && ctx &&
			          crypto.digest_verify_init(ctx, NULL, NULL, NULL, pub) == 1 &&
			          crypto.digest_verify(ctx, trailer + PUBLIC_SIZE, SIGNATURE_SIZE, message,
			                               sizeof message) == 1;
			crypto.md_ctx_free(ctx);
			crypto.pkey_free(pub);
			if (!ok)
				rc = gpucc_error_set(GPUCC_ECORRUPT,
				                     "its signature by key %.16s... does not verify", hex);
		}
	}
	b->size = entry_size;
	return rc;
}

int gpucc_signing_key_generate(const char *path, char public_hex[65])
{
	GPUCC_REQUIRE(path);
	GPUCC_REQUIRE(public_hex);
	if (!crypto_ready())
		return gpucc_error_set(GPUCC_EUNAVAILABLE, "cannot generate an Ed25519 key: %s",
		                       load_error());
	EVP_PKEY *k = NULL;
	EVP_PKEY_CTX *ctx = crypto.pkey_ctx_new_id(EVP_PKEY_ED25519, NULL);
	if (!ctx || crypto.pkey_keygen_init(ctx) != 1 || crypto.pkey_keygen(ctx, &k) != 1) {
		crypto.pkey_ctx_free(ctx);
		return gpucc_error_set(GPUCC_ERROR, "cannot generate an Ed25519 key");
	}
	crypto.pkey_ctx_free(ctx);
	unsigned char pub[PUBLIC_SIZE];
	size_t pub_size = sizeof pub;
	crypto.pkey_get_raw_public_key(k, pub, &pub_size);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		crypto.pkey_free(k);
		return gpucc_error_set_errno("cannot create '%s'", path);
	}
	FILE *f = fdopen(fd, "w");
	bool ok = f && crypto.pem_write_private_key(f, k, NULL, NULL, 0, NULL, NULL) == 1;
	if (f)
		ok = fclose(f) == 0 && ok;
	else
		close(fd);
	crypto.pkey_free(k);
	if (!ok) {
		unlink(path);
		return gpucc_error_set(GPUCC_ERROR, "cannot write the key to '%s'", path);
	}
	to_hex(public_hex, pub, PUBLIC_SIZE);
	return 0;
}
