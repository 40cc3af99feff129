/* Slab stitching: the one strided copy between a decoded chunk (stored data
 * type, native byte order, any dimension order) and the R array (column-major,
 * R storage type). The copy folds in the transpose, the type conversion and the
 * fill-value <-> NA mapping, so no other pass over the data is needed.
 *
 * A copy hands runs along R's fastest dimension to a type-specialised kernel
 * (the kernels are the rows of the data type table in dtype.c), in tiles when
 * the chunk's fastest dimension is another one, and walks the remaining
 * dimensions with an odometer. */
#include <math.h>
#include <string.h>
#include <limits.h>
#include "zarr_core.h"

/* ---- the strided walk ---------------------------------------------------- */

/* A dimension whose pairs advance by fixed steps (a range, or a selection
 * with a constant step): *ls and *os are the steps in the chunk and in R. */
static int linear_run(const zdimmap *m, int64_t *ls, int64_t *os) {
  if (m->local == NULL || m->cnt < 2) {
    *ls = 1;
    *os = 1;
    return 1;
  }
  *ls = m->local[1] - m->local[0];
  *os = m->outpos[1] - m->outpos[0];
  for (int64_t k = 2; k < m->cnt; k++)
    if (m->local[k] - m->local[k - 1] != *ls || m->outpos[k] - m->outpos[k - 1] != *os) return 0;
  return 1;
}

/* A 2-d block, n0 x n1 elements, with byte strides (c0, c1) in the chunk and
 * (o0, o1) in R, where dim 0 is R's fastest and dim 1 the chunk's (a C-order
 * chunk of a matrix; dims 0 and 2 of a C-order 3-d chunk). Walking R's
 * columns would read the chunk at a stride of a row or plane: a new cache
 * line per element, and at power-of-two strides every line of a column in the
 * same cache set, so the lines are evicted before the next column uses them.
 * Instead each tile (TILE elements along R, up to TILE along the chunk) goes
 * through a 32 KB buffer: its chunk rows are read once, along the chunk, into
 * the buffer's columns, and the kernel converts the buffer's columns
 * (contiguous) into R's. Writing (dir 1) runs the same steps backwards. */
#define TILE 64
#define GATHER(T)                                                                      \
  for (int64_t i = 0; i < m0; i++) {                                                   \
    const uint8_t *src = c + i * c0;                                                   \
    for (int64_t j = 0; j < m1; j++) memcpy(buf + (j * TILE + i) * (int64_t)sizeof(T), \
                                            src + j * c1, sizeof(T));                  \
  }
#define SCATTER(T)                                                                     \
  for (int64_t i = 0; i < m0; i++) {                                                   \
    uint8_t *dst = c + i * c0;                                                         \
    for (int64_t j = 0; j < m1; j++) memcpy(dst + j * c1,                              \
                                            buf + (j * TILE + i) * (int64_t)sizeof(T), \
                                            sizeof(T));                                \
  }
static void tile_move(uint8_t *c, int64_t c0, int64_t c1, uint8_t *buf, int64_t m0, int64_t m1,
                      size_t csz, int gather) {
  switch (gather ? csz : csz + 100) {
  case 1: GATHER(uint8_t) return;
  case 2: GATHER(uint16_t) return;
  case 4: GATHER(uint32_t) return;
  case 8: GATHER(uint64_t) return;
  case 101: SCATTER(uint8_t) return;
  case 102: SCATTER(uint16_t) return;
  case 104: SCATTER(uint32_t) return;
  case 108: SCATTER(uint64_t) return;
  default: break;
  }
  for (int64_t i = 0; i < m0; i++)
    for (int64_t j = 0; j < m1; j++) {
      uint8_t *b = buf + (j * TILE + i) * (int64_t)csz, *p = c + i * c0 + j * c1;
      if (gather) memcpy(b, p, csz);
      else memcpy(p, b, csz);
    }
}

