/*
 * lib/image/payload_checker.c -- checking payload digests on a second thread
 * (payload_checker.h).
 *
 * The copying thread fills one buffer at a time with payload bytes and a
 * list of steps (begin a payload, hash these bytes, end the payload), then
 * queues it; the checker's thread takes queued buffers in order, carries one
 * SHA-256 state from buffer to buffer, and puts each buffer back on the free
 * list when it is done.  Buffers change hands under one mutex, about once a
 * mebibyte, so locking costs nothing measurable.  After the first mismatch
 * the thread stops hashing (later results cannot matter) but keeps freeing
 * buffers, so that the copying thread never waits for nothing.
 */
#include "payload_checker.h"

#include "errors.h"
#include "image_internal.h"
#include "manifest.h"

#include "sha256.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BUFFER_COUNT 6
#define BUFFER_SIZE ((size_t)1 << 20)
#define ROOM_MAX ((size_t)256 << 10)
#define STEP_COUNT 512

typedef enum step_kind { STEP_BEGIN, STEP_DATA, STEP_END } step_kind;

typedef struct check_step {
	step_kind kind;
	union {
		struct {
			const void *data;
			size_t size;
		} bytes;          /* STEP_DATA */
		struct {
			const char *image_name;
			gpucc_payload payload;
		} begin;          /* STEP_BEGIN */
	} u;
} check_step;

typedef struct check_buffer {
	unsigned char *bytes;      /* BUFFER_SIZE */
	size_t used;               /* bytes of .bytes that steps refer to */
	size_t held;               /* bytes the steps refer to, here or elsewhere */
	check_step steps[STEP_COUNT];
	size_t step_count;
	struct check_buffer *next; /* in the free list or the queue */
} check_buffer;

struct gpucc_payload_checker {
	pthread_mutex_t lock;
	pthread_cond_t work; /* a buffer was queued, or stopping was set */
	pthread_cond_t done; /* a buffer was freed */
	pthread_t thread;
	bool thread_started;

	/* Under lock. */
	check_buffer *free_list;
	check_buffer *queue_head, *queue_tail;
	bool busy;     /* the thread holds a buffer */
	bool stopping; /* drop the queue and exit */
	bool failed;
	const char *failed_image;
	gpucc_payload failed_payload;

	/* The copying thread's. */
	check_buffer *current;

	/* The checker thread's. */
	gpucc_sha256 md;
	bool in_payload;
	const char *image_name;
	gpucc_payload payload;

	check_buffer buffers[BUFFER_COUNT];
};

/* ---- the checker's thread ------------------------------------------------ */

/* Run the steps of b; false at the first mismatch (recorded in c). */
static bool run_steps(gpucc_payload_checker *c, const check_buffer *b)
{
	for (size_t i = 0; i < b->step_count; i++) {
		const check_step *s = &b->steps[i];
		switch (s->kind) {
		case STEP_BEGIN:
			gpucc_sha256_init(&c->md);
			c->in_payload = true;
			c->image_name = s->u.begin.image_name;
			c->payload = s->u.begin.payload;
			break;
		case STEP_DATA:
			if (c->in_payload)
				gpucc_sha256_update(&c->md, s->u.bytes.data, s->u.bytes.size);
			break;
		case STEP_END: {
			if (!c->in_payload)
				break;
			c->in_payload = false;
			unsigned char got[GPUCC_DIGEST_SIZE];
			gpucc_sha256_final(&c->md, got);
			if (memcmp(got, c->payload.sha256.bytes, sizeof got) != 0)
				return false;
			break;
		}
		}
	}
	return true;
}

