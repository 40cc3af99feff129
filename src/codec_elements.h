/* Reading and writing numeric elements of a given type and byte order (a
 * znum), shared by the codecs that work on element values: the numcodecs
 * filters, bitround, scale_offset, cast_value. Inline, as they run once per
 * element. */
#ifndef ZARR_CODEC_ELEMENTS_H
#define ZARR_CODEC_ELEMENTS_H

#include <math.h>
#include <string.h>
#include "zarr_core.h"

static inline int znum_host_big(void) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return 1;
#else
  return 0;
#endif
}

static inline void znum_load(uint8_t *dst, const uint8_t *src, znum t) {
  if (t.big == znum_host_big()) memcpy(dst, src, (size_t)t.size);
  else for (int i = 0; i < t.size; i++) dst[i] = src[t.size - 1 - i];
}

static inline void znum_store(uint8_t *dst, const uint8_t *src, znum t) { znum_load(dst, src, t); }

static inline double znum_get_f(const uint8_t *p, znum t) {
  uint8_t b[8] = {0};
  znum_load(b, p, t);
  if (t.kind == 'f') {
    if (t.size == 4) { float f; memcpy(&f, b, 4); return f; }
    double d; memcpy(&d, b, 8); return d;
  }
  if (t.kind == 'u') {
    switch (t.size) {
    case 1: return b[0];
    case 2: { uint16_t v; memcpy(&v, b, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, b, 4); return v; }
    default: { uint64_t v; memcpy(&v, b, 8); return (double)v; }
    }
  }
  switch (t.size) {
  case 1: return (int8_t)b[0];
  case 2: { int16_t v; memcpy(&v, b, 2); return v; }
  case 4: { int32_t v; memcpy(&v, b, 4); return v; }
  default: { int64_t v; memcpy(&v, b, 8); return (double)v; }
  }
}

static inline uint64_t znum_get_u(const uint8_t *p, znum t) { /* integers, two's complement */
  uint8_t b[8] = {0};
  znum_load(b, p, t);
  int sgn = t.kind == 'i';
  switch (t.size) {
  case 1: return sgn ? (uint64_t)(int64_t)(int8_t)b[0] : b[0];
  case 2: { uint16_t v; memcpy(&v, b, 2); return sgn ? (uint64_t)(int64_t)(int16_t)v : v; }
  case 4: { uint32_t v; memcpy(&v, b, 4); return sgn ? (uint64_t)(int64_t)(int32_t)v : v; }
  default: { uint64_t v; memcpy(&v, b, 8); return v; }
  }
}

static inline void znum_put_u(uint8_t *p, znum t, uint64_t v) { /* keeps the low bytes: wraps */
  uint8_t b[8] = {0};
  switch (t.size) {
  case 1: b[0] = (uint8_t)v; break;
  case 2: { uint16_t x = (uint16_t)v; memcpy(b, &x, 2); break; }
  case 4: { uint32_t x = (uint32_t)v; memcpy(b, &x, 4); break; }
  default: memcpy(b, &v, 8);
  }
  znum_store(p, b, t);
}

/* A double as the bits of a 64-bit integer, defined for every input: NaN is
 * 0, values beyond the range saturate (hostile data must not reach C's
 * undefined float-to-integer conversions). */
static inline uint64_t znum_f_to_bits(double v, int is_unsigned) {
  if (v != v) return 0;
  if (is_unsigned) {
    if (v <= 0) return 0;
    if (v >= 18446744073709551616.0) return UINT64_MAX;
    return (uint64_t)v;
  }
  if (v <= -9223372036854775808.0) return (uint64_t)INT64_MIN;
  if (v >= 9223372036854775808.0) return (uint64_t)INT64_MAX;
  return (uint64_t)(int64_t)v;
}

static inline void znum_put_f(uint8_t *p, znum t, double v) {
  uint8_t b[8] = {0};
  if (t.kind == 'f') {
    if (t.size == 4) { float f = (float)v; memcpy(b, &f, 4); }
    else memcpy(b, &v, 8);
    znum_store(p, b, t);
    return;
  }
  znum_put_u(p, t, znum_f_to_bits(v, t.kind == 'u'));
}

static inline int znum_valid(znum t) {
  return (t.kind == 'i' || t.kind == 'u' || t.kind == 'f') &&
         (t.size == 1 || t.size == 2 || t.size == 4 || t.size == 8) && !(t.kind == 'f' && t.size < 4);
}

/* One element of type `from` at p -> type `to` at q, as numpy's astype():
 * integers to integers wrap, floating point to integers truncates. */
static inline void znum_convert(const uint8_t *p, znum from, uint8_t *q, znum to) {
  if (from.kind != 'f' && to.kind != 'f') znum_put_u(q, to, znum_get_u(p, from));
  else znum_put_f(q, to, znum_get_f(p, from));
}


/* The output of an element filter: `n` input bytes must be whole elements of
 * `in`; `out` gets room for as many elements of `outt`. */
static inline int znum_prepare(znum in, znum outt, size_t n, zbuf *out, size_t *count, int enc,
                               zerr *e) {
  if (!znum_valid(in) || !znum_valid(outt)) return zerr_set(e, ZE_CODEC, "unsupported filter data type");
  if (n % (size_t)in.size)
    return zerr_set(e, enc ? ZE_CODEC : ZE_CORRUPT, "%s is not a whole number of elements",
                    enc ? "data" : "filtered data");
  *count = n / (size_t)in.size;
  return zbuf_reserve(out, *count * (size_t)outt.size + 1, e);
}

/* numcodecs filters configured by the decoded ("dtype") and stored ("astype") types */
static inline int znum_parse_types(const zcfg *cfg, const char *codec, znum *dt, znum *as, zerr *e) {
  return cfg_num_type(cfg, codec, "dtype", dt, e) || cfg_num_type(cfg, codec, "astype", as, e) ? -1 : 0;
}

#endif
