/* Zarr Vectors byte layouts (see zv.h): fragment index, object manifests,
 * row blobs. R-free, so that tools/fuzz/fuzz_zv.c can drive it. */
#include <math.h>
#include <string.h>
#include "zv.h"

static uint16_t ld16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t ld32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t ld64u(const uint8_t *p) { return (uint64_t)ld32(p) | ((uint64_t)ld32(p + 4) << 32); }
static int64_t ld64(const uint8_t *p) {
  uint64_t u = ld64u(p);
  int64_t v;
  memcpy(&v, &u, 8);
  return v;
}
static void st32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void st64(uint8_t *p, int64_t v) {
  uint64_t u;
  memcpy(&u, &v, 8);
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(u >> (8 * i));
}

static size_t bitmap_padded(uint32_t F) {
  size_t raw = ((size_t)F + 7) / 8;
  return (raw + 7) & ~(size_t)7;
}

/* ---- fragment index ------------------------------------------------------- */

int zv_frag_parse(const uint8_t *p, size_t n, int64_t nrows, zv_frag *f, zerr *e) {
  memset(f, 0, sizeof *f);
  if (n < ZV_FRAG_HEADER)
    return zerr_set(e, ZE_ZV, "fragment index of %zu bytes is shorter than its 16-byte header", n);
  if (ld32(p) != ZV_FRAG_MAGIC) return zerr_set(e, ZE_ZV, "fragment index does not start with 'ZVFG'");
  if (ld16(p + 4) != ZV_FRAG_VERSION)
    return zerr_set(e, ZE_ZV, "fragment index version %u is not 1", (unsigned)ld16(p + 4));
  if (ld16(p + 6) != 0) return zerr_set(e, ZE_ZV, "fragment index flags 0x%04x are not 0", (unsigned)ld16(p + 6));
  uint32_t F = ld32(p + 8), R = ld32(p + 12);
  if (R > F) return zerr_set(e, ZE_ZV, "fragment index has %u range fragments of %u", R, F);
  size_t need = ZV_FRAG_HEADER;
  size_t left = n - need;
  size_t bm = F ? bitmap_padded(F) : 0;
  if (bm > left) return zerr_set(e, ZE_ZV, "fragment index bitmap (%u fragments) runs past the blob's %zu bytes", F, n);
  f->bitmap = p + need;
  need += bm;
  left -= bm;
  uint32_t pop = 0;
  for (uint32_t i = 0; i < F; i++) pop += (f->bitmap[i >> 3] >> (i & 7)) & 1u;
  if (pop != R)
    return zerr_set(e, ZE_ZV, "fragment index header says %u range fragments, its bitmap marks %u", R, pop);
  if ((uint64_t)R * 16 > left)
    return zerr_set(e, ZE_ZV, "fragment index range table (%u entries) runs past the blob's %zu bytes", R, n);
  f->ranges = p + need;
  need += (size_t)R * 16;
  left -= (size_t)R * 16;
  uint32_t E = F - R;
  if (F == 0) { /* header-only: the empty index */
    if (left) return zerr_set(e, ZE_ZV, "fragment index of 0 fragments has %zu bytes after its header", left);
    f->offsets = f->indices = p + need;
    return 0;
  }
  if (((uint64_t)E + 1) * 4 > left)
    return zerr_set(e, ZE_ZV, "fragment index offsets (%u explicit fragments) run past the blob's %zu bytes", E, n);
  f->offsets = p + need;
  need += ((size_t)E + 1) * 4;
  left -= ((size_t)E + 1) * 4;
  if (ld32(f->offsets) != 0) return zerr_set(e, ZE_ZV, "fragment index explicit offsets do not start at 0");
  for (uint32_t i = 0; i < E; i++)
    if (ld32(f->offsets + 4 * (i + 1)) < ld32(f->offsets + 4 * i))
      return zerr_set(e, ZE_ZV, "fragment index explicit offsets decrease at entry %u", i + 1);
  uint64_t T = ld32(f->offsets + 4 * (size_t)E);
  if (T * 8 != left)
    return zerr_set(e, ZE_ZV, "fragment index lists %llu explicit rows (%llu bytes) but %zu bytes remain",
                    (unsigned long long)T, (unsigned long long)(T * 8), left);
  f->indices = p + need;
  f->F = F;
  f->R = R;
  f->E = E;
  f->T = T;
  for (uint32_t r = 0; r < R; r++) {
    int64_t s = ld64(f->ranges + 16 * (size_t)r), c = ld64(f->ranges + 16 * (size_t)r + 8);
    if (s < 0 || c < 0) return zerr_set(e, ZE_ZV, "fragment index range %u is negative (start %lld, count %lld)",
                                        r, (long long)s, (long long)c);
    if (c > INT64_MAX - s || (nrows >= 0 && s + c > nrows))
      return zerr_set(e, ZE_ZV, "fragment index range %u [%lld, %lld + %lld) is beyond the %lld rows", r,
                      (long long)s, (long long)s, (long long)c, (long long)nrows);
  }
  for (uint64_t t = 0; t < T; t++) {
    int64_t v = ld64(f->indices + 8 * t);
    if (v < 0 || (nrows >= 0 && v >= nrows))
      return zerr_set(e, ZE_ZV, "fragment index explicit row %lld is outside [0, %lld)", (long long)v, (long long)nrows);
  }
  return 0;
}

