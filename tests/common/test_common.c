#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/fs.h"
#include "common/histogram.h"
#include "common/log.h"
#include "common/mem.h"
#include "test.h"

/* ---- err.c ---------------------------------------------------------- */

TEST(err_set_formats_and_returns_code)
{
	char e[DOCRAFT_ERRMSG_SIZE] = "";
	CHECK_EQ_INT(err_set(e, DOCRAFT_EINVAL, "bad column %s (%d)", "x", 3), DOCRAFT_EINVAL);
	CHECK_EQ_STR(e, "bad column x (3)");
	CHECK_EQ_INT(err_set(e, DOCRAFT_OK, "fine"), DOCRAFT_OK);
	CHECK_EQ_STR(e, "fine");
	CHECK_EQ_INT(err_set(e, DOCRAFT_EIO, "%s", ""), DOCRAFT_EIO);
	CHECK_EQ_STR(e, "");
}

TEST(err_set_truncates_at_errmsg_size)
{
	char big[DOCRAFT_ERRMSG_SIZE + 16];
	char msg[1000];
	memset(big, 0x5A, sizeof big);
	memset(msg, 'a', sizeof msg - 1);
	msg[sizeof msg - 1] = '\0';
	CHECK_EQ_INT(err_set(big, DOCRAFT_ETOOBIG, "%s", msg), DOCRAFT_ETOOBIG);
	CHECK_EQ_INT(strlen(big), DOCRAFT_ERRMSG_SIZE - 1);
	CHECK_EQ_MEM(big, DOCRAFT_ERRMSG_SIZE - 1, msg, DOCRAFT_ERRMSG_SIZE - 1);
	for (size_t i = DOCRAFT_ERRMSG_SIZE; i < sizeof big; i++)
		CHECK_EQ_INT((unsigned char)big[i], 0x5A);

	/* One byte short of the limit fits exactly. */
	msg[DOCRAFT_ERRMSG_SIZE - 1] = '\0';
	CHECK_EQ_INT(err_set(big, DOCRAFT_ETOOBIG, "%s", msg), DOCRAFT_ETOOBIG);
	CHECK_EQ_STR(big, msg);
}

TEST(err_null_errmsg_returns_code)
{
	CHECK_EQ_INT(err_set(NULL, DOCRAFT_ENOTFOUND, "no row %d", 5), DOCRAFT_ENOTFOUND);
	CHECK_EQ_INT(err_wrap(NULL, DOCRAFT_ECORRUPT, "key %s", "k"), DOCRAFT_ECORRUPT);
}

TEST(err_wrap_prefixes)
{
	char e[DOCRAFT_ERRMSG_SIZE];
	err_set(e, DOCRAFT_EIO, "disk on fire");
	CHECK_EQ_INT(err_wrap(e, DOCRAFT_EIO, "opening %s", "/data"), DOCRAFT_EIO);
	CHECK_EQ_STR(e, "opening /data: disk on fire");
	CHECK_EQ_INT(err_wrap(e, DOCRAFT_ECLOSED, "tablet %d", 9), DOCRAFT_ECLOSED);
	CHECK_EQ_STR(e, "tablet 9: opening /data: disk on fire");

	err_set(e, DOCRAFT_EIO, "%s", "");
	err_wrap(e, DOCRAFT_EIO, "p");
	CHECK_EQ_STR(e, "p: ");
}

TEST(err_wrap_truncates_at_errmsg_size)
{
	char big[DOCRAFT_ERRMSG_SIZE + 16];
	char inner[DOCRAFT_ERRMSG_SIZE];
	char prefix[400];
	memset(big, 0x5A, sizeof big);
	memset(inner, 'i', sizeof inner - 1);
	inner[sizeof inner - 1] = '\0';
	memset(prefix, 'p', 100);
	prefix[100] = '\0';

	/* A full-length inner message and a prefix: the tail of inner goes. */
	err_set(big, DOCRAFT_EIO, "%s", inner);
	CHECK_EQ_INT(err_wrap(big, DOCRAFT_EIO, "%s", prefix), DOCRAFT_EIO);
	CHECK_EQ_INT(strlen(big), DOCRAFT_ERRMSG_SIZE - 1);
	CHECK_EQ_MEM(big, 100, prefix, 100);
	CHECK_EQ_MEM(big + 100, 2, ": ", 2);
	CHECK_EQ_MEM(big + 102, DOCRAFT_ERRMSG_SIZE - 103, inner, DOCRAFT_ERRMSG_SIZE - 103);
	for (size_t i = DOCRAFT_ERRMSG_SIZE; i < sizeof big; i++)
		CHECK_EQ_INT((unsigned char)big[i], 0x5A);

	/* A prefix longer than the buffer leaves only (part of) the prefix. */
	memset(prefix, 'q', sizeof prefix - 1);
	prefix[sizeof prefix - 1] = '\0';
	err_set(big, DOCRAFT_EIO, "inner");
	err_wrap(big, DOCRAFT_EIO, "%s", prefix);
	CHECK_EQ_INT(strlen(big), DOCRAFT_ERRMSG_SIZE - 1);
	CHECK_EQ_MEM(big, DOCRAFT_ERRMSG_SIZE - 1, prefix, DOCRAFT_ERRMSG_SIZE - 1);
	for (size_t i = DOCRAFT_ERRMSG_SIZE; i < sizeof big; i++)
		CHECK_EQ_INT((unsigned char)big[i], 0x5A);
}

