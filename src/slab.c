/* Slab stitching: the one strided copy between a decoded chunk (stored data
 * type, native byte order, any dimension order) and the R array (column-major,
 * R storage type). The copy folds in the transpose, the type conversion and the
 * fill-value <-> NA mapping, so no other pass over the data is needed.
 *
 * A copy walks every dimension but the first with an odometer and hands runs
 * along the first (R's fastest) dimension to a type-specialised kernel: the
 * kernels are the rows of the data type table in dtype.c. */
#include <math.h>
#include <string.h>
#include <limits.h>
#include "zarr_core.h"

/* ---- the strided walk ---------------------------------------------------- */

static int is_unit_run(const zdimmap *m) {
  if (m->local == NULL) return 1;
  for (int64_t k = 1; k < m->cnt; k++)
    if (m->local[k] != m->local[k - 1] + 1 || m->outpos[k] != m->outpos[k - 1] + 1) return 0;
  return 1;
}

/* A 2-d block, n0 x n1 elements, with byte strides (c0, c1) in the chunk and
 * (o0, o1) in R, copied in square tiles: when the chunk is in C order and R
 * in column-major order, a plain walk along R's columns reads the chunk at a
 * stride of a whole row, touching a new cache line (and often a new page) per
 * element. Within a tile of TILE x TILE elements, the rows of the chunk read
 * for one column are still in cache for the next. */
#define TILE 32
static void copy_tiled(zkern k, uint8_t *chunk, int64_t c0, int64_t c1, uint8_t *rdata,
                       int64_t o0, int64_t o1, int64_t n0, int64_t n1, int dir, zconv *cv) {
  for (int64_t j0 = 0; j0 < n1; j0 += TILE) {
    int64_t j1 = j0 + TILE < n1 ? j0 + TILE : n1;
    for (int64_t i0 = 0; i0 < n0; i0 += TILE) {
      int64_t m = i0 + TILE < n0 ? TILE : n0 - i0;
      for (int64_t j = j0; j < j1; j++) {
        uint8_t *c = chunk + i0 * c0 + j * c1;
        uint8_t *o = rdata + i0 * o0 + j * o1;
        if (dir == 0) k(o, o0, c, c0, m, cv);
        else k(c, c0, o, o0, m, cv);
      }
    }
  }
}

/* direction 0: chunk -> R, 1: R -> chunk */
static void slab_walk(const zslab *s, zkern k, size_t csz, size_t rsz, uint8_t *chunk,
                      uint8_t *rdata, int dir, zconv *cv) {
  const int nd = s->ndim;
  if (nd == 0) {
    if (dir == 0) k(rdata, 0, chunk, 0, 1, cv);
    else k(chunk, 0, rdata, 0, 1, cv);
    return;
  }
  for (int d = 0; d < nd; d++)
    if (s->dim[d].cnt == 0) return;
  const zdimmap *m0 = &s->dim[0];
  const int unit = is_unit_run(m0);
  const int64_t cs0 = s->cstride[0] * (int64_t)csz, os0 = s->ostride[0] * (int64_t)rsz;
  /* tiles over dims 0 and 1 when the chunk is not contiguous along dim 0
   * but is along dim 1 (a C-order chunk of a matrix): the odometer then
   * walks the dims from 2 on */
  const int tiled = nd >= 2 && unit && is_unit_run(&s->dim[1]) && s->cstride[0] > 1 &&
                    s->cstride[1] == 1 && m0->cnt >= TILE && s->dim[1].cnt >= 2;
  const int first = tiled ? 2 : 1;
  int64_t idx[ZARR_MAX_DIMS] = {0};
  int64_t coff = 0, ooff = 0; /* byte offsets of dims >= first */
  for (int d = first; d < nd; d++) {
    coff += map_local(&s->dim[d], 0) * s->cstride[d] * (int64_t)csz;
    ooff += map_out(&s->dim[d], 0) * s->ostride[d] * (int64_t)rsz;
  }
  while (1) {
    if (tiled) {
      const zdimmap *m1 = &s->dim[1];
      const int64_t cs1 = s->cstride[1] * (int64_t)csz, os1 = s->ostride[1] * (int64_t)rsz;
      uint8_t *c = chunk + coff + map_local(m0, 0) * cs0 + map_local(m1, 0) * cs1;
      uint8_t *o = rdata + ooff + map_out(m0, 0) * os0 + map_out(m1, 0) * os1;
      copy_tiled(k, c, cs0, cs1, o, os0, os1, m0->cnt, m1->cnt, dir, cv);
    } else if (unit) {
      uint8_t *c = chunk + coff + map_local(m0, 0) * cs0;
      uint8_t *o = rdata + ooff + map_out(m0, 0) * os0;
      if (dir == 0) k(o, os0, c, cs0, m0->cnt, cv);
      else k(c, cs0, o, os0, m0->cnt, cv);
    } else {
      for (int64_t j = 0; j < m0->cnt; j++) {
        uint8_t *c = chunk + coff + map_local(m0, j) * cs0;
        uint8_t *o = rdata + ooff + map_out(m0, j) * os0;
        if (dir == 0) k(o, 0, c, 0, 1, cv);
        else k(c, 0, o, 0, 1, cv);
      }
    }
    /* odometer over dims first..nd-1 */
    int d = first;
    for (; d < nd; d++) {
      const zdimmap *m = &s->dim[d];
      int64_t cst = s->cstride[d] * (int64_t)csz, ost = s->ostride[d] * (int64_t)rsz;
      coff -= map_local(m, idx[d]) * cst;
      ooff -= map_out(m, idx[d]) * ost;
      if (++idx[d] < m->cnt) {
        coff += map_local(m, idx[d]) * cst;
        ooff += map_out(m, idx[d]) * ost;
        break;
      }
      idx[d] = 0;
      coff += map_local(m, 0) * cst;
      ooff += map_out(m, 0) * ost;
    }
    if (d == nd) break;
  }
}

