/* The decoded-chunk cache (chunk_cache.c): one byte-capped LRU per process
 * of decoded chunks (and of the inner chunks and indexes of shards), shared
 * by every array and store, safe to use from the engine's worker threads.
 *
 * An entry is named by its storage key (a store identity and a key in that
 * store, one string: ident + key, so that two stores whose identities name
 * a folder and its subfolder name one file alike), the identity of the
 * array's metadata (`meta`: anything that changes how the stored bytes
 * decode or where they go) and a part number (-1: the whole value; >= 0:
 * an inner chunk; -2: a shard's index bytes). Dropping a storage key drops
 * every entry made from its value. An entry also keeps the stamp of the
 * value it was made from (a local file's size and times): a reader compares
 * it with the value's stamp now and discards a stale entry. */
#ifndef ZARR_CHUNK_CACHE_H
#define ZARR_CHUNK_CACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct zcache_entry zcache_entry;

/* What a stored value was when it was read (stat() of a local file): the
 * same stamp later means the same bytes. valid 0: the store cannot tell
 * (entries are then dropped by writes only); missing: no such value;
 * unknown: stat() failed (nothing matches it). */
typedef struct {
  int valid, missing, unknown;
  uint64_t dev, ino;
  int64_t size, mtime_s, mtime_ns, ctime_s, ctime_ns;
} zstamp;

/* (inline: the fuzz targets link the stores without the cache) */
static inline int zstamp_same(const zstamp *a, const zstamp *b) {
  if (!a->valid || !b->valid) return !a->valid && !b->valid;
  if (a->unknown || b->unknown) return 0;
  if (a->missing || b->missing) return a->missing && b->missing;
  return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->mtime_s == b->mtime_s &&
         a->mtime_ns == b->mtime_ns && a->ctime_s == b->ctime_s && a->ctime_ns == b->ctime_ns;
}

#define ZCACHE_WHOLE ((int64_t)-1)
#define ZCACHE_INDEX ((int64_t)-2)

/* Set the cap (bytes); entries beyond it are evicted now. */
void zcache_set_cap(size_t cap);
/* Entries held now (a quick test before any work). */
size_t zcache_count(void);
/* The entry, pinned until zcache_release(), or NULL. */
zcache_entry *zcache_get(const char *ident, const char *key, uint64_t meta, int64_t part);
const uint8_t *zcache_data(const zcache_entry *en, size_t *n, int *missing);
const zstamp *zcache_stamp(const zcache_entry *en);
void zcache_release(zcache_entry *en);
/* Release a stale entry, taking it out of the cache (if still there). */
void zcache_discard(zcache_entry *en);
/* Keep `data` (malloc'd, n bytes; missing: the value does not exist, data
 * NULL) as an entry; the cache takes it over and frees it when it is not
 * kept. `owner` names the array, which may hold at most owner_cap bytes;
 * `stamp` (NULL: none) is the value's, taken before its bytes were read. */
void zcache_put(const char *ident, const char *key, uint64_t meta, int64_t part, uint64_t owner,
                size_t owner_cap, const zstamp *stamp, uint8_t *data, size_t n, int missing);
/* Drop every entry of one storage key; of every key starting with `prefix`
 * (ident NULL: of every store). */
void zcache_drop(const char *ident, const char *key);
void zcache_drop_prefix(const char *ident, const char *prefix);
void zcache_stats(size_t *bytes, size_t *entries, size_t *cap);
uint64_t zcache_hash(uint64_t h, const void *p, size_t n);

#endif
