/* libFuzzer target: the bytes -> bytes codec chain as a chunk from a store
 * meets it. Input: one byte choosing a chain configuration, four bytes of
 * expected decoded size (little-endian, capped), then the encoded chunk.
 * Chains 22-25 are lzma (xz, alone, raw with filters); 26-28 numcodecs' crc32,
 * jenkins_lookup3 (with a prefix) and packbits (bool, most significant bit
 * first); 29 conditional (zstd and crc32c, each applied or not as the
 * header byte says); 30 n5_default (an N5 block header, gzip, int16 chunks of
 * 4 x 3, truncated blocks padded); 31-35 zfp (reversible, fixed rate,
 * fixed accuracy, fixed precision, expert; float64, float32, int32, int64;
 * 1 to 4 dimensions and 6 with 2 longer than 1).
 * Every chain decodes through chain_decode_bytes() (the buffered path) and
 * chain_decode_to() (the zero-copy path); results must stay within the
 * bounds the engine relies on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zarr_core.h"

#define MAX_EXPECT (1u << 22)

/* packbits' bit order for the next codec made (numcodecs' packbits: "big") */
static const char *bit_order = "little";

/* A codec of the table by name; the element filters get the element types
 * and scale given, every other key a fixed value. */
static zcodec cdy(const char *name, const char *dtype, const char *astype, double scale, double format,
                  const char *filters) {
  const zkv kv[] = {{"level", NULL, 1},        {"checksum", NULL, 0},    {"clevel", NULL, 1},
                    {"shuffle", NULL, 1},      {"typesize", NULL, 4},    {"blocksize", NULL, 0},
                    {"cname", "lz4", 0},       {"acceleration", NULL, 1}, {"location", "start", 0},
                    {"elementsize", NULL, 4},  {"dtype", dtype, 0},      {"astype", astype, 0},
                    {"scale", NULL, scale},    {"offset", NULL, 0},      {"keepbits", NULL, 10},
                    {"bits", NULL, 8},         {"first_bit", NULL, 0},   {"last_bit", NULL, 3},
                    {"padding", "first_byte", 0}, {"rounding", "nearest-even", 0},
                    {"out_of_range", "clamp", 0}, {"enc_n", NULL, 0},    {"dec_n", NULL, 0},
                    {"format", NULL, format}, {"check", NULL, -1},    {"preset", NULL, filters[0] ? -1 : 1},
                    {"filters", filters, 0},   {"bit_order", bit_order, 0},
                    {"initval", NULL, 7},      {"prefix", "00ff10", 0},  {"header_bytes", NULL, 1},
                    {NULL, NULL, 0}};
  zcfg cfg = zcfg_kv(kv);
  zcodec c;
  zerr e = {ZE_OK, ""};
  if (zcodec_init(&c, name, &cfg, &e)) abort();
  return c;
}

/* zfp: a chunk shape and a mode (src/codec_zfp.c) */
static int64_t zfp_shape[ZARR_MAX_DIMS];
static int zfp_ndim;
static int zfp_dims(const zcfg *c, const char *key, int64_t *out, int max, zerr *e) {
  (void)c; (void)key; (void)max; (void)e;
  for (int d = 0; d < zfp_ndim; d++) out[d] = zfp_shape[d];
  return zfp_ndim;
}
static zcodec zfp(const char *dtype, const char *mode, int ndim, const int64_t *shape) {
  zfp_ndim = ndim;
  for (int d = 0; d < ndim; d++) zfp_shape[d] = shape[d];
  const zkv kv[] = {{"dtype", dtype, 0},      {"mode", mode, 0},         {"rate", NULL, 8.5},
                    {"precision", NULL, 20},  {"tolerance", NULL, 1e-3}, {"minbits", NULL, 8},
                    {"maxbits", NULL, 300},   {"maxprec", NULL, 30},     {"minexp", NULL, -100},
                    {"squeeze", NULL, ndim > 4}, {NULL, NULL, 0}};
  zcfg cfg = zcfg_kv(kv);
  cfg.dims = zfp_dims;
  zcodec c;
  zerr e = {ZE_OK, ""};
  if (zcodec_init(&c, "zfp", &cfg, &e)) abort();
  return c;
}

/* conditional's nested codecs: a chain of their own, as the array's pool
 * would hold it */
static zchain cond_nested;
static zchain *cond_sub_chain(const zcfg *c, const char *key, int ndim, const int64_t *shape,
                              int is_index, zerr *e) {
  (void)c; (void)key; (void)ndim; (void)shape; (void)is_index; (void)e;
  return &cond_nested;
}

static zcodec cdx(const char *name, const char *dtype, const char *astype, double scale) {
  return cdy(name, dtype, astype, scale, 1, "");
}

static zcodec cd(const char *name) { return cdx(name, "<f4", "<f4", 1); }

