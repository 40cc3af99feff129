/* sharding_indexed (array -> bytes). Writing shards: the shard's elements, in C order over
 * the shard's dimensions, are cut into inner chunks; each is encoded with the
 * inner codec chain, and an index of (offset, length) pairs, itself encoded
 * with the index codecs, goes at the end (or start) of the shard. Inner chunks
 * holding only the fill value are left out (offset and length 2^64 - 1). */
#include <stdlib.h>
#include <string.h>
#include "zarr_core.h"

/* Copy inner chunk `ic` (grid coordinates) between the shard buffer and a
 * buffer in the inner chain's stored layout. */
void shard_inner_copy(const zchain *shard, const int64_t *ic, uint8_t *shardbuf,
                      uint8_t *innerbuf, size_t es, int to_inner) {
  const zchain *in = shard->inner;
  const int nd = shard->ndim;
  int64_t sstride[ZARR_MAX_DIMS], istride[ZARR_MAX_DIMS], idx[ZARR_MAX_DIMS] = {0};
  int64_t acc = 1;
  for (int d = nd - 1; d >= 0; d--) {
    sstride[d] = acc;
    acc *= shard->chunk_shape[d];
  }
  chunk_strides(in, istride);
  int64_t base = 0, total = 1;
  for (int d = 0; d < nd; d++) {
    base += ic[d] * in->chunk_shape[d] * sstride[d];
    total *= in->chunk_shape[d];
  }
  for (int64_t k = 0; k < total; k++) {
    int64_t so = base, io = 0;
    for (int d = 0; d < nd; d++) {
      so += idx[d] * sstride[d];
      io += idx[d] * istride[d];
    }
    if (to_inner) memcpy(innerbuf + io * (int64_t)es, shardbuf + so * (int64_t)es, es);
    else memcpy(shardbuf + so * (int64_t)es, innerbuf + io * (int64_t)es, es);
    for (int d = nd - 1; d >= 0; d--) { /* C-order odometer */
      if (++idx[d] < in->chunk_shape[d]) break;
      idx[d] = 0;
    }
  }
}

static int is_fill(const uint8_t *p, int64_t ne, const uint8_t *fill, size_t es) {
  for (int64_t i = 0; i < ne; i++, p += es)
    if (memcmp(p, fill, es) != 0) return 0;
  return 1;
}

