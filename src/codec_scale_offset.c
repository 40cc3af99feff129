/* scale_offset (a registered Zarr v3 extension), an array -> array codec:
 * encoding stores (x - offset) * scale, decoding x / scale + offset, in the
 * arithmetic of the array's data type (float32 in float, integers exactly in
 * 64 bits). A result the type cannot hold is an error. R's flat description
 * runs it on serialised elements: "dtype" ("<f4", ">i2"), "scale", "offset". */
#include <math.h>
#include "codec_elements.h"

typedef struct {
  znum t;
  double scale, offset;
} so_cfg;

static int so_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  so_cfg *k = ZCODEC_CFG(c, so_cfg);
  if (cfg_num_type(cfg, "scale_offset", "dtype", &k->t, e) ||
      cfg_dbl(cfg, "scale_offset", "scale", &k->scale, e) ||
      cfg_dbl(cfg, "scale_offset", "offset", &k->offset, e))
    return -1;
  if (k->t.kind != 'f' && (k->scale != trunc(k->scale) || k->offset != trunc(k->offset) ||
                           fabs(k->scale) > 9.2e18 || fabs(k->offset) > 9.2e18))
    return zerr_set(e, ZE_CODEC, "scale_offset: an integer array needs a whole scale and offset");
  if (k->scale == 0) return zerr_set(e, ZE_CODEC, "scale_offset: the scale must not be 0");
  return 0;
}

static int int_range(znum t, int64_t *lo, int64_t *hi) {
  int bits = t.size * 8;
  if (t.kind == 'u') {
    *lo = 0;
    *hi = bits == 64 ? INT64_MAX : (int64_t)((1ULL << bits) - 1);
  } else {
    *lo = bits == 64 ? INT64_MIN : -(int64_t)(1ULL << (bits - 1));
    *hi = bits == 64 ? INT64_MAX : (int64_t)((1ULL << (bits - 1)) - 1);
  }
  return 0;
}

static int so_run(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, int enc, zerr *e) {
  const so_cfg *k = ZCODEC_CFG(c, const so_cfg);
  size_t es = (size_t)k->t.size, count = n / es;
  if (n % es) return zerr_set(e, ZE_CORRUPT, "scale_offset: data is not a whole number of elements");
  if (zbuf_reserve(out, n + 1, e)) return -1;
  int64_t lo = 0, hi = 0, sc = (int64_t)k->scale, of = (int64_t)k->offset;
  if (k->t.kind != 'f') int_range(k->t, &lo, &hi);
  for (size_t i = 0; i < count; i++) {
    const uint8_t *p = src + i * es;
    uint8_t *q = out->data + i * es;
    if (k->t.kind == 'f') {
      double x = znum_get_f(p, k->t), y;
      if (k->t.size == 4) {
        float xf = (float)x, s = (float)k->scale, o = (float)k->offset;
        y = enc ? (double)((xf - o) * s) : (double)(xf / s + o);
      } else {
        y = enc ? (x - k->offset) * k->scale : x / k->scale + k->offset;
      }
      znum_put_f(q, k->t, y);
      continue;
    }
    int64_t x = (int64_t)znum_get_u(p, k->t), y;
    if (k->t.kind == 'u' && k->t.size == 8 && x < 0)
      return zerr_set(e, ZE_VALUE, "scale_offset: %.0f exceeds 64-bit arithmetic", (double)(uint64_t)x);
    int bad;
    if (enc) bad = __builtin_sub_overflow(x, of, &y) || __builtin_mul_overflow(y, sc, &y);
    else bad = __builtin_add_overflow(x / sc, of, &y);
    if (bad || y < lo || y > hi)
      return zerr_set(e, enc ? ZE_VALUE : ZE_CORRUPT,
                      "scale_offset: %.0f does not fit the data type when %s", (double)x,
                      enc ? "encoded" : "decoded");
    znum_put_u(q, k->t, (uint64_t)y);
  }
  out->size = count * es;
  return 0;
}

static int so_encode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  return so_run(c, src, n, out, 1, e);
}

static int so_decode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, size_t limit,
                     zerr *e) {
  (void)limit; /* the output is the input's size */
  return so_run(c, src, n, out, 0, e);
}

const zcodec_vt zc_scale_offset = {.name = "scale_offset", .parse = so_parse, .decode = so_decode,
                                   .encode = so_encode, .overhead = -1};
