/* bz2 codec (system libbz2). */
#ifdef HAVE_BZ2 /* configure found libbz2; else the row below the #else */
#include <bzlib.h>
#include <stdint.h>
#include <string.h>
#include "zarr_core.h"

/* `limit` (0: none) bounds the output: decoding stops one byte past it. */
static int bz2_decode(const uint8_t *src, size_t n, zbuf *out, size_t limit, zerr *e) {
  bz_stream bs;
  memset(&bs, 0, sizeof bs);
  if (BZ2_bzDecompressInit(&bs, 0, 0) != BZ_OK) return zerr_set(e, ZE_NOMEM, "cannot initialise bz2");
  size_t cap = n < SIZE_MAX / 8 ? n * 4 + 1024 : n;
  if (limit && cap > limit + 1) cap = limit + 1;
  if (zbuf_reserve(out, cap, e)) {
    BZ2_bzDecompressEnd(&bs);
    return -1;
  }
  out->size = 0;
  bs.next_in = (char *)src;
  size_t left = n;
  int rc = BZ_OK;
  while (rc == BZ_OK) {
    if (bs.avail_in == 0 && left > 0) { /* input in pieces its unsigned counts hold */
      bs.next_in = (char *)src + (n - left);
      bs.avail_in = (unsigned)(left > zarr_codec_piece ? zarr_codec_piece : left);
      left -= bs.avail_in;
    }
    if (limit && out->size > limit) {
      zerr_set(e, ZE_CORRUPT, "bz2 data decodes to more than the expected %.0f bytes", (double)limit);
      break;
    }
    if (out->size == out->cap) {
      size_t want = out->cap * 2;
      if (limit && want > limit + 1) want = limit + 1;
      if (zbuf_reserve(out, want, e)) break;
    }
    bs.next_out = (char *)out->data + out->size;
    unsigned room = (unsigned)(out->cap - out->size > zarr_codec_piece ? zarr_codec_piece : out->cap - out->size);
    bs.avail_out = room;
    rc = BZ2_bzDecompress(&bs);
    out->size += room - bs.avail_out;
    if (rc == BZ_OK && bs.avail_in == 0 && left == 0 && bs.avail_out > 0) {
      rc = BZ_UNEXPECTED_EOF;
      break;
    }
  }
  BZ2_bzDecompressEnd(&bs);
  if (e->kind == ZE_OK && limit && out->size > limit)
    zerr_set(e, ZE_CORRUPT, "bz2 data decodes to more than the expected %.0f bytes", (double)limit);
  if (e->kind != ZE_OK) return -1;
  if (rc != BZ_STREAM_END) return zerr_set(e, ZE_CORRUPT, "bz2 data is corrupt or truncated");
  return 0;
}

static int bz2_encode(const uint8_t *src, size_t n, zbuf *out, int level, zerr *e) {
  size_t cap = n + n / 100 + 600; /* libbz2's documented worst case */
  if (zbuf_reserve(out, cap, e)) return -1;
  out->size = 0;
  bz_stream bs;
  memset(&bs, 0, sizeof bs);
  if (BZ2_bzCompressInit(&bs, level, 0, 0) != BZ_OK) return zerr_set(e, ZE_NOMEM, "cannot initialise bz2");
  /* input and output in pieces that libbz2's unsigned counts hold */
  size_t left = n;
  int rc = BZ_RUN_OK;
  bs.next_in = (char *)src;
  while (rc == BZ_RUN_OK || rc == BZ_FINISH_OK) {
    if (bs.avail_in == 0 && left > 0) {
      bs.avail_in = (unsigned)(left > zarr_codec_piece ? zarr_codec_piece : left);
      left -= bs.avail_in;
    }
    size_t room = out->cap - out->size;
    if (room == 0) {
      if (zbuf_reserve(out, out->cap + out->cap / 2 + 64, e)) break;
      room = out->cap - out->size;
    }
    bs.next_out = (char *)out->data + out->size;
    bs.avail_out = (unsigned)(room > zarr_codec_piece ? zarr_codec_piece : room);
    unsigned before = bs.avail_out;
    rc = BZ2_bzCompress(&bs, left == 0 ? BZ_FINISH : BZ_RUN);
    out->size += before - bs.avail_out;
  }
  BZ2_bzCompressEnd(&bs);
  if (e->kind != ZE_OK) return -1;
  if (rc != BZ_STREAM_END) return zerr_set(e, ZE_CODEC, "bz2 compression failed");
  return 0;
}

/* ---- table row ---- */

typedef struct {
  int level;
} bz2_cfg;

static int bz2_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  return cfg_int(cfg, "bz2", "level", 1, 9, &ZCODEC_CFG(c, bz2_cfg)->level, e);
}

static int bz2_dec(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, size_t limit,
                   zerr *e) {
  (void)c;
  return bz2_decode(src, n, out, limit, e);
}

static int bz2_enc(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  return bz2_encode(src, n, out, ZCODEC_CFG(c, const bz2_cfg)->level, e);
}

const zcodec_vt zc_bz2 = {.name = "bz2", .parse = bz2_parse, .decode = bz2_dec, .encode = bz2_enc,
                          .overhead = -1, .bounded = 1};

#else
#include "zarr_core.h"
ZCODEC_MISSING(bz2, "libbz2");
#endif