int zv_frag_is_range(const zv_frag *f, uint32_t i) { return (f->bitmap[i >> 3] >> (i & 7)) & 1; }

int64_t zv_frag_range_start(const zv_frag *f, uint32_t r) { return ld64(f->ranges + 16 * (size_t)r); }

uint64_t zv_frag_total(const zv_frag *f) {
  uint64_t t = f->T;
  for (uint32_t r = 0; r < f->R; r++) { /* saturates: four ranges of 2^62 rows must not wrap to 0 */
    uint64_t c = (uint64_t)ld64(f->ranges + 16 * (size_t)r + 8);
    t = c > UINT64_MAX - t ? UINT64_MAX : t + c;
  }
  return t;
}

void zv_frag_expand(const zv_frag *f, int64_t *frag_off, int64_t *rows) {
  uint32_t r = 0, x = 0;
  int64_t at = 0;
  for (uint32_t i = 0; i < f->F; i++) {
    frag_off[i] = at;
    if (zv_frag_is_range(f, i)) {
      int64_t s = ld64(f->ranges + 16 * (size_t)r), c = ld64(f->ranges + 16 * (size_t)r + 8);
      for (int64_t k = 0; k < c; k++) rows[at++] = s + k;
      r++;
    } else {
      uint32_t a = ld32(f->offsets + 4 * (size_t)x), b = ld32(f->offsets + 4 * ((size_t)x + 1));
      for (uint32_t k = a; k < b; k++) rows[at++] = ld64(f->indices + 8 * (size_t)k);
      x++;
    }
  }
  frag_off[f->F] = at;
}

size_t zv_frag_size(uint32_t F, uint32_t R, uint64_t T) {
  if (F == 0) return ZV_FRAG_HEADER;
  return ZV_FRAG_HEADER + bitmap_padded(F) + (size_t)R * 16 + ((size_t)(F - R) + 1) * 4 + (size_t)T * 8;
}

void zv_frag_encode(uint8_t *out, uint32_t F, const int *is_range, const int64_t *start,
                    const int64_t *count, uint32_t E, const uint32_t *offsets, const int64_t *indices) {
  uint32_t R = F - E;
  st32(out, ZV_FRAG_MAGIC);
  out[4] = (uint8_t)ZV_FRAG_VERSION;
  out[5] = out[6] = out[7] = 0;
  st32(out + 8, F);
  st32(out + 12, R);
  if (F == 0) return;
  uint8_t *q = out + ZV_FRAG_HEADER;
  size_t bm = bitmap_padded(F);
  memset(q, 0, bm);
  for (uint32_t i = 0; i < F; i++)
    if (is_range[i]) q[i >> 3] |= (uint8_t)(1u << (i & 7));
  q += bm;
  for (uint32_t r = 0; r < R; r++, q += 16) {
    st64(q, start[r]);
    st64(q + 8, count[r]);
  }
  for (uint32_t x = 0; x <= E; x++, q += 4) st32(q, offsets[x]);
  for (uint32_t t = 0; t < offsets[E]; t++, q += 8) st64(q, indices[t]);
}