/* n5_default: the chunk shape and its nested compressor */
static zchain n5_nested;
static int n5_dims(const zcfg *c, const char *key, int64_t *out, int max, zerr *e) {
  (void)c; (void)key; (void)max; (void)e;
  out[0] = 4;
  out[1] = 3;
  return 2;
}
static zchain *n5_sub_chain(const zcfg *c, const char *key, int ndim, const int64_t *shape,
                            int is_index, zerr *e) {
  (void)c; (void)key; (void)is_index; (void)e;
  memset(&n5_nested, 0, sizeof n5_nested);
  n5_nested.ndim = ndim;
  for (int d = 0; d < ndim; d++) n5_nested.chunk_shape[d] = shape[d];
  n5_nested.ab = AB_BYTES;
  n5_nested.bb[0] = cd("gzip");
  n5_nested.n_bb = 1;
  return &n5_nested;
}

static zcodec n5_default(void) {
  const zkv kv[] = {{"elsize", NULL, 2}, {"fill", "7fff", 0}, {NULL, NULL, 0}};
  zcfg cfg = zcfg_kv(kv);
  cfg.dims = n5_dims;
  cfg.sub_chain = n5_sub_chain;
  zcodec c;
  zerr e = {ZE_OK, ""};
  if (zcodec_init(&c, "n5_default", &cfg, &e)) abort();
  return c;
}

static zcodec conditional(void) {
  memset(&cond_nested, 0, sizeof cond_nested);
  cond_nested.ndim = 1;
  cond_nested.chunk_shape[0] = 1;
  cond_nested.ab = AB_BYTES;
  cond_nested.bb[0] = cd("zstd");
  cond_nested.bb[1] = cd("crc32c");
  cond_nested.n_bb = 2;
  const zkv kv[] = {{"header_bytes", NULL, 1}, {NULL, NULL, 0}};
  zcfg cfg = zcfg_kv(kv);
  cfg.sub_chain = cond_sub_chain;
  zcodec c;
  zerr e = {ZE_OK, ""};
  if (zcodec_init(&c, "conditional", &cfg, &e)) abort();
  return c;
}
/* lzma in a format (1 xz, 2 alone, 3 raw) with a filter list (src/codec_lzma.c) */
static zcodec lz(double format, const char *filters) { return cdy("lzma", "<f4", "<f4", 1, format, filters); }

