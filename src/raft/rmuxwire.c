/* rmuxwire: frames of a multiplexed Raft connection (see rmuxwire.h).
 *
 * The decoder has three stages: the 5-byte head (type, group); for OPEN,
 * the rest of the frame, read in up to three steps into frame[] (each step
 * knows how many bytes the next needs, as listener_preamble_parse does);
 * for MSG, the message, fed to an rwire decoder that stops exactly at the
 * message's end (rwire_decoder_feed reports what it used). */
#include "raft/rmuxwire.h"

#include <stdio.h>
#include <string.h>

#include "common/check.h"
#include "common/err.h"

_Static_assert(DOCRAFT_ECORRUPT != RMUXWIRE_MORE && DOCRAFT_ECORRUPT != RMUXWIRE_MESSAGE &&
		       DOCRAFT_ECORRUPT != RMUXWIRE_OPENED,
	       "feed's results and error codes are distinct");

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static bool printable(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x21 || p[i] > 0x7e)
			return false;
	return true;
}

void rmuxwire_msg_head(uint32_t group, uint8_t *out)
{
	out[0] = RMUXWIRE_MSG;
	put_le32(out + 1, group);
}

size_t rmuxwire_open_encode(uint8_t *out, uint32_t group, const char *tablet_id, uint64_t id,
			    const char *address)
{
	size_t tlen, alen, n;

	if (tablet_id == NULL || address == NULL || id == 0)
		return 0;
	tlen = strnlen(tablet_id, RMUXWIRE_TABLET_ID_MAX + 1);
	alen = strnlen(address, RMUXWIRE_ADDRESS_MAX + 1);
	if (tlen == 0 || tlen > RMUXWIRE_TABLET_ID_MAX || alen == 0 ||
	    alen > RMUXWIRE_ADDRESS_MAX || !printable((const uint8_t *)tablet_id, tlen) ||
	    !printable((const uint8_t *)address, alen))
		return 0;
	out[0] = RMUXWIRE_OPEN;
	put_le32(out + 1, group);
	n = RMUXWIRE_HEAD_SIZE;
	out[n++] = (uint8_t)tlen;
	memcpy(out + n, tablet_id, tlen);
	n += tlen;
	for (int i = 0; i < 8; i++)
		out[n++] = (uint8_t)(id >> (8 * i));
	out[n++] = (uint8_t)alen;
	memcpy(out + n, address, alen);
	return n + alen;
}

void rmuxwire_decoder_init(struct rmuxwire_decoder *d, uint64_t limit)
{
	memset(d, 0, sizeof *d);
	d->stage = RMUXWIRE_AT_HEAD;
	d->want = RMUXWIRE_HEAD_SIZE;
	rwire_decoder_init(&d->msg, limit);
}

void rmuxwire_decoder_close(struct rmuxwire_decoder *d)
{
	rwire_decoder_close(&d->msg);
}

static void next_frame(struct rmuxwire_decoder *d)
{
	d->stage = RMUXWIRE_AT_HEAD;
	d->have = 0;
	d->want = RMUXWIRE_HEAD_SIZE;
}

/* frame[0..have) is an OPEN frame so far: 0 when complete (decoded into
 * *open), 1 when d->want grew, DOCRAFT_ECORRUPT when it cannot be one. */
static int open_step(struct rmuxwire_decoder *d, struct rmuxwire_open *open, char *errmsg)
{
	const uint8_t *b = d->frame;
	size_t tlen, alen, at = RMUXWIRE_HEAD_SIZE;

	if (d->have == RMUXWIRE_HEAD_SIZE) {
		d->want = at + 1;
		return 1;
	}
	tlen = b[at];
	if (tlen == 0 || tlen > RMUXWIRE_TABLET_ID_MAX)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "rmux open: tablet id of %zu bytes", tlen);
	if (d->have == at + 1) {
		d->want = at + 1 + tlen + 8 + 1;
		return 1;
	}
	alen = b[at + 1 + tlen + 8];
	if (!printable(b + at + 1, tlen))
		return err_set(errmsg, DOCRAFT_ECORRUPT, "rmux open: tablet id not printable");
	if (get_le64(b + at + 1 + tlen) == 0)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "rmux open: raft id 0");
	if (alen == 0)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "rmux open: empty address");
	if (d->have == at + 1 + tlen + 8 + 1) {
		d->want = d->have + alen;
		return 1;
	}
	if (!printable(b + d->have - alen, alen))
		return err_set(errmsg, DOCRAFT_ECORRUPT, "rmux open: address not printable");
	open->group = d->group;
	memcpy(open->tablet_id, b + at + 1, tlen);
	open->tablet_id[tlen] = '\0';
	open->id = get_le64(b + at + 1 + tlen);
	memcpy(open->address, b + d->have - alen, alen);
	open->address[alen] = '\0';
	return 0;
}

int rmuxwire_decoder_feed(struct rmuxwire_decoder *d, const uint8_t *p, size_t n, size_t *used,
			  uint32_t *group, struct raft_message *m, struct rmuxwire_open *open,
			  char *errmsg)
{
	size_t off = 0;

	while (off < n) {
		if (d->stage == RMUXWIRE_AT_MSG) {
			size_t k = 0;
			int rv = rwire_decoder_feed(&d->msg, p + off, n - off, &k, m, errmsg);
			off += k;
			if (rv == RWIRE_MESSAGE) {
				*group = d->group;
				next_frame(d);
				*used = off;
				return RMUXWIRE_MESSAGE;
			}
			if (rv != RWIRE_MORE) {
				*used = off;
				return rv;
			}
			continue;
		}
		size_t k = d->want - d->have;
		k = k < n - off ? k : n - off;
		memcpy(d->frame + d->have, p + off, k);
		d->have += k;
		off += k;
		if (d->have < d->want)
			break;
		if (d->stage == RMUXWIRE_AT_HEAD) {
			d->group = get_le32(d->frame + 1);
			if (d->frame[0] == RMUXWIRE_MSG) {
				d->stage = RMUXWIRE_AT_MSG;
				continue;
			}
			if (d->frame[0] != RMUXWIRE_OPEN) {
				*used = off;
				return err_set(errmsg, DOCRAFT_ECORRUPT, "rmux: frame type %u",
					       (unsigned)d->frame[0]);
			}
			d->stage = RMUXWIRE_AT_OPEN;
		}
		int rv = open_step(d, open, errmsg);
		if (rv == 1)
			continue;
		*used = off;
		if (rv != 0)
			return rv;
		*group = d->group;
		next_frame(d);
		return RMUXWIRE_OPENED;
	}
	*used = off;
	return RMUXWIRE_MORE;
}

bool rmuxwire_decoder_window(struct rmuxwire_decoder *d, size_t min, uint8_t **p, size_t *n)
{
	return d->stage == RMUXWIRE_AT_MSG && rwire_decoder_window(&d->msg, min, p, n);
}

int rmuxwire_decoder_advance(struct rmuxwire_decoder *d, size_t k, uint32_t *group,
			     struct raft_message *m)
{
	PRE(d->stage == RMUXWIRE_AT_MSG);
	if (rwire_decoder_advance(&d->msg, k, m) != RWIRE_MESSAGE)
		return RMUXWIRE_MORE;
	*group = d->group;
	next_frame(d);
	return RMUXWIRE_MESSAGE;
}