TEST(strerror_covers_every_code)
{
	for (int code = 0; code < DOCRAFT_ERROR_MAX; code++) {
		const char *s = docraft_strerror(code);
		CHECK_MSG(s != NULL && s[0] != '\0', "code %d has no message", code);
		CHECK_MSG(strcmp(s, "unknown error") != 0, "code %d is unknown", code);
		for (int other = 0; other < code; other++)
			CHECK_MSG(strcmp(s, docraft_strerror(other)) != 0,
				  "codes %d and %d share \"%s\"", other, code, s);
	}
	CHECK_EQ_STR(docraft_strerror(DOCRAFT_OK), "ok");
	CHECK_EQ_STR(docraft_strerror(DOCRAFT_EINVAL), "invalid argument");
	CHECK_EQ_STR(docraft_strerror(DOCRAFT_ECLOCKSKEW), "clock skew too large");
	CHECK_EQ_STR(docraft_strerror(DOCRAFT_ECLOSED), "closed");
}

TEST(strerror_out_of_range)
{
	CHECK_EQ_STR(docraft_strerror(-1), "unknown error");
	CHECK_EQ_STR(docraft_strerror(DOCRAFT_ERROR_MAX), "unknown error");
	CHECK_EQ_STR(docraft_strerror(DOCRAFT_ERROR_MAX + 1), "unknown error");
	CHECK_EQ_STR(docraft_strerror(INT_MAX), "unknown error");
	CHECK_EQ_STR(docraft_strerror(INT_MIN), "unknown error");
}

/* ---- buf.c ---------------------------------------------------------- */

TEST(buf_starts_empty)
{
	struct buf a = BUF_INIT, b;
	buf_init(&b);
	CHECK(a.data == NULL && a.len == 0 && a.cap == 0);
	CHECK(b.data == NULL && b.len == 0 && b.cap == 0);
	buf_append(&a, "", 0);
	CHECK_EQ_INT(a.len, 0);
	CHECK_EQ_STR(buf_cstr(&b), "");
	CHECK_EQ_INT(b.len, 0);
	buf_free(&a);
	buf_free(&b);
	CHECK(b.data == NULL && b.len == 0 && b.cap == 0);
	buf_free(&b); /* twice is fine */
}

TEST(buf_append_and_push_exact_bytes)
{
	struct buf b = BUF_INIT;
	static const uint8_t want[] = {'a', 'b', 'c', 0x00, 0xFF, 'z'};
	buf_append(&b, "abc", 3);
	buf_push(&b, 0x00);
	buf_push(&b, 0xFF);
	buf_append(&b, "z", 1);
	CHECK_EQ_MEM(b.data, b.len, want, sizeof want);
	CHECK(b.cap >= b.len);
	buf_free(&b);
}

TEST(buf_big_and_little_endian)
{
	struct buf b = BUF_INIT;
	static const uint8_t want[] = {
		0x12, 0x34,                                     /* be16 */
		0x01, 0x02, 0x03, 0x04,                         /* be32 */
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, /* be64 */
		0x04, 0x03, 0x02, 0x01,                         /* le32 */
		0xFF, 0xFF,                                     /* be16 max */
		0x80, 0x00, 0x00, 0x00,                         /* be32 sign bit */
		0xFE, 0xDC, 0xBA, 0x98, 0x76, 0x54, 0x32, 0x10, /* be64 */
		0xEF, 0xBE, 0xAD, 0xDE,                         /* le32 */
	};
	buf_append_be16(&b, 0x1234);
	buf_append_be32(&b, 0x01020304);
	buf_append_be64(&b, UINT64_C(0x0102030405060708));
	buf_append_le32(&b, 0x01020304);
	buf_append_be16(&b, 0xFFFF);
	buf_append_be32(&b, 0x80000000u);
	buf_append_be64(&b, UINT64_C(0xFEDCBA9876543210));
	buf_append_le32(&b, 0xDEADBEEFu);
	CHECK_EQ_MEM(b.data, b.len, want, sizeof want);

	CHECK_EQ_INT(be16_load(b.data), 0x1234);
	CHECK_EQ_U64(be32_load(b.data + 2), 0x01020304);
	CHECK_EQ_U64(be64_load(b.data + 6), UINT64_C(0x0102030405060708));
	CHECK_EQ_U64(le32_load(b.data + 14), 0x01020304);
	CHECK_EQ_INT(be16_load(b.data + 18), 0xFFFF);
	CHECK_EQ_U64(be32_load(b.data + 20), 0x80000000u);
	CHECK_EQ_U64(be64_load(b.data + 24), UINT64_C(0xFEDCBA9876543210));
	CHECK_EQ_U64(le32_load(b.data + 32), 0xDEADBEEFu);
	{
		uint8_t s[10] = {0xAA, 0, 0, 0, 0, 0, 0, 0, 0, 0xAA};
		be64_store(s + 1, UINT64_C(0xFEDCBA9876543210));
		CHECK_EQ_MEM(s + 1, 8, want + 24, 8);
		CHECK(s[0] == 0xAA && s[9] == 0xAA); /* nothing outside the 8 bytes */
	}
	buf_free(&b);
}

TEST(buf_printf_appends_text)
{
	struct buf b = BUF_INIT;
	buf_push(&b, 0x01);
	buf_printf(&b, "k=%d v=%s", 42, "val");
	CHECK_EQ_INT(b.len, 1 + strlen("k=42 v=val"));
	CHECK_EQ_MEM(b.data, b.len, "\x01k=42 v=val", b.len);
	buf_printf(&b, "%s", "");
	CHECK_EQ_INT(b.len, 11);
	buf_printf(&b, "!");
	CHECK_EQ_STR(buf_cstr(&b) + 1, "k=42 v=val!");
	CHECK_EQ_INT(b.len, 12); /* the NUL is not counted */

	/* Text much longer than the current capacity. */
	char big[5000];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	buf_reset(&b);
	buf_printf(&b, "<%s>", big);
	CHECK_EQ_INT(b.len, sizeof big + 1);
	CHECK_EQ_INT(b.data[0], '<');
	CHECK_EQ_MEM(b.data + 1, sizeof big - 1, big, sizeof big - 1);
	CHECK_EQ_INT(b.data[b.len - 1], '>');
	CHECK_EQ_INT(strlen(buf_cstr(&b)), b.len);
	buf_free(&b);
}

