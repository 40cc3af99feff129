/* Checksum codecs from numcodecs: adler32 (4 little-endian bytes before the
 * data by default, or after) and fletcher32 (the HDF5 checksum, after). */
#include <string.h>
#include <zlib.h>
#include "zarr_core.h"

static uint32_t fletcher32(const uint8_t *p, size_t n) {
  uint32_t s1 = 0, s2 = 0;
  size_t words = n / 2;
  while (words) {
    size_t t = words > 360 ? 360 : words;
    words -= t;
    while (t--) {
      s1 += ((uint32_t)p[0] << 8) | p[1];
      s2 += s1;
      p += 2;
    }
    s1 = (s1 & 0xffff) + (s1 >> 16);
    s2 = (s2 & 0xffff) + (s2 >> 16);
  }
  if (n % 2) {
    s1 += (uint32_t)p[0] << 8;
    s2 += s1;
    s1 = (s1 & 0xffff) + (s1 >> 16);
    s2 = (s2 & 0xffff) + (s2 >> 16);
  }
  s1 = (s1 & 0xffff) + (s1 >> 16);
  s2 = (s2 & 0xffff) + (s2 >> 16);
  return (s2 << 16) | s1;
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

typedef struct {
  int at_end;
} sum_cfg;

static int is_fletcher(const zcodec *c) { return c->vt->name[0] == 'f'; }

static uint32_t sum_of(const zcodec *c, const uint8_t *p, size_t n) {
  if (is_fletcher(c)) return fletcher32(p, n);
  uLong a = adler32(0L, Z_NULL, 0);
  for (size_t k; n > 0; p += k, n -= k) { /* zlib counts in uInt */
    k = n > zarr_codec_piece ? zarr_codec_piece : n;
    a = adler32(a, p, (uInt)k);
  }
  return (uint32_t)a;
}

static int at_end(const zcodec *c) { return is_fletcher(c) || ZCODEC_CFG(c, const sum_cfg)->at_end; }

/* Verify; on success the payload is src[*off, *off + *len). */
static int checksum_decode(const zcodec *c, const uint8_t *src, size_t n, size_t *off, size_t *len,
                    zerr *e) {
  const char *name = c->vt->name;
  if (n < 4) return zerr_set(e, ZE_CORRUPT, "chunk is too short to hold a %s checksum", name);
  *off = at_end(c) ? 0 : 4;
  *len = n - 4;
  uint32_t stored = le32(at_end(c) ? src + n - 4 : src);
  uint32_t actual = sum_of(c, src + *off, *len);
  if (stored != actual)
    return zerr_set(e, ZE_CHECKSUM, "%s checksum mismatch (stored %08x, computed %08x)", name,
                    stored, actual);
  return 0;
}

static int checksum_encode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  if (zbuf_reserve(out, n + 4, e)) return -1;
  uint32_t v = sum_of(c, src, n);
  size_t pos = at_end(c) ? n : 0;
  memmove(out->data + (at_end(c) ? 0 : 4), src, n);
  for (int i = 0; i < 4; i++) out->data[pos + i] = (uint8_t)(v >> (8 * i));
  out->size = n + 4;
  return 0;
}

/* ---- table rows ---- */

static int adler32_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  const char *loc;
  if (cfg_str(cfg, "adler32", "location", &loc, e)) return -1;
  if (strcmp(loc, "start") != 0 && strcmp(loc, "end") != 0)
    return zerr_set(e, ZE_CODEC, "codec 'adler32': location must be \"start\" or \"end\"");
  ZCODEC_CFG(c, sum_cfg)->at_end = strcmp(loc, "end") == 0;
  return 0;
}

const zcodec_vt zc_adler32 = {.name = "adler32", .parse = adler32_parse,
                              .encode = checksum_encode, .strip = checksum_decode, .overhead = 4};
const zcodec_vt zc_fletcher32 = {.name = "fletcher32", .encode = checksum_encode,
                                 .strip = checksum_decode, .overhead = 4};
