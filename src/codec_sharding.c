/* sharding_indexed (array -> bytes). Writing shards: the shard's elements, in C order over
 * the shard's dimensions, are cut into inner chunks; each is encoded with the
 * inner codec chain, and an index of (offset, length) pairs, itself encoded
 * with the index codecs, goes at the end (or start) of the shard. Inner chunks
 * holding only the fill value are left out (offset and length 2^64 - 1).
 * Reading: the row's engine hooks (engine.h) decode a whole shard, or read
 * one in two batches of ranged requests, first its index, then the inner
 * chunks under the selection (neighbours merged). Inner chunks go back to the
 * engine's decoding (zdec_env.part), so a nested shard comes back here. */
#include <stdlib.h>
#include <string.h>
#include "engine.h"

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
  int64_t base = 0, rows = 1;
  for (int d = 0; d < nd; d++) base += ic[d] * in->chunk_shape[d] * sstride[d];
  for (int d = 0; d < nd - 1; d++) rows *= in->chunk_shape[d];
  /* rows along the last dim, contiguous in the shard (C order): one memcpy
   * each when the inner chunk has them contiguous too (no transpose) */
  const int64_t len = nd > 0 ? in->chunk_shape[nd - 1] : 1;
  const int64_t ist = nd > 0 ? istride[nd - 1] : 1;
  for (int64_t r = 0; r < rows; r++) {
    int64_t so = base, io = 0;
    for (int d = 0; d < nd - 1; d++) {
      so += idx[d] * sstride[d];
      io += idx[d] * istride[d];
    }
    uint8_t *sp = shardbuf + so * (int64_t)es, *ip = innerbuf + io * (int64_t)es;
    if (ist == 1) {
      if (to_inner) memcpy(ip, sp, (size_t)len * es);
      else memcpy(sp, ip, (size_t)len * es);
    } else {
      for (int64_t k = 0; k < len; k++) {
        if (to_inner) memcpy(ip + k * ist * (int64_t)es, sp + k * (int64_t)es, es);
        else memcpy(sp + k * (int64_t)es, ip + k * ist * (int64_t)es, es);
      }
    }
    for (int d = nd - 2; d >= 0; d--) { /* C-order odometer over the rows */
      if (++idx[d] < in->chunk_shape[d]) break;
      idx[d] = 0;
    }
  }
}

