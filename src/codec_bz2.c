/* bz2 codec (system libbz2). */
#include <bzlib.h>
#include "zarr.h"

int bz2_decode(const uint8_t *src, size_t n, zbuf *out, size_t expect, zerr *e) {
  bz_stream bs = {0};
  if (BZ2_bzDecompressInit(&bs, 0, 0) != BZ_OK) return zerr_set(e, ZE_NOMEM, "cannot initialise bz2");
  if (zbuf_reserve(out, expect ? expect + 1 : n * 4 + 1024, e)) {
    BZ2_bzDecompressEnd(&bs);
    return -1;
  }
  out->size = 0;
  bs.next_in = (char *)src;
  bs.avail_in = (unsigned)n;
  int rc = BZ_OK;
  while (rc == BZ_OK) {
    if (out->size == out->cap && zbuf_reserve(out, out->cap * 2, e)) break;
    bs.next_out = (char *)out->data + out->size;
    unsigned room = (unsigned)(out->cap - out->size > 0x40000000u ? 0x40000000u : out->cap - out->size);
    bs.avail_out = room;
    rc = BZ2_bzDecompress(&bs);
    out->size += room - bs.avail_out;
    if (rc == BZ_OK && bs.avail_in == 0 && bs.avail_out > 0) {
      rc = BZ_UNEXPECTED_EOF;
      break;
    }
  }
  BZ2_bzDecompressEnd(&bs);
  if (e->kind != ZE_OK) return -1;
  if (rc != BZ_STREAM_END) return zerr_set(e, ZE_CORRUPT, "bz2 data is corrupt or truncated");
  return 0;
}

int bz2_encode(const uint8_t *src, size_t n, zbuf *out, int level, zerr *e) {
  if (level < 1 || level > 9) level = 9;
  size_t cap = n + n / 100 + 600;
  if (zbuf_reserve(out, cap, e)) return -1;
  unsigned int dlen = (unsigned int)cap;
  int rc = BZ2_bzBuffToBuffCompress((char *)out->data, &dlen, (char *)src, (unsigned)n, level, 0, 0);
  if (rc != BZ_OK) return zerr_set(e, ZE_CODEC, "bz2 compression failed");
  out->size = dlen;
  return 0;
}