TEST(buf_grows_past_several_kib)
{
	struct buf b = BUF_INIT;
	const size_t n = 20000;
	for (size_t i = 0; i < n; i++)
		buf_push(&b, (uint8_t)(i * 7 + 3));
	CHECK_EQ_INT(b.len, n);
	CHECK(b.cap >= n);
	for (size_t i = 0; i < n; i++)
		CHECK_EQ_INT(b.data[i], (uint8_t)(i * 7 + 3));

	/* Odd-sized chunks across growth boundaries. */
	struct buf c = BUF_INIT;
	uint8_t chunk[37];
	size_t total = 0;
	for (int r = 0; r < 300; r++) {
		for (size_t k = 0; k < sizeof chunk; k++)
			chunk[k] = (uint8_t)(r + k);
		buf_append(&c, chunk, sizeof chunk);
		total += sizeof chunk;
		CHECK_EQ_INT(c.len, total);
	}
	for (int r = 0; r < 300; r++)
		for (size_t k = 0; k < sizeof chunk; k++)
			CHECK_EQ_INT(c.data[(size_t)r * sizeof chunk + k], (uint8_t)(r + k));

	/* One append bigger than everything so far. */
	buf_append(&c, b.data, b.len);
	CHECK_EQ_INT(c.len, total + n);
	CHECK_EQ_MEM(c.data + total, n, b.data, n);
	buf_free(&b);
	buf_free(&c);
}

TEST(buf_reserve_and_reset)
{
	struct buf b = BUF_INIT;
	buf_append(&b, "hello", 5);
	buf_reserve(&b, 10000);
	CHECK_EQ_INT(b.len, 5);
	CHECK(b.cap >= 10005);
	CHECK_EQ_MEM(b.data, 5, "hello", 5);
	uint8_t *data = b.data;
	size_t cap = b.cap;
	buf_reserve(&b, 100); /* already room: no change */
	CHECK(b.data == data && b.cap == cap);
	for (int i = 0; i < 10000; i++)
		buf_push(&b, 'x');
	CHECK(b.data == data); /* reserved room was enough */
	buf_reset(&b);
	CHECK_EQ_INT(b.len, 0);
	CHECK_EQ_INT(b.cap, cap);
	buf_append(&b, "again", 5);
	CHECK_EQ_MEM(b.data, b.len, "again", 5);
	buf_free(&b);
}

/* ---- arena.c -------------------------------------------------------- */

TEST(arena_alignment_and_no_overlap)
{
	struct arena a = ARENA_INIT;
	enum { N = 300 };
	uint8_t *p[N];
	size_t sz[N];
	for (int i = 0; i < N; i++) {
		sz[i] = (size_t)(i * 13) % 257; /* includes 0 and odd sizes */
		p[i] = arena_alloc(&a, sz[i]);
		CHECK(p[i] != NULL);
		CHECK_MSG((uintptr_t)p[i] % 16 == 0, "allocation %d of %zu bytes at %p", i, sz[i],
			  (void *)p[i]);
		memset(p[i], (uint8_t)i, sz[i]);
	}
	for (int i = 0; i < N; i++) {
		for (size_t k = 0; k < sz[i]; k++)
			CHECK_EQ_INT(p[i][k], (uint8_t)i);
		if (i > 0)
			CHECK(p[i] != p[i - 1]);
	}
	arena_free(&a);
	CHECK(a.head == NULL);
}

TEST(arena_large_allocations)
{
	struct arena a;
	arena_init(&a);
	uint8_t *small = arena_alloc(&a, 10);
	memset(small, 's', 10);
	const size_t big_n = (1u << 20) + 3; /* far bigger than a block */
	uint8_t *big = arena_alloc(&a, big_n);
	CHECK((uintptr_t)big % 16 == 0);
	memset(big, 'b', big_n);
	uint8_t *after = arena_alloc(&a, 33);
	CHECK((uintptr_t)after % 16 == 0);
	memset(after, 'a', 33);
	CHECK_EQ_INT(big[0], 'b');
	CHECK_EQ_INT(big[big_n - 1], 'b');
	CHECK_EQ_INT(small[9], 's');

	uint8_t *src = malloc(100000);
	CHECK(src != NULL);
	for (size_t i = 0; i < 100000; i++)
		src[i] = (uint8_t)(i ^ (i >> 8));
	uint8_t *dup = arena_dup(&a, src, 100000);
	CHECK((uintptr_t)dup % 16 == 0);
	CHECK(dup != src);
	int same = memcmp(dup, src, 100000) == 0;
	free(src);
	CHECK(same);
	CHECK(arena_dup(&a, NULL, 0) != NULL);
	arena_free(&a);
}

