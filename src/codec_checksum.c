/* Checksum codecs from numcodecs: adler32 and crc32 (zlib's; 4 little-endian
 * bytes before the data by default, or after), fletcher32 (the HDF5
 * checksum, after) and jenkins_lookup3 (the HDF5 metadata checksum: Bob
 * Jenkins' lookup3 hash of an optional prefix and the data, seeded with
 * initval, after the data). */
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

#define ROT32(x, k) (((x) << (k)) | ((x) >> (32 - (k))))

/* lookup3's hash of `n` bytes, read one by one as little-endian words (the
 * portable form HDF5 uses), continuing from the state a, b, c; `last`: the
 * bytes end the message. Whole 12-byte blocks but the last are mixed in;
 * *used tells how many bytes were taken (the rest wait for more input). */
static void lookup3_blocks(uint32_t *a, uint32_t *b, uint32_t *c, const uint8_t *k, size_t n,
                           size_t *used) {
  size_t done = 0;
  while (n - done > 12) {
    const uint8_t *p = k + done;
    *a += (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    *b += (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
    *c += (uint32_t)p[8] | (uint32_t)p[9] << 8 | (uint32_t)p[10] << 16 | (uint32_t)p[11] << 24;
    *a -= *c; *a ^= ROT32(*c, 4); *c += *b;
    *b -= *a; *b ^= ROT32(*a, 6); *a += *c;
    *c -= *b; *c ^= ROT32(*b, 8); *b += *a;
    *a -= *c; *a ^= ROT32(*c, 16); *c += *b;
    *b -= *a; *b ^= ROT32(*a, 19); *a += *c;
    *c -= *b; *c ^= ROT32(*b, 4); *b += *a;
    done += 12;
  }
  *used = done;
}

static uint32_t lookup3_final(uint32_t a, uint32_t b, uint32_t c, const uint8_t *p, size_t n) {
  if (n == 0) return c; /* nothing left: c as it stands */
  uint32_t w[3] = {0, 0, 0};
  for (size_t i = 0; i < n; i++) w[i / 4] |= (uint32_t)p[i] << (8 * (i % 4));
  a += w[0];
  b += w[1];
  c += w[2];
  c ^= b; c -= ROT32(b, 14);
  a ^= c; a -= ROT32(c, 11);
  b ^= a; b -= ROT32(a, 25);
  c ^= b; c -= ROT32(b, 16);
  a ^= c; a -= ROT32(c, 4);
  b ^= a; b -= ROT32(a, 14);
  c ^= b; c -= ROT32(b, 24);
  return c;
}

/* The hash of prefix + data without joining them: the prefix's whole blocks,
 * then a block that straddles both (through a 12-byte window), then the data. */
uint32_t jenkins_lookup3(const uint8_t *prefix, size_t np, const uint8_t *data, size_t n,
                         uint32_t initval) {
  size_t total = np + n;
  uint32_t a, b, c;
  a = b = c = 0xdeadbeefu + (uint32_t)total + initval;
  size_t used = 0;
  if (np > 0) {
    lookup3_blocks(&a, &b, &c, prefix, np, &used);
    /* the prefix's tail (at most 12 bytes) and the data's start fill one window */
    uint8_t win[24];
    size_t tail = np - used, take = n < 24 - tail ? n : 24 - tail;
    memcpy(win, prefix + used, tail);
    if (take) memcpy(win + tail, data, take);
    size_t wused;
    lookup3_blocks(&a, &b, &c, win, tail + take, &wused);
    if (take == n) return lookup3_final(a, b, c, win + wused, tail + take - wused);
    /* the window ended inside the data: continue from the data's first unhashed byte */
    size_t off = wused - tail; /* data bytes hashed (wused >= tail: 24 - tail > 12) */
    lookup3_blocks(&a, &b, &c, data + off, n - off, &used);
    return lookup3_final(a, b, c, data + off + used, n - off - used);
  }
  lookup3_blocks(&a, &b, &c, data, n, &used);
  return lookup3_final(a, b, c, data + used, n - used);
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

#define JENKINS_PREFIX_MAX 64

typedef struct {
  int at_end;
  uint32_t initval;           /* jenkins_lookup3 */
  int nprefix;
  uint8_t prefix[JENKINS_PREFIX_MAX];
} sum_cfg;
ZCODEC_CFG_FITS(sum_cfg);

static int is_fletcher(const zcodec *c) { return c->vt->name[0] == 'f'; }
static int is_jenkins(const zcodec *c) { return c->vt->name[0] == 'j'; }

static uint32_t sum_of(const zcodec *c, const uint8_t *p, size_t n) {
  if (is_fletcher(c)) return fletcher32(p, n);
  if (is_jenkins(c)) {
    const sum_cfg *k = ZCODEC_CFG(c, const sum_cfg);
    return jenkins_lookup3(k->prefix, (size_t)k->nprefix, p, n, k->initval);
  }
  int crc = c->vt->name[0] == 'c';
  uLong a = crc ? crc32(0L, Z_NULL, 0) : adler32(0L, Z_NULL, 0);
  for (size_t k; n > 0; p += k, n -= k) { /* zlib counts in uInt */
    k = n > zarr_codec_piece ? zarr_codec_piece : n;
    a = crc ? crc32(a, p, (uInt)k) : adler32(a, p, (uInt)k);
  }
  return (uint32_t)a;
}

static int at_end(const zcodec *c) {
  return is_fletcher(c) || is_jenkins(c) || ZCODEC_CFG(c, const sum_cfg)->at_end;
}

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

/* adler32 and crc32: "location" */
static int located_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  const char *loc;
  if (cfg_str(cfg, c->vt->name, "location", &loc, e)) return -1;
  if (strcmp(loc, "start") != 0 && strcmp(loc, "end") != 0)
    return zerr_set(e, ZE_CODEC, "codec '%s': location must be \"start\" or \"end\"", c->vt->name);
  ZCODEC_CFG(c, sum_cfg)->at_end = strcmp(loc, "end") == 0;
  return 0;
}

/* "initval" (a 32-bit seed) and "prefix": its bytes as hexadecimal text
 * (R turns numcodecs' list of byte values into it; "" for none) */
static int jenkins_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  sum_cfg *k = ZCODEC_CFG(c, sum_cfg);
  double iv;
  const char *hex;
  if (cfg_dbl(cfg, "jenkins_lookup3", "initval", &iv, e) ||
      cfg_str(cfg, "jenkins_lookup3", "prefix", &hex, e))
    return -1;
  if (!(iv >= 0 && iv <= 4294967295.0) || iv != (double)(uint32_t)iv)
    return zerr_set(e, ZE_CODEC, "codec 'jenkins_lookup3': initval must be a whole number from 0 to 2^32 - 1");
  k->initval = (uint32_t)iv;
  size_t len = strlen(hex);
  if (len % 2 || len / 2 > JENKINS_PREFIX_MAX)
    return zerr_set(e, ZE_CODEC, "codec 'jenkins_lookup3': the prefix must be at most %d bytes",
                    JENKINS_PREFIX_MAX);
  for (size_t i = 0; i < len / 2; i++) {
    unsigned v = 0;
    for (int j = 0; j < 2; j++) {
      char ch = hex[2 * i + (size_t)j];
      int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
      if (d < 0) return zerr_set(e, ZE_CODEC, "codec 'jenkins_lookup3': the prefix is not hexadecimal");
      v = v * 16 + (unsigned)d;
    }
    k->prefix[i] = (uint8_t)v;
  }
  k->nprefix = (int)(len / 2);
  k->at_end = 1;
  return 0;
}

const zcodec_vt zc_adler32 = {.name = "adler32", .parse = located_parse,
                              .encode = checksum_encode, .strip = checksum_decode, .overhead = 4};
const zcodec_vt zc_crc32 = {.name = "crc32", .parse = located_parse,
                            .encode = checksum_encode, .strip = checksum_decode, .overhead = 4};
const zcodec_vt zc_jenkins_lookup3 = {.name = "jenkins_lookup3", .parse = jenkins_parse,
                                      .encode = checksum_encode, .strip = checksum_decode,
                                      .overhead = 4};
const zcodec_vt zc_fletcher32 = {.name = "fletcher32", .encode = checksum_encode,
                                 .strip = checksum_decode, .overhead = 4};
