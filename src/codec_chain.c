/* The bytes -> bytes part of a codec chain: dispatch to each codec, ping-pong
 * between two buffers, and skip copies where a codec only trims (crc32c). */
#include <stdint.h>
#include <string.h>
#include "zarr_core.h"

static int crc32c_check(const uint8_t *src, size_t n, zerr *e) {
  if (n < 4) return zerr_set(e, ZE_CORRUPT, "chunk is too short to hold a crc32c checksum");
  uint32_t stored = (uint32_t)src[n - 4] | ((uint32_t)src[n - 3] << 8) |
                    ((uint32_t)src[n - 2] << 16) | ((uint32_t)src[n - 1] << 24);
  uint32_t actual = crc32c(0, src, n - 4);
  if (stored != actual)
    return zerr_set(e, ZE_CHECKSUM, "crc32c checksum mismatch (stored %08x, computed %08x)",
                    stored, actual);
  return 0;
}

int bb_decode(const zcodec_bb *c, const uint8_t *src, size_t n, zbuf *out, size_t limit,
              zerr *e) {
  switch (c->kind) {
  case BB_GZIP:
  case BB_ZLIB: return gzip_decode(src, n, out, limit, e);
  case BB_ZSTD: return zstd_decode(src, n, out, limit, e);
  case BB_BLOSC: return blosc_decode_buf(src, n, out, limit, e);
  case BB_CRC32C:
    if (crc32c_check(src, n, e)) return -1;
    if (zbuf_reserve(out, n - 4 + 1, e)) return -1;
    memcpy(out->data, src, n - 4);
    out->size = n - 4;
    return 0;
  case BB_ADLER32:
  case BB_FLETCHER32: {
    size_t off, len;
    if (checksum_decode(c, src, n, &off, &len, e)) return -1;
    if (zbuf_reserve(out, len + 1, e)) return -1;
    memcpy(out->data, src + off, len);
    out->size = len;
    return 0;
  }
  case BB_LZ4: return lz4_decode(src, n, out, limit, e);
  case BB_BZ2: return bz2_decode(src, n, out, limit, e);
  case BB_SHUFFLE:
  case BB_DELTA:
  case BB_FIXEDSCALEOFFSET:
  case BB_QUANTIZE:
  case BB_ASTYPE:
  case BB_BITROUND: return filter_decode(c, src, n, out, e);
  }
  return zerr_set(e, ZE_CODEC, "unknown codec");
}

int bb_encode(const zcodec_bb *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  switch (c->kind) {
  case BB_GZIP: return gzip_encode(src, n, out, c->level, 1, e);
  case BB_ZLIB: return gzip_encode(src, n, out, c->level, 0, e);
  case BB_ZSTD: return zstd_encode(src, n, out, c->level, c->checksum, e);
  case BB_BLOSC: return blosc_encode_buf(c, src, n, out, e);
  case BB_CRC32C: {
    if (zbuf_reserve(out, n + 4, e)) return -1;
    memmove(out->data, src, n);
    uint32_t v = crc32c(0, src, n);
    for (int i = 0; i < 4; i++) out->data[n + i] = (uint8_t)(v >> (8 * i));
    out->size = n + 4;
    return 0;
  }
  case BB_ADLER32:
  case BB_FLETCHER32: return checksum_encode(c, src, n, out, e);
  case BB_LZ4: return lz4_encode(src, n, out, c->level, e);
  case BB_BZ2: return bz2_encode(src, n, out, c->level, e);
  case BB_SHUFFLE:
  case BB_DELTA:
  case BB_FIXEDSCALEOFFSET:
  case BB_QUANTIZE:
  case BB_ASTYPE:
  case BB_BITROUND: return filter_encode(c, src, n, out, e);
  }
  return zerr_set(e, ZE_CODEC, "unknown codec");
}

/* Decode into `dst`, which must receive exactly `dst_n` bytes. Returns 1 when
 * the codec cannot write into foreign memory (the caller then uses a buffer). */
static int bb_decode_to(const zcodec_bb *c, const uint8_t *src, size_t n, uint8_t *dst,
                        size_t dst_n, zerr *e) {
  size_t got = 0;
  switch (c->kind) {
  case BB_ZSTD:
    if (zstd_decode_to(src, n, dst, dst_n, &got, e)) return -1;
    break;
  case BB_BLOSC:
    if (blosc_decode_to(src, n, dst, dst_n, &got, e)) return -1;
    break;
  default:
    return 1;
  }
  if (got != dst_n)
    return zerr_set(e, ZE_CORRUPT, "chunk decodes to %.0f bytes, expected %.0f", (double)got,
                    (double)dst_n);
  return 0;
}

/* Which of the two buffers (if any) currently holds `cur`. */
static zbuf *owner(const uint8_t *cur, zbuf *a, zbuf *b) {
  if (cur != NULL && cur == a->data) return a;
  if (cur != NULL && cur == b->data) return b;
  return NULL;
}