TEST(arena_reset_reuses_first_block)
{
	struct arena a = ARENA_INIT;
	arena_reset(&a); /* empty arena: no-op */
	CHECK(a.head == NULL);

	void *p = arena_alloc(&a, 100);
	arena_reset(&a);
	CHECK(a.head != NULL);
	void *q = arena_alloc(&a, 100);
	CHECK(p == q);

	/* Many blocks: reset keeps one, and allocation starts over in it. */
	for (int i = 0; i < 200; i++)
		memset(arena_alloc(&a, 1000), 0xAB, 1000);
	arena_reset(&a);
	uint8_t *r = arena_alloc(&a, 64);
	arena_reset(&a);
	CHECK(arena_alloc(&a, 64) == r);

	/* A large block is kept too and serves a same-sized request again. */
	arena_free(&a);
	uint8_t *big = arena_alloc(&a, 64 * 1024);
	memset(big, 1, 64 * 1024);
	arena_reset(&a);
	uint8_t *big2 = arena_alloc(&a, 64 * 1024);
	CHECK(big2 == big);
	memset(big2, 2, 64 * 1024);

	/* After free the arena is empty and usable again. */
	arena_free(&a);
	CHECK(a.head == NULL);
	arena_free(&a);
	memset(arena_alloc(&a, 5), 0, 5);
	arena_free(&a);
}

/* ---- log.c ---------------------------------------------------------- */

/* Redirects stderr (fd 2) into an O_APPEND temp file. No CHECK may run
 * between capture_start and capture_end: a failure would leave stderr
 * redirected. */
struct capture {
	int saved;
	FILE *f;
};

static void capture_start(struct capture *c)
{
	fflush(stderr);
	c->f = tmpfile();
	if (c->f == NULL) {
		perror("tmpfile");
		abort();
	}
	fcntl(fileno(c->f), F_SETFL, fcntl(fileno(c->f), F_GETFL) | O_APPEND);
	c->saved = dup(STDERR_FILENO);
	if (c->saved < 0 || dup2(fileno(c->f), STDERR_FILENO) < 0) {
		perror("dup");
		abort();
	}
}

/* Restores stderr; returns what was written, NUL-terminated (caller frees). */
static char *capture_end(struct capture *c, size_t *len)
{
	struct buf b = BUF_INIT;
	char chunk[4096];
	ssize_t n;
	fflush(stderr);
	dup2(c->saved, STDERR_FILENO);
	close(c->saved);
	lseek(fileno(c->f), 0, SEEK_SET);
	while ((n = read(fileno(c->f), chunk, sizeof chunk)) > 0)
		buf_append(&b, chunk, (size_t)n);
	fclose(c->f);
	buf_cstr(&b);
	*len = b.len;
	return (char *)b.data;
}

static size_t count_char(const char *s, size_t n, char ch)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += s[i] == ch;
	return k;
}

/* "2026-11-21T19:40:00.123456Z": 27 characters. */
#define TS_LEN 27

static void check_timestamp(const char *s)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd.ddddddZ";
	for (size_t i = 0; i < TS_LEN; i++) {
		if (shape[i] == 'd')
			CHECK_MSG(s[i] >= '0' && s[i] <= '9', "timestamp %.27s at %zu", s, i);
		else
			CHECK_MSG(s[i] == shape[i], "timestamp %.27s at %zu", s, i);
	}
}

TEST(log_parse_levels)
{
	CHECK_EQ_INT(log_parse_level("error"), LOG_LVL_ERROR);
	CHECK_EQ_INT(log_parse_level("warn"), LOG_LVL_WARN);
	CHECK_EQ_INT(log_parse_level("info"), LOG_LVL_INFO);
	CHECK_EQ_INT(log_parse_level("debug"), LOG_LVL_DEBUG);
	CHECK_EQ_INT(log_parse_level("trace"), LOG_LVL_TRACE);
	CHECK_EQ_INT(log_parse_level("ERROR"), LOG_LVL_ERROR);
	CHECK_EQ_INT(log_parse_level("Info"), LOG_LVL_INFO);
	CHECK_EQ_INT(log_parse_level("tRaCe"), LOG_LVL_TRACE);
	CHECK_EQ_INT(log_parse_level("0"), LOG_LVL_ERROR);
	CHECK_EQ_INT(log_parse_level("1"), LOG_LVL_WARN);
	CHECK_EQ_INT(log_parse_level("2"), LOG_LVL_INFO);
	CHECK_EQ_INT(log_parse_level("3"), LOG_LVL_DEBUG);
	CHECK_EQ_INT(log_parse_level("4"), LOG_LVL_TRACE);

	CHECK_EQ_INT(log_parse_level(NULL), -1);
	CHECK_EQ_INT(log_parse_level(""), -1);
	CHECK_EQ_INT(log_parse_level("5"), -1);
	CHECK_EQ_INT(log_parse_level("-1"), -1);
	CHECK_EQ_INT(log_parse_level("12"), -1);
	CHECK_EQ_INT(log_parse_level("infoo"), -1);
	CHECK_EQ_INT(log_parse_level("inf"), -1);
	CHECK_EQ_INT(log_parse_level(" info"), -1);
	CHECK_EQ_INT(log_parse_level("verbose"), -1);
}

TEST(log_set_level_clamps)
{
	CHECK_EQ_INT(log_threshold, LOG_LVL_WARN); /* the default */
	log_set_level(LOG_LVL_DEBUG);
	CHECK_EQ_INT(log_threshold, LOG_LVL_DEBUG);
	log_set_level(-3);
	CHECK_EQ_INT(log_threshold, LOG_LVL_ERROR);
	log_set_level(99);
	CHECK_EQ_INT(log_threshold, LOG_LVL_TRACE);
	log_set_level(LOG_LVL_WARN);
	CHECK_EQ_INT(log_threshold, LOG_LVL_WARN);
}

