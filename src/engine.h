/* What the engine (engine.c) asks of an array -> bytes codec that does more
 * than lay elements out: decode a stored value whole, decode part of it from
 * byte ranges of the stored value, and encode it. A codec offers this by
 * pointing its table row's `engine` at a zab_engine (sharding_indexed does;
 * uncompressed `bytes` could, to read single elements by range). The engine
 * plans its key and range requests through these hooks and never asks which
 * codec it talks to. R-free: codec files build without R (tools/fuzz). */
#ifndef ZARR_ENGINE_H
#define ZARR_ENGINE_H

#include "zarr_core.h"

/* Nesting depth the engine keeps scratch buffers for (a value, its parts,
 * their parts). */
#define ZENGINE_MAX_DEPTH 3

/* What the engine lends a codec while it decodes one stored value. */
typedef struct zdec_env zdec_env;
struct zdec_env {
  /* Decode one part, a value of chain `ch` (src, n bytes; missing: absent,
   * the fill value), at nesting `depth`: into `slab` of the caller's output,
   * or, when dst != NULL, whole into dst (ch's chunk, native order). `src` may
   * be modified when `writable`. The engine's own decoding, so parts that are
   * themselves partial codecs (nested sharding) come back through the hooks. */
  int (*part)(const zdec_env *env, const zchain *ch, const uint8_t *src, size_t n, int missing,
              int writable, zslab *slab, uint8_t *dst, int depth, int64_t id, zerr *e);
  /* Part `id` (>= 0; C order over the parts of the value being decoded) at
   * `depth` served into `slab` from the engine's decoded-chunk cache: 1 when
   * it was, 0 when the part must be fetched and decoded (passing `id` to
   * part() then lets the engine keep it), -1 on failure. */
  int (*cached)(const zdec_env *env, const zchain *ch, int64_t id, zslab *slab, int depth,
                zerr *e);
  void *engine, *thread, *conv; /* the engine's, handed back to part() */
  zbuf *a, *b;                  /* this thread's scratch, ZENGINE_MAX_DEPTH of each */
  size_t elsize;                /* bytes per decoded element */
  /* requests for parts: neighbours at most range_gap bytes apart are merged
   * into one request of at most range_max bytes (zarr.range_gap/range_max) */
  int64_t range_gap, range_max;
};

typedef struct zab_engine {
  /* ---- partial reads, in two batches of requests ---- */
  /* The first request for a stored value (off < 0: its last -off bytes). */
  int (*plan_first)(const zchain *ch, int64_t *off, int64_t *len, zerr *e);
  /* The first request's bytes arrived (p, n): decode now what needs nothing
   * more (absent parts) into `slab`, and make *plan, the ranges still to
   * fetch. *plan is set as soon as it exists, even on failure; free it with
   * plan_free(). */
  int (*plan_next)(const zchain *ch, const uint8_t *p, size_t n, zslab *slab,
                   const zdec_env *env, void **plan, zerr *e);
  int64_t (*plan_count)(const void *plan);
  void (*plan_range)(const void *plan, int64_t k, int64_t *off, int64_t *len);
  /* Range k of the plan arrived (missing: the value vanished meanwhile):
   * decode the parts it holds into the slab plan_next() was given. */
  int (*decode_partial)(const zchain *ch, const void *plan, int64_t k, uint8_t *src, size_t n,
                        int missing, int writable, const zdec_env *env, zerr *e);
  void (*plan_free)(void *plan);
  /* ---- whole values ---- */
  /* Decode a whole value (after the chain's bytes -> bytes codecs) into
   * `slab`, or, when dst != NULL, every element into dst; at `depth`. */
  int (*decode)(const zchain *ch, const uint8_t *src, size_t n, zslab *slab, uint8_t *dst,
                int depth, const zdec_env *env, zerr *e);
  /* Whether chunks of this chain can be written (an error says why not). */
  int (*write_check)(const zarray *a, const zchain *ch, zerr *e);
  /* Encode a whole chunk (a's elements in C order over ch's dims, native
   * byte order; may be modified) into out, before the chain's bytes -> bytes
   * codecs; s1..s3 are scratch. *empty: every element is the fill value
   * (nothing to store). */
  int (*encode)(const zarray *a, const zchain *ch, uint8_t *chunk, zbuf *out, zbuf *s1, zbuf *s2,
                zbuf *s3, int *empty, zerr *e);
} zab_engine;

/* The hooks of a chain's array -> bytes codec, or NULL (plain layouts). */
static inline const zab_engine *chain_engine(const zchain *c) {
  return c->ab_vt ? c->ab_vt->engine : NULL;
}

#endif