/* chain configurations, in chain (encode) order */
static int config(unsigned k, zchain *ch) {
  memset(ch, 0, sizeof *ch);
  ch->ndim = 1;
  ch->chunk_shape[0] = 1;
  ch->ab = AB_BYTES;
  zcodec *b = ch->bb;
  switch (k) {
  case 0: b[0] = cd("zstd"); ch->n_bb = 1; break;
  case 1: b[0] = cd("gzip"); ch->n_bb = 1; break;
  case 2: b[0] = cd("zlib"); ch->n_bb = 1; break;
  case 3: b[0] = cd("bz2"); ch->n_bb = 1; break;
  case 4: b[0] = cd("lz4"); ch->n_bb = 1; break;
  case 5: b[0] = cd("blosc"); ch->n_bb = 1; break;
  case 6: b[0] = cd("crc32c"); ch->n_bb = 1; break;
  case 7: b[0] = cd("zstd"); b[1] = cd("crc32c"); ch->n_bb = 2; break;
  case 8: b[0] = cd("shuffle"); b[1] = cd("zstd"); ch->n_bb = 2; break;
  case 9: b[0] = cdx("delta", "<i4", "<i4", 1);
          b[1] = cd("zlib"); ch->n_bb = 2; break;
  case 10: b[0] = cdx("fixedscaleoffset", "<f8", "<u1", 10); ch->n_bb = 1; break;
  case 11: b[0] = cd("bitround"); ch->n_bb = 1; break;
  case 12: b[0] = cd("adler32"); ch->n_bb = 1; break;
  case 13: b[0] = cd("fletcher32"); ch->n_bb = 1; break;
  case 14: b[0] = cd("blosc"); b[1] = cd("crc32c"); ch->n_bb = 2; break;
  case 15: b[0] = cd("zstd"); b[1] = cd("gzip"); ch->n_bb = 2; break; /* a compressed stage inside another */
  case 16: b[0] = cdx("delta", ">i8", ">i2", 1);
           b[1] = cd("bz2"); ch->n_bb = 2; break;
  case 17: b[0] = cdx("delta", "<i4", ">f4", 1); ch->n_bb = 1; break; /* float deltas into integers */
  case 18: b[0] = cdx("fixedscaleoffset", "<u2", "<f8", 1e-300); ch->n_bb = 1; break;
  case 19: b[0] = cdx("packbits", "<i1", "<i1", 1); ch->n_bb = 1; break;
  case 20: b[0] = cdx("scale_offset", "<f8", "<f8", 0.1); b[1] = cd("zstd"); ch->n_bb = 2; break;
  case 21: b[0] = cdx("cast_value", "<f8", "<u1", 1); ch->n_bb = 1; break;
  case 22: b[0] = lz(1, ""); ch->n_bb = 1; break;
  case 23: b[0] = lz(2, ""); ch->n_bb = 1; break;
  case 24: b[0] = lz(3, "3,dist=4;33,preset=1"); ch->n_bb = 1; break;
  case 25: b[0] = lz(3, "4,start_offset=16;4611686018427387905,preset=0,lc=1"); ch->n_bb = 1; break;
  case 26: b[0] = cd("crc32"); ch->n_bb = 1; break;
  case 27: b[0] = cd("jenkins_lookup3"); b[1] = cd("zlib"); ch->n_bb = 2; break;
  case 28: bit_order = "big";
           b[0] = cdx("packbits", "|u1", "|u1", 1);
           bit_order = "little";
           ch->n_bb = 1; break;
  case 29: b[0] = conditional(); ch->n_bb = 1; break;
  case 30: b[0] = n5_default(); ch->n_bb = 1; break;
  case 31: b[0] = zfp("<f8", "reversible", 2, (const int64_t[]){5, 7}); ch->n_bb = 1; break;
  case 32: b[0] = zfp("<f4", "fixed_rate", 1, (const int64_t[]){37}); ch->n_bb = 1; break;
  case 33: b[0] = zfp("<f8", "fixed_accuracy", 3, (const int64_t[]){3, 4, 5}); ch->n_bb = 1; break;
  case 34: b[0] = zfp("<i4", "fixed_precision", 4, (const int64_t[]){2, 3, 4, 5}); ch->n_bb = 1; break;
  case 35: b[0] = zfp("<i8", "expert", 6, (const int64_t[]){1, 9, 1, 4, 1, 1}); ch->n_bb = 1; break;
  default: return -1;
  }
  return 0;
}
#define NCONF 36

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 5) return 0;
  zchain ch;
  config(data[0] % NCONF, &ch);
  uint32_t expect = (uint32_t)data[1] | ((uint32_t)data[2] << 8) | ((uint32_t)data[3] << 16) |
                    ((uint32_t)data[4] << 24);
  expect %= MAX_EXPECT + 1;
  const uint8_t *src = data + 5;
  size_t n = size - 5;
  /* a private copy, so that reads past the input are caught exactly */
  uint8_t *copy = malloc(n ? n : 1);
  memcpy(copy, src, n);

  zbuf a = {0}, b = {0};
  zerr e = {ZE_OK, ""};
  const uint8_t *res;
  size_t res_n;
  if (chain_decode_bytes(&ch, copy, n, expect, &a, &b, &res, &res_n, &e) == 0) {
    /* the last decoder is bounded by expect, plus the one byte that tells */
    if (expect && res_n > (size_t)expect + 1 && ch.bb[0].vt->bounded)
      abort();
    volatile uint8_t sink = 0;
    for (size_t i = 0; i < res_n; i++) sink ^= res[i]; /* touch every byte */
    (void)sink;
  } else if (e.kind == ZE_OK) {
    abort(); /* a failure must say why */
  }
  if (expect) {
    uint8_t *dst = malloc(expect);
    zerr e2 = {ZE_OK, ""};
    int rc = chain_decode_to(&ch, copy, n, dst, expect, &a, &b, &e2);
    if (rc < 0 && e2.kind == ZE_OK) abort();
    free(dst);
  }
  /* round trip: the chunk bytes as data, encoded and decoded again, where
   * the chain is lossless and the data a whole number of elements */
  unsigned k = data[0] % NCONF;
  int lossless = k <= 9 || (k >= 12 && k <= 15) || (k >= 22 && k <= 27) || k == 29;
  if (lossless && n % 8 == 0) {
    zbuf c1 = {0}, c2 = {0};
    const uint8_t *enc, *dec;
    size_t enc_n, dec_n;
    zerr e3 = {ZE_OK, ""};
    if (chain_encode_bytes(&ch, copy, n, &c1, &c2, &enc, &enc_n, &e3) != 0) abort();
    uint8_t *keep = malloc(enc_n ? enc_n : 1);
    memcpy(keep, enc, enc_n);
    if (chain_decode_bytes(&ch, keep, enc_n, n, &c1, &c2, &dec, &dec_n, &e3) != 0) abort();
    if (dec_n != n || (n && memcmp(dec, copy, n) != 0)) abort();
    free(keep);
    zbuf_free(&c1);
    zbuf_free(&c2);
  }
  zbuf_free(&a);
  zbuf_free(&b);
  free(copy);
  return 0;
}
