/* bitround (a registered Zarr v3 extension; numcodecs.bitround before): each
 * value rounded, half to even, to `keepbits` significant bits, of the
 * mantissa for floating point types and from the highest set bit for
 * integers. Lossy: decoding is a copy. R runs it on serialised elements. */
#include "codec_elements.h"

typedef struct {
  znum dt;
  int keepbits;
} bitround_cfg;

static int bitround_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  bitround_cfg *k = ZCODEC_CFG(c, bitround_cfg);
  if (cfg_num_type(cfg, "bitround", "dtype", &k->dt, e)) return -1;
  return cfg_int(cfg, "bitround", "keepbits", 0, 64, &k->keepbits, e);
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

static int bitround_ints(const bitround_cfg *k, const uint8_t *src, size_t count, uint8_t *o,
                         size_t n, zbuf *out, zerr *e) {
  znum dt = k->dt;
  if (k->keepbits < 1) return zerr_set(e, ZE_CODEC, "bitround needs keepbits of at least 1");
  int bits = dt.size * 8;
  uint64_t max = dt.kind == 'u' ? (bits == 64 ? UINT64_MAX : (1ULL << bits) - 1)
                                : (1ULL << (bits - 1)) - 1;
  for (size_t i = 0; i < count; i++) {
    uint64_t v = znum_get_u(src + i * (size_t)dt.size, dt);
    if (dt.kind == 'i' && (int64_t)v < 0) {
      uint64_t mag = round_magnitude(0 - v, k->keepbits, max + 1);
      v = 0 - mag;
    } else {
      v = round_magnitude(v, k->keepbits, max);
    }
    znum_put_u(o + i * (size_t)dt.size, dt, v);
  }
  out->size = n;
  return 0;
}

static int bitround_decode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out,
                           size_t limit, zerr *e) {
  (void)c;
  (void)limit;
  if (zbuf_reserve(out, n ? n : 1, e)) return -1;
  memcpy(out->data, src, n);
  out->size = n;
  return 0;
}

static int bitround_encode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  const bitround_cfg *k = ZCODEC_CFG(c, const bitround_cfg);
  znum dt = k->dt;
  size_t count = 0;
  if (znum_prepare(dt, dt, n, out, &count, 1, e)) return -1;
  uint8_t *o = out->data;
  if (dt.kind != 'f') return bitround_ints(k, src, count, o, n, out, e);
  int mant = dt.size == 4 ? 23 : 52;
  int maskbits = k->keepbits < 0 ? mant : k->keepbits > mant ? 0 : mant - k->keepbits;
  for (size_t i = 0; i < count; i++) {
    uint8_t b[8] = {0};
    znum_load(b, src + i * (size_t)dt.size, dt);
    uint64_t v;
    if (dt.size == 4) { uint32_t x; memcpy(&x, b, 4); v = x; } else memcpy(&v, b, 8);
    if (maskbits > 0) {
      uint64_t mask = ~0ULL << maskbits;
      uint64_t half = (1ULL << (maskbits - 1)) - 1;
      v += ((v >> maskbits) & 1) + half;
      v &= mask;
    }
    if (dt.size == 4) { uint32_t x = (uint32_t)v; memcpy(b, &x, 4); } else memcpy(b, &v, 8);
    znum_store(o + i * (size_t)dt.size, b, dt);
  }
  out->size = n;
  return 0;
}

const zcodec_vt zc_bitround = {.name = "bitround", .parse = bitround_parse,
                               .decode = bitround_decode, .encode = bitround_encode, .overhead = -1};
