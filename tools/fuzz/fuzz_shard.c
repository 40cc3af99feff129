/* libFuzzer target: shards (sharding_indexed). The input's first bytes pick
 * the geometry (rank, shard and inner chunk shapes, element size, index
 * location, inner codecs); the rest is used twice:
 *  1. as a shard read from a store: its index is decoded with the index
 *     codecs (bytes + crc32c), each entry checked against the shard, each
 *     inner chunk decoded with the inner chain to exactly its size and copied
 *     into place with shard_inner_copy(), as the engine does;
 *  2. as elements written with shard_encode(), whose output must decode
 *     (by step 1) to exactly those elements. */
#include <stdlib.h>
#include <string.h>
#include "zarr_core.h"

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

static void swap8(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    for (int k = 0; k < 4; k++) {
      uint8_t t = p[8 * i + k];
      p[8 * i + k] = p[8 * i + 7 - k];
      p[8 * i + 7 - k] = t;
    }
}

/* Decode shard `src` (n bytes) into `out` (nelem * elsize bytes; missing
 * inner chunks are zero). Returns 0 or -1 with e set. */
static int decode(const geom *g, const uint8_t *src, size_t n, uint8_t *out, zerr *e) {
  const zarray *a = &g->a;
  const zchain *sh = &a->chain, *in = sh->inner;
  size_t es = a->elsize, index_n = (size_t)g->ninner * 16, enc_n = index_n + 4;
  if (n < enc_n) return zerr_set(e, ZE_CORRUPT, "shard is too short to hold its index");
  const uint8_t *ip = sh->index_at_end ? src + n - enc_n : src;
  zbuf t1 = {0}, t2 = {0}, u1 = {0}, u2 = {0};
  const uint8_t *idx, *res;
  size_t idx_n, res_n;
  int rc = chain_decode_bytes(sh->index, ip, enc_n, index_n, &t1, &t2, &idx, &idx_n, e);
  uint64_t *index = NULL;
  if (rc == 0 && idx_n != index_n) rc = zerr_set(e, ZE_CORRUPT, "shard index has the wrong size");
  if (rc == 0) {
    index = malloc(index_n);
    memcpy(index, idx, index_n);
    if (sh->index->big_endian) swap8((uint8_t *)index, (size_t)g->ninner * 2);
  }
  int64_t ine = 1;
  for (int k = 0; k < sh->ndim; k++) ine *= in->chunk_shape[k];
  uint8_t *ib = malloc((size_t)ine * es);
  memset(out, 0, (size_t)g->nelem * es);
  for (int64_t k = 0; rc == 0 && k < g->ninner; k++) {
    uint64_t off = index[2 * k], len = index[2 * k + 1];
    if (off == UINT64_MAX && len == UINT64_MAX) continue;
    if (off > n || len > n - off) {
      rc = zerr_set(e, ZE_CORRUPT, "shard index points outside the shard");
      break;
    }
    size_t expect = (size_t)ine * es;
    if ((rc = chain_decode_bytes(in, src + off, (size_t)len, expect, &u1, &u2, &res, &res_n, e)))
      break;
    if (res_n != expect) {
      rc = zerr_set(e, ZE_CORRUPT, "inner chunk has the wrong size");
      break;
    }
    memcpy(ib, res, expect);
    if (in->big_endian && es > 1) byteswap_inplace(ib, (size_t)ine, es);
    int64_t ic[ZARR_MAX_DIMS], r = k;
    for (int d = sh->ndim - 1; d >= 0; d--) {
      ic[d] = r % g->cps[d];
      r /= g->cps[d];
    }
    shard_inner_copy(sh, ic, out, ib, es, 0);
  }
  free(ib);
  free(index);
  zbuf_free(&t1);
  zbuf_free(&t2);
  zbuf_free(&u1);
  zbuf_free(&u2);
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
  if (decode(&g, copy, n, out, &e) != 0 && e.kind == ZE_OK) abort();

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
