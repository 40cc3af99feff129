/* numcodecs filters that work on typed elements: shuffle, delta,
 * fixedscaleoffset, bitround, quantize and astype. Elements are read and written in the byte
 * order their configuration names, so these run as bytes -> bytes codecs. */
#include <math.h>
#include <string.h>
#include "zarr_core.h"

extern const zcodec_vt zc_shuffle, zc_delta, zc_fixedscaleoffset, zc_bitround, zc_quantize,
    zc_astype;
#define IS(c, x) ((c)->vt == &zc_##x)

typedef struct {
  znum dtype, astype;   /* the decoded and the stored element type */
  double scale, offset; /* fixedscaleoffset; quantize: scale */
  int keepbits;         /* bitround */
  int elementsize;      /* shuffle */
} filt_cfg;

static inline int host_big(void) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return 1;
#else
  return 0;
#endif
}

static void load_bytes(uint8_t *dst, const uint8_t *src, znum t) {
  if (t.big == host_big()) memcpy(dst, src, (size_t)t.size);
  else for (int i = 0; i < t.size; i++) dst[i] = src[t.size - 1 - i];
}

static void store_bytes(uint8_t *dst, const uint8_t *src, znum t) { load_bytes(dst, src, t); }

static double get_f(const uint8_t *p, znum t) {
  uint8_t b[8];
  load_bytes(b, p, t);
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

static uint64_t get_u(const uint8_t *p, znum t) { /* integers, two's complement */
  uint8_t b[8];
  load_bytes(b, p, t);
  int sgn = t.kind == 'i';
  switch (t.size) {
  case 1: return sgn ? (uint64_t)(int64_t)(int8_t)b[0] : b[0];
  case 2: { uint16_t v; memcpy(&v, b, 2); return sgn ? (uint64_t)(int64_t)(int16_t)v : v; }
  case 4: { uint32_t v; memcpy(&v, b, 4); return sgn ? (uint64_t)(int64_t)(int32_t)v : v; }
  default: { uint64_t v; memcpy(&v, b, 8); return v; }
  }
}

static void put_u(uint8_t *p, znum t, uint64_t v) { /* keeps the low bytes: wraps */
  uint8_t b[8];
  switch (t.size) {
  case 1: b[0] = (uint8_t)v; break;
  case 2: { uint16_t x = (uint16_t)v; memcpy(b, &x, 2); break; }
  case 4: { uint32_t x = (uint32_t)v; memcpy(b, &x, 4); break; }
  default: memcpy(b, &v, 8);
  }
  store_bytes(p, b, t);
}

/* A double as the bits of a 64-bit integer, defined for every input: NaN is
 * 0, values beyond the range saturate (hostile data must not reach C's
 * undefined float-to-integer conversions). */
static uint64_t f_to_bits(double v, int is_unsigned) {
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

static void put_f(uint8_t *p, znum t, double v) {
  uint8_t b[8];
  if (t.kind == 'f') {
    if (t.size == 4) { float f = (float)v; memcpy(b, &f, 4); }
    else memcpy(b, &v, 8);
    store_bytes(p, b, t);
    return;
  }
  put_u(p, t, f_to_bits(v, t.kind == 'u'));
}

static int valid_num(znum t) {
  return (t.kind == 'i' || t.kind == 'u' || t.kind == 'f') &&
         (t.size == 1 || t.size == 2 || t.size == 4 || t.size == 8) && !(t.kind == 'f' && t.size < 4);
}

/* One element of type `from` at p -> type `to` at q, as numpy's astype():
 * integers to integers wrap, floating point to integers truncates. */
static void convert_one(const uint8_t *p, znum from, uint8_t *q, znum to) {
  if (from.kind != 'f' && to.kind != 'f') put_u(q, to, get_u(p, from));
  else put_f(q, to, get_f(p, from));
}

static int shuffle_run(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, int enc, zerr *e) {
  size_t es = (size_t)ZCODEC_CFG(c, const filt_cfg)->elementsize;
  if (zbuf_reserve(out, n ? n : 1, e)) return -1;
  size_t count = n / es;
  for (size_t i = 0; i < count; i++)
    for (size_t j = 0; j < es; j++) {
      if (enc) out->data[j * count + i] = src[i * es + j];
      else out->data[i * es + j] = src[j * count + i];
    }
  memcpy(out->data + count * es, src + count * es, n - count * es);
  out->size = n;
  return 0;
}

/* bitround on integers: keep `keepbits` bits from the highest set bit of the
 * magnitude, rounding the rest half to even; a rounding that would leave the
 * type's range keeps the truncated value instead. */
static uint64_t round_magnitude(uint64_t mag, int keepbits, uint64_t max) {
  if (mag == 0) return 0;
  int msb = 63 - __builtin_clzll(mag);
  int drop = msb + 1 - keepbits;
  if (drop <= 0) return mag;
  uint64_t mask = ~0ULL << drop, half = 1ULL << (drop - 1);
  uint64_t kept = mag & mask, low = mag & ~mask;
  if (low > half || (low == half && ((kept >> drop) & 1))) {
    uint64_t up = kept + (1ULL << drop);
    if (up > kept && up <= max) return up;
  }
  return kept;
}

static int bitround_ints(const filt_cfg *k, const uint8_t *src, size_t count, uint8_t *o,
                         size_t n, zbuf *out, zerr *e) {
  znum dt = k->dtype;
  if (k->keepbits < 1) return zerr_set(e, ZE_CODEC, "bitround needs keepbits of at least 1");
  int bits = dt.size * 8;
  uint64_t max = dt.kind == 'u' ? (bits == 64 ? UINT64_MAX : (1ULL << bits) - 1)
                                : (1ULL << (bits - 1)) - 1;
  for (size_t i = 0; i < count; i++) {
    uint64_t v = get_u(src + i * (size_t)dt.size, dt);
    if (dt.kind == 'i' && (int64_t)v < 0) {
      uint64_t mag = round_magnitude(0 - v, k->keepbits, max + 1);
      v = 0 - mag;
    } else {
      v = round_magnitude(v, k->keepbits, max);
    }
    put_u(o + i * (size_t)dt.size, dt, v);
  }
  out->size = n;
  return 0;
}

static int filter_decode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, size_t limit,
                         zerr *e) {
  (void)limit;
  const filt_cfg *k = ZCODEC_CFG(c, const filt_cfg);
  if (IS(c, shuffle)) return shuffle_run(c, src, n, out, 0, e);
  if (IS(c, bitround)) { /* rounding is lossy: decoding is a copy */
    if (zbuf_reserve(out, n ? n : 1, e)) return -1;
    memcpy(out->data, src, n);
    out->size = n;
    return 0;
  }
  znum dt = k->dtype, as = k->astype;
  if (!valid_num(dt) || !valid_num(as)) return zerr_set(e, ZE_CODEC, "unsupported filter data type");
  if (n % (size_t)as.size) return zerr_set(e, ZE_CORRUPT, "filtered data is not a whole number of elements");
  size_t count = n / (size_t)as.size;
  if (zbuf_reserve(out, count * (size_t)dt.size + 1, e)) return -1;
  uint8_t *o = out->data;
  if (IS(c, delta)) {
    if (dt.kind == 'f') {
      double acc = 0;
      float accf = 0;
      for (size_t i = 0; i < count; i++) {
        double d = get_f(src + i * (size_t)as.size, as);
        if (dt.size == 4) { accf += (float)d; put_f(o + i * (size_t)dt.size, dt, accf); }
        else { acc += d; put_f(o + i * (size_t)dt.size, dt, acc); }
      }
    } else {
      uint64_t acc = 0; /* wraps like the element type */
      for (size_t i = 0; i < count; i++) {
        acc += as.kind == 'f' ? f_to_bits(get_f(src + i * (size_t)as.size, as), 0)
                              : get_u(src + i * (size_t)as.size, as);
        put_u(o + i * (size_t)dt.size, dt, acc);
      }
    }
  } else if (IS(c, quantize) || IS(c, astype)) { /* a cast back */
    for (size_t i = 0; i < count; i++)
      convert_one(src + i * (size_t)as.size, as, o + i * (size_t)dt.size, dt);
  } else if (IS(c, fixedscaleoffset)) {
    for (size_t i = 0; i < count; i++) {
      double v = get_f(src + i * (size_t)as.size, as) / k->scale;
      if (dt.kind == 'f' && dt.size == 4) v = (double)((float)v + (float)k->offset);
      else v += k->offset;
      put_f(o + i * (size_t)dt.size, dt, v);
    }
  } else {
    return zerr_set(e, ZE_CODEC, "unknown filter");
  }
  out->size = count * (size_t)dt.size;
  return 0;
}

static int filter_encode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  const filt_cfg *k = ZCODEC_CFG(c, const filt_cfg);
  if (IS(c, shuffle)) return shuffle_run(c, src, n, out, 1, e);
  znum dt = k->dtype, as = k->astype;
  if (!valid_num(dt) || !valid_num(as)) return zerr_set(e, ZE_CODEC, "unsupported filter data type");
  if (n % (size_t)dt.size) return zerr_set(e, ZE_CODEC, "data is not a whole number of elements");
  size_t count = n / (size_t)dt.size;
  if (zbuf_reserve(out, count * (size_t)(IS(c, bitround) ? dt.size : as.size) + 1, e)) return -1;
  uint8_t *o = out->data;
  if (IS(c, bitround)) {
    if (dt.kind != 'f') return bitround_ints(k, src, count, o, n, out, e);
    int mant = dt.size == 4 ? 23 : 52;
    int maskbits = k->keepbits < 0 ? mant : k->keepbits > mant ? 0 : mant - k->keepbits;
    for (size_t i = 0; i < count; i++) {
      uint8_t b[8] = {0};
      load_bytes(b, src + i * (size_t)dt.size, dt);
      uint64_t v;
      if (dt.size == 4) { uint32_t x; memcpy(&x, b, 4); v = x; } else memcpy(&v, b, 8);
      if (maskbits > 0) {
        uint64_t mask = ~0ULL << maskbits;
        uint64_t half = (1ULL << (maskbits - 1)) - 1;
        v += ((v >> maskbits) & 1) + half;
        v &= mask;
      }
      if (dt.size == 4) { uint32_t x = (uint32_t)v; memcpy(b, &x, 4); } else memcpy(b, &v, 8);
      store_bytes(o + i * (size_t)dt.size, b, dt);
    }
    out->size = n;
    return 0;
  }
  if (IS(c, delta)) {
    for (size_t i = 0; i < count; i++) {
      const uint8_t *p = src + i * (size_t)dt.size;
      uint8_t *q = o + i * (size_t)as.size;
      if (dt.kind == 'f' || as.kind == 'f') {
        double cur = get_f(p, dt), prev = i ? get_f(p - dt.size, dt) : 0;
        put_f(q, as, i ? cur - prev : cur);
      } else {
        uint64_t cur = get_u(p, dt), prev = i ? get_u(p - dt.size, dt) : 0;
        put_u(q, as, cur - prev);
      }
    }
  } else if (IS(c, astype)) {
    for (size_t i = 0; i < count; i++)
      convert_one(src + i * (size_t)dt.size, dt, o + i * (size_t)as.size, as);
  } else if (IS(c, quantize)) { /* keep the bits that `digits` decimals need */
    if (dt.kind != 'f' || as.kind != 'f') return zerr_set(e, ZE_CODEC, "quantize works on floating point data only");
    for (size_t i = 0; i < count; i++) {
      double v = get_f(src + i * (size_t)dt.size, dt);
      if (dt.size == 4) { /* numpy computes in the element type */
        float s = (float)k->scale;
        v = (double)(nearbyintf(s * (float)v) / s);
      } else {
        v = nearbyint(k->scale * v) / k->scale;
      }
      put_f(o + i * (size_t)as.size, as, v);
    }
  } else if (IS(c, fixedscaleoffset)) {
    for (size_t i = 0; i < count; i++) {
      double v = nearbyint((get_f(src + i * (size_t)dt.size, dt) - k->offset) * k->scale);
      put_f(o + i * (size_t)as.size, as, v);
    }
  } else {
    return zerr_set(e, ZE_CODEC, "unknown filter");
  }
  out->size = count * (size_t)as.size;
  return 0;
}