static void *checker_main(void *arg)
{
	gpucc_payload_checker *c = arg;
	pthread_mutex_lock(&c->lock);
	for (;;) {
		while (!c->queue_head && !c->stopping)
			pthread_cond_wait(&c->work, &c->lock);
		if (c->stopping)
			break;
		check_buffer *b = c->queue_head;
		c->queue_head = b->next;
		if (!c->queue_head)
			c->queue_tail = NULL;
		c->busy = true;
		bool skip = c->failed;
		pthread_mutex_unlock(&c->lock);

		bool ok = skip || run_steps(c, b);

		pthread_mutex_lock(&c->lock);
		if (!ok && !c->failed) {
			c->failed = true;
			c->failed_image = c->image_name;
			c->failed_payload = c->payload;
		}
		b->used = b->held = b->step_count = 0;
		b->next = c->free_list;
		c->free_list = b;
		c->busy = false;
		pthread_cond_signal(&c->done);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* ---- the copying thread --------------------------------------------------- */

int gpucc_payload_checker_new(gpucc_payload_checker **out)
{
	*out = NULL;
	gpucc_payload_checker *c = calloc(1, sizeof *c);
	if (!c)
		return gpucc_error_oom();
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->work, NULL);
	pthread_cond_init(&c->done, NULL);
	for (size_t i = 0; i < BUFFER_COUNT; i++) {
		if (!(c->buffers[i].bytes = malloc(BUFFER_SIZE))) {
			gpucc_payload_checker_free(c);
			return gpucc_error_oom();
		}
		c->buffers[i].next = c->free_list;
		c->free_list = &c->buffers[i];
	}
	int err = pthread_create(&c->thread, NULL, checker_main, c);
	if (err) {
		gpucc_payload_checker_free(c);
		return gpucc_error_set(GPUCC_ERROR, "cannot start a thread to check digests: %s",
		                       strerror(err));
	}
	c->thread_started = true;
	*out = c;
	return 0;
}

void gpucc_payload_checker_free(gpucc_payload_checker *c)
{
	if (!c)
		return;
	if (c->thread_started) {
		pthread_mutex_lock(&c->lock);
		c->stopping = true;
		pthread_cond_signal(&c->work);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->thread, NULL);
	}
	for (size_t i = 0; i < BUFFER_COUNT; i++)
		free(c->buffers[i].bytes);
	pthread_cond_destroy(&c->done);
	pthread_cond_destroy(&c->work);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* Queue the current buffer, if it has steps. */
static void submit(gpucc_payload_checker *c)
{
	check_buffer *b = c->current;
	if (!b || b->step_count == 0)
		return;
	c->current = NULL;
	b->next = NULL;
	pthread_mutex_lock(&c->lock);
	if (c->queue_tail)
		c->queue_tail->next = b;
	else
		c->queue_head = b;
	c->queue_tail = b;
	pthread_cond_signal(&c->work);
	pthread_mutex_unlock(&c->lock);
}

/* The buffer being filled, waiting for a free one if needed. */
static check_buffer *current(gpucc_payload_checker *c)
{
	if (c->current)
		return c->current;
	pthread_mutex_lock(&c->lock);
	while (!c->free_list)
		pthread_cond_wait(&c->done, &c->lock);
	check_buffer *b = c->free_list;
	c->free_list = b->next;
	pthread_mutex_unlock(&c->lock);
	b->next = NULL;
	c->current = b;
	return b;
}

/* A new step in the current buffer (queueing a full one first). */
static check_step *add_step(gpucc_payload_checker *c, step_kind kind)
{
	check_buffer *b = current(c);
	if (b->step_count == STEP_COUNT) {
		submit(c);
		b = current(c);
	}
	check_step *s = &b->steps[b->step_count++];
	s->kind = kind;
	return s;
}

void gpucc_payload_checker_begin(gpucc_payload_checker *c, const char *image_name,
                                 const gpucc_payload *p)
{
	check_step *s = add_step(c, STEP_BEGIN);
	s->u.begin.image_name = image_name;
	s->u.begin.payload = *p;
}

void *gpucc_payload_checker_room(gpucc_payload_checker *c, size_t min, size_t *size)
{
	if (min > ROOM_MAX)
		min = ROOM_MAX;
	check_buffer *b = current(c);
	/* The data step that follows must fit in this buffer's steps. */
	if (BUFFER_SIZE - b->used < min || b->step_count == STEP_COUNT) {
		submit(c);
		b = current(c);
	}
	*size = BUFFER_SIZE - b->used;
	return b->bytes + b->used;
}

void gpucc_payload_checker_data(gpucc_payload_checker *c, const void *data, size_t size)
{
	if (size == 0)
		return;
	check_buffer *b = current(c);
	const unsigned char *p = data;
	bool in_room = p >= b->bytes + b->used && p < b->bytes + BUFFER_SIZE;
	check_step *s = add_step(c, STEP_DATA); /* in_room: room() left a step free */
	s->u.bytes.data = data;
	s->u.bytes.size = size;
	if (in_room)
		b->used = (size_t)(p + size - b->bytes);
	b = c->current;
	b->held += size;
	/* Keep the thread fed when the bytes live elsewhere (memory images). */
	if (b->held >= BUFFER_SIZE)
		submit(c);
}

void gpucc_payload_checker_end(gpucc_payload_checker *c)
{
	add_step(c, STEP_END);
}

bool gpucc_payload_checker_failed(gpucc_payload_checker *c)
{
	pthread_mutex_lock(&c->lock);
	bool failed = c->failed;
	pthread_mutex_unlock(&c->lock);
	return failed;
}

int gpucc_payload_checker_finish(gpucc_payload_checker *c)
{
	submit(c);
	pthread_mutex_lock(&c->lock);
	while (c->queue_head || c->busy)
		pthread_cond_wait(&c->done, &c->lock);
	bool failed = c->failed;
	const char *image = c->failed_image;
	gpucc_payload payload = c->failed_payload;
	pthread_mutex_unlock(&c->lock);
	if (!failed)
		return 0;
	char member[GPUCC_PAYLOAD_MEMBER_SIZE];
	gpucc_payload_member_name(member, &payload);
	return gpucc_image_member_error(image, member, GPUCC_DIGEST_MISMATCH);
}

/* The error of one member of an image (lib/image/image_internal.h): the
 * checker's, the readers' and the plain writer's. */
int gpucc_image_member_error(const char *image_name, const char *member, const char *what)
{
	return gpucc_error_set(GPUCC_ECORRUPT, "'%s': member '%s': %s", image_name, member, what);
}
