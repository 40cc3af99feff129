/* blosc codec through the system c-blosc (1.x), using the context API so
 * that worker threads can call it concurrently. */
#ifdef HAVE_BLOSC /* configure found c-blosc; else the row below the #else */
#include <blosc.h>
#include <string.h>
#include "zarr_core.h"

static int blosc_decode_to(const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n, size_t *got,
                    zerr *e) {
  size_t nbytes = 0, cbytes = 0, blocksize = 0;
  if (n < BLOSC_MIN_HEADER_LENGTH) return zerr_set(e, ZE_CORRUPT, "blosc data is truncated");
  blosc_cbuffer_sizes(src, &nbytes, &cbytes, &blocksize);
  if (cbytes > n) return zerr_set(e, ZE_CORRUPT, "blosc data is truncated");
  size_t valid = 0;
  if (blosc_cbuffer_validate(src, n, &valid) != 0 || valid != nbytes)
    return zerr_set(e, ZE_CORRUPT, "blosc header is corrupt");
  if (nbytes != dst_n) {
    *got = nbytes;
    return 0; /* the caller reports the size mismatch */
  }
  int r = blosc_decompress_ctx(src, dst, dst_n, 1);
  if (r < 0 || (size_t)r != nbytes) return zerr_set(e, ZE_CORRUPT, "blosc data is corrupt (code %d)", r);
  *got = nbytes;
  return 0;
}

/* `limit` (0: none): a header declaring more is refused before allocating. */
static int blosc_decode_buf(const uint8_t *src, size_t n, zbuf *out, size_t limit, zerr *e) {
  size_t nbytes = 0, cbytes = 0, blocksize = 0;
  if (n < BLOSC_MIN_HEADER_LENGTH)
    return zerr_set(e, ZE_CORRUPT, "blosc data is truncated (%.0f bytes)", (double)n);
  blosc_cbuffer_sizes(src, &nbytes, &cbytes, &blocksize);
  /* no inner compressor expands more than 2^15-fold (zstd's largest ratio,
   * from 4 bytes per 128 KiB block); 2^16 leaves room */
  if ((double)nbytes > (double)n * 65536.0 + 1048576.0)
    return zerr_set(e, ZE_CORRUPT, "blosc header declares %.0f bytes, more than %.0f bytes can hold",
                    (double)nbytes, (double)n);
  if (limit && nbytes > limit)
    return zerr_set(e, ZE_CORRUPT, "blosc header declares %.0f bytes, more than the expected %.0f",
                    (double)nbytes, (double)limit);
  if (zbuf_reserve(out, nbytes ? nbytes : 1, e)) return -1;
  return blosc_decode_to(src, n, out->data, nbytes, &out->size, e);
}

/* ---- table row ---- */

typedef struct {
  int clevel, shuffle, typesize, blocksize;
  char cname[16];
} blosc_cfg;
ZCODEC_CFG_FITS(blosc_cfg);

static int blosc_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  blosc_cfg *k = ZCODEC_CFG(c, blosc_cfg);
  const char *cname;
  if (cfg_int(cfg, "blosc", "clevel", 0, 9, &k->clevel, e) ||
      cfg_int(cfg, "blosc", "shuffle", 0, 2, &k->shuffle, e) ||
      cfg_int(cfg, "blosc", "typesize", 1, 255, &k->typesize, e) ||
      cfg_int(cfg, "blosc", "blocksize", 0, 2147483647, &k->blocksize, e) ||
      cfg_str(cfg, "blosc", "cname", &cname, e))
    return -1;
  if (strlen(cname) >= sizeof k->cname)
    return zerr_set(e, ZE_CODEC, "codec 'blosc': unknown compressor '%.20s'", cname);
  strcpy(k->cname, cname);
  return 0;
}

static int blosc_dec(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, size_t limit,
                     zerr *e) {
  (void)c;
  return blosc_decode_buf(src, n, out, limit, e);
}

static int blosc_dec_to(const zcodec *c, const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n,
                        size_t *got, zerr *e) {
  (void)c;
  return blosc_decode_to(src, n, dst, dst_n, got, e);
}

static int blosc_enc(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  const blosc_cfg *k = ZCODEC_CFG(c, const blosc_cfg);
  if (zbuf_reserve(out, n + BLOSC_MAX_OVERHEAD, e)) return -1;
  int r = blosc_compress_ctx(k->clevel, k->shuffle, (size_t)k->typesize, n, src, out->data,
                             n + BLOSC_MAX_OVERHEAD, k->cname, (size_t)k->blocksize, 1);
  if (r <= 0)
    return zerr_set(e, ZE_CODEC, "blosc compression with '%s' failed (code %d)", k->cname, r);
  out->size = (size_t)r;
  return 0;
}

const zcodec_vt zc_blosc = {.name = "blosc", .parse = blosc_parse, .decode = blosc_dec,
                            .encode = blosc_enc, .decode_to = blosc_dec_to, .overhead = -1,
                            .bounded = 1};

#else
#include "zarr_core.h"
ZCODEC_MISSING(blosc, "c-blosc");
#endif
