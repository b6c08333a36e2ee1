/* raft_uv 0.15 wire encoder for hostile-peer tests: see raftwire.h. */
#include "raftwire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <raft.h>

#include "net/listener.h"

static uint8_t *put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return p + 8;
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return p + 4;
}

size_t raftwire_frame(uint8_t *out, size_t cap, uint64_t type, uint64_t claimed_len,
		      const void *header, size_t header_len)
{
	if (cap < 16 || header_len > cap - 16)
		return 0;
	put64(put64(out, type), claimed_len);
	if (header_len > 0)
		memcpy(out + 16, header, header_len);
	return 16 + header_len;
}

size_t raftwire_append_entries(uint8_t *out, size_t cap, uint64_t term, uint64_t prev_index,
			       uint64_t prev_term, uint64_t commit,
			       const struct raftwire_entry *e, unsigned n)
{
	uint8_t h[48 + 16 * RAFTWIRE_ENTRIES_MAX], *p = h;
	size_t hlen = 48 + 16 * (size_t)n, len, payload = 0;

	if (n > RAFTWIRE_ENTRIES_MAX)
		return 0;
	memset(h, 0, sizeof h);
	p = put64(put64(put64(put64(p, term), prev_index), prev_term), commit);
	p = put64(p, n);
	for (unsigned i = 0; i < n; i++) {
		p = put64(p, e[i].term);
		*p = e[i].type;
		p = put32(p + 4, e[i].len);
		payload += e[i].len;
	}
	len = raftwire_frame(out, cap, RAFT_IO_APPEND_ENTRIES, hlen, h, hlen);
	if (len == 0 || payload > cap - len)
		return 0;
	for (unsigned i = 0; i < n; i++) {
		memcpy(out + len, e[i].data, e[i].len);
		len += e[i].len;
	}
	return len;
}

size_t raftwire_request_vote(uint8_t *out, size_t cap, uint64_t term, uint64_t candidate,
			     uint64_t last_index, uint64_t last_term, bool disrupt_leader,
			     bool pre_vote)
{
	uint8_t h[40];
	uint64_t flags = (disrupt_leader ? 1u : 0u) | (pre_vote ? 2u : 0u);

	put64(put64(put64(put64(put64(h, term), candidate), last_index), last_term), flags);
	return raftwire_frame(out, cap, RAFT_IO_REQUEST_VOTE, sizeof h, h, sizeof h);
}

int raftwire_dial(const char *src_ip, const char *dst, const void *preamble, size_t n)
{
	char errmsg[256];
	struct sockaddr_in src, to;
	int fd, e;

	if (listener_parse_address(dst, &to, errmsg) != 0) {
		errno = EINVAL;
		return -1;
	}
	memset(&src, 0, sizeof src);
	src.sin_family = AF_INET;
	if (inet_pton(AF_INET, src_ip, &src.sin_addr) != 1) {
		errno = EINVAL;
		return -1;
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&src, sizeof src) != 0 ||
	    connect(fd, (struct sockaddr *)&to, sizeof to) != 0 ||
	    !raftwire_send(fd, preamble, n)) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int raftwire_connect(const char *src_ip, const char *dst, const char *tablet, uint64_t id,
		     const char *address)
{
	uint8_t pre[LISTENER_PREAMBLE_MAX];
	size_t n = listener_preamble_encode(pre, LISTENER_RAFT, tablet, id, address);

	if (n == 0) {
		errno = EINVAL;
		return -1;
	}
	return raftwire_dial(src_ip, dst, pre, n);
}

bool raftwire_send(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n > 0) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		b += w;
		n -= (size_t)w;
	}
	return true;
}

bool raftwire_wait_closed(int fd, int timeout_ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	uint8_t sink[512];
	struct timespec ts;
	int64_t end;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + timeout_ms;
	for (;;) {
		int64_t now;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
		if (now >= end)
			return false;
		int rv = poll(&pfd, 1, (int)(end - now));
		if (rv < 0 && errno == EINTR)
			continue;
		if (rv <= 0)
			return false;
		ssize_t r = recv(fd, sink, sizeof sink, 0);
		if (r <= 0)
			return r == 0 || errno != EINTR;
		/* Bytes (a raft answer): keep waiting until the deadline. */
	}
}
