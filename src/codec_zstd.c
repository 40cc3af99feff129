/* zstd codec through the system libzstd. Contexts are costly to create (large
 * allocations, page faults), so finished ones wait in a small pool for the next
 * chunk, whichever thread decodes it. */
#include <pthread.h>
#include <stdint.h>
#include <zstd.h>
#include <zstd_errors.h>
#include "zarr_core.h"

#define POOL_MAX 16
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static ZSTD_DCtx *dpool[POOL_MAX];
static ZSTD_CCtx *cpool[POOL_MAX];
static int ndpool = 0, ncpool = 0;

static ZSTD_DCtx *dctx_get(void) {
  ZSTD_DCtx *c = NULL;
  pthread_mutex_lock(&pool_lock);
  if (ndpool > 0) c = dpool[--ndpool];
  pthread_mutex_unlock(&pool_lock);
  return c != NULL ? c : ZSTD_createDCtx();
}

static void dctx_put(ZSTD_DCtx *c) {
  pthread_mutex_lock(&pool_lock);
  if (ndpool < POOL_MAX) {
    dpool[ndpool++] = c;
    c = NULL;
  }
  pthread_mutex_unlock(&pool_lock);
  ZSTD_freeDCtx(c); /* accepts NULL */
}

static ZSTD_CCtx *cctx_get(void) {
  ZSTD_CCtx *c = NULL;
  pthread_mutex_lock(&pool_lock);
  if (ncpool > 0) c = cpool[--ncpool];
  pthread_mutex_unlock(&pool_lock);
  if (c != NULL) ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
  return c != NULL ? c : ZSTD_createCCtx();
}

static void cctx_put(ZSTD_CCtx *c) {
  pthread_mutex_lock(&pool_lock);
  if (ncpool < POOL_MAX) {
    cpool[ncpool++] = c;
    c = NULL;
  }
  pthread_mutex_unlock(&pool_lock);
  ZSTD_freeCCtx(c);
}

/* `limit` (0: none) bounds the output: a frame that decodes to more is
 * refused as soon as that shows, before its memory is spent. */
static int zstd_decode_to(const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n, size_t *got,
                          zerr *e);

int zstd_decode(const uint8_t *src, size_t n, zbuf *out, size_t limit, zerr *e) {
  unsigned long long fsize = ZSTD_getFrameContentSize(src, n);
  if (fsize == ZSTD_CONTENTSIZE_ERROR)
    return zerr_set(e, ZE_CORRUPT, "zstd data is corrupt (not a zstd frame)");
  if (fsize != ZSTD_CONTENTSIZE_UNKNOWN) {
    /* a block yields at most 128 KiB from at least 4 bytes: no frame of n
     * bytes holds more than n * 2^15 (2^16 leaves room) */
    if ((double)fsize > (double)n * 65536.0 + 1048576.0)
      return zerr_set(e, ZE_CORRUPT, "zstd frame declares %.0f bytes, more than %.0f bytes can hold",
                      (double)fsize, (double)n);
    if ((limit && fsize > limit) || fsize > (unsigned long long)(SIZE_MAX / 2))
      return zerr_set(e, ZE_CORRUPT, "zstd frame declares %.0f bytes, more than the expected %.0f",
                      (double)fsize, (double)limit);
    if (zbuf_reserve(out, fsize ? (size_t)fsize : 1, e)) return -1;
    return zstd_decode_to(src, n, out->data, (size_t)fsize, &out->size, e);
  }
  /* Frames written by streaming encoders may omit the content size. */
  ZSTD_DStream *ds = ZSTD_createDStream();
  if (ds == NULL) return zerr_set(e, ZE_NOMEM, "cannot allocate zstd stream");
  ZSTD_initDStream(ds);
  size_t first = n < SIZE_MAX / 8 ? n * 4 + 1024 : n;
  if (limit && first > limit + 1) first = limit + 1;
  if (zbuf_reserve(out, first, e)) { ZSTD_freeDStream(ds); return -1; }
  out->size = 0;
  ZSTD_inBuffer in = {src, n, 0};
  size_t r = 1;
  while (in.pos < in.size || r != 0) {
    if (limit && out->size > limit) {
      zerr_set(e, ZE_CORRUPT, "zstd data decodes to more than the expected %.0f bytes", (double)limit);
      break;
    }
    if (out->size == out->cap) {
      size_t want = out->cap * 2;
      if (limit && want > limit + 1) want = limit + 1; /* one byte past is enough to tell */
      if (zbuf_reserve(out, want, e)) break;
    }
    ZSTD_outBuffer ob = {out->data + out->size, out->cap - out->size, 0};
    r = ZSTD_decompressStream(ds, &ob, &in);
    out->size += ob.pos;
    if (ZSTD_isError(r)) {
      zerr_set(e, ZE_CORRUPT, "zstd data is corrupt: %s", ZSTD_getErrorName(r));
      break;
    }
    if (r != 0 && in.pos == in.size && ob.pos == 0) {
      zerr_set(e, ZE_CORRUPT, "zstd data is truncated");
      break;
    }
  }
  ZSTD_freeDStream(ds);
  if (e->kind == ZE_OK && limit && out->size > limit)
    zerr_set(e, ZE_CORRUPT, "zstd data decodes to more than the expected %.0f bytes", (double)limit);
  return e->kind == ZE_OK ? 0 : -1;
}

