/* gzip and zlib codecs through the system zlib. */
#include <stdint.h>
#include <string.h>
#include <zlib.h>
#include "zarr_core.h"

size_t zarr_codec_piece = (size_t)1 << 30;

/* `limit` (0: none) bounds the output: decoding stops one byte past it. */
static int gzip_decode(const uint8_t *src, size_t n, zbuf *out, size_t limit, zerr *e) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  /* 15 + 32: accept both gzip and zlib headers */
  if (inflateInit2(&zs, 15 + 32) != Z_OK)
    return zerr_set(e, ZE_NOMEM, "cannot initialise zlib");
  size_t cap = n < SIZE_MAX / 8 ? n * 4 + 1024 : n;
  if (limit && cap > limit + 1) cap = limit + 1;
  if (zbuf_reserve(out, cap, e)) { inflateEnd(&zs); return -1; }
  out->size = 0;
  zs.next_in = (Bytef *)src;
  int rc = Z_OK;
  size_t left = n;
  while (1) {
    if (zs.avail_in == 0 && left > 0) {
      uInt take = (uInt)(left > zarr_codec_piece ? zarr_codec_piece : left);
      zs.next_in = (Bytef *)src + (n - left);
      zs.avail_in = take;
      left -= take;
    }
    if (limit && out->size > limit) {
      zerr_set(e, ZE_CORRUPT, "gzip/zlib data decodes to more than the expected %.0f bytes",
               (double)limit);
      break;
    }
    if (out->size == out->cap) {
      size_t want = out->cap * 2;
      if (limit && want > limit + 1) want = limit + 1;
      if (zbuf_reserve(out, want, e)) break;
    }
    size_t room = out->cap - out->size;
    zs.next_out = out->data + out->size;
    zs.avail_out = (uInt)(room > zarr_codec_piece ? zarr_codec_piece : room);
    uInt before = zs.avail_out;
    rc = inflate(&zs, Z_NO_FLUSH);
    out->size += before - zs.avail_out;
    if (rc == Z_STREAM_END) break;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0 && left == 0) {
      rc = Z_DATA_ERROR; /* truncated stream */
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) break;
  }
  inflateEnd(&zs);
  if (e->kind == ZE_OK && limit && out->size > limit)
    zerr_set(e, ZE_CORRUPT, "gzip/zlib data decodes to more than the expected %.0f bytes",
             (double)limit);
  if (e->kind != ZE_OK) return -1;
  if (rc != Z_STREAM_END)
    return zerr_set(e, ZE_CORRUPT, "gzip/zlib data is corrupt or truncated");
  if (zs.avail_in > 0 || left > 0)
    return zerr_set(e, ZE_CORRUPT, "gzip/zlib data is followed by %.0f unexpected bytes",
                    (double)zs.avail_in + (double)left);
  return 0;
}

static int gzip_encode(const uint8_t *src, size_t n, zbuf *out, int level, int gzip_header, zerr *e) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (deflateInit2(&zs, level, Z_DEFLATED, gzip_header ? 15 + 16 : 15, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK)
    return zerr_set(e, ZE_NOMEM, "cannot initialise zlib");
  /* zlib's worst case (deflateBound() takes a uLong, 32 bits on Windows) */
  size_t bound = n + (n >> 12) + (n >> 14) + (n >> 25) + 64;
  if (zbuf_reserve(out, bound, e)) { deflateEnd(&zs); return -1; }
  out->size = 0;
  /* input and output go through zlib in pieces that its uInt counts can hold */
  size_t in_left = n, out_left;
  int rc = Z_OK;
  zs.next_in = (Bytef *)src;
  /* high levels compress a few MB a second: a cancel is seen between pieces of 64 KiB */
  size_t piece = zarr_codec_piece < ((size_t)64 << 10) ? zarr_codec_piece : (size_t)64 << 10;
  while (rc == Z_OK) {
    if (zarr_cancelled()) {
      zerr_set(e, ZE_INTERRUPT, "interrupted");
      break;
    }
    if (zs.avail_in == 0 && in_left > 0) {
      zs.avail_in = (uInt)(in_left > piece ? piece : in_left);
      in_left -= zs.avail_in;
    }
    out_left = out->cap - out->size;
    if (out_left == 0) {
      if (zbuf_reserve(out, out->cap + out->cap / 2 + 64, e)) break;
      out_left = out->cap - out->size;
    }
    zs.next_out = out->data + out->size;
    zs.avail_out = (uInt)(out_left > zarr_codec_piece ? zarr_codec_piece : out_left);
    uInt before = zs.avail_out;
    rc = deflate(&zs, in_left == 0 ? Z_FINISH : Z_NO_FLUSH);
    out->size += before - zs.avail_out;
    if (rc == Z_BUF_ERROR) rc = Z_OK; /* no progress possible this round: more room or input comes next */
  }
  deflateEnd(&zs);
  if (e->kind != ZE_OK) return -1;
  if (rc != Z_STREAM_END) return zerr_set(e, ZE_CODEC, "gzip compression failed");
  return 0;
}

/* ---- table rows: gzip (gzip header) and zlib (numcodecs' zlib stream) ---- */

typedef struct {
  int level;
} deflate_cfg;

static int deflate_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  return cfg_int(cfg, c->vt->name, "level", 0, 9, &ZCODEC_CFG(c, deflate_cfg)->level, e);
}

static int deflate_decode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, size_t limit,
                          zerr *e) {
  (void)c;
  return gzip_decode(src, n, out, limit, e);
}

static int gzip_enc(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  return gzip_encode(src, n, out, ZCODEC_CFG(c, const deflate_cfg)->level, 1, e);
}

static int zlib_enc(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  return gzip_encode(src, n, out, ZCODEC_CFG(c, const deflate_cfg)->level, 0, e);
}

const zcodec_vt zc_gzip = {.name = "gzip", .parse = deflate_parse, .decode = deflate_decode,
                           .encode = gzip_enc, .overhead = -1, .bounded = 1};
const zcodec_vt zc_zlib = {.name = "zlib", .parse = deflate_parse, .decode = deflate_decode,
                           .encode = zlib_enc, .overhead = -1, .bounded = 1};