int shard_encode(const zarray *a, const zchain *ch, uint8_t *shardbuf, zbuf *out, zbuf *inner,
                 zbuf *t1, zbuf *t2, int *empty, zerr *e) {
  const zchain *in = ch->inner;
  const int nd = ch->ndim;
  const size_t es = a->elsize;
  int64_t cps[ZARR_MAX_DIMS], ninner = 1, ine = 1;
  for (int d = 0; d < nd; d++) {
    cps[d] = ch->chunk_shape[d] / in->chunk_shape[d];
    ninner *= cps[d];
    ine *= in->chunk_shape[d];
  }
  if (in->ab != AB_BYTES && in->ab != AB_SHARDING)
    return zerr_set(e, ZE_CODEC, "only fixed-size elements can be written in shards");
  for (int d = 0; d < nd; d++)
    if (in->ab == AB_SHARDING && in->order[d] != d)
      return zerr_set(e, ZE_CODEC, "a transpose before nested sharding cannot be written");
  uint64_t *index = malloc((size_t)ninner * 16);
  if (index == NULL) return zerr_set(e, ZE_NOMEM, "out of memory");
  zbuf data = {0};
  int rc = 0;
  *empty = 1;
  for (int64_t k = 0; k < ninner && rc == 0; k++) {
    int64_t ic[ZARR_MAX_DIMS], r = k;
    for (int d = nd - 1; d >= 0; d--) {
      ic[d] = r % cps[d];
      r /= cps[d];
    }
    if ((rc = zbuf_reserve(inner, (size_t)ine * es + 1, e))) break;
    shard_inner_copy(ch, ic, shardbuf, inner->data, es, 1);
    if (is_fill(inner->data, ine, a->fill, es)) {
      index[2 * k] = index[2 * k + 1] = UINT64_MAX;
      continue;
    }
    *empty = 0;
    const uint8_t *payload = inner->data;
    size_t payload_n = (size_t)ine * es;
    zbuf sub = {0}, sub_in = {0}, s1 = {0}, s2 = {0};
    if (in->ab == AB_SHARDING) { /* nested sharding: the inner chunk is a shard itself */
      int sub_empty;
      rc = shard_encode(a, in, inner->data, &sub, &sub_in, &s1, &s2, &sub_empty, e);
      payload = sub.data;
      payload_n = sub.size;
    } else if (in->big_endian && dtype_def(a->dtype)->swap > 1) {
      size_t unit = dtype_def(a->dtype)->swap;
      byteswap_inplace(inner->data, (size_t)ine * es / unit, unit);
    }
    const uint8_t *res = NULL;
    size_t res_n = 0;
    if (rc == 0) rc = chain_encode_bytes(in, payload, payload_n, t1, t2, &res, &res_n, e);
    if (rc == 0) rc = zbuf_reserve(&data, data.size + res_n + 1, e);
    if (rc == 0) { /* res may point into sub: copy before freeing it */
      memcpy(data.data + data.size, res, res_n);
      index[2 * k] = data.size;
      index[2 * k + 1] = res_n;
      data.size += res_n;
    }
    zbuf_free(&sub);
    zbuf_free(&sub_in);
    zbuf_free(&s1);
    zbuf_free(&s2);
  }
  if (rc == 0 && !*empty) {
    size_t index_n = (size_t)ninner * 16, enc_n = index_n;
    for (int i = 0; i < ch->index->n_bb; i++) {
      if (ch->index->bb[i].vt->overhead < 0) {
        rc = zerr_set(e, ZE_CODEC, "shard index codec '%s' does not keep the index's size",
                      ch->index->bb[i].vt->name);
        break;
      }
      enc_n += (size_t)ch->index->bb[i].vt->overhead;
    }
    if (rc == 0 && !ch->index_at_end)
      for (int64_t k = 0; k < ninner; k++)
        if (index[2 * k] != UINT64_MAX) index[2 * k] += enc_n;
    if (rc == 0 && ch->index->big_endian) byteswap_inplace((uint8_t *)index, (size_t)ninner * 2, 8);
    const uint8_t *ires;
    size_t ires_n;
    if (rc == 0 &&
        (rc = chain_encode_bytes(ch->index, (const uint8_t *)index, index_n, t1, t2, &ires, &ires_n, e)) == 0 &&
        (rc = zbuf_reserve(out, data.size + ires_n + 1, e)) == 0) {
      if (ch->index_at_end) {
        memcpy(out->data, data.data, data.size);
        memcpy(out->data + data.size, ires, ires_n);
      } else {
        memcpy(out->data, ires, ires_n);
        memcpy(out->data + ires_n, data.data, data.size);
      }
      out->size = data.size + ires_n;
    }
  }
  zbuf_free(&data);
  free(index);
  return rc;
}

/* ---- table row: the shard's layout, its inner chain and its index chain ---- */

static int sharding_configure(zchain *c, const zcfg *cfg, zerr *e) {
  int64_t inner[ZARR_MAX_DIMS], index_shape[ZARR_MAX_DIMS + 1];
  const char *loc;
  int n = cfg->dims(cfg, "chunk_shape", inner, ZARR_MAX_DIMS, e);
  if (n < 0) return -1;
  if (n != c->ndim)
    return zerr_set(e, ZE_CODEC, "the inner chunk shape has %d dimensions, the array %d", n, c->ndim);
  for (int d = 0; d < n; d++)
    if (inner[d] < 1 || c->chunk_shape[d] % inner[d] != 0)
      return zerr_set(e, ZE_CODEC, "the inner chunk shape does not divide the shard shape");
  if (cfg_str(cfg, "sharding_indexed", "index_location", &loc, e)) return -1;
  if (strcmp(loc, "start") != 0 && strcmp(loc, "end") != 0)
    return zerr_set(e, ZE_CODEC, "sharding: index_location must be \"start\" or \"end\"");
  for (int d = 0; d < n; d++) index_shape[d] = c->chunk_shape[d] / inner[d];
  index_shape[n] = 2; /* (offset, length) per inner chunk */
  c->ab = AB_SHARDING;
  c->index_at_end = strcmp(loc, "end") == 0;
  if ((c->inner = cfg->sub_chain(cfg, "codecs", n, inner, 0, e)) == NULL) return -1;
  if ((c->index = cfg->sub_chain(cfg, "index_codecs", n + 1, index_shape, 1, e)) == NULL) return -1;
  return 0;
}

const zcodec_vt zc_sharding_indexed = {.name = "sharding_indexed", .kind = ZC_ARRAY_BYTES,
                                       .configure = sharding_configure};