TEST(log_line_with_tablet)
{
	struct capture cap;
	size_t len;
	log_set_level(LOG_LVL_INFO);
	capture_start(&cap);
	log_write(LOG_LVL_INFO, "tab1", 7, "../src/tablet/raft.c", 123, "elected, %d voters", 3);
	char *out = capture_end(&cap, &len);
	log_set_level(LOG_LVL_WARN);
	test_note("line: %.*s", (int)(len ? len - 1 : 0), out);
	CHECK_EQ_INT(len, TS_LEN + strlen(" INFO  T tab1 [term 7] raft.c:123 elected, 3 voters\n"));
	check_timestamp(out);
	CHECK_EQ_STR(out + TS_LEN, " INFO  T tab1 [term 7] raft.c:123 elected, 3 voters\n");
	free(out);
}

TEST(log_line_without_tablet)
{
	struct capture cap;
	size_t len;
	capture_start(&cap);
	log_write(LOG_LVL_WARN, NULL, 99, "hlc.c", 9, "skew %s", "high");
	log_write(LOG_LVL_ERROR, NULL, 0, "/abs/path/store.c", 4000, "disk full");
	char *out = capture_end(&cap, &len);
	CHECK_EQ_INT(count_char(out, len, '\n'), 2);
	check_timestamp(out);
	char *second = strchr(out, '\n') + 1;
	*strchr(out, '\n') = '\0';
	CHECK_EQ_STR(out + TS_LEN, " WARN  hlc.c:9 skew high");
	check_timestamp(second);
	CHECK_EQ_STR(second + TS_LEN, " ERROR store.c:4000 disk full\n");
	free(out);
}

static int side_effects;

static int bump(void)
{
	return ++side_effects;
}

TEST(log_below_threshold_not_written)
{
	struct capture cap;
	size_t len;
	log_set_level(LOG_LVL_WARN);
	side_effects = 0;
	capture_start(&cap);
	log_write(LOG_LVL_INFO, "tab1", 7, __FILE__, __LINE__, "direct info");
	log_write(LOG_LVL_TRACE, NULL, 0, __FILE__, __LINE__, "direct trace");
	LOG_INFO("macro info %d", bump());
	LOG_DEBUG("macro debug %d", bump());
	TLOG_INFO("tab1", 7, "tagged info %d", bump());
	TLOG_DEBUG("tab1", 7, "tagged debug %d", bump());
	char *out = capture_end(&cap, &len);
	CHECK_EQ_INT(len, 0);
	CHECK_EQ_INT(side_effects, 0); /* arguments not even evaluated */
	free(out);

	/* At the threshold and above it is written. */
	capture_start(&cap);
	TLOG_WARN("tab2", 3, "tagged warn %d", bump());
	LOG_ERROR("plain error");
	LOG_INFO("still hidden");
	out = capture_end(&cap, &len);
	CHECK_EQ_INT(side_effects, 1);
	CHECK_EQ_INT(count_char(out, len, '\n'), 2);
	CHECK_MSG(strstr(out, " WARN  T tab2 [term 3] test_common.c:") != NULL, "got: %s", out);
	CHECK_MSG(strstr(out, "tagged warn 1\n") != NULL, "got: %s", out);
	CHECK_MSG(strstr(out, " ERROR test_common.c:") != NULL, "got: %s", out);
	CHECK(strstr(out, "hidden") == NULL);
	free(out);
}

TEST(log_trailing_newline_and_errno)
{
	struct capture cap;
	size_t len;
	capture_start(&cap);
	errno = ENOENT;
	log_write(LOG_LVL_ERROR, NULL, 0, "x.c", 1, "ends with newline\n");
	int saved = errno;
	char *out = capture_end(&cap, &len);
	CHECK_EQ_INT(saved, ENOENT);
	CHECK_EQ_INT(count_char(out, len, '\n'), 1);
	CHECK_EQ_STR(out + TS_LEN, " ERROR x.c:1 ends with newline\n");
	free(out);
}

TEST(log_truncates_long_lines)
{
	struct capture cap;
	size_t len;
	const size_t n = 10000;
	char *msg = malloc(n + 1);
	CHECK(msg != NULL);
	memset(msg, 'x', n);
	msg[n] = '\0';
	capture_start(&cap);
	log_write(LOG_LVL_ERROR, "tab1", 1, "x.c", 1, "%s", msg);
	char *out = capture_end(&cap, &len);
	free(msg);
	CHECK_EQ_INT(len, 4096);
	CHECK_EQ_INT(count_char(out, len, '\n'), 1);
	CHECK_EQ_MEM(out + len - 4, 4, "...\n", 4);
	CHECK_EQ_MEM(out + TS_LEN, 24, " ERROR T tab1 [term 1] x", 24);
	free(out);

	/* Two-byte UTF-8 characters are never cut in half. */
	msg = malloc(n + 1);
	CHECK(msg != NULL);
	for (size_t i = 0; i < n; i += 2) {
		msg[i] = (char)0xC3;
		msg[i + 1] = (char)0xA9; /* é */
	}
	msg[n] = '\0';
	for (int shift = 0; shift < 2; shift++) {
		capture_start(&cap);
		log_write(LOG_LVL_ERROR, NULL, 0, shift ? "yy.c" : "y.c", 1, "%s", msg);
		out = capture_end(&cap, &len);
		CHECK(len <= 4096 && len >= 4090);
		CHECK_EQ_MEM(out + len - 4, 4, "...\n", 4);
		CHECK_EQ_INT((unsigned char)out[len - 5], 0xA9);
		free(out);
	}
	free(msg);

	/* A huge tablet name truncates the header but still ends the line. */
	msg = malloc(n + 1);
	CHECK(msg != NULL);
	memset(msg, 't', n);
	msg[n] = '\0';
	capture_start(&cap);
	log_write(LOG_LVL_ERROR, msg, 1, "z.c", 1, "message");
	out = capture_end(&cap, &len);
	free(msg);
	CHECK_EQ_INT(len, 4096);
	CHECK_EQ_INT(count_char(out, len, '\n'), 1);
	CHECK_EQ_MEM(out + len - 4, 4, "...\n", 4);
	free(out);
}