static int zstd_decode_to(const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n, size_t *got,
                   zerr *e) {
  ZSTD_DCtx *dc = dctx_get();
  if (dc == NULL) return zerr_set(e, ZE_NOMEM, "cannot allocate zstd context");
  size_t r = ZSTD_decompressDCtx(dc, dst, dst_n, src, n);
  dctx_put(dc);
  if (ZSTD_isError(r) && ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall)
    return zerr_set(e, ZE_CORRUPT, "zstd data decodes to more than the expected %.0f bytes",
                    (double)dst_n);
  if (ZSTD_isError(r)) return zerr_set(e, ZE_CORRUPT, "zstd data is corrupt: %s", ZSTD_getErrorName(r));
  *got = r;
  return 0;
}

static int zstd_encode(const uint8_t *src, size_t n, zbuf *out, int level, int checksum, zerr *e) {
  size_t bound = ZSTD_compressBound(n);
  if (zbuf_reserve(out, bound, e)) return -1;
  ZSTD_CCtx *cc = cctx_get();
  if (cc == NULL) return zerr_set(e, ZE_NOMEM, "cannot allocate zstd context");
  ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, checksum ? 1 : 0);
  size_t r = ZSTD_compress2(cc, out->data, out->cap, src, n);
  cctx_put(cc);
  if (ZSTD_isError(r))
    return zerr_set(e, ZE_CODEC, "zstd compression failed: %s", ZSTD_getErrorName(r));
  out->size = r;
  return 0;
}

/* ---- table row ---- */

typedef struct {
  int level, checksum;
} zstd_cfg;

static int zstd_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  zstd_cfg *k = ZCODEC_CFG(c, zstd_cfg);
  if (cfg_int(cfg, "zstd", "level", -131072, 22, &k->level, e)) return -1;
  return cfg_int(cfg, "zstd", "checksum", 0, 1, &k->checksum, e);
}

static int zstd_dec(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, size_t limit,
                    zerr *e) {
  (void)c;
  return zstd_decode(src, n, out, limit, e);
}

static int zstd_dec_to(const zcodec *c, const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n,
                       size_t *got, zerr *e) {
  (void)c;
  return zstd_decode_to(src, n, dst, dst_n, got, e);
}

static int zstd_enc(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  const zstd_cfg *k = ZCODEC_CFG(c, const zstd_cfg);
  return zstd_encode(src, n, out, k->level, k->checksum, e);
}

const zcodec_vt zc_zstd = {.name = "zstd", .parse = zstd_parse, .decode = zstd_dec,
                           .encode = zstd_enc, .decode_to = zstd_dec_to, .overhead = -1,
                           .bounded = 1};
