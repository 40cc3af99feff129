/* numcodecs' LZ4 codec: a 4-byte little-endian uncompressed size, then one
 * LZ4 block (system liblz4). */
#ifdef HAVE_LZ4 /* configure found liblz4; else the row below the #else */
#include <lz4.h>
#include "zarr_core.h"

/* `limit` (0: none): a header declaring more is refused before allocating. */
static int lz4_decode(const uint8_t *src, size_t n, zbuf *out, size_t limit, zerr *e) {
  if (n < 4) return zerr_set(e, ZE_CORRUPT, "lz4 data is truncated");
  uint32_t size = (uint32_t)src[0] | ((uint32_t)src[1] << 8) | ((uint32_t)src[2] << 16) |
                  ((uint32_t)src[3] << 24);
  if (size > (uint32_t)LZ4_MAX_INPUT_SIZE || (limit && size > limit))
    return zerr_set(e, ZE_CORRUPT, "lz4 header declares %.0f bytes, more than the expected %.0f",
                    (double)size, (double)(limit ? limit : (size_t)LZ4_MAX_INPUT_SIZE));
  if (n - 4 > (size_t)LZ4_MAX_INPUT_SIZE) return zerr_set(e, ZE_CORRUPT, "lz4 block is too large");
  if (zbuf_reserve(out, size ? size : 1, e)) return -1;
  int r = LZ4_decompress_safe((const char *)src + 4, (char *)out->data, (int)(n - 4), (int)size);
  if (r < 0 || (uint32_t)r != size) return zerr_set(e, ZE_CORRUPT, "lz4 data is corrupt");
  out->size = size;
  return 0;
}

static int lz4_encode(const uint8_t *src, size_t n, zbuf *out, int acceleration, zerr *e) {
  if (n > (size_t)LZ4_MAX_INPUT_SIZE) return zerr_set(e, ZE_CODEC, "chunk is too large for lz4");
  int bound = LZ4_compressBound((int)n);
  if (zbuf_reserve(out, (size_t)bound + 4, e)) return -1;
  int r = LZ4_compress_fast((const char *)src, (char *)out->data + 4, (int)n, bound,
                            acceleration);
  if (r <= 0) return zerr_set(e, ZE_CODEC, "lz4 compression failed");
  for (int i = 0; i < 4; i++) out->data[i] = (uint8_t)((uint32_t)n >> (8 * i));
  out->size = (size_t)r + 4;
  return 0;
}

/* ---- table row ---- */

typedef struct {
  int acceleration;
} lz4_cfg;

static int lz4_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  return cfg_int(cfg, "lz4", "acceleration", 1, 65537, &ZCODEC_CFG(c, lz4_cfg)->acceleration, e);
}

static int lz4_dec(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, size_t limit,
                   zerr *e) {
  (void)c;
  return lz4_decode(src, n, out, limit, e);
}

static int lz4_enc(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  return lz4_encode(src, n, out, ZCODEC_CFG(c, const lz4_cfg)->acceleration, e);
}

const zcodec_vt zc_lz4 = {.name = "lz4", .parse = lz4_parse, .decode = lz4_dec, .encode = lz4_enc,
                          .overhead = -1, .bounded = 1};

#else
#include "zarr_core.h"
ZCODEC_MISSING(lz4, "liblz4");
#endif
