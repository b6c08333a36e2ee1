/* A blocking HTTP/1.1 GET for the tests of the servers' HTTP endpoints, a
 * TCP connection from a chosen loopback address, and reading samples out
 * of a Prometheus text answer. Any thread. */
#ifndef DOCRAFT_TESTS_HTTPGET_H
#define DOCRAFT_TESTS_HTTPGET_H

#include <stdbool.h>

/* GET path from addr ("ip:port"), "Connection: close", waiting at most
 * timeout_ms for each read. Returns the status code, -1 without an answer;
 * *body (may be NULL) gets the body, malloc'ed and NUL-terminated (free it),
 * or NULL. */
int http_get(const char *addr, const char *path, char **body, int timeout_ms);

/* A blocking TCP connection from source address src ("127.0.0.50") to
 * dst ("ip:port"); -1 if either cannot be used or the connect fails. */
int tcp_connect_from(const char *src, const char *dst);

/* The sum of the samples of exactly name (no suffix) whose labels contain
 * every one of has[0..n) as a substring (e.g. "table=\"kv\""); *count (may
 * be NULL) gets how many samples matched. */
double metric_sum(const char *text, const char *name, const char *const *has, int n,
		  int *count);

#endif
