/* The DocDB prefix extractor and bloom filter setup behind docdb/filter.h. */
#include "docdb/filter.h"

#include <string.h>

#include "common/check.h"
#include "docdb/key.h"

size_t filter_prefix_len(const uint8_t *key, size_t len)
{
	const uint8_t *p = key, *end = key + len;

	if (len == 0 || key[0] <= KT_INTERNAL_MAX || key[0] == KT_GROUP_END)
		return 0;
	if (key[0] == KT_UINT16_HASH) {
		/* 'G' BE16(hash), the hashed components, '!'. */
		if (len < 3)
			return 0;
		p += 3;
		while (p < end && *p != KT_GROUP_END)
			if (key_skip_pv(&p, end) != 0)
				return 0;
		if (p == end)
			return 0;
		return (size_t)(p + 1 - key);
	}
	/* Range-sharded: the first range component. */
	if (key_skip_pv(&p, end) != 0)
		return 0;
	return (size_t)(p - key);
}

size_t filter_bounds_prefix(const void *lower, size_t lower_len, const void *upper,
			    size_t upper_len)
{
	size_t n;

	if (lower == NULL || upper == NULL)
		return 0;
	n = filter_prefix_len(lower, lower_len);
	if (n == 0 || upper_len < n || memcmp(lower, upper, n) != 0)
		return 0;
	return n;
}

/* RocksDB only calls transform on keys in the domain, except DBIter under
 * prefix_same_as_start, which transforms its seek key: store.c only seeks
 * in-domain keys in that mode, and the whole key is a harmless answer. */
static char *st_transform(void *state, const char *key, size_t length, size_t *dst_length)
{
	size_t n = filter_prefix_len((const uint8_t *)key, length);
	(void)state;
	*dst_length = n != 0 ? n : length;
	return (char *)key;
}

static unsigned char st_in_domain(void *state, const char *key, size_t length)
{
	(void)state;
	return filter_prefix_len((const uint8_t *)key, length) != 0;
}

/* InRange is deprecated and unused by RocksDB 7.8. */
static unsigned char st_in_range(void *state, const char *key, size_t length)
{
	(void)state;
	return filter_prefix_len((const uint8_t *)key, length) == length;
}

static const char *st_name(void *state)
{
	(void)state;
	return FILTER_NAME;
}

static void st_destroy(void *state)
{
	(void)state;
}

rocksdb_slicetransform_t *filter_slicetransform_create(void)
{
	return rocksdb_slicetransform_create(NULL, st_destroy, st_transform, st_in_domain,
					     st_in_range, st_name);
}

void filter_configure(rocksdb_options_t *opts, rocksdb_block_based_table_options_t *table)
{
	PRE(opts != NULL && table != NULL);
	/* The table options take ownership of the policy. */
	rocksdb_block_based_options_set_filter_policy(
		table, rocksdb_filterpolicy_create_bloom_full(FILTER_BITS_PER_KEY));
	rocksdb_block_based_options_set_whole_key_filtering(table, 0);
	rocksdb_options_set_prefix_extractor(opts, filter_slicetransform_create());
}