#ifdef __SSE2__
#include <emmintrin.h>
/* 16-bit elements to R, 8 x 8 blocks transposed in registers: rows of 8
 * along the chunk (c1 == 2) in, columns of 8 along R out. w16 1 (unsigned)
 * and 2 (signed): to R integers (o0 == 4), the fill value as NA; w16 3: any
 * 16-bit elements kept as they are (a compact result, compact_vector.c;
 * o0 == 2). The edges that do not fill a block go through the kernel. */
typedef struct {
  __m128i fill, na, zero;
  int map;
} w16_ctx;

static w16_ctx w16_setup(const zconv *cv) {
  uint16_t f;
  memcpy(&f, cv->fill, 2);
  w16_ctx x = {_mm_set1_epi16((short)f), _mm_set1_epi32(INT_MIN), _mm_setzero_si128(), cv->na};
  return x;
}

/* t[q]: the 8 elements of column q of the block whose rows start at c (c0 apart) */
static inline void w16_transpose(const uint8_t *c, int64_t c0, __m128i t[8]) {
  __m128i r[8], a[8], b[8];
  for (int q = 0; q < 8; q++) r[q] = _mm_loadu_si128((const __m128i *)(c + q * c0));
  for (int q = 0; q < 4; q++) {
    a[2 * q] = _mm_unpacklo_epi16(r[2 * q], r[2 * q + 1]);
    a[2 * q + 1] = _mm_unpackhi_epi16(r[2 * q], r[2 * q + 1]);
  }
  for (int q = 0; q < 2; q++) {
    b[4 * q] = _mm_unpacklo_epi32(a[4 * q], a[4 * q + 2]);
    b[4 * q + 1] = _mm_unpackhi_epi32(a[4 * q], a[4 * q + 2]);
    b[4 * q + 2] = _mm_unpacklo_epi32(a[4 * q + 1], a[4 * q + 3]);
    b[4 * q + 3] = _mm_unpackhi_epi32(a[4 * q + 1], a[4 * q + 3]);
  }
  for (int q = 0; q < 4; q++) {
    t[2 * q] = _mm_unpacklo_epi64(b[q], b[q + 4]);
    t[2 * q + 1] = _mm_unpackhi_epi64(b[q], b[q + 4]);
  }
}

/* One column of 8 elements to R at d (16 or 32 bytes). */
static inline void w16_store(uint8_t *d, __m128i t, int w16, const w16_ctx *x) {
  if (w16 == 3) {
    _mm_storeu_si128((__m128i *)d, t);
    return;
  }
  __m128i lo, hi;
  if (w16 == 1) {
    lo = _mm_unpacklo_epi16(t, x->zero);
    hi = _mm_unpackhi_epi16(t, x->zero);
  } else {
    lo = _mm_srai_epi32(_mm_unpacklo_epi16(t, t), 16);
    hi = _mm_srai_epi32(_mm_unpackhi_epi16(t, t), 16);
  }
  if (x->map) {
    __m128i eq = _mm_cmpeq_epi16(t, x->fill);
    __m128i el = _mm_unpacklo_epi16(eq, eq), eh = _mm_unpackhi_epi16(eq, eq);
    lo = _mm_or_si128(_mm_andnot_si128(el, lo), _mm_and_si128(el, x->na));
    hi = _mm_or_si128(_mm_andnot_si128(eh, hi), _mm_and_si128(eh, x->na));
  }
  _mm_storeu_si128((__m128i *)d, lo);
  _mm_storeu_si128((__m128i *)(d + 16), hi);
}