/* ---- object manifests ----------------------------------------------------- */

int zv_manifest_scan(const uint8_t *p, size_t n, int ndim, int64_t object, zv_block *blocks,
                     int64_t *coords, int64_t *explicit_refs, int64_t *nb, int64_t *nx, zerr *e) {
  if (ndim < 1 || ndim > ZARR_MAX_DIMS) return zerr_set(e, ZE_ZV, "object manifests need 1 to 32 dimensions, not %d", ndim);
  if (n < 4) return zerr_set(e, ZE_ZV, "manifest of object %lld has %zu bytes, fewer than its 4-byte block count",
                             (long long)object, n);
  uint32_t B = ld32(p);
  size_t at = 4, cb = (size_t)ndim * 8;
  for (uint32_t b = 0; b < B; b++) {
    if (n - at < cb + 1)
      return zerr_set(e, ZE_ZV, "manifest of object %lld ends inside block %u of %u", (long long)object, b, B);
    const uint8_t *c = p + at;
    at += cb;
    int mode = p[at++];
    int64_t first, count;
    if (mode == 0) {
      if (n - at < 8) return zerr_set(e, ZE_ZV, "manifest of object %lld ends inside block %u", (long long)object, b);
      first = ld64(p + at);
      count = 1;
      at += 8;
      if (first < 0) return zerr_set(e, ZE_ZV, "manifest of object %lld names fragment %lld", (long long)object, (long long)first);
    } else if (mode == 1) {
      if (n - at < 16) return zerr_set(e, ZE_ZV, "manifest of object %lld ends inside block %u", (long long)object, b);
      first = ld64(p + at);
      count = ld64(p + at + 8);
      at += 16;
      /* fragments of a chunk are counted in uint32 */
      if (first < 0 || count < 0 || first > (int64_t)UINT32_MAX || count > (int64_t)UINT32_MAX - first)
        return zerr_set(e, ZE_ZV, "manifest of object %lld has the fragment range (%lld, %lld)", (long long)object,
                        (long long)first, (long long)count);
    } else if (mode == 2) {
      if (n - at < 4) return zerr_set(e, ZE_ZV, "manifest of object %lld ends inside block %u", (long long)object, b);
      count = ld32(p + at);
      at += 4;
      if ((uint64_t)count * 8 > n - at)
        return zerr_set(e, ZE_ZV, "manifest of object %lld lists %lld fragments past its end", (long long)object, (long long)count);
      first = *nx;
      for (int64_t k = 0; k < count; k++) {
        int64_t v = ld64(p + at + 8 * (size_t)k);
        if (v < 0) return zerr_set(e, ZE_ZV, "manifest of object %lld names fragment %lld", (long long)object, (long long)v);
        if (explicit_refs) explicit_refs[*nx + k] = v;
      }
      at += (size_t)count * 8;
      *nx += count;
    } else
      return zerr_set(e, ZE_ZV, "manifest of object %lld has block mode %d (0, 1 or 2)", (long long)object, mode);
    if (blocks) {
      zv_block *k = blocks + *nb;
      k->object = object;
      k->mode = mode;
      k->first = first;
      k->count = count;
      for (int d = 0; d < ndim; d++) coords[*nb * ndim + d] = ld64(c + 8 * d);
    }
    (*nb)++;
  }
  if (at != n)
    return zerr_set(e, ZE_ZV, "manifest of object %lld has %zu bytes after its %u blocks", (long long)object, n - at, B);
  return 0;
}

/* ---- rows ------------------------------------------------------------------ */

