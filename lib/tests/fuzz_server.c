/*
 * lib/tests/fuzz_server.c -- the loopback server of fuzz_server.h: one
 * thread, one connection at a time.  The request is read before the answer
 * is sent, and the rest of what the client sends is drained before the
 * socket is closed, so that the client sees the answer and then an orderly
 * end of the connection, never a reset.
 */
#include "fuzz_server.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *answer;
static size_t answer_size;
static int listener = -1, port = -1;
static fuzz_request_end request_end;

void fuzz_server_answer(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		abort();
	memcpy(copy, data, size);
	pthread_mutex_lock(&lock);
	free(answer);
	answer = copy;
	answer_size = size;
	pthread_mutex_unlock(&lock);
}

static void read_request(int fd)
{
	char buf[4096];
	size_t have = 0;
	for (;;) {
		ssize_t n = recv(fd, buf + have, sizeof buf - have, 0);
		if (n <= 0)
			return;
		have += (size_t)n;
		if (request_end == FUZZ_REQUEST_FIRST || have == sizeof buf)
			return;
		for (size_t i = 3; i < have; i++)
			if (memcmp(buf + i - 3, "\r\n\r\n", 4) == 0)
				return;
	}
}

static void *serve(void *unused)
{
	(void)unused;
	for (;;) {
		int fd = accept(listener, NULL, NULL);
		if (fd < 0)
			continue;
		read_request(fd);
		pthread_mutex_lock(&lock);
		size_t size = answer_size, sent = 0;
		uint8_t *copy = malloc(size ? size : 1);
		if (copy && size)
			memcpy(copy, answer, size);
		pthread_mutex_unlock(&lock);
		while (copy && sent < size) {
			ssize_t n = send(fd, copy + sent, size - sent, MSG_NOSIGNAL);
			if (n <= 0)
				break;
			sent += (size_t)n;
		}
		free(copy);
		shutdown(fd, SHUT_WR);
		char drain[4096];
		while (recv(fd, drain, sizeof drain, 0) > 0) {
		}
		close(fd);
	}
	return NULL;
}

int fuzz_server_port(fuzz_request_end end)
{
	if (port >= 0)
		return port;
	request_end = end;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	pthread_t t;
	listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listener < 0 || bind(listener, (struct sockaddr *)&a, sizeof a) != 0 ||
	    listen(listener, 16) != 0 || getsockname(listener, (struct sockaddr *)&a, &len) != 0 ||
	    pthread_create(&t, NULL, serve, NULL) != 0)
		return -1;
	pthread_detach(t);
	port = ntohs(a.sin_port);
	return port;
}
