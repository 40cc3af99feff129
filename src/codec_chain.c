/* The bytes -> bytes part of a codec chain: call each codec through its row
 * of the codec table, ping-pong between two buffers, and skip copies where a
 * codec only trims (checksums). */
#include <stdint.h>
#include <string.h>
#include "zarr_core.h"

int bb_decode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, size_t limit,
              zerr *e) {
  if (c->vt->strip) { /* a checksum: verify, then copy the payload */
    size_t off, len;
    if (c->vt->strip(c, src, n, &off, &len, e)) return -1;
    if (zbuf_reserve(out, len + 1, e)) return -1;
    memmove(out->data, src + off, len);
    out->size = len;
    return 0;
  }
  return c->vt->decode(c, src, n, out, limit, e);
}

int bb_encode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  return c->vt->encode(c, src, n, out, e);
}

/* Decode into `dst`, which must receive exactly `dst_n` bytes. Returns 1 when
 * the codec cannot write into foreign memory (the caller then uses a buffer). */
static int bb_decode_to(const zcodec *c, const uint8_t *src, size_t n, uint8_t *dst,
                        size_t dst_n, zerr *e) {
  size_t got = 0;
  if (c->vt->decode_to == NULL) return 1;
  if (c->vt->decode_to(c, src, n, dst, dst_n, &got, e)) return -1;
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
    const zcodec *cd = &c->bb[i];
    if (cd->vt->strip) { /* a checksum: verify, then trim without copying */
      size_t off, len;
      if (cd->vt->strip(cd, cur, cur_n, &off, &len, e)) return -1;
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
  if (c->n_bb == 0 || c->bb[0].vt->decode_to == NULL) return 1;
  zchain rest = *c; /* every codec but the first, decoded into buffers */
  for (int i = 1; i < c->n_bb; i++) rest.bb[i - 1] = c->bb[i];
  rest.n_bb = c->n_bb - 1;
  const uint8_t *cur;
  size_t cur_n;
  size_t mid = mid_limit(dst_n);
  if (decode_steps(&rest, src, n, mid, mid, a, b, &cur, &cur_n, e)) return -1;
  return bb_decode_to(&c->bb[0], cur, cur_n, dst, dst_n, e);
}

int chain_main_thread(const zchain *c) {
  if (c == NULL) return 0;
  for (int i = 0; i < c->n_bb; i++)
    if (c->bb[i].vt->main_thread) return 1;
  return chain_main_thread(c->inner) || chain_main_thread(c->index);
}

int chain_encode_bytes(const zchain *c, const uint8_t *src, size_t n, zbuf *out,
                       zbuf *scratch, const uint8_t **res, size_t *res_n, zerr *e) {
  const uint8_t *cur = src;
  size_t cur_n = n;
  for (int i = 0; i < c->n_bb; i++) {
    zbuf *own = owner(cur, out, scratch);
    if (c->bb[i].vt->encode_inplace && own != NULL) { /* e.g. append a checksum */
      if (c->bb[i].vt->encode_inplace(&c->bb[i], own, cur_n, e)) return -1;
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
