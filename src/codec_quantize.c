/* numcodecs' quantize: floating point values rounded to the bits that
 * `digits` decimals need (R gives that as a power of two, "scale"); read
 * back as a cast. */
#include "codec_elements.h"

typedef struct {
  znum dt, as;
  double scale;
} quantize_cfg;

static int quantize_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  quantize_cfg *k = ZCODEC_CFG(c, quantize_cfg);
  if (znum_parse_types(cfg, "quantize", &k->dt, &k->as, e)) return -1;
  return cfg_dbl(cfg, "quantize", "scale", &k->scale, e);
}

static int quantize_decode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out,
                           size_t limit, zerr *e) {
  (void)limit;
  const quantize_cfg *k = ZCODEC_CFG(c, const quantize_cfg);
  size_t count = 0;
  if (znum_prepare(k->as, k->dt, n, out, &count, 0, e)) return -1;
  for (size_t i = 0; i < count; i++)
    znum_convert(src + i * (size_t)k->as.size, k->as, out->data + i * (size_t)k->dt.size, k->dt);
  out->size = count * (size_t)k->dt.size;
  return 0;
}

static int quantize_encode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  const quantize_cfg *k = ZCODEC_CFG(c, const quantize_cfg);
  znum dt = k->dt, as = k->as;
  size_t count = 0;
  if (znum_prepare(dt, as, n, out, &count, 1, e)) return -1;
  if (dt.kind != 'f' || as.kind != 'f')
    return zerr_set(e, ZE_CODEC, "quantize works on floating point data only");
  for (size_t i = 0; i < count; i++) {
    double v = znum_get_f(src + i * (size_t)dt.size, dt);
    if (dt.size == 4) { /* numpy computes in the element type */
      float s = (float)k->scale;
      v = (double)(nearbyintf(s * (float)v) / s);
    } else {
      v = nearbyint(k->scale * v) / k->scale;
    }
    znum_put_f(out->data + i * (size_t)as.size, as, v);
  }
  out->size = count * (size_t)as.size;
  return 0;
}

const zcodec_vt zc_quantize = {.name = "quantize", .parse = quantize_parse,
                               .decode = quantize_decode, .encode = quantize_encode, .overhead = -1};