static const struct {
  const char *name;
  size_t size;
} zv_types[] = {{"float32", 4}, {"float64", 8}, {"int8", 1},  {"int16", 2},  {"int32", 4},
                {"int64", 8},   {"uint8", 1},   {"uint16", 2}, {"uint32", 4}, {"uint64", 8},
                {"bool", 1}};

int zv_type_parse(const char *name, zv_type *t) {
  for (size_t i = 0; i < sizeof zv_types / sizeof zv_types[0]; i++)
    if (strcmp(name, zv_types[i].name) == 0) {
      *t = (zv_type)i;
      return 0;
    }
  return -1;
}

size_t zv_type_size(zv_type t) { return zv_types[t].size; }

static double load_one(const uint8_t *p, zv_type t) {
  switch (t) {
  case ZV_F32: {
    uint32_t u = ld32(p);
    float v;
    memcpy(&v, &u, 4);
    return v;
  }
  case ZV_F64: {
    uint64_t u = ld64u(p);
    double v;
    memcpy(&v, &u, 8);
    return v;
  }
  case ZV_I8: return (int8_t)p[0];
  case ZV_I16: return (int16_t)ld16(p);
  case ZV_I32: return (int32_t)ld32(p);
  case ZV_I64: return (double)ld64(p);
  case ZV_U8: return p[0];
  case ZV_U16: return ld16(p);
  case ZV_U32: return ld32(p);
  case ZV_U64: return (double)ld64u(p);
  case ZV_BOOL: return p[0] != 0;
  }
  return NAN;
}

int zv_rows_decode(const uint8_t *p, size_t n, zv_type t, int ncol, double **cols, int64_t at,
                   int64_t room, zerr *e) {
  size_t es = zv_type_size(t), rs = es * (size_t)ncol;
  if (ncol < 1 || n % rs)
    return zerr_set(e, ZE_ZV, "a blob of %zu bytes is not a whole number of %d-column %s rows", n, ncol, zv_types[t].name);
  int64_t m = (int64_t)(n / rs);
  if (m > room) return zerr_set(e, ZE_ZV, "a blob holds %lld rows, more than expected", (long long)m);
  for (int c = 0; c < ncol; c++) {
    double *o = cols[c] + at;
    const uint8_t *q = p + es * (size_t)c;
    if (t == ZV_F32) /* the common vertex case */
      for (int64_t i = 0; i < m; i++, q += rs) {
        uint32_t u = ld32(q);
        float v;
        memcpy(&v, &u, 4);
        o[i] = v;
      }
    else
      for (int64_t i = 0; i < m; i++, q += rs) o[i] = load_one(q, t);
  }
  return 0;
}

int zv_rows_encode(const double *x, int64_t ldx, int64_t at, int64_t m, int ncol, zv_type t,
                   uint8_t *out, zerr *e) {
  size_t es = zv_type_size(t);
  for (int64_t i = 0; i < m; i++)
    for (int c = 0; c < ncol; c++) {
      double v = x[(int64_t)c * ldx + at + i];
      uint8_t *q = out + ((size_t)i * (size_t)ncol + (size_t)c) * es;
      if (t == ZV_F32) {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        st32(q, u);
        continue;
      }
      if (t == ZV_F64) {
        int64_t u;
        memcpy(&u, &v, 8);
        st64(q, u);
        continue;
      }
      if (t == ZV_BOOL) {
        if (v != 0 && v != 1) return zerr_set(e, ZE_VALUE, "the value %g cannot be stored as bool", v);
        *q = (uint8_t)v;
        continue;
      }
      int is_unsigned = t >= ZV_U8;
      double top = es >= 8 ? 9007199254740992.0 : ldexp(1.0, (int)(8 * es) - (is_unsigned ? 0 : 1));
      if (isnan(v) || v != floor(v) || v >= top || v < (is_unsigned ? 0 : -top))
        return zerr_set(e, ZE_VALUE, "the value %g cannot be stored as %s", v, zv_types[t].name);
      int64_t w = (int64_t)v;
      uint8_t b[8];
      st64(b, w);
      memcpy(q, b, es); /* little-endian: the low bytes */
    }
  return 0;
}
