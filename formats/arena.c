/*
 * formats/arena.c -- the grow-only allocator (formats/arena.h): a list of
 * blocks freed together, the first 1 KiB (or the size asked for, from 128
 * bytes) and each next twice the last, up to 64 KiB (or what one allocation
 * needs).  Small first: a merge from a cache holds one arena per entry, most
 * of them a few hundred bytes.
 */
#include "arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

#define BLOCK_FIRST ((size_t)1024)
#define BLOCK_MAX ((size_t)64 * 1024)

struct block {
	struct block *next;
	size_t used, size;
	alignas(max_align_t) unsigned char data[];
};

#define BLOCK_SMALLEST ((size_t)128)

struct gpucc_arena {
	struct block *head;
	size_t bytes; /* the blocks' capacities */
	size_t first; /* the first block's capacity */
};

size_t gpucc_arena_bytes(const gpucc_arena *a)
{
	return a->bytes;
}

gpucc_arena *gpucc_arena_new(void)
{
	return gpucc_arena_new_sized(BLOCK_FIRST);
}

gpucc_arena *gpucc_arena_new_sized(size_t expected)
{
	gpucc_arena *a = calloc(1, sizeof(gpucc_arena));
	if (a)
		a->first = expected < BLOCK_SMALLEST ? BLOCK_SMALLEST
		           : expected > BLOCK_FIRST  ? BLOCK_FIRST
		                                     : expected;
	return a;
}

void gpucc_arena_free(gpucc_arena *a)
{
	if (!a)
		return;
	for (struct block *b = a->head, *next; b; b = next) {
		next = b->next;
		free(b);
	}
	free(a);
}

void *gpucc_arena_alloc(gpucc_arena *a, size_t size)
{
	const size_t align = alignof(max_align_t);
	size = (size + align - 1) & ~(align - 1);
	if (size == 0)
		size = align;
	struct block *b = a->head;
	if (!b || b->size - b->used < size) {
		size_t capacity = b ? 2 * b->size : a->first;
		if (capacity > BLOCK_MAX)
			capacity = BLOCK_MAX;
		if (capacity < size)
			capacity = size;
		/* Zeroed here, so that allocations need no memset of their own;
		 * a large arena's blocks take their page faults in one call
		 * first. */
		if (capacity < BLOCK_MAX) {
			b = calloc(1, sizeof *b + capacity);
		} else if ((b = malloc(sizeof *b + capacity)) != NULL) {
			gpucc_memory_prefault(b, sizeof *b + capacity);
			memset(b, 0, sizeof *b + capacity);
		}
		if (!b)
			return NULL;
		b->used = 0;
		b->size = capacity;
		b->next = a->head;
		a->head = b;
		a->bytes += capacity;
	}
	void *p = b->data + b->used;
	b->used += size;
	return p; /* zero: blocks are calloc'd and never reused */
}

void gpucc_memory_prefault(void *p, size_t size)
{
	static size_t page;
	if (!page) {
		long n = sysconf(_SC_PAGESIZE);
		page = n > 0 ? (size_t)n : 4096;
	}
	uintptr_t from = (uintptr_t)p & ~(uintptr_t)(page - 1);
	uintptr_t to = ((uintptr_t)p + size + page - 1) & ~(uintptr_t)(page - 1);
	if (size)
		(void)madvise((void *)from, to - from, MADV_POPULATE_WRITE);
}

char *gpucc_arena_strdup(gpucc_arena *a, const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	char *copy = gpucc_arena_alloc(a, n);
	if (copy)
		memcpy(copy, s, n);
	return copy;
}