static void copy_w16(zkern k, int w16, const uint8_t *c, int64_t c0, uint8_t *o, int64_t o1,
                     int64_t m0, int64_t m1, zconv *cv) {
  const w16_ctx x = w16_setup(cv);
  const int64_t os = w16 == 3 ? 2 : 4;
  const int64_t b0 = m0 & ~(int64_t)7, b1 = m1 & ~(int64_t)7;
  for (int64_t j = 0; j < b1; j += 8)
    for (int64_t i = 0; i < b0; i += 8) {
      __m128i t[8];
      w16_transpose(c + i * c0 + j * 2, c0, t);
      for (int q = 0; q < 8; q++) w16_store(o + (j + q) * o1 + i * os, t[q], w16, &x);
    }
  if (b0 < m0)
    for (int64_t j = 0; j < b1; j++) k(o + j * o1 + b0 * os, os, c + b0 * c0 + j * 2, c0, m0 - b0, cv);
  for (int64_t j = b1; j < m1; j++) k(o + j * o1, os, c + j * 2, c0, m0, cv);
}

/* The same for a large result, where the copy is bound by memory traffic:
 * R's columns are written 32 elements (whole cache lines) at a time, with
 * stores that do not read the lines first. Each group of 32 chunk rows is
 * copied into a buffer (reading each of its lines once), transposed there
 * into a second buffer of R columns, and those go out in one piece each.
 * Rows beyond the last group of 32 go through the kernel. */
#define LINE_ROWS 32
#define LINE_COLS 128
static void copy_w16_lines(zkern k, int w16, const uint8_t *c, int64_t c0, uint8_t *o, int64_t o1,
                           int64_t n0, int64_t n1, zconv *cv) {
  const w16_ctx x = w16_setup(cv);
  const int64_t os = w16 == 3 ? 2 : 4, col = LINE_ROWS * os; /* bytes of an R column piece */
  _Alignas(64) uint8_t rows[LINE_ROWS * LINE_COLS * 2];
  _Alignas(64) uint8_t cols[LINE_COLS * LINE_ROWS * 4];
  const int64_t g0 = n0 - n0 % LINE_ROWS;
  for (int64_t j0 = 0; j0 < n1; j0 += LINE_COLS) {
    const int64_t mj = n1 - j0 < LINE_COLS ? n1 - j0 : LINE_COLS, mj8 = mj & ~(int64_t)7;
    for (int64_t i0 = 0; i0 < g0; i0 += LINE_ROWS) {
      for (int r = 0; r < LINE_ROWS; r++)
        memcpy(rows + r * LINE_COLS * 2, c + (i0 + r) * c0 + j0 * 2, (size_t)mj * 2);
      for (int64_t j = 0; j < mj8; j += 8)
        for (int r = 0; r < LINE_ROWS; r += 8) {
          __m128i t[8];
          w16_transpose(rows + r * LINE_COLS * 2 + j * 2, LINE_COLS * 2, t);
          for (int q = 0; q < 8; q++) w16_store(cols + (j + q) * col + r * os, t[q], w16, &x);
        }
      for (int64_t j = mj8; j < mj; j++) k(cols + j * col, os, rows + j * 2, LINE_COLS * 2, LINE_ROWS, cv);
      for (int64_t j = 0; j < mj; j++) {
        uint8_t *d = o + (j0 + j) * o1 + i0 * os;
        const __m128i *s = (const __m128i *)(cols + j * col);
        if (((uintptr_t)d & 15) == 0)
          for (int64_t q = 0; q < col / 16; q++) _mm_stream_si128((__m128i *)d + q, s[q]);
        else
          memcpy(d, s, (size_t)col);
      }
    }
    if (g0 < n0)
      for (int64_t j = 0; j < mj; j++)
        k(o + (j0 + j) * o1 + g0 * os, os, c + g0 * c0 + (j0 + j) * 2, c0, n0 - g0, cv);
  }
  _mm_sfence(); /* the streamed stores are seen before the threads are joined */
}
#endif