struct writer_arg {
	int id;
};

#define WRITERS 4
#define LINES_PER_WRITER 500

static void *writer(void *p)
{
	const struct writer_arg *w = p;
	char pad[300];
	memset(pad, 'a' + w->id, sizeof pad - 1);
	pad[sizeof pad - 1] = '\0';
	for (int i = 0; i < LINES_PER_WRITER; i++)
		log_write(LOG_LVL_WARN, "tab", (uint64_t)w->id, "w.c", i, "w%d %s end", w->id, pad);
	return NULL;
}

TEST(log_concurrent_lines_do_not_interleave)
{
	struct capture cap;
	struct writer_arg args[WRITERS];
	pthread_t th[WRITERS];
	size_t len;
	int started = 0;
	capture_start(&cap);
	for (int i = 0; i < WRITERS; i++) {
		args[i].id = i;
		if (pthread_create(&th[i], NULL, writer, &args[i]) != 0)
			break;
		started++;
	}
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	char *out = capture_end(&cap, &len);
	CHECK_EQ_INT(started, WRITERS);
	CHECK_EQ_INT(count_char(out, len, '\n'), WRITERS * LINES_PER_WRITER);

	int seen[WRITERS] = {0};
	char pad[300];
	char *line = out;
	for (int k = 0; k < WRITERS * LINES_PER_WRITER; k++) {
		char *nl = strchr(line, '\n');
		CHECK(nl != NULL);
		*nl = '\0';
		int id, lineno;
		char want[400];
		CHECK_MSG(sscanf(line + TS_LEN, " WARN  T tab [term %d] w.c:%d", &id, &lineno) == 2,
			  "line %d: %s", k, line);
		CHECK(id >= 0 && id < WRITERS);
		memset(pad, 'a' + id, sizeof pad - 1);
		pad[sizeof pad - 1] = '\0';
		snprintf(want, sizeof want, " WARN  T tab [term %d] w.c:%d w%d %s end", id, lineno,
			 id, pad);
		CHECK_EQ_STR(line + TS_LEN, want);
		CHECK_EQ_INT(lineno, seen[id]); /* each writer's lines in order */
		seen[id]++;
		line = nl + 1;
	}
	free(out);
}

/* log_init is once-only per process, so this is its only test. */
TEST(log_init_reads_env_once)
{
	struct capture cap;
	size_t len;
	log_set_level(LOG_LVL_WARN);
	setenv("DOCRAFT_TRACE", "loud", 1);
	capture_start(&cap);
	log_init();
	char *out = capture_end(&cap, &len);
	CHECK_EQ_INT(log_threshold, LOG_LVL_WARN);
	CHECK_EQ_INT(count_char(out, len, '\n'), 1);
	CHECK_MSG(strstr(out, " WARN  ") != NULL, "got: %s", out);
	CHECK_MSG(strstr(out, "DOCRAFT_TRACE") != NULL, "got: %s", out);
	CHECK_MSG(strstr(out, "loud") != NULL, "got: %s", out);
	free(out);

	/* Idempotent: a second call neither re-reads nor warns again. */
	setenv("DOCRAFT_TRACE", "debug", 1);
	capture_start(&cap);
	log_init();
	out = capture_end(&cap, &len);
	unsetenv("DOCRAFT_TRACE");
	CHECK_EQ_INT(len, 0);
	CHECK_EQ_INT(log_threshold, LOG_LVL_WARN);
	free(out);
}

/* Quantiles stay within the histogram's 1/64 relative error. */
TEST(histogram_quantiles)
{
	static struct histogram h, g;
	histogram_init(&h);
	CHECK_EQ_U64(histogram_quantile(&h, 0.5), 0);
	for (uint64_t v = 1; v <= 100000; v++)
		histogram_record(&h, v);
	CHECK_EQ_U64(h.count, 100000);
	CHECK_EQ_U64(h.min, 1);
	CHECK_EQ_U64(h.max, 100000);
	const double qs[] = {0.01, 0.5, 0.9, 0.99, 0.999};
	for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
		double want = qs[i] * 100000, got = (double)histogram_quantile(&h, qs[i]);
		CHECK_MSG(got >= want * (1 - 1.0 / 64) - 1 && got <= want * (1 + 1.0 / 64) + 1,
			  "q%.3f: %.0f vs %.0f", qs[i], got, want);
	}
	CHECK_EQ_U64(histogram_quantile(&h, 1), 100000);
	histogram_init(&g);
	histogram_record(&g, 5);
	histogram_record(&g, UINT64_C(1) << 50); /* clamps into the last bucket */
	histogram_merge(&h, &g);
	CHECK_EQ_U64(h.count, 100002);
	CHECK_EQ_U64(h.min, 1);
	CHECK_EQ_U64(histogram_quantile(&h, 1), UINT64_C(1) << 50);
	CHECK_EQ_U64(histogram_quantile(&g, 0), 5);
}

/* ---- fs.h ---------------------------------------------------------------------------- */

/* A fresh directory under /tmp for one test (removed by the test). */
static void temp_dir(char *path, size_t cap)
{
	snprintf(path, cap, "/tmp/docraft-test-common-XXXXXX");
	CHECK(mkdtemp(path) != NULL);
}

