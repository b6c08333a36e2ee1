/* docraft bench driver: etcd v3 through its JSON gateway (grpc-gateway,
 * built into every etcd 3.4 member): POST /v3/kv/put {"key", "value"} and
 * POST /v3/kv/range {"key"}, keys and values in base64. A range request is
 * linearizable unless it sets "serializable": this driver never does. Each
 * client thread owns one curl easy handle, so one HTTP/1.1 keep-alive
 * connection with TCP_NODELAY, to the endpoint i mod count. Proxies from
 * the environment are ignored. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bench/driver.h"
#include "common/mem.h"

struct shared {
	const struct bench_target *t;
	size_t n_endpoints;
};

struct conn {
	CURL *curl;
	struct curl_slist *headers;
	char put_url[300], range_url[300];
	char *body;      /* request */
	size_t body_cap;
	char *resp;      /* response, NUL-terminated */
	size_t resp_len, resp_cap;
	char curl_err[CURL_ERROR_SIZE];
};

static size_t b64_len(size_t n)
{
	return (n + 2) / 3 * 4;
}

static char *b64(char *out, const void *in, size_t n)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = in;
	size_t i;
	for (i = 0; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		*out++ = tab[v >> 18];
		*out++ = tab[(v >> 12) & 63];
		*out++ = tab[(v >> 6) & 63];
		*out++ = tab[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
		*out++ = tab[v >> 18];
		*out++ = tab[(v >> 12) & 63];
		*out++ = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		*out++ = '=';
	}
	return out;
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct conn *c = arg;
	size_t n = size * nmemb;
	if (c->resp_len + n + 1 > c->resp_cap) {
		size_t cap = 2 * (c->resp_len + n + 1);
		char *p = realloc(c->resp, cap);
		if (p == NULL)
			return 0; /* curl fails the transfer */
		c->resp = p;
		c->resp_cap = cap;
	}
	memcpy(c->resp + c->resp_len, ptr, n);
	c->resp_len += n;
	c->resp[c->resp_len] = '\0';
	return n;
}

static int setup(const struct bench_target *t, void **out, char *err, size_t errlen)
{
	struct shared *s;
	CURLcode rc = curl_global_init(CURL_GLOBAL_ALL);
	if (rc != CURLE_OK) {
		snprintf(err, errlen, "curl_global_init: %s", curl_easy_strerror(rc));
		return -1;
	}
	s = xzalloc(sizeof *s);
	s->t = t;
	s->n_endpoints = bench_endpoint(t->endpoints, 0, (char[8]){0}, 8);
	if (s->n_endpoints == 0) {
		snprintf(err, errlen, "no etcd endpoint (--endpoints host:port,...)");
		free(s);
		return -1;
	}
	*out = s;
	return 0;
}

static void close_conn(void *conn)
{
	struct conn *c = conn;
	if (c->curl != NULL)
		curl_easy_cleanup(c->curl);
	curl_slist_free_all(c->headers);
	free(c->body);
	free(c->resp);
	free(c);
}

static int open_conn(void *shared, int index, void **out, char *err, size_t errlen)
{
	struct shared *s = shared;
	struct conn *c = xzalloc(sizeof *c);
	char ep[256];
	const char *scheme;

	bench_endpoint(s->t->endpoints, (size_t)index, ep, sizeof ep);
	scheme = strstr(ep, "://") != NULL ? "" : "http://";
	snprintf(c->put_url, sizeof c->put_url, "%s%s/v3/kv/put", scheme, ep);
	snprintf(c->range_url, sizeof c->range_url, "%s%s/v3/kv/range", scheme, ep);
	c->curl = curl_easy_init();
	c->headers = curl_slist_append(NULL, "Content-Type: application/json");
	if (c->headers != NULL)
		/* no "Expect: 100-continue" round trip for large bodies */
		c->headers = curl_slist_append(c->headers, "Expect:");
	if (c->curl == NULL || c->headers == NULL) {
		snprintf(err, errlen, "curl_easy_init failed");
		close_conn(c);
		return -1;
	}
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(c->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c->curl, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, 10000L);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->headers);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, c->curl_err);
	curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
	*out = c;
	return 0;
}

static int body_reserve(struct conn *c, size_t n, char *err, size_t errlen)
{
	if (n <= c->body_cap)
		return 0;
	char *p = realloc(c->body, n);
	if (p == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	c->body = p;
	c->body_cap = n;
	return 0;
}

/* POSTs c->body (len bytes) to url; 0 when etcd answered 200 without an
 * "error" member, else -1 with the reason. The answer is in c->resp. */
static int post(struct conn *c, const char *url, size_t len, char *err, size_t errlen)
{
	CURLcode rc;
	long code = 0;

	c->resp_len = 0;
	if (c->resp != NULL)
		c->resp[0] = '\0';
	c->curl_err[0] = '\0';
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, c->body);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE, (long)len);
	rc = curl_easy_perform(c->curl);
	if (rc != CURLE_OK) {
		snprintf(err, errlen, "%s: %s", url, c->curl_err[0] ? c->curl_err :
					curl_easy_strerror(rc));
		return -1;
	}
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &code);
	if (code != 200 || c->resp == NULL || strstr(c->resp, "\"error\"") != NULL) {
		snprintf(err, errlen, "%s: HTTP %ld: %.160s", url, code,
			 c->resp != NULL ? c->resp : "");
		return -1;
	}
	return 0;
}

static int put(void *conn, const char *key, size_t klen, const void *value, size_t vlen,
	       bool insert, char *err, size_t errlen)
{
	struct conn *c = conn;
	char *p;
	(void)insert;
	if (body_reserve(c, b64_len(klen) + b64_len(vlen) + 32, err, errlen) != 0)
		return -1;
	p = c->body;
	memcpy(p, "{\"key\":\"", 8);
	p = b64(p + 8, key, klen);
	memcpy(p, "\",\"value\":\"", 11);
	p = b64(p + 11, value, vlen);
	memcpy(p, "\"}", 2);
	p += 2;
	return post(c, c->put_url, (size_t)(p - c->body), err, errlen);
}

static int get(void *conn, const char *key, size_t klen, char *err, size_t errlen)
{
	struct conn *c = conn;
	char *p;
	if (body_reserve(c, b64_len(klen) + 16, err, errlen) != 0)
		return -1;
	p = c->body;
	memcpy(p, "{\"key\":\"", 8);
	p = b64(p + 8, key, klen);
	memcpy(p, "\"}", 2);
	p += 2;
	if (post(c, c->range_url, (size_t)(p - c->body), err, errlen) != 0)
		return -1;
	/* {"header":{...},"kvs":[...],"count":"1"}: no "kvs" when absent */
	return strstr(c->resp, "\"kvs\"") != NULL;
}

static void teardown(void *shared)
{
	free(shared);
	curl_global_cleanup();
}

static void describe(void *shared, char *out, size_t len)
{
	struct shared *s = shared;
	snprintf(out, len, "%d HTTP/1.1 keep-alive connection%s (libcurl %s) to %s%s",
		 s->t->clients, s->t->clients == 1 ? "" : "s", curl_version_info(CURLVERSION_NOW)->version,
		 s->t->endpoints, s->n_endpoints > 1 ? " (thread i to endpoint i mod n)" : "");
}

BENCH_DRIVER(bench_driver_etcd, "etcd");