/* How large an intermediate stage of a chain decoding to `final` bytes may
 * be. Only the last codec decoded (the first in the chain) yields the chunk
 * itself; what the others yield is the encoded form of the next stage, whose
 * size no header promises. Writers produce intermediate stages that are
 * compressed (at most a compressor's bound: the input plus a small fraction
 * and a header), or that change element sizes (numcodecs astype,
 * fixedscaleoffset, quantize: at most 16 bytes per element of 1 byte). So 16
 * times the final size plus 1 MiB bounds every chain a writer can make, while
 * a bomb costs at most that, not gigabytes.
 *
 * When the final size is unknown (0: variable-length strings, whole shards),
 * every stage is bounded by unknown_limit(): 1 GiB plus 1032 bytes per input
 * byte (deflate's largest ratio). Only a chunk that decodes to more than a
 * gigabyte while compressing better than deflate ever can is refused; a
 * bzip2 or zstd bomb meant to fill memory is stopped there. */
static size_t mid_limit(size_t final) {
  if (final == 0) return 0;
  size_t slack = (size_t)1 << 20;
  return final > (SIZE_MAX - slack) / 16 ? SIZE_MAX - 1 : final * 16 + slack;
}

static size_t unknown_limit(size_t n) {
  size_t base = (size_t)1 << 30;
  return n > (SIZE_MAX / 2 - base) / 1032 ? SIZE_MAX / 2 : base + n * 1032;
}

static int decode_steps(const zchain *c, const uint8_t *src, size_t n, size_t last_limit,
                        size_t mid, zbuf *out, zbuf *scratch, const uint8_t **res,
                        size_t *res_n, zerr *e);

int chain_decode_bytes(const zchain *c, const uint8_t *src, size_t n, size_t expect,
                       zbuf *out, zbuf *scratch, const uint8_t **res, size_t *res_n,
                       zerr *e) {
  if (expect == 0) {
    size_t cap = unknown_limit(n);
    return decode_steps(c, src, n, cap, cap, out, scratch, res, res_n, e);
  }
  return decode_steps(c, src, n, expect, mid_limit(expect), out, scratch, res, res_n, e);
}

/* Run the bytes -> bytes decoders of `c` in reverse order; the last one run
 * may produce at most `last_limit` bytes, the others `mid` (0: unbounded). */
static int decode_steps(const zchain *c, const uint8_t *src, size_t n, size_t last_limit,
                        size_t mid, zbuf *out, zbuf *scratch, const uint8_t **res,
                        size_t *res_n, zerr *e) {
  const uint8_t *cur = src;
  size_t cur_n = n;
  for (int i = c->n_bb - 1; i >= 0; i--) {
    const zcodec_bb *cd = &c->bb[i];
    if (cd->kind == BB_CRC32C) { /* verify, then trim without copying */
      if (crc32c_check(cur, cur_n, e)) return -1;
      cur_n -= 4;
      continue;
    }
    if (cd->kind == BB_ADLER32 || cd->kind == BB_FLETCHER32) {
      size_t off, len;
      if (checksum_decode(cd, cur, cur_n, &off, &len, e)) return -1;
      cur += off;
      cur_n = len;
      continue;
    }
    zbuf *dst = owner(cur, out, scratch) == out ? scratch : out;
    if (bb_decode(cd, cur, cur_n, dst, i == 0 ? last_limit : mid, e)) return -1;
    cur = dst->data;
    cur_n = dst->size;
  }
  *res = cur;
  *res_n = cur_n;
  return 0;
}

int chain_decode_to(const zchain *c, const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n,
                    zbuf *a, zbuf *b, zerr *e) {
  /* the first codec must decode last and be able to write into dst */
  int first = 0;
  while (first < c->n_bb && c->bb[first].kind == BB_CRC32C) first++;
  if (first != 0 || c->n_bb == 0) return 1;
  if (c->bb[0].kind != BB_ZSTD && c->bb[0].kind != BB_BLOSC) return 1;
  zchain rest = *c; /* every codec but the first, decoded into buffers */
  for (int i = 1; i < c->n_bb; i++) rest.bb[i - 1] = c->bb[i];
  rest.n_bb = c->n_bb - 1;
  const uint8_t *cur;
  size_t cur_n;
  size_t mid = mid_limit(dst_n);
  if (decode_steps(&rest, src, n, mid, mid, a, b, &cur, &cur_n, e)) return -1;
  return bb_decode_to(&c->bb[0], cur, cur_n, dst, dst_n, e);
}

int chain_encode_bytes(const zchain *c, const uint8_t *src, size_t n, zbuf *out,
                       zbuf *scratch, const uint8_t **res, size_t *res_n, zerr *e) {
  const uint8_t *cur = src;
  size_t cur_n = n;
  for (int i = 0; i < c->n_bb; i++) {
    zbuf *own = owner(cur, out, scratch);
    if (c->bb[i].kind == BB_CRC32C && own != NULL) { /* append in place */
      if (zbuf_reserve(own, cur_n + 4, e)) return -1;
      uint32_t v = crc32c(0, own->data, cur_n);
      for (int k = 0; k < 4; k++) own->data[cur_n + k] = (uint8_t)(v >> (8 * k));
      own->size = cur_n + 4;
      cur = own->data;
      cur_n = own->size;
      continue;
    }
    zbuf *dst = own == out ? scratch : out;
    if (bb_encode(&c->bb[i], cur, cur_n, dst, e)) return -1;
    cur = dst->data;
    cur_n = dst->size;
  }
  *res = cur;
  *res_n = cur_n;
  return 0;
}