/* ---- exported element access (for codecs in other files) ---- */

double znum_get_f(const uint8_t *p, znum t) { return get_f(p, t); }
uint64_t znum_get_u(const uint8_t *p, znum t) { return get_u(p, t); }
void znum_put_f(uint8_t *p, znum t, double v) { put_f(p, t, v); }
void znum_put_u(uint8_t *p, znum t, uint64_t v) { put_u(p, t, v); }
int znum_valid(znum t) { return valid_num(t); }

/* ---- table rows ---- */

static int shuffle_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  return cfg_int(cfg, "shuffle", "elementsize", 1, 1 << 20,
                 &ZCODEC_CFG(c, filt_cfg)->elementsize, e);
}

static int types_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  filt_cfg *k = ZCODEC_CFG(c, filt_cfg);
  const char *n = c->vt->name;
  if (cfg_num_type(cfg, n, "dtype", &k->dtype, e)) return -1;
  if (IS(c, bitround)) {
    k->astype = k->dtype;
    return cfg_int(cfg, n, "keepbits", 0, 64, &k->keepbits, e);
  }
  if (cfg_num_type(cfg, n, "astype", &k->astype, e)) return -1;
  if ((IS(c, fixedscaleoffset) || IS(c, quantize)) && cfg_dbl(cfg, n, "scale", &k->scale, e))
    return -1;
  if (IS(c, fixedscaleoffset) && cfg_dbl(cfg, n, "offset", &k->offset, e)) return -1;
  return 0;
}

#define FILTER_ROW(x, parser)                                                          \
  const zcodec_vt zc_##x = {.name = #x, .parse = parser, .decode = filter_decode,      \
                            .encode = filter_encode, .overhead = -1}
FILTER_ROW(shuffle, shuffle_parse);
FILTER_ROW(delta, types_parse);
FILTER_ROW(fixedscaleoffset, types_parse);
FILTER_ROW(bitround, types_parse);
FILTER_ROW(quantize, types_parse);
FILTER_ROW(astype, types_parse);
