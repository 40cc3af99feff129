/* libFuzzer target: shards (sharding_indexed). The input's first bytes pick
 * the geometry (rank, shard and inner chunk shapes, element size, index
 * location, inner codecs); the rest is used twice:
 *  1. as a shard read from a store, through the codec's engine hooks
 *     (engine.h): whole (decode), and by parts (plan_first, plan_next,
 *     decode_partial) as from a store's ranged reads; both must fail
 *     cleanly or agree;
 *  2. as elements written with shard_encode(), whose output must decode
 *     (by step 1) to exactly those elements. */
#include <stdlib.h>
#include <string.h>
#include "engine.h"

extern const zcodec_vt zc_sharding_indexed;

typedef struct {
  zarray a;
  zchain *shard;
  int64_t nelem;  /* elements of the shard */
  int64_t ninner;
  int64_t cps[ZARR_MAX_DIMS];
} geom;

static zcodec one(const char *name) {
  static const zkv kv[] = {{"level", NULL, 1}, {"checksum", NULL, 0}, {NULL, NULL, 0}};
  zcfg cfg = zcfg_kv(kv);
  zcodec c;
  zerr e = {ZE_OK, ""};
  if (zcodec_init(&c, name, &cfg, &e)) abort();
  return c;
}

static int setup(geom *g, const uint8_t *d) {
  memset(g, 0, sizeof *g);
  zarray *a = &g->a;
  int nd = 1 + d[0] % 3;
  a->name = "/fuzz";
  a->ndim = nd;
  /* the element size is the data type's, as spec_parse() makes it */
  static const zdtype types[] = {DT_UINT8, DT_UINT16, DT_UINT32, DT_UINT64};
  a->dtype = types[d[1] & 3];
  a->elsize = dtype_size(a->dtype);
  zchain *sh = &a->chain, *in = &a->pool[0], *ix = &a->pool[1];
  a->pool_used = 2;
  sh->ndim = nd;
  sh->ab = AB_SHARDING;
  sh->ab_vt = &zc_sharding_indexed;
  sh->inner = in;
  sh->index = ix;
  sh->index_at_end = !(d[1] & 4);
  in->ndim = nd;
  in->ab = AB_BYTES;
  in->big_endian = (d[1] & 8) != 0;
  if (d[1] & 16) in->bb[in->n_bb++] = one("zstd");
  if (d[1] & 32) in->bb[in->n_bb++] = one("crc32c");
  ix->ndim = nd + 1;
  ix->ab = AB_BYTES;
  ix->bb[ix->n_bb++] = one("crc32c");
  g->nelem = 1;
  g->ninner = 1;
  for (int k = 0; k < nd; k++) {
    int64_t inner = 1 + d[2 + k] % 4, per = 1 + (d[2 + k] >> 4) % 4;
    in->chunk_shape[k] = inner;
    in->order[k] = k;
    sh->chunk_shape[k] = inner * per;
    sh->order[k] = k;
    g->cps[k] = per;
    g->nelem *= inner * per;
    g->ninner *= per;
    ix->chunk_shape[k] = per;
    ix->order[k] = k;
  }
  ix->chunk_shape[nd] = 2;
  ix->order[nd] = nd;
  return 2 + nd;
}

/* The engine's side of the hooks, as the engine does it: an inner chunk is
 * decoded with its chain, byte-swapped, and either kept whole (dst) or copied
 * element by element into the slab of `env->engine` (C-order strides). */
static int part(const zdec_env *env, const zchain *ch, const uint8_t *src, size_t n, int missing,
                int writable, zslab *slab, uint8_t *dst, int depth, int64_t id, zerr *e) {
  (void)writable;
  (void)id;
  if (depth >= ZENGINE_MAX_DEPTH) return zerr_set(e, ZE_CODEC, "codecs are nested too deeply");
  size_t es = env->elsize;
  int64_t ne = 1;
  for (int d = 0; d < ch->ndim; d++) ne *= ch->chunk_shape[d];
  size_t expect = (size_t)ne * es;
  zbuf *tmp = &env->b[ZENGINE_MAX_DEPTH - 1];
  uint8_t *buf = dst;
  if (buf == NULL) {
    if (zbuf_reserve(tmp, expect + 1, e)) return -1;
    buf = tmp->data;
  }
  if (missing) {
    memset(buf, 0, expect);
  } else {
    const uint8_t *res;
    size_t res_n;
    if (chain_decode_bytes(ch, src, n, expect, &env->a[depth], &env->b[depth], &res, &res_n, e))
      return -1;
    if (res_n != expect) return zerr_set(e, ZE_CORRUPT, "inner chunk has the wrong size");
    memcpy(buf, res, expect);
    if (ch->big_endian && es > 1) byteswap_inplace(buf, (size_t)ne, es);
  }
  if (dst != NULL) return 0;
  uint8_t *out = env->engine;
  int64_t cst[ZARR_MAX_DIMS], idx[ZARR_MAX_DIMS] = {0}, total = 1;
  chunk_strides(ch, cst);
  for (int d = 0; d < slab->ndim; d++) total *= slab->dim[d].cnt;
  for (int64_t k = 0; k < total; k++) {
    int64_t lo = 0, oo = 0;
    for (int d = 0; d < slab->ndim; d++) {
      lo += map_local(&slab->dim[d], idx[d]) * cst[d];
      oo += map_out(&slab->dim[d], idx[d]) * slab->ostride[d];
    }
    memcpy(out + oo * (int64_t)es, buf + lo * (int64_t)es, es);
    for (int d = slab->ndim - 1; d >= 0; d--) {
      if (++idx[d] < slab->dim[d].cnt) break;
      idx[d] = 0;
    }
  }
  return 0;
}