static bool exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

TEST(fs_write_then_read_round_trip_leaves_no_tmp)
{
	char dir[64], path[128], tmp[160], errmsg[DOCRAFT_ERRMSG_SIZE];
	uint8_t *data;
	size_t len;

	temp_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/meta.pb", dir);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	CHECK_OK(fs_write_file(path, "first version", 13, errmsg));
	CHECK_OK(fs_write_file(path, "hello\0world", 11, errmsg)); /* replaces it */
	CHECK(!exists(tmp));
	CHECK_OK(fs_read_file(path, 1024, &data, &len, errmsg));
	CHECK_EQ_MEM(data, len, "hello\0world", 11);
	CHECK_EQ_INT(data[len], '\0'); /* NUL past the end */
	free(data);
	/* An empty file. */
	CHECK_OK(fs_write_file(path, "", 0, errmsg));
	CHECK_OK(fs_read_file(path, 1024, &data, &len, errmsg));
	CHECK_EQ_INT(len, 0);
	free(data);
	fs_remove_tree(dir);
	CHECK(!exists(dir));
}

TEST(fs_mkdtemp_in_parent_tmpdir_and_too_long)
{
	char parent[64], a[256], b[256], small[16], want[128], errmsg[DOCRAFT_ERRMSG_SIZE];
	const char *old = getenv("TMPDIR");
	char *saved = old ? strdup(old) : NULL;
	struct stat st;

	temp_dir(parent, sizeof parent);
	CHECK_OK_MSG(fs_mkdtemp(parent, "x", a, sizeof a, errmsg), errmsg);
	CHECK_OK_MSG(fs_mkdtemp(parent, "x", b, sizeof b, errmsg), errmsg);
	snprintf(want, sizeof want, "%s/x-", parent);
	CHECK_MSG(strncmp(a, want, strlen(want)) == 0 && strlen(a) == strlen(want) + 6, "%s", a);
	CHECK(strcmp(a, b) != 0);
	CHECK(lstat(a, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
	/* No parent: $TMPDIR. */
	CHECK_OK(setenv("TMPDIR", parent, 1));
	CHECK_OK_MSG(fs_mkdtemp(NULL, "y", b, sizeof b, errmsg), errmsg);
	snprintf(want, sizeof want, "%s/y-", parent);
	CHECK_MSG(strncmp(b, want, strlen(want)) == 0 && exists(b), "%s", b);
	CHECK_OK_MSG(fs_mkdtemp("", "y", b, sizeof b, errmsg), errmsg);
	CHECK_MSG(strncmp(b, want, strlen(want)) == 0 && exists(b), "%s", b);
	if (saved != NULL)
		setenv("TMPDIR", saved, 1);
	else
		unsetenv("TMPDIR");
	free(saved);
	/* A path that does not fit: EINVAL, nothing created. */
	CHECK_EQ_INT(fs_mkdtemp(parent, "z", small, sizeof small, errmsg), DOCRAFT_EINVAL);
	CHECK_MSG(strstr(errmsg, "too long") != NULL, "%s", errmsg);
	/* A parent that does not exist: an error naming it. */
	snprintf(want, sizeof want, "%s/missing", parent);
	CHECK(fs_mkdtemp(want, "z", a, sizeof a, errmsg) != 0);
	CHECK_MSG(strstr(errmsg, want) != NULL, "%s", errmsg);
	fs_remove_tree(parent);
	CHECK(!exists(parent));
}

TEST(fs_read_missing_is_notfound_and_max_is_enforced)
{
	char dir[64], path[128], errmsg[DOCRAFT_ERRMSG_SIZE];
	uint8_t *data = (uint8_t *)"x";
	size_t len = 7;

	temp_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/missing", dir);
	CHECK_EQ_INT(fs_read_file(path, 1024, &data, &len, errmsg), DOCRAFT_ENOTFOUND);
	CHECK(data == NULL && len == 0);
	CHECK_MSG(strstr(errmsg, path) != NULL, "%s", errmsg);
	snprintf(path, sizeof path, "%s/big", dir);
	CHECK_OK(fs_write_file(path, "0123456789", 10, errmsg));
	CHECK_EQ_INT(fs_read_file(path, 9, &data, &len, errmsg), DOCRAFT_EIO);
	CHECK(data == NULL);
	CHECK_OK(fs_read_file(path, 10, &data, &len, errmsg)); /* exactly max is fine */
	CHECK_EQ_INT(len, 10);
	free(data);
	fs_remove_tree(dir);
}

TEST(fs_write_into_a_missing_directory_fails_cleanly)
{
	char dir[64], path[128], errmsg[DOCRAFT_ERRMSG_SIZE];

	temp_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/no/such/file", dir);
	CHECK_EQ_INT(fs_write_file(path, "x", 1, errmsg), DOCRAFT_EIO);
	CHECK_MSG(strstr(errmsg, "no/such/file.tmp") != NULL, "%s", errmsg);
	fs_remove_tree(dir);
}

TEST(fs_mkdir_p_nested_existing_and_errors)
{
	char dir[64], path[256], file[128], errmsg[DOCRAFT_ERRMSG_SIZE];
	char *longpath;
	struct stat st;

	temp_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/a/b/c/d", dir);
	CHECK_OK(fs_mkdir_p(path, errmsg));
	CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
	CHECK_OK(fs_mkdir_p(path, errmsg)); /* already there */
	snprintf(path, sizeof path, "%s/a/b/", dir); /* trailing slash */
	CHECK_OK(fs_mkdir_p(path, errmsg));
	/* A file in the way. */
	snprintf(file, sizeof file, "%s/a/file", dir);
	CHECK_OK(fs_write_file(file, "x", 1, errmsg));
	snprintf(path, sizeof path, "%s/a/file/sub", dir);
	CHECK_EQ_INT(fs_mkdir_p(path, errmsg), DOCRAFT_EIO);
	CHECK_EQ_INT(fs_mkdir_p("", errmsg), DOCRAFT_EINVAL);
	longpath = xmalloc(8192);
	memset(longpath, 'a', 8191);
	longpath[0] = '/';
	longpath[8191] = '\0';
	CHECK_EQ_INT(fs_mkdir_p(longpath, errmsg), DOCRAFT_EINVAL);
	free(longpath);
	fs_remove_tree(dir);
	CHECK(!exists(dir));
}

TEST(fs_remove_tree_nested_and_missing)
{
	char dir[64], path[256], errmsg[DOCRAFT_ERRMSG_SIZE];

	temp_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/x/y/z", dir);
	CHECK_OK(fs_mkdir_p(path, errmsg));
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof path, "%s/x%s/f%d", dir, i == 0 ? "" : i == 1 ? "/y" : "/y/z",
			 i);
		CHECK_OK(fs_write_file(path, "data", 4, errmsg));
	}
	/* A link is removed, not followed. */
	snprintf(path, sizeof path, "%s/x/link", dir);
	CHECK(symlink("/tmp", path) == 0);
	snprintf(path, sizeof path, "%s/x", dir);
	fs_remove_tree(path);
	CHECK(!exists(path));
	CHECK(exists("/tmp"));
	CHECK(exists(dir));
	fs_remove_tree(path); /* missing: fine */
	fs_remove_tree(dir);
	CHECK(!exists(dir));
}