static int is_fill(const uint8_t *p, int64_t ne, const uint8_t *fill, size_t es) {
  if (ne <= 0) return 1;
  if (memcmp(p, fill, es) != 0) return 0;
  /* every element equals the next one: one call, not one per element */
  return memcmp(p, p + es, (size_t)(ne - 1) * es) == 0;
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
  /* inner chunks whose own codec encodes them (nested sharding) go through
   * its hooks, as the engine's chunks go through these */
  const zab_engine *ie = chain_engine(in);
  if (ie != NULL && ie->encode == NULL) ie = NULL;
  if (in->ab != AB_BYTES && ie == NULL)
    return zerr_set(e, ZE_CODEC, "only fixed-size elements can be written in shards");
  if (ie != NULL && ie->write_check != NULL && ie->write_check(a, in, e)) return -1;
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
    if (ie != NULL) { /* nested sharding: the inner chunk is a shard itself */
      int sub_empty;
      rc = ie->encode(a, in, inner->data, &sub, &sub_in, &s1, &s2, &sub_empty, e);
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

/* ---- reading shards: whole, or by inner chunk through ranged reads ---- */

/* A slab's entries grouped by inner chunk, per dimension: group q of
 * dimension d is inner chunk id[d][q], holding cnt[d][q] entries from
 * start[d][q] on in local[d] / out[d]. */
typedef struct {
  int nd;
  int64_t ngrp[ZARR_MAX_DIMS];
  int64_t *local[ZARR_MAX_DIMS], *out[ZARR_MAX_DIMS];
  int64_t *start[ZARR_MAX_DIMS], *cnt[ZARR_MAX_DIMS], *id[ZARR_MAX_DIMS];
  int64_t ostride[ZARR_MAX_DIMS];
  int64_t total; /* groups in all: the product of ngrp */
} shard_groups;

/* A shard whose index has been read: the groups of the selection, each
 * group's inner chunk bytes, and those bytes merged into ranges to fetch. */
typedef struct {
  int64_t k;          /* group */
  int64_t lin;        /* its inner chunk: C-order index */
  uint64_t off, len;  /* its inner chunk in the shard */
} shard_item;

typedef struct {
  uint64_t off, len;  /* one request */
  int64_t first, n;   /* its items */
} shard_range;

typedef struct {
  shard_groups sg;
  int64_t cps[ZARR_MAX_DIMS];
  shard_item *items;
  shard_range *ranges;
  int64_t nranges;
} shard_plan;

/* Inner chunks per shard dimension, and how many in all. */
static int64_t shard_grid(const zchain *ch, int64_t *cps) {
  int64_t ninner = 1;
  for (int d = 0; d < ch->ndim; d++) {
    cps[d] = ch->chunk_shape[d] / ch->inner->chunk_shape[d];
    ninner *= cps[d];
  }
  return ninner;
}

/* Size of the encoded index (0 when its codecs are not supported). */
static size_t shard_index_size(const zchain *ch, int64_t ninner) {
  size_t enc_n = (size_t)ninner * 16;
  for (int i = 0; i < ch->index->n_bb; i++) {
    int over = ch->index->bb[i].vt->overhead; /* a fixed size: checksums */
    if (over < 0) return 0;
    enc_n += (size_t)over;
  }
  return enc_n;
}

/* Decode an encoded index (enc_n bytes at ip) into a malloc'd array of
 * (offset, length) pairs in native order. */
static uint64_t *shard_index_decode(const zchain *ch, const uint8_t *ip, size_t enc_n,
                                    int64_t ninner, const zdec_env *env, int depth,
                                    zerr *e) {
  size_t index_n = (size_t)ninner * 16;
  const uint8_t *idx;
  size_t idx_n;
  if (chain_decode_bytes(ch->index, ip, enc_n, index_n, &env->a[depth], &env->b[depth], &idx,
                         &idx_n, e))
    return NULL;
  if (idx_n != index_n) {
    zerr_set(e, ZE_CORRUPT, "shard index has the wrong size");
    return NULL;
  }
  /* a copy: the buffers are reused by the inner decodes */
  uint64_t *index = malloc(index_n ? index_n : 1);
  if (index == NULL) {
    zerr_set(e, ZE_NOMEM, "out of memory");
    return NULL;
  }
  memcpy(index, idx, index_n);
  if (ch->index->big_endian) byteswap_inplace((uint8_t *)index, (size_t)ninner * 2, 8);
  return index;
}

static int inner_missing(const uint64_t *index, int64_t lin) {
  return index[2 * lin] == UINT64_MAX && index[2 * lin + 1] == UINT64_MAX;
}


static void shard_groups_free(shard_groups *sg) {
  for (int d = 0; d < ZARR_MAX_DIMS; d++) {
    free(sg->local[d]);
    free(sg->out[d]);
    free(sg->start[d]);
    free(sg->cnt[d]);
    free(sg->id[d]);
    sg->local[d] = sg->out[d] = sg->start[d] = sg->cnt[d] = sg->id[d] = NULL;
  }
}

static int shard_groups_make(const zchain *ch, const int64_t *cps, const zslab *slab,
                             shard_groups *sg, zerr *e) {
  memset(sg, 0, sizeof *sg);
  sg->nd = ch->ndim;
  sg->total = 1;
  for (int d = 0; d < ch->ndim; d++) {
    const zdimmap *m = &slab->dim[d];
    int64_t ic = ch->inner->chunk_shape[d];
    size_t cnt = (size_t)(m->cnt ? m->cnt : 1), ng = (size_t)cps[d] + 1;
    sg->ostride[d] = slab->ostride[d];
    sg->local[d] = malloc(sizeof(int64_t) * cnt);
    sg->out[d] = malloc(sizeof(int64_t) * cnt);
    sg->start[d] = malloc(sizeof(int64_t) * ng);
    sg->cnt[d] = malloc(sizeof(int64_t) * ng);
    sg->id[d] = malloc(sizeof(int64_t) * ng);
    int64_t *fillpos = malloc(sizeof(int64_t) * ng);
    if (!sg->local[d] || !sg->out[d] || !sg->start[d] || !sg->cnt[d] || !sg->id[d] || !fillpos) {
      free(fillpos);
      shard_groups_free(sg);
      return zerr_set(e, ZE_NOMEM, "out of memory");
    }
    /* counting sort by inner chunk keeps each group's original order */
    int64_t *count = sg->cnt[d];
    for (int64_t q = 0; q <= cps[d]; q++) count[q] = 0;
    for (int64_t k = 0; k < m->cnt; k++) count[map_local(m, k) / ic]++;
    int64_t pos = 0, g2 = 0;
    for (int64_t q = 0; q < cps[d]; q++) {
      if (count[q] == 0) continue;
      sg->id[d][g2] = q;
      sg->start[d][g2] = pos;
      fillpos[q] = pos;
      pos += count[q];
      g2++;
    }
    sg->ngrp[d] = g2;
    for (int64_t k = 0; k < m->cnt; k++) {
      int64_t q = map_local(m, k) / ic;
      int64_t at = fillpos[q]++;
      sg->local[d][at] = map_local(m, k) - q * ic;
      sg->out[d][at] = map_out(m, k);
    }
    for (int64_t q = 0; q < g2; q++) sg->cnt[d][q] = count[sg->id[d][q]];
    free(fillpos);
    sg->total *= g2;
  }
  return 0;
}

/* The slab of group k (0 <= k < total) and its inner chunk's C-order index. */
static int64_t shard_group_slab(const shard_groups *sg, const int64_t *cps, const int *order,
                                int64_t k, zslab *sub) {
  int64_t r = k, lin = 0, gid[ZARR_MAX_DIMS];
  memset(sub, 0, sizeof *sub);
  sub->ndim = sg->nd;
  for (int d = 0; d < sg->nd; d++) {
    int64_t gi = r % sg->ngrp[d];
    r /= sg->ngrp[d];
    sub->dim[d].cnt = sg->cnt[d][gi];
    sub->dim[d].local = sg->local[d] + sg->start[d][gi];
    sub->dim[d].outpos = sg->out[d] + sg->start[d][gi];
    sub->ostride[d] = sg->ostride[d];
    gid[d] = sg->id[d][gi];
  }
  /* the index is in C order over the dimensions the codec receives */
  for (int k = 0; k < sg->nd; k++) lin = lin * cps[order[k]] + gid[order[k]];
  return lin;
}

/* A whole shard in memory: decode what the slab needs (or, for a partial
 * write, every inner chunk into dst_chunk). */
static int sharding_decode(const zchain *ch, const uint8_t *src, size_t n, zslab *slab,
                           uint8_t *dst_chunk, int depth, const zdec_env *env, zerr *e) {
  const zchain *in = ch->inner;
  int64_t cps[ZARR_MAX_DIMS];
  int64_t ninner = shard_grid(ch, cps);
  size_t enc_n = shard_index_size(ch, ninner);
  if (enc_n == 0) return zerr_set(e, ZE_CODEC, "only crc32c is supported as a shard index codec");
  if (n < enc_n) return zerr_set(e, ZE_CORRUPT, "shard is too short to hold its index");
  uint64_t *index = shard_index_decode(ch, ch->index_at_end ? src + n - enc_n : src, enc_n, ninner,
                                       env, depth, e);
  if (index == NULL) return -1;
  int rc = 0;
  if (dst_chunk != NULL) { /* a partial write: the whole shard, element by element */
    int64_t ine = 1;
    for (int d = 0; d < in->ndim; d++) ine *= in->chunk_shape[d];
    uint8_t *innerbuf = malloc((size_t)ine * env->elsize + 1);
    rc = innerbuf == NULL ? zerr_set(e, ZE_NOMEM, "out of memory") : 0;
    for (int64_t k = 0; k < ninner && rc == 0; k++) {
      int64_t ic[ZARR_MAX_DIMS], r = k;
      for (int d = ch->ndim - 1; d >= 0; d--) {
        ic[d] = r % cps[d];
        r /= cps[d];
      }
      uint64_t off = index[2 * k], len = index[2 * k + 1];
      int miss = inner_missing(index, k);
      if (!miss && (off > n || len > n - off)) {
        rc = zerr_set(e, ZE_CORRUPT, "shard index points outside the shard");
        break;
      }
      rc = env->part(env, in, miss ? NULL : src + off, miss ? 0 : (size_t)len, miss, 0, NULL,
                     innerbuf, depth + 1, -1, e);
      if (rc == 0) shard_inner_copy(ch, ic, dst_chunk, innerbuf, env->elsize, 0);
    }
    free(innerbuf);
    free(index);
    return rc;
  }
  shard_groups sg;
  if (shard_groups_make(ch, cps, slab, &sg, e)) {
    free(index);
    return -1;
  }
  for (int64_t k = 0; k < sg.total && rc == 0; k++) {
    zslab sub;
    int64_t lin = shard_group_slab(&sg, cps, ch->order, k, &sub);
    uint64_t off = index[2 * lin], len = index[2 * lin + 1];
    int miss = inner_missing(index, lin);
    if (!miss && (off > n || len > n - off)) {
      rc = zerr_set(e, ZE_CORRUPT, "shard index points outside the shard");
      break;
    }
    if (!miss && (rc = env->cached(env, in, lin, &sub, depth + 1, e)) != 0) {
      rc = rc < 0 ? -1 : 0;
      continue;
    }
    rc = env->part(env, in, miss ? NULL : src + off, miss ? 0 : (size_t)len, miss, 0, &sub, NULL,
                   depth + 1, lin, e);
  }
  shard_groups_free(&sg);
  free(index);
  return rc;
}

static int cmp_item(const void *a, const void *b) {
  const shard_item *x = a, *y = b;
  return x->off < y->off ? -1 : x->off > y->off;
}

static void sharding_plan_free(void *plan) {
  shard_plan *p = plan;
  if (p == NULL) return;
  shard_groups_free(&p->sg);
  free(p->items);
  free(p->ranges);
  free(p);
}

/* A shard's index arrived: the missing inner chunks are fill at once; the
 * others become ranges, neighbours closer than range_gap merged into one
 * request of at most range_max bytes. */
static int sharding_plan_next(const zchain *ch, const uint8_t *p, size_t n, zslab *slab,
                              const zdec_env *env, void **plan, zerr *e) {
  shard_plan *sp = calloc(1, sizeof *sp);
  if (sp == NULL) return zerr_set(e, ZE_NOMEM, "out of memory");
  *plan = sp;
  int64_t ninner = shard_grid(ch, sp->cps);
  size_t enc_n = shard_index_size(ch, ninner);
  if (n < enc_n) return zerr_set(e, ZE_CORRUPT, "shard is too short to hold its index");
  uint64_t *index = shard_index_decode(ch, p, enc_n, ninner, env, 0, e);
  if (index == NULL) return -1;
  int rc = shard_groups_make(ch, sp->cps, slab, &sp->sg, e);
  if (rc == 0) {
    sp->items = malloc(sizeof(shard_item) * (size_t)(sp->sg.total ? sp->sg.total : 1));
    sp->ranges = malloc(sizeof(shard_range) * (size_t)(sp->sg.total ? sp->sg.total : 1));
    if (sp->items == NULL || sp->ranges == NULL) rc = zerr_set(e, ZE_NOMEM, "out of memory");
  }
  int64_t nitems = 0;
  for (int64_t k = 0; rc == 0 && k < sp->sg.total; k++) {
    zslab sub;
    int64_t lin = shard_group_slab(&sp->sg, sp->cps, ch->order, k, &sub);
    if (inner_missing(index, lin)) {
      rc = env->part(env, ch->inner, NULL, 0, 1, 0, &sub, NULL, 1, -1, e);
      continue;
    }
    int got = env->cached(env, ch->inner, lin, &sub, 1, e); /* nothing to fetch */
    if (got != 0) {
      rc = got < 0 ? -1 : 0;
      continue;
    }
    uint64_t off = index[2 * lin], len = index[2 * lin + 1];
    if (len == 0 || off > UINT64_MAX - len || off + len > (uint64_t)INT64_MAX)
      rc = zerr_set(e, ZE_CORRUPT, "shard index holds an impossible range");
    sp->items[nitems++] = (shard_item){k, lin, off, len};
  }
  free(index);
  if (rc) return rc;
  qsort(sp->items, (size_t)nitems, sizeof(shard_item), cmp_item);
  for (int64_t i = 0; i < nitems; i++) {
    const shard_item *it = &sp->items[i];
    shard_range *last = sp->nranges ? &sp->ranges[sp->nranges - 1] : NULL;
    if (last != NULL && it->off >= last->off + last->len &&
        it->off - (last->off + last->len) <= (uint64_t)env->range_gap &&
        it->off + it->len - last->off <= (uint64_t)env->range_max) {
      last->len = it->off + it->len - last->off;
      last->n++;
    } else {
      sp->ranges[sp->nranges++] = (shard_range){it->off, it->len, i, 1};
    }
  }
  return 0;
}

/* ---- the engine's hooks (engine.h) ---- */

/* First request: the shard's index, at its start or as a suffix. */
static int sharding_plan_first(const zchain *ch, int64_t *off, int64_t *len, zerr *e) {
  int64_t cps[ZARR_MAX_DIMS];
  size_t enc_n = shard_index_size(ch, shard_grid(ch, cps));
  if (enc_n == 0) return zerr_set(e, ZE_CODEC, "only crc32c is supported as a shard index codec");
  *off = ch->index_at_end ? -(int64_t)enc_n : 0;
  *len = (int64_t)enc_n;
  return 0;
}

static int64_t sharding_plan_count(const void *plan) {
  return plan ? ((const shard_plan *)plan)->nranges : 0;
}

static void sharding_plan_range(const void *plan, int64_t k, int64_t *off, int64_t *len) {
  const shard_range *sr = &((const shard_plan *)plan)->ranges[k];
  *off = (int64_t)sr->off;
  *len = (int64_t)sr->len;
}

/* Range k arrived: the inner chunks it holds, each into its group's slab. */
static int sharding_decode_partial(const zchain *ch, const void *plan, int64_t k, uint8_t *src,
                                   size_t n, int missing, int writable, const zdec_env *env,
                                   zerr *e) {
  const shard_plan *sp = plan;
  const shard_range *sr = &sp->ranges[k];
  if (missing || n != sr->len) return zerr_set(e, ZE_CORRUPT, "shard index points outside the shard");
  int rc = 0;
  for (int64_t i = 0; rc == 0 && i < sr->n; i++) {
    const shard_item *it = &sp->items[sr->first + i];
    zslab sub;
    shard_group_slab(&sp->sg, sp->cps, ch->order, it->k, &sub);
    rc = env->part(env, ch->inner, src + (it->off - sr->off), (size_t)it->len, 0, writable, &sub,
                   NULL, 1, it->lin, e);
  }
  return rc;
}

static int sharding_write_check(const zarray *a, const zchain *ch, zerr *e) {
  for (int d = 0; d < ch->ndim; d++)
    if (ch->order[d] != d) zerr_set(e, ZE_CODEC, "a transpose before sharding cannot be written");
  if (a->dtype == DT_STRING) zerr_set(e, ZE_CODEC, "sharded string arrays cannot be written yet");
  return e->kind != ZE_OK ? -1 : 0;
}

static const zab_engine sharding_engine = {
    .plan_first = sharding_plan_first,
    .plan_next = sharding_plan_next,
    .plan_count = sharding_plan_count,
    .plan_range = sharding_plan_range,
    .decode_partial = sharding_decode_partial,
    .plan_free = sharding_plan_free,
    .decode = sharding_decode,
    .write_check = sharding_write_check,
    .encode = shard_encode,
};

/* ---- table row: the shard's layout, its inner chain and its index chain ---- */

/* The inner chain was configured in the dimensions the sharding codec
 * receives, the shard's dimensions after the transposes before it (dim k is
 * the array's dim order[k]); move it and the chains nested in it to the
 * array's dimensions, as the engine addresses chunks. */
static void chain_to_array_dims(zchain *c, const int *order) {
  int64_t shape[ZARR_MAX_DIMS];
  int ord[ZARR_MAX_DIMS];
  for (int k = 0; k < c->ndim; k++) {
    shape[order[k]] = c->chunk_shape[k];
    ord[k] = order[c->order[k]];
  }
  memcpy(c->chunk_shape, shape, sizeof(int64_t) * (size_t)c->ndim);
  memcpy(c->order, ord, sizeof(int) * (size_t)c->ndim);
  if (c->ab == AB_SHARDING) chain_to_array_dims(c->inner, order);
}

static int sharding_configure(zchain *c, const zcfg *cfg, zerr *e) {
  int64_t inner[ZARR_MAX_DIMS], index_shape[ZARR_MAX_DIMS + 1];
  const char *loc;
  int n = cfg->dims(cfg, "chunk_shape", inner, ZARR_MAX_DIMS, e);
  if (n < 0) return -1;
  if (n != c->ndim)
    return zerr_set(e, ZE_CODEC, "the inner chunk shape has %d dimensions, the array %d", n, c->ndim);
  /* the inner chunk shape is in the dimensions the codec receives: those
   * of the shard after any transpose before it */
  for (int d = 0; d < n; d++)
    if (inner[d] < 1 || c->chunk_shape[c->order[d]] % inner[d] != 0)
      return zerr_set(e, ZE_CODEC, "the inner chunk shape does not divide the shard shape");
  if (cfg_str(cfg, "sharding_indexed", "index_location", &loc, e)) return -1;
  if (strcmp(loc, "start") != 0 && strcmp(loc, "end") != 0)
    return zerr_set(e, ZE_CODEC, "sharding: index_location must be \"start\" or \"end\"");
  for (int d = 0; d < n; d++) index_shape[d] = c->chunk_shape[c->order[d]] / inner[d];
  index_shape[n] = 2; /* (offset, length) per inner chunk */
  c->ab = AB_SHARDING;
  c->index_at_end = strcmp(loc, "end") == 0;
  if ((c->inner = cfg->sub_chain(cfg, "codecs", n, inner, 0, e)) == NULL) return -1;
  if ((c->index = cfg->sub_chain(cfg, "index_codecs", n + 1, index_shape, 1, e)) == NULL) return -1;
  chain_to_array_dims(c->inner, c->order);
  return 0;
}

const zcodec_vt zc_sharding_indexed = {.name = "sharding_indexed", .kind = ZC_ARRAY_BYTES,
                                       .configure = sharding_configure,
                                       .engine = &sharding_engine};