/* no decoded-chunk cache here: every part is fetched */
static int not_cached(const zdec_env *env, const zchain *ch, int64_t id, zslab *slab, int depth,
                      zerr *e) {
  (void)env, (void)ch, (void)id, (void)slab, (void)depth, (void)e;
  return 0;
}

static void env_make(const geom *g, uint8_t *out, zbuf *a, zbuf *b, zdec_env *env) {
  memset(env, 0, sizeof *env);
  env->part = part;
  env->cached = not_cached;
  env->engine = out;
  env->a = a;
  env->b = b;
  env->elsize = g->a.elsize;
  env->range_gap = 16;
  env->range_max = 64;
}

static void bufs_free(zbuf *a, zbuf *b) {
  for (int i = 0; i < ZENGINE_MAX_DEPTH; i++) {
    zbuf_free(&a[i]);
    zbuf_free(&b[i]);
  }
}

/* Decode shard `src` (n bytes) whole into `out` (nelem * elsize bytes, C
 * order; missing inner chunks are zero) through the codec's decode hook.
 * Returns 0 or -1 with e set. */
static int decode(const geom *g, const uint8_t *src, size_t n, uint8_t *out, zerr *e) {
  const zab_engine *ae = chain_engine(&g->a.chain);
  zbuf a[ZENGINE_MAX_DEPTH] = {{0}}, b[ZENGINE_MAX_DEPTH] = {{0}};
  zdec_env env;
  env_make(g, NULL, a, b, &env);
  memset(out, 0, (size_t)g->nelem * g->a.elsize);
  int rc = ae->decode(&g->a.chain, src, n, NULL, out, 0, &env, e);
  bufs_free(a, b);
  return rc;
}

/* The same shard read as the engine reads a store by parts, the whole shard
 * selected: the first range (its index), then the planned ranges (a range
 * past the end comes back short, as from a store). */
static int decode_by_parts(const geom *g, uint8_t *src, size_t n, uint8_t *out, zerr *e) {
  const zab_engine *ae = chain_engine(&g->a.chain);
  const zchain *sh = &g->a.chain;
  zbuf a[ZENGINE_MAX_DEPTH] = {{0}}, b[ZENGINE_MAX_DEPTH] = {{0}};
  zdec_env env;
  env_make(g, out, a, b, &env);
  memset(out, 0, (size_t)g->nelem * g->a.elsize);
  zslab slab;
  memset(&slab, 0, sizeof slab);
  slab.ndim = sh->ndim;
  int64_t acc = 1;
  for (int d = sh->ndim - 1; d >= 0; d--) {
    slab.dim[d].cnt = sh->chunk_shape[d];
    slab.ostride[d] = acc;
    acc *= sh->chunk_shape[d];
  }
  int64_t off, len;
  void *plan = NULL;
  int rc = ae->plan_first(sh, &off, &len, e);
  if (rc == 0) {
    size_t o = off < 0 ? ((size_t)-off > n ? 0 : n - (size_t)-off) : (size_t)off;
    size_t l = o > n ? 0 : (n - o < (size_t)len ? n - o : (size_t)len);
    rc = ae->plan_next(sh, src + (o > n ? n : o), l, &slab, &env, &plan, e);
  }
  for (int64_t k = 0; rc == 0 && plan != NULL && k < ae->plan_count(plan); k++) {
    ae->plan_range(plan, k, &off, &len);
    size_t o = (uint64_t)off > n ? n : (size_t)off;
    size_t l = n - o < (uint64_t)len ? n - o : (size_t)len;
    rc = ae->decode_partial(sh, plan, k, src + o, l, 0, 0, &env, e);
  }
  if (plan != NULL) ae->plan_free(plan);
  bufs_free(a, b);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 5) return 0;
  geom g;
  size_t used = setup(&g, data);
  if (size < used) return 0;
  const uint8_t *rest = data + used;
  size_t n = size - used;
  size_t total = (size_t)g.nelem * g.a.elsize;
  uint8_t *out = malloc(total);
  uint8_t *copy = malloc(n ? n : 1);
  memcpy(copy, rest, n);
  zerr e = {ZE_OK, ""};
  int whole = decode(&g, copy, n, out, &e);
  if (whole != 0 && e.kind == ZE_OK) abort();
  /* by parts: fails only with an error set, and where both succeed they agree */
  uint8_t *out2 = malloc(total);
  zerr ep = {ZE_OK, ""};
  int parts = decode_by_parts(&g, copy, n, out2, &ep);
  if (parts != 0 && ep.kind == ZE_OK) abort();
  if (whole == 0 && parts == 0 && memcmp(out, out2, total) != 0) abort();
  free(out2);

  /* round trip: the input's bytes as elements */
  uint8_t *elems = calloc(1, total);
  memcpy(elems, rest, n < total ? n : total);
  zbuf enc = {0}, inner = {0}, t1 = {0}, t2 = {0};
  int empty = 0;
  zerr e2 = {ZE_OK, ""};
  if (shard_encode(&g.a, &g.a.chain, elems, &enc, &inner, &t1, &t2, &empty, &e2) != 0) abort();
  if (!empty) {
    zerr e3 = {ZE_OK, ""};
    if (decode(&g, enc.data, enc.size, out, &e3) != 0) abort();
    if (memcmp(out, elems, total) != 0) abort();
  }
  zbuf_free(&enc);
  zbuf_free(&inner);
  zbuf_free(&t1);
  zbuf_free(&t2);
  free(elems);
  free(copy);
  free(out);
  return 0;
}