TEST(fs_fsync_and_errno_codes)
{
	char dir[64], path[128], errmsg[DOCRAFT_ERRMSG_SIZE];

	temp_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/f", dir);
	CHECK_OK(fs_write_file(path, "x", 1, errmsg));
	CHECK_OK(fs_fsync_path(path, errmsg));
	CHECK_OK(fs_fsync_path(dir, errmsg));
	CHECK_OK(fs_fsync_parent(path, errmsg));
	CHECK_OK(fs_fsync_parent("relative-name", errmsg)); /* "." */
	snprintf(path, sizeof path, "%s/missing", dir);
	CHECK_EQ_INT(fs_fsync_path(path, errmsg), DOCRAFT_EIO);
	CHECK_EQ_INT(fs_errno_code(ENOSPC), DOCRAFT_ENOSPC);
	CHECK_EQ_INT(fs_errno_code(EDQUOT), DOCRAFT_ENOSPC);
	CHECK_EQ_INT(fs_errno_code(EACCES), DOCRAFT_EIO);
	fs_remove_tree(dir);
}

/* ---- mem.h --------------------------------------------------------------------------- */

TEST(mem_allocations)
{
	uint8_t *a = xmalloc(0), *b = xmalloc(0), *z = xzalloc(100), *c = xcalloc(10, 8);
	char *s, *n;

	CHECK(a != NULL && b != NULL && a != b); /* unique even for 0 bytes */
	for (int i = 0; i < 100; i++)
		CHECK_EQ_INT(z[i], 0);
	for (int i = 0; i < 80; i++)
		CHECK_EQ_INT(c[i], 0);
	memcpy(c, "0123456789", 10);
	c = xrealloc(c, 1 << 20); /* keeps the bytes */
	CHECK_EQ_MEM(c, 10, "0123456789", 10);
	c = xrealloc(c, 0);
	CHECK(c != NULL);
	s = xstrdup("docraft");
	CHECK_EQ_STR(s, "docraft");
	n = xstrndup("docraft", 3);
	CHECK_EQ_STR(n, "doc");
	free(n);
	n = xstrndup("ab", 10); /* stops at the NUL */
	CHECK_EQ_STR(n, "ab");
	free(n);
	free(s);
	free(a);
	free(b);
	free(z);
	free(c);
}

TEST_MAIN(T(histogram_quantiles), T(err_set_formats_and_returns_code), T(err_set_truncates_at_errmsg_size),
	  T(err_null_errmsg_returns_code), T(err_wrap_prefixes), T(err_wrap_truncates_at_errmsg_size),
	  T(strerror_covers_every_code), T(strerror_out_of_range),
	  T(buf_starts_empty), T(buf_append_and_push_exact_bytes), T(buf_big_and_little_endian),
	  T(buf_printf_appends_text), T(buf_grows_past_several_kib), T(buf_reserve_and_reset),
	  T(arena_alignment_and_no_overlap), T(arena_large_allocations),
	  T(arena_reset_reuses_first_block),
	  T(log_parse_levels), T(log_set_level_clamps), T(log_line_with_tablet),
	  T(log_line_without_tablet), T(log_below_threshold_not_written),
	  T(log_trailing_newline_and_errno), T(log_truncates_long_lines),
	  T(log_concurrent_lines_do_not_interleave), T(log_init_reads_env_once),
	  T(fs_write_then_read_round_trip_leaves_no_tmp), T(fs_mkdtemp_in_parent_tmpdir_and_too_long),
	  T(fs_read_missing_is_notfound_and_max_is_enforced),
	  T(fs_write_into_a_missing_directory_fails_cleanly), T(fs_mkdir_p_nested_existing_and_errors),
	  T(fs_remove_tree_nested_and_missing), T(fs_fsync_and_errno_codes), T(mem_allocations))
