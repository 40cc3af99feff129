/* numcodecs' astype: elements stored as another numeric type, as numpy's
 * astype() converts (integers wrap, floating point to integers truncates). */
#include "codec_elements.h"

typedef struct {
  znum dt, as;
} astype_cfg;

static int astype_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  astype_cfg *k = ZCODEC_CFG(c, astype_cfg);
  return znum_parse_types(cfg, "astype", &k->dt, &k->as, e);
}

static int astype_run(const astype_cfg *k, const uint8_t *src, size_t n, zbuf *out, int enc,
                      zerr *e) {
  znum from = enc ? k->dt : k->as, to = enc ? k->as : k->dt;
  size_t count = 0;
  if (znum_prepare(from, to, n, out, &count, enc, e)) return -1;
  for (size_t i = 0; i < count; i++)
    znum_convert(src + i * (size_t)from.size, from, out->data + i * (size_t)to.size, to);
  out->size = count * (size_t)to.size;
  return 0;
}

static int astype_decode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, size_t limit,
                         zerr *e) {
  (void)limit;
  return astype_run(ZCODEC_CFG(c, const astype_cfg), src, n, out, 0, e);
}

static int astype_encode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  return astype_run(ZCODEC_CFG(c, const astype_cfg), src, n, out, 1, e);
}

const zcodec_vt zc_astype = {.name = "astype", .parse = astype_parse, .decode = astype_decode,
                             .encode = astype_encode, .overhead = -1};
