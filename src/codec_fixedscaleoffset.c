/* numcodecs' fixedscaleoffset: round((x - offset) * scale) stored as
 * `astype`; read back as stored / scale + offset. */
#include "codec_elements.h"

typedef struct {
  znum dt, as;
  double scale, offset;
} fso_cfg;

static int fso_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  fso_cfg *k = ZCODEC_CFG(c, fso_cfg);
  if (znum_parse_types(cfg, "fixedscaleoffset", &k->dt, &k->as, e)) return -1;
  return cfg_dbl(cfg, "fixedscaleoffset", "scale", &k->scale, e) ||
         cfg_dbl(cfg, "fixedscaleoffset", "offset", &k->offset, e) ? -1 : 0;
}

static int fso_decode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, size_t limit,
                      zerr *e) {
  (void)limit;
  const fso_cfg *k = ZCODEC_CFG(c, const fso_cfg);
  znum dt = k->dt, as = k->as;
  size_t count = 0;
  if (znum_prepare(as, dt, n, out, &count, 0, e)) return -1;
  for (size_t i = 0; i < count; i++) {
    double v = znum_get_f(src + i * (size_t)as.size, as) / k->scale;
    if (dt.kind == 'f' && dt.size == 4) v = (double)((float)v + (float)k->offset);
    else v += k->offset;
    znum_put_f(out->data + i * (size_t)dt.size, dt, v);
  }
  out->size = count * (size_t)dt.size;
  return 0;
}

static int fso_encode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  const fso_cfg *k = ZCODEC_CFG(c, const fso_cfg);
  znum dt = k->dt, as = k->as;
  size_t count = 0;
  if (znum_prepare(dt, as, n, out, &count, 1, e)) return -1;
  for (size_t i = 0; i < count; i++) {
    double v = nearbyint((znum_get_f(src + i * (size_t)dt.size, dt) - k->offset) * k->scale);
    znum_put_f(out->data + i * (size_t)as.size, as, v);
  }
  out->size = count * (size_t)as.size;
  return 0;
}

const zcodec_vt zc_fixedscaleoffset = {.name = "fixedscaleoffset", .parse = fso_parse,
                                       .decode = fso_decode, .encode = fso_encode, .overhead = -1};
