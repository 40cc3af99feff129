/* numcodecs' shuffle: byte k of every element, then byte k + 1, ... (the
 * elements' bytes transposed), so that similar bytes sit together. */
#include "codec_elements.h"

typedef struct {
  int elementsize;
} shuffle_cfg;

static int shuffle_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  return cfg_int(cfg, "shuffle", "elementsize", 1, 1 << 20, &ZCODEC_CFG(c, shuffle_cfg)->elementsize, e);
}

static int shuffle_run(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, int enc, zerr *e) {
  size_t es = (size_t)ZCODEC_CFG(c, const shuffle_cfg)->elementsize;
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

static int shuffle_decode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, size_t limit,
                          zerr *e) {
  (void)limit;
  return shuffle_run(c, src, n, out, 0, e);
}

static int shuffle_encode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  return shuffle_run(c, src, n, out, 1, e);
}

const zcodec_vt zc_shuffle = {.name = "shuffle", .parse = shuffle_parse, .decode = shuffle_decode,
                              .encode = shuffle_encode, .overhead = -1};
