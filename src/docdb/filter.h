/* DocDB-aware bloom filters (docdb-format.md §9.1, seed 002 "Data model
 * aware bloom filters").
 *
 * RocksDB's block-based tables get a full bloom filter over a *prefix* of
 * each key instead of the whole key: the prefix extractor below hands
 * RocksDB the key's bloom key, YugabyteDB's DocKeyV3Filter transform
 * (kUpToHashOrFirstRange):
 *
 *   hash-sharded key   'G' BE16(hash) hashed... '!'   (through the hashed '!')
 *   range-sharded key  <first range component>        (through its end)
 *   anything else      not in the domain (internal records, a DocKey with no
 *                      range component, bytes that do not decode)
 *
 * So every row, column and version of one hash key shares one bloom entry,
 * and a point read or a scan inside one hash key (or, for a range-sharded
 * table, inside one first range value) skips every SST file whose filter
 * says the prefix is absent, without reading any of its data blocks.
 *
 * The transform satisfies RocksDB's prefix-extractor laws: the prefix is a
 * prefix of the key, and since key components are self-delimiting, every key
 * that starts with a prefix P is in the domain and has prefix P (decoding a
 * component never looks past its own bytes).
 *
 * Files written under another extractor name are read without their filter
 * (RocksDB checks the name in the table properties): change FILTER_NAME with
 * any change of the transform. Pure functions, any thread. */
#ifndef DOCRAFT_DOCDB_FILTER_H
#define DOCRAFT_DOCDB_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include <rocksdb/c.h>

/* Recorded by RocksDB in every SST file's properties. */
#define FILTER_NAME "docraft.DocKeyUpToHashOrFirstRange.1"
/* Bloom bits per distinct prefix: about 1% false positives. */
#define FILTER_BITS_PER_KEY 10.0

/* Length of key's bloom key (the table above), or 0 when key is not in the
 * extractor's domain. Never reads past key + len. */
size_t filter_prefix_len(const uint8_t *key, size_t len);

/* The length n > 0 of the bloom key shared by every key of [lower, upper)
 * when an iterator over those bounds may run in RocksDB's prefix mode, else 0:
 * lower is in the domain with prefix P and upper starts with P (so upper is
 * in the domain with the same prefix: SeekForPrev(upper), as SeekToLast does,
 * stays in P). NULL bounds: 0. */
size_t filter_bounds_prefix(const void *lower, size_t lower_len, const void *upper,
			    size_t upper_len);

/* A new prefix extractor implementing filter_prefix_len, named FILTER_NAME.
 * The caller owns it until it hands it to rocksdb_options_set_prefix_extractor
 * (which takes ownership). */
rocksdb_slicetransform_t *filter_slicetransform_create(void);

/* Configures DocDB filtering on a table-options / options pair before the
 * table factory is set: a full (not block-based) bloom filter of
 * FILTER_BITS_PER_KEY, whole-key filtering off (whole keys carry a hybrid
 * time, so a reader never knows one), and the prefix extractor on opts. */
void filter_configure(rocksdb_options_t *opts, rocksdb_block_based_table_options_t *table);

#endif
