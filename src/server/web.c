#include "server/web.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/mem.h"
#include "rpc.pb-c.h"

int server_http_open(struct server *s, const char *rpc_address, unsigned default_port,
		     http_handler_fn handler, void *arg)
{
	char address[80], errmsg[DOCRAFT_ERRMSG_SIZE];
	const char *colon = strrchr(rpc_address, ':');
	int ip_len = colon != NULL ? (int)(colon - rpc_address) : (int)strlen(rpc_address);
	bool given = s->http_address[0] != '\0';

	if (strcmp(s->http_address, "off") == 0) {
		LOG_INFO("%s: no HTTP server (--http-address off)", s->prog);
		return 0;
	}
	if (!given)
		snprintf(address, sizeof address, "%.*s:%u", ip_len, rpc_address, default_port);
	else if (s->http_address[0] == ':')
		snprintf(address, sizeof address, "%.*s%s", ip_len, rpc_address, s->http_address);
	else
		snprintf(address, sizeof address, "%s", s->http_address);
	if (http_open(&s->loop, address, NULL, handler, arg, &s->http, errmsg) != 0) {
		if (given) {
			LOG_ERROR("%s: --http-address: %s", s->prog, errmsg);
			return -1;
		}
		LOG_WARN("%s: %s: running without HTTP (--http-address sets another)", s->prog,
			 errmsg);
		return 0;
	}
	LOG_INFO("%s: HTTP on http://%s/ (metrics at /metrics)", s->prog, http_address(s->http));
	return 0;
}

static void http_closed(void *arg)
{
	server_release(arg);
}

void server_step_http(struct server *s)
{
	struct http_server *h = s->http;
	if (h == NULL)
		return;
	s->http = NULL;
	server_hold(s);
	http_close(h, http_closed, s);
}

#define LAG_WARN_MS 100
#define LAG_DEBUG_MS 10

static void lag_cb(uv_timer_t *t)
{
	struct server *s = t->data;
	uint64_t now = uv_hrtime();
	uint64_t lag_us = now > s->lag_due_ns ? (now - s->lag_due_ns) / 1000 : 0;

	lathist_record(&s->loop_lag, lag_us);
	s->lag_due_ns = now + SERVER_LAG_PERIOD_MS * 1000000ull;
	if (lag_us >= LAG_WARN_MS * 1000 && s->lag_election_ms != 0)
		LOG_WARN("%s: the loop thread was busy for %" PRIu64 " ms (a turn ran that late; "
			 "election timeout %u ms)",
			 s->prog, lag_us / 1000, s->lag_election_ms);
	else if (lag_us >= LAG_WARN_MS * 1000)
		LOG_WARN("%s: the loop thread was busy for %" PRIu64 " ms (a turn ran that late)",
			 s->prog, lag_us / 1000);
	else if (lag_us >= LAG_DEBUG_MS * 1000)
		LOG_DEBUG("%s: loop lag %" PRIu64 " ms", s->prog, lag_us / 1000);
}

void server_lag_start(struct server *s, unsigned election_ms)
{
	s->lag_election_ms = election_ms;
	uv_timer_init(&s->loop, &s->lag_timer);
	s->lag_timer.data = s;
	s->lag_due_ns = uv_hrtime() + SERVER_LAG_PERIOD_MS * 1000000ull;
	uv_timer_start(&s->lag_timer, lag_cb, SERVER_LAG_PERIOD_MS, SERVER_LAG_PERIOD_MS);
	uv_unref((uv_handle_t *)&s->lag_timer);
	s->lag_on = true;
}

static void lag_closed(uv_handle_t *h)
{
	server_release(h->data);
}

void server_step_lag(struct server *s)
{
	if (!s->lag_on)
		return;
	s->lag_on = false;
	server_hold(s);
	uv_close((uv_handle_t *)&s->lag_timer, lag_closed);
}

bool server_http_health(const struct http_request *req, struct http_response *resp, bool ready,
			const char *why_not)
{
	if (strcmp(req->path, "/healthz") == 0) {
		buf_printf(&resp->body, "ok\n");
		return true;
	}
	if (strcmp(req->path, "/readyz") != 0)
		return false;
	if (ready)
		buf_printf(&resp->body, "ready\n");
	else
		http_error(resp, 503, why_not);
	return true;
}

