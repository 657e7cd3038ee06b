/*
 * formats/sha256.c -- one fetched SHA-256 algorithm for the process
 * (formats/sha256.h).
 */
#include "sha256.h"

#include <pthread.h>

static pthread_once_t fetch_once = PTHREAD_ONCE_INIT;
static const EVP_MD *fetched;

static void fetch(void)
{
	fetched = EVP_MD_fetch(NULL, "SHA256", NULL);
}

const EVP_MD *gpucc_sha256_md(void)
{
	pthread_once(&fetch_once, fetch);
	return fetched ? fetched : EVP_sha256();
}
