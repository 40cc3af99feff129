/* numcodecs' delta: each element minus the one before (the first as is),
 * stored as `astype`; integers wrap like the element type. */
#include "codec_elements.h"

typedef struct {
  znum dt, as;
} delta_cfg;

static int delta_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  delta_cfg *k = ZCODEC_CFG(c, delta_cfg);
  return znum_parse_types(cfg, "delta", &k->dt, &k->as, e);
}

static int delta_decode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, size_t limit,
                        zerr *e) {
  (void)limit;
  const delta_cfg *k = ZCODEC_CFG(c, const delta_cfg);
  znum dt = k->dt, as = k->as;
  size_t count = 0;
  if (znum_prepare(as, dt, n, out, &count, 0, e)) return -1;
  uint8_t *o = out->data;
  if (dt.kind == 'f') {
    double acc = 0;
    float accf = 0;
    for (size_t i = 0; i < count; i++) {
      double d = znum_get_f(src + i * (size_t)as.size, as);
      if (dt.size == 4) { accf += (float)d; znum_put_f(o + i * (size_t)dt.size, dt, accf); }
      else { acc += d; znum_put_f(o + i * (size_t)dt.size, dt, acc); }
    }
  } else {
    uint64_t acc = 0; /* wraps like the element type */
    for (size_t i = 0; i < count; i++) {
      acc += as.kind == 'f' ? znum_f_to_bits(znum_get_f(src + i * (size_t)as.size, as), 0)
                            : znum_get_u(src + i * (size_t)as.size, as);
      znum_put_u(o + i * (size_t)dt.size, dt, acc);
    }
  }
  out->size = count * (size_t)dt.size;
  return 0;
}

static int delta_encode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  const delta_cfg *k = ZCODEC_CFG(c, const delta_cfg);
  znum dt = k->dt, as = k->as;
  size_t count = 0;
  if (znum_prepare(dt, as, n, out, &count, 1, e)) return -1;
  uint8_t *o = out->data;
  for (size_t i = 0; i < count; i++) {
    const uint8_t *p = src + i * (size_t)dt.size;
    uint8_t *q = o + i * (size_t)as.size;
    if (dt.kind == 'f' || as.kind == 'f') {
      double cur = znum_get_f(p, dt), prev = i ? znum_get_f(p - dt.size, dt) : 0;
      znum_put_f(q, as, i ? cur - prev : cur);
    } else {
      uint64_t cur = znum_get_u(p, dt), prev = i ? znum_get_u(p - dt.size, dt) : 0;
      znum_put_u(q, as, cur - prev);
    }
  }
  out->size = count * (size_t)as.size;
  return 0;
}

const zcodec_vt zc_delta = {.name = "delta", .parse = delta_parse, .decode = delta_decode,
                            .encode = delta_encode, .overhead = -1};