const char *server_method_name(uint16_t method)
{
	const ProtobufCEnumValue *v =
		protobuf_c_enum_descriptor_get_value(&docraft__method__descriptor, method);
	return v != NULL ? v->name : "";
}

/* The RPC port's families: per method, then the port's totals. */
static void rpc_metrics(struct server *s, struct metrics *m)
{
	struct rpc_server_stats st;
	struct rpc_method_stats *ms;
	struct metrics_labels l;
	size_t n;
	char num[16];

	if (!s->rpc_on)
		return;
	n = rpc_server_method_stats(&s->rpc, NULL, 0);
	ms = xcalloc(n ? n : 1, sizeof *ms);
	rpc_server_method_stats(&s->rpc, ms, n);
	for (int family = 0; family < 3; family++) {
		static const char *const names[] = {"docraft_rpc_requests_total",
						    "docraft_rpc_errors_total",
						    "docraft_rpc_latency_seconds"};
		static const char *const helps[] = {
			"RPC requests answered, by method.",
			"RPC requests answered with an error status, by method.",
			"RPC latency from a request's arrival to its answer, by method."};
		metrics_family(m, names[family], family == 2 ? "histogram" : "counter",
			       helps[family]);
		for (size_t i = 0; i < n; i++) {
			const char *name = server_method_name(ms[i].method);
			metrics_labels_reset(&l);
			if (name[0] == '\0') {
				snprintf(num, sizeof num, "%u", ms[i].method);
				name = num;
			}
			metrics_label(&l, "method", name);
			if (family == 0)
				metrics_u64(m, names[0], &l, ms[i].calls);
			else if (family == 1)
				metrics_u64(m, names[1], &l, ms[i].errors);
			else
				metrics_hist(m, names[2], &l, &ms[i].latency);
		}
	}
	free(ms);
	rpc_server_get_stats(&s->rpc, &st);
	{
		const struct metrics_row rows[] = {
			{"docraft_rpc_connections_open", "gauge", "RPC connections open now.",
			 st.open},
			{"docraft_rpc_connections_total", "counter", "RPC connections accepted.",
			 st.connections},
			{"docraft_rpc_received_bytes_total", "counter",
			 "Bytes read from RPC connections.", st.bytes_in},
			{"docraft_rpc_sent_bytes_total", "counter", "Bytes of RPC responses sent.",
			 st.bytes_out},
			{"docraft_rpc_busy_total", "counter",
			 "RPC requests answered SERVICE_BUSY (a peer limit).", st.busy},
			{"docraft_rpc_refused_connections_total", "counter",
			 "RPC connections closed at once: max-connections(-per-ip).", st.refused},
			{"docraft_rpc_malformed_total", "counter",
			 "RPC connections closed for a malformed or oversized frame.",
			 st.malformed + st.too_big},
		};
		metrics_rows(m, rows, sizeof rows / sizeof rows[0]);
	}
}

void server_metrics(struct server *s, struct metrics *m)
{
	struct http_stats hs;

	metrics_process(m, s->start_ns, s->start_wall_s);
	rpc_metrics(s, m);
	if (s->http != NULL) {
		http_get_stats(s->http, &hs);
		const struct metrics_row rows[] = {
			{"docraft_http_requests_total", "counter",
			 "HTTP requests handled (not those libmicrohttpd refused itself).",
			 hs.requests},
			{"docraft_http_connections_open", "gauge", "HTTP connections open now.",
			 hs.open},
		};
		metrics_rows(m, rows, sizeof rows / sizeof rows[0]);
	}
	if (s->loop_lag.count > 0) {
		metrics_family(m, "docraft_loop_lag_seconds", "histogram",
			       "How late the loop thread ran a 100 ms timer: time spent in "
			       "handlers, RocksDB calls or stalls.");
		metrics_hist(m, "docraft_loop_lag_seconds", NULL, &s->loop_lag);
	}
}
