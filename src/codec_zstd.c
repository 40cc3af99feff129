/* zstd codec through the system libzstd. */
#include <zstd.h>
#include "zarr.h"

int zstd_decode(const uint8_t *src, size_t n, zbuf *out, size_t expect, zerr *e) {
  unsigned long long fsize = ZSTD_getFrameContentSize(src, n);
  if (fsize == ZSTD_CONTENTSIZE_ERROR)
    return zerr_set(e, ZE_CORRUPT, "zstd data is corrupt (not a zstd frame)");
  if (fsize != ZSTD_CONTENTSIZE_UNKNOWN) {
    if (zbuf_reserve(out, fsize ? (size_t)fsize : 1, e)) return -1;
    size_t r = ZSTD_decompress(out->data, (size_t)fsize, src, n);
    if (ZSTD_isError(r))
      return zerr_set(e, ZE_CORRUPT, "zstd data is corrupt: %s", ZSTD_getErrorName(r));
    out->size = r;
    return 0;
  }
  /* Frames written by streaming encoders may omit the content size. */
  ZSTD_DStream *ds = ZSTD_createDStream();
  if (ds == NULL) return zerr_set(e, ZE_NOMEM, "cannot allocate zstd stream");
  ZSTD_initDStream(ds);
  if (zbuf_reserve(out, expect ? expect : n * 4 + 1024, e)) { ZSTD_freeDStream(ds); return -1; }
  out->size = 0;
  ZSTD_inBuffer in = {src, n, 0};
  size_t r = 1;
  while (in.pos < in.size || r != 0) {
    if (out->size == out->cap && zbuf_reserve(out, out->cap * 2, e)) break;
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
  return e->kind == ZE_OK ? 0 : -1;
}

int zstd_encode(const uint8_t *src, size_t n, zbuf *out, int level, int checksum, zerr *e) {
  size_t bound = ZSTD_compressBound(n);
  if (zbuf_reserve(out, bound, e)) return -1;
  ZSTD_CCtx *cc = ZSTD_createCCtx();
  if (cc == NULL) return zerr_set(e, ZE_NOMEM, "cannot allocate zstd context");
  ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, checksum ? 1 : 0);
  size_t r = ZSTD_compress2(cc, out->data, out->cap, src, n);
  ZSTD_freeCCtx(cc);
  if (ZSTD_isError(r))
    return zerr_set(e, ZE_CODEC, "zstd compression failed: %s", ZSTD_getErrorName(r));
  out->size = r;
  return 0;
}