static void copy_tiled(zkern k, size_t csz, uint8_t *chunk, int64_t c0, int64_t c1,
                       uint8_t *rdata, int64_t o0, int64_t o1, int64_t n0, int64_t n1, int dir,
                       int w16, zconv *cv) {
#ifdef __SSE2__
  const int64_t os = w16 == 3 ? 2 : 4;
  if (w16 && dir == 0 && c1 == 2 && o0 == os) {
    /* R columns far apart (a large result): whole lines, streamed */
    if (n0 >= LINE_ROWS && n1 >= 8 && o1 >= ((int64_t)1 << 16)) {
      copy_w16_lines(k, w16, chunk, c0, rdata, o1, n0, n1, cv);
      return;
    }
    for (int64_t j0 = 0; j0 < n1; j0 += TILE)
      for (int64_t i0 = 0; i0 < n0; i0 += TILE)
        copy_w16(k, w16, chunk + i0 * c0 + j0 * 2, c0, rdata + i0 * os + j0 * o1, o1,
                 n0 - i0 < TILE ? n0 - i0 : TILE, n1 - j0 < TILE ? n1 - j0 : TILE, cv);
    return;
  }
#else
  (void)w16;
#endif
  /* TILE x TILE elements of up to 8 bytes, TILE x TILE / 2 of 16 (complex128,
   * string handles; slab_walk tiles nothing larger) */
  _Alignas(16) uint8_t buf[TILE * TILE * 8];
  const int64_t t1 = csz > 8 ? TILE / 2 : TILE;
  const int64_t bs = TILE * (int64_t)csz; /* byte stride of the buffer's columns */
  for (int64_t j0 = 0; j0 < n1; j0 += t1) {
    int64_t m1 = n1 - j0 < t1 ? n1 - j0 : t1;
    for (int64_t i0 = 0; i0 < n0; i0 += TILE) {
      int64_t m0 = n0 - i0 < TILE ? n0 - i0 : TILE;
      uint8_t *c = chunk + i0 * c0 + j0 * c1, *o = rdata + i0 * o0 + j0 * o1;
      if (dir == 0) {
        tile_move(c, c0, c1, buf, m0, m1, csz, 1);
        for (int64_t j = 0; j < m1; j++) k(o + j * o1, o0, buf + j * bs, (int64_t)csz, m0, cv);
      } else {
        for (int64_t j = 0; j < m1; j++) k(buf + j * bs, (int64_t)csz, o + j * o1, o0, m0, cv);
        tile_move(c, c0, c1, buf, m0, m1, csz, 0);
      }
    }
  }
}

static inline int64_t abs64(int64_t x) { return x < 0 ? -x : x; }

/* direction 0: chunk -> R, 1: R -> chunk.
 * The innermost dimension of the walk is R's fastest one (`a`: the smallest
 * step in R among dimensions with more than one element); when the chunk's
 * fastest one (`p`) is another, the two are copied in tiles. Every other
 * dimension is walked by an odometer. */
