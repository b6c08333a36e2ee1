/* Binary-comparable key encoding (docdb-format.md §1–3): primitive key
 * components, DocKey, SubDocKey and the DocHybridTime suffix.
 *
 * Every key component is one type byte plus a payload whose memcmp order is
 * the value's logical order (descending components reverse it). A stored key
 * is  DocKey [subkey ...] '#' DocHT.  Decoders never trust their input: any
 * malformed byte sequence yields DOCRAFT_ECORRUPT, never a crash. */
#ifndef DOCRAFT_DOCDB_KEY_H
#define DOCRAFT_DOCDB_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/buf.h"
#include "docdb/pv.h"

/* Key entry type bytes used outside primitive payloads. */
#define KT_GROUP_END '!'       /* 0x21 */
#define KT_HYBRID_TIME '#'     /* 0x23 */
#define KT_UINT16_HASH 'G'     /* 0x47 */
#define KT_MAX_BYTE 0xFF       /* seek helper: past every key with a prefix */
/* Bytes below KT_GROUP_END start internal records (applied marker, ...), which
 * therefore sort before all table data. */
#define KT_INTERNAL_MAX 0x20

/* Appends type byte + payload of v (v->desc selects the descending form). */
void key_append_pv(struct buf *out, const struct pv *v);
/* Decodes one component at *p and advances *p. String payloads are unescaped
 * into arena a (never borrowed from the input; a must not be NULL). Sets
 * out->desc from the type byte ('|' sets null_high). On error *p is left
 * unchanged. */
int key_decode_pv(const uint8_t **p, const uint8_t *end, struct pv *out, struct arena *a);
/* Advances *p past one component without decoding it. */
int key_skip_pv(const uint8_t **p, const uint8_t *end);

/* The 16-bit hash of hash-column values: hash16 over the raw big-endian
 * concatenation of §4.1 (no type bytes, no escaping). desc is ignored; a
 * PV_NULL contributes no bytes; uuids are hashed as their 16 RFC-order bytes;
 * key-only types (column ids, array index) are a caller bug. No allocation. */
uint16_t key_hash_components(const struct pv *hashed, size_t n);

struct dockey {
	bool has_hash;
	uint16_t hash;
	size_t n_hashed;
	size_t n_range;
	const struct pv *hashed; /* borrowed */
	const struct pv *range;  /* borrowed */
};

/* ['G' BE16(hash) hashed... '!'] range... '!' */
void dockey_append(struct buf *out, const struct dockey *k);
/* Decodes a DocKey at *p, advancing *p past its final '!'. The component
 * arrays are allocated in a. */
int dockey_decode(const uint8_t **p, const uint8_t *end, struct dockey *out, struct arena *a);
/* Length of the DocKey at the start of key, including its final '!';
 * 0 if key does not start with a well-formed DocKey. */
size_t dockey_prefix_len(const uint8_t *key, size_t len);

/* A DocHybridTime: the HybridTime of a write plus its index in the batch. */
struct docht {
	uint64_t ht;
	uint32_t write_id;
};
#define DOCHT_MAX_LEN 30

/* Appends the variable-length descending encoding (§3.3), without '#'. */
void docht_append(struct buf *out, struct docht d);
/* Decodes exactly len bytes: the four fields must end at p + len and the low
 * 5 bits of the last byte must equal len. The generation field is ignored (as
 * YugabyteDB does); the physical part must fit 52 bits, logical 0..4095 and
 * write_id a uint32, else DOCRAFT_ECORRUPT. */
int docht_decode(const uint8_t *p, size_t len, struct docht *out);
/* By ht, then write_id; <0, 0, >0. */
static inline int docht_compare(struct docht a, struct docht b)
{
	if (a.ht != b.ht)
		return a.ht < b.ht ? -1 : 1;
	if (a.write_id != b.write_id)
		return a.write_id < b.write_id ? -1 : 1;
	return 0;
}

/* Splits a stored key "<path> '#' <DocHT>" using the length in the low 5 bits
 * of its last byte: *path_len is the length before '#'. */
int key_split_ht(const uint8_t *key, size_t len, size_t *path_len, struct docht *out);

/* Full decode of a stored key (for dumps and tests): DocKey, subkeys (array in
 * a), and DocHT when has_ht (keys without '#' are accepted: has_ht false). */
struct subdockey {
	struct dockey doc;
	size_t n_subkeys;
	const struct pv *subkeys;
	bool has_ht;
	struct docht ht;
};
int subdockey_decode(const uint8_t *key, size_t len, struct subdockey *out, struct arena *a);

#endif
