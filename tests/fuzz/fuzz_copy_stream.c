/* libFuzzer target: the remote-copy stream a destination reads from the
 * source server (copy_frame_decode, src/tablet/copy_proto.c), against the
 * encoders the source writes it with.
 *
 * Input: the bytes after the COPY preamble. Frames are decoded in turn as
 * the fetcher does (a D frame's payload is skipped). Checks, beyond "no
 * crash, no leak, no UB":
 *  - a decoded header never claims more bytes than it was given, and
 *    decoding it from any shorter prefix asks for more bytes (0), never
 *    decodes something else or fails;
 *  - every frame but X (whose message is sanitized) re-encodes, with the
 *    source's encoders (copy_proto.h), to exactly its bytes; names are
 *    valid (1..255 printable bytes, no '/', not . or ..), data lengths
 *    1..COPY_CHUNK_MAX, error codes known;
 *  - errors come with a message. */
#include "fuzz.h"

#include "docraft/error.h"
#include "tablet/copy_proto.h"
#include "tablet/remote_copy.h"

/* The frame as the source writes it (copy_proto.h's encoders). */
static void encode(struct buf *b, const struct copy_frame *f)
{
	uint8_t hdr[COPY_HDR_MAX > COPY_ERROR_FRAME_MAX ? COPY_HDR_MAX : COPY_ERROR_FRAME_MAX];
	size_t n = 0;

	switch (f->type) {
	case 'K':
		hdr[0] = 'K';
		n = 1;
		break;
	case 'F':
		n = copy_proto_encode_file(hdr, f->name, f->size);
		break;
	case 'D':
		n = copy_proto_encode_data(hdr, f->len);
		break;
	case 'C':
		n = copy_proto_encode_crc(hdr, f->crc);
		break;
	case 'E':
		n = copy_proto_encode_end(hdr, f->nfiles, f->total, f->applied_index,
					  f->applied_ht);
		break;
	case 'X':
		n = copy_proto_encode_error(hdr, f->code, f->msg);
		break;
	}
	buf_append(b, hdr, n);
}

static void check_frame(const struct copy_frame *f, const uint8_t *p, size_t n)
{
	struct buf b = BUF_INIT;
	size_t len;
	switch (f->type) {
	case 'F':
		len = strlen(f->name);
		FUZZ_CHECK(len >= 1 && len <= COPY_NAME_MAX && strchr(f->name, '/') == NULL);
		FUZZ_CHECK(strcmp(f->name, ".") != 0 && strcmp(f->name, "..") != 0);
		break;
	case 'D':
		FUZZ_CHECK(f->len >= 1 && f->len <= COPY_CHUNK_MAX);
		break;
	case 'X':
		FUZZ_CHECK(f->code > DOCRAFT_OK && f->code < DOCRAFT_ERROR_MAX);
		for (const char *c = f->msg; *c != '\0'; c++)
			FUZZ_CHECK(*c >= 0x20 && *c < 0x7f);
		break;
	}
	encode(&b, f);
	FUZZ_CHECK(b.len == n);
	if (f->type != 'X')
		FUZZ_CHECK(memcmp(b.data, p, n) == 0);
	buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	struct copy_frame f, g;
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	while (p < end) {
		int n;
		errmsg[0] = '\0';
		n = copy_frame_decode(p, (size_t)(end - p), &f, errmsg);
		if (n < 0) {
			FUZZ_CHECK(n == -DOCRAFT_ECORRUPT && errmsg[0] != '\0');
			break;
		}
		if (n == 0)
			break;
		FUZZ_CHECK((size_t)n <= (size_t)(end - p));
		/* Every shorter prefix of a header needs more bytes. */
		for (size_t k = 0; k < (size_t)n; k += 1 + (size_t)n / 16)
			FUZZ_CHECK(copy_frame_decode(p, k, &g, errmsg) == 0);
		check_frame(&f, p, (size_t)n);
		p += n;
		if (f.type == 'D') {
			if (f.len > (size_t)(end - p))
				break;
			p += f.len;
		}
		if (f.type == 'E' || f.type == 'X')
			break;
	}
	return 0;
}

/* F, D (when not empty), C: one file as the source sends it. */
static void seed_file(struct buf *b, const char *name, const char *content)
{
	struct copy_frame f;
	size_t n = strlen(content);
	memset(&f, 0, sizeof f);
	f.type = 'F';
	snprintf(f.name, sizeof f.name, "%s", name);
	f.size = n;
	encode(b, &f);
	if (n > 0) {
		f.type = 'D';
		f.len = (uint32_t)n;
		encode(b, &f);
		buf_append(b, content, n);
	}
	f.type = 'C';
	f.crc = copy_crc32c(0, content, n);
	encode(b, &f);
}

static void fuzz_seeds(void)
{
	struct buf b = BUF_INIT;
	struct copy_frame f;

	memset(&f, 0, sizeof f);
	f.type = 'K';
	encode(&b, &f);
	seed_file(&b, "000012.sst", "hello");
	seed_file(&b, "MANIFEST-000005", "");
	f.type = 'E';
	f.nfiles = 2;
	f.total = 5;
	f.applied_index = 77;
	f.applied_ht = 0x5f3e000000000ull;
	encode(&b, &f);
	seed_buf("two-files", &b);
	buf_reset(&b);
	f.type = 'K';
	encode(&b, &f);
	f.type = 'X';
	f.code = DOCRAFT_EBUSY;
	strcpy(f.msg, "too many transfers");
	encode(&b, &f);
	seed_buf("error", &b);
	buf_free(&b);
}