static void slab_walk(const zslab *s, zkern k, size_t csz, size_t rsz, uint8_t *chunk,
                      uint8_t *rdata, int dir, int w16, zconv *cv) {
  const int nd = s->ndim;
  if (nd == 0) {
    if (dir == 0) k(rdata, 0, chunk, 0, 1, cv);
    else k(chunk, 0, rdata, 0, 1, cv);
    return;
  }
  for (int d = 0; d < nd; d++)
    if (s->dim[d].cnt == 0) return;
  int64_t cb[ZARR_MAX_DIMS], ob[ZARR_MAX_DIMS]; /* byte steps of linear dims */
  int a = -1, p = -1;
  for (int d = 0; d < nd; d++) {
    int64_t ls, os;
    if (s->dim[d].cnt < 2 || !linear_run(&s->dim[d], &ls, &os)) continue;
    cb[d] = ls * s->cstride[d] * (int64_t)csz;
    ob[d] = os * s->ostride[d] * (int64_t)rsz;
    if (ob[d] != 0 && (a < 0 || abs64(ob[d]) < abs64(ob[a]))) a = d;
    if (cb[d] != 0 && (p < 0 || abs64(cb[d]) < abs64(cb[p]))) p = d;
  }
  /* tiles pay only when the chunk's step along `a` spans cache lines */
  if (a < 0 || p == a || (p >= 0 && abs64(cb[a]) <= 16) || csz > 16) p = -1;
  int64_t ix[ZARR_MAX_DIMS] = {0};
  int64_t coff = 0, ooff = 0; /* byte offsets of the odometer's dims */
  int walk[ZARR_MAX_DIMS], nw = 0;
  for (int d = 0; d < nd; d++) {
    if (d == a || d == p) continue;
    walk[nw++] = d;
    coff += map_local(&s->dim[d], 0) * s->cstride[d] * (int64_t)csz;
    ooff += map_out(&s->dim[d], 0) * s->ostride[d] * (int64_t)rsz;
  }
  uint8_t *cbase = chunk, *obase = rdata;
  if (a >= 0) {
    cbase += map_local(&s->dim[a], 0) * s->cstride[a] * (int64_t)csz;
    obase += map_out(&s->dim[a], 0) * s->ostride[a] * (int64_t)rsz;
  }
  if (p >= 0) {
    cbase += map_local(&s->dim[p], 0) * s->cstride[p] * (int64_t)csz;
    obase += map_out(&s->dim[p], 0) * s->ostride[p] * (int64_t)rsz;
  }
  while (1) {
    uint8_t *c = cbase + coff, *o = obase + ooff;
    if (p >= 0) {
      copy_tiled(k, csz, c, cb[a], cb[p], o, ob[a], ob[p], s->dim[a].cnt, s->dim[p].cnt, dir, w16,
                 cv);
    } else if (a >= 0) {
      if (dir == 0) k(o, ob[a], c, cb[a], s->dim[a].cnt, cv);
      else k(c, cb[a], o, ob[a], s->dim[a].cnt, cv);
    } else {
      if (dir == 0) k(o, 0, c, 0, 1, cv);
      else k(c, 0, o, 0, 1, cv);
    }
    /* odometer over the other dims, R's order */
    int w = 0;
    for (; w < nw; w++) {
      const int d = walk[w];
      const zdimmap *m = &s->dim[d];
      int64_t cst = s->cstride[d] * (int64_t)csz, ost = s->ostride[d] * (int64_t)rsz;
      coff -= map_local(m, ix[d]) * cst;
      ooff -= map_out(m, ix[d]) * ost;
      if (++ix[d] < m->cnt) {
        coff += map_local(m, ix[d]) * cst;
        ooff += map_out(m, ix[d]) * ost;
        break;
      }
      ix[d] = 0;
      coff += map_local(m, 0) * cst;
      ooff += map_out(m, 0) * ost;
    }
    if (w == nw) break;
  }
}

int slab_decode(const zslab *s, zdtype dt, zrtype rt, const uint8_t *chunk, void *rdata,
                zconv *cv) {
  zkern k = dtype_def(dt)->dec[rt];
  if (k == NULL) return -1;
  const int w16 = rt == RT_RAW ? (dtype_size(dt) == 2 ? 3 : 0)
                : rt != RT_INTEGER ? 0 : dt == DT_UINT16 ? 1 : dt == DT_INT16 ? 2 : 0;
  slab_walk(s, k, dtype_size(dt), elem_rsize(dt, rt), (uint8_t *)chunk, rdata, 0, w16, cv);
  return 0;
}

int slab_encode(const zslab *s, zdtype dt, zrtype rt, const void *rdata, uint8_t *chunk,
                zconv *cv) {
  zkern k = dtype_def(dt)->enc[rt];
  if (k == NULL) return -1;
  slab_walk(s, k, dtype_size(dt), elem_rsize(dt, rt), chunk, (uint8_t *)rdata, 1, 0, cv);
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
