#include "httpget.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int parse(const char *addr, struct sockaddr_in *sa)
{
	char ip[64];
	const char *colon = strrchr(addr, ':');

	memset(sa, 0, sizeof *sa);
	sa->sin_family = AF_INET;
	if (colon == NULL || (size_t)(colon - addr) >= sizeof ip)
		return -1;
	memcpy(ip, addr, (size_t)(colon - addr));
	ip[colon - addr] = '\0';
	sa->sin_port = htons((uint16_t)atoi(colon + 1));
	return inet_pton(AF_INET, ip, &sa->sin_addr) == 1 ? 0 : -1;
}

int tcp_connect_from(const char *src, const char *dst)
{
	struct sockaddr_in a, s = {.sin_family = AF_INET};
	int fd;

	if (parse(dst, &a) != 0 || inet_pton(AF_INET, src, &s.sin_addr) != 1)
		return -1;
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&s, sizeof s) != 0 ||
	    connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int http_get(const char *addr, const char *path, char **body, int timeout_ms)
{
	struct sockaddr_in sa;
	char req[1024];
	char *buf = NULL, *p;
	size_t len = 0, cap = 0;
	int fd, status = -1;

	if (body != NULL)
		*body = NULL;
	if (parse(addr, &sa) != 0)
		return -1;
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
		goto out;
	snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path,
		 addr);
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) < 0)
		goto out;
	for (;;) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		ssize_t r;
		if (cap - len < 65536) {
			cap = cap ? cap * 2 : 131072;
			buf = realloc(buf, cap);
			if (buf == NULL)
				goto out;
		}
		if (poll(&pf, 1, timeout_ms) <= 0)
			break;
		r = recv(fd, buf + len, cap - len - 1, 0);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	if (buf == NULL || len < 12)
		goto out;
	buf[len] = '\0';
	if (sscanf(buf, "HTTP/1.%*c %d", &status) != 1)
		status = -1;
	p = strstr(buf, "\r\n\r\n");
	if (body != NULL && p != NULL)
		*body = strdup(p + 4);
out:
	free(buf);
	close(fd);
	return status;
}

double metric_sum(const char *text, const char *name, const char *const *has, int n,
		  int *count)
{
	size_t nl = strlen(name);
	double sum = 0;
	int matched = 0;

	for (const char *l = text; l != NULL && *l != '\0';) {
		const char *end = strchr(l, '\n');
		size_t ll = end != NULL ? (size_t)(end - l) : strlen(l);
		if (ll > nl && strncmp(l, name, nl) == 0 && (l[nl] == '{' || l[nl] == ' ')) {
			char line[1024];
			const char *sp;
			bool ok = true;
			snprintf(line, sizeof line, "%.*s", (int)ll, l);
			for (int i = 0; i < n && ok; i++)
				ok = strstr(line, has[i]) != NULL;
			sp = strrchr(line, ' ');
			if (ok && sp != NULL) {
				sum += strtod(sp + 1, NULL);
				matched++;
			}
		}
		l = end != NULL ? end + 1 : NULL;
	}
	if (count != NULL)
		*count = matched;
	return sum;
}
