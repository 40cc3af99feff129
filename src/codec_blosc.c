/* blosc codec through the system c-blosc (1.x), using the context API so
 * that worker threads can call it concurrently. */
#include <blosc.h>
#include "zarr_core.h"

int blosc_decode_to(const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n, size_t *got,
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
int blosc_decode_buf(const uint8_t *src, size_t n, zbuf *out, size_t limit, zerr *e) {
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

int blosc_encode_buf(const zcodec_bb *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  if (zbuf_reserve(out, n + BLOSC_MAX_OVERHEAD, e)) return -1;
  int typesize = c->typesize > 0 ? c->typesize : 1;
  int r = blosc_compress_ctx(c->level, c->shuffle, (size_t)typesize, n, src, out->data,
                             n + BLOSC_MAX_OVERHEAD, c->cname, (size_t)c->blocksize, 1);
  if (r <= 0)
    return zerr_set(e, ZE_CODEC, "blosc compression with '%s' failed (code %d)", c->cname, r);
  out->size = (size_t)r;
  return 0;
}