int slab_decode(const zslab *s, zdtype dt, zrtype rt, const uint8_t *chunk, void *rdata,
                zconv *cv) {
  zkern k = dtype_def(dt)->dec[rt];
  if (k == NULL) return -1;
  slab_walk(s, k, dtype_size(dt), elem_rsize(dt, rt), (uint8_t *)chunk, rdata, 0, cv);
  return 0;
}

int slab_encode(const zslab *s, zdtype dt, zrtype rt, const void *rdata, uint8_t *chunk,
                zconv *cv) {
  zkern k = dtype_def(dt)->enc[rt];
  if (k == NULL) return -1;
  slab_walk(s, k, dtype_size(dt), elem_rsize(dt, rt), chunk, (uint8_t *)rdata, 1, cv);
  return 0;
}

int64_t slab_validate(zdtype dt, zrtype rt, const void *rdata, int64_t n, int64_t *first) {
  zkern k = dtype_def(dt)->enc[rt];
  if (k == NULL) return -1;
  /* Run the encoder into a small scratch buffer, block by block. */
  uint8_t tmp[4096 * 16];
  zconv cv;
  memset(&cv, 0, sizeof cv);
  size_t rsz = elem_rsize(dt, rt), dsz = dtype_size(dt);
  int64_t block = (int64_t)(sizeof tmp / dsz);
  int64_t bad = 0;
  *first = -1;
  for (int64_t i = 0; i < n; i += block) {
    int64_t m = n - i < block ? n - i : block;
    int64_t before = cv.bad;
    k(tmp, (int64_t)dsz, (const uint8_t *)rdata + i * (int64_t)rsz, (int64_t)rsz, m, &cv);
    if (cv.bad > before && *first < 0) {
      /* locate the first offending element */
      zconv one;
      for (int64_t j = 0; j < m; j++) {
        memset(&one, 0, sizeof one);
        k(tmp, 0, (const uint8_t *)rdata + (i + j) * (int64_t)rsz, 0, 1, &one);
        if (one.bad) { *first = i + j; break; }
      }
    }
  }
  bad = cv.bad;
  return bad;
}

#define SWAP_LOOP(T, SWAP)                       \
  for (size_t i = 0; i < nelem; i++, p += sizeof(T)) { \
    T v;                                         \
    memcpy(&v, p, sizeof(T));                    \
    v = SWAP(v);                                 \
    memcpy(p, &v, sizeof(T));                    \
  }

void byteswap_inplace(uint8_t *p, size_t nelem, size_t elsize) {
  switch (elsize) {
  case 2: SWAP_LOOP(uint16_t, __builtin_bswap16) return;
  case 4: SWAP_LOOP(uint32_t, __builtin_bswap32) return;
  case 8: SWAP_LOOP(uint64_t, __builtin_bswap64) return;
  case 16: byteswap_inplace(p, nelem * 2, 8); return; /* complex128: each half */
  default: return;
  }
}

void chunk_strides(const zchain *c, int64_t *stride) {
  int64_t acc = 1;
  for (int k = c->ndim - 1; k >= 0; k--) {
    stride[c->order[k]] = acc;
    acc *= c->chunk_shape[c->order[k]];
  }
}
