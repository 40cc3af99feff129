/* n5_default (a registered Zarr v3 extension): chunks as N5 blocks in the
 * "default" mode. A block starts with a big-endian header: the mode (uint16,
 * 0), the number of dimensions (uint16) and the block's extent along each
 * (uint32, in the order of the array's dimensions), then the elements in
 * Fortran order (big endian), through at most one bytes -> bytes codec.
 *
 * R describes the codec as the transpose (a full reversal) and bytes (big
 * endian) steps the engine runs, then this row, which holds the compressor
 * as a nested chain from the array's pool (its chunk_shape is the chunk's).
 * Blocks smaller than the chunk (N5 writers in Java truncate the blocks at
 * the array's edge) are padded with the fill value; this row writes whole
 * chunks, as zarr-python and tensorstore do. */
#include <string.h>
#include "zarr_core.h"

typedef struct {
  const zchain *nested;
  int elsize;
  uint8_t fill[8]; /* one element as stored: big endian */
} n5_cfg;
ZCODEC_CFG_FITS(n5_cfg);

static int n5_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  n5_cfg *k = ZCODEC_CFG(c, n5_cfg);
  const char *hex;
  int ndim;
  int64_t shape[ZARR_MAX_DIMS];
  if (cfg_int(cfg, "n5_default", "elsize", 1, 8, &k->elsize, e) ||
      cfg_str(cfg, "n5_default", "fill", &hex, e))
    return -1;
  if (cfg->sub_chain == NULL || cfg->dims == NULL)
    return zerr_set(e, ZE_CODEC, "codec 'n5_default' runs only inside an array's codec chain");
  if ((ndim = cfg->dims(cfg, "chunk_shape", shape, ZARR_MAX_DIMS, e)) < 1) {
    if (e->kind == ZE_OK) zerr_set(e, ZE_CODEC, "codec 'n5_default' needs the chunk shape");
    return -1;
  }
  if (ndim > 65535) return zerr_set(e, ZE_CODEC, "codec 'n5_default': too many dimensions");
  for (int d = 0; d < ndim; d++)
    if (shape[d] > 4294967295LL) return zerr_set(e, ZE_CODEC, "codec 'n5_default': chunks beyond 2^32 - 1");
  if (strlen(hex) != (size_t)k->elsize * 2)
    return zerr_set(e, ZE_CODEC, "codec 'n5_default': the fill value is not %d bytes", k->elsize);
  for (int i = 0; i < k->elsize; i++) {
    unsigned v = 0;
    for (int j = 0; j < 2; j++) {
      char ch = hex[2 * i + j];
      int dg = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
      if (dg < 0) return zerr_set(e, ZE_CODEC, "codec 'n5_default': the fill value is not hexadecimal");
      v = v * 16 + (unsigned)dg;
    }
    k->fill[i] = (uint8_t)v;
  }
  k->nested = cfg->sub_chain(cfg, "codecs", ndim, shape, 0, e);
  if (k->nested == NULL) return -1;
  if (k->nested->ab != AB_BYTES || k->nested->inner != NULL || k->nested->n_bb > 1)
    return zerr_set(e, ZE_CODEC, "codec 'n5_default' holds at most one bytes -> bytes codec");
  return 0;
}

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int n5_decode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, size_t limit,
                     zerr *e) {
  const n5_cfg *k = ZCODEC_CFG(c, const n5_cfg);
  const zchain *ch = k->nested;
  int nd = ch->ndim;
  size_t es = (size_t)k->elsize, head = 4 + 4 * (size_t)nd;
  if (n < head) return zerr_set(e, ZE_CORRUPT, "N5 block is too short to hold its header");
  unsigned mode = (unsigned)src[0] << 8 | src[1], bnd = (unsigned)src[2] << 8 | src[3];
  if (mode != 0) return zerr_set(e, ZE_CORRUPT, "N5 block in mode %u, not the default mode 0", mode);
  if ((int)bnd != nd)
    return zerr_set(e, ZE_CORRUPT, "N5 block of %u dimensions in an array of %d", bnd, nd);
  int64_t block[ZARR_MAX_DIMS];
  size_t bn = 1, cn = 1; /* elements of the block and of the chunk */
  int same = 1;
  for (int d = 0; d < nd; d++) {
    block[d] = be32(src + 4 + 4 * (size_t)d);
    if (block[d] > ch->chunk_shape[d])
      return zerr_set(e, ZE_CORRUPT, "N5 block extent %.0f exceeds the chunk's %.0f", (double)block[d],
                      (double)ch->chunk_shape[d]);
    bn *= (size_t)block[d];
    cn *= (size_t)ch->chunk_shape[d];
    same &= block[d] == ch->chunk_shape[d];
  }
  size_t want = cn * es;
  if (limit && want > limit)
    return zerr_set(e, ZE_CORRUPT, "N5 chunk is larger than the expected %.0f bytes", (double)limit);
  const uint8_t *res;
  size_t res_n;
  zbuf a = {0}, b = {0};
  int rc = chain_decode_bytes(ch, src + head, n - head, bn * es, &a, &b, &res, &res_n, e);
  if (rc == 0 && res_n != bn * es)
    rc = zerr_set(e, ZE_CORRUPT, "N5 block holds %.0f bytes, its header says %.0f", (double)res_n,
                  (double)(bn * es));
  if (rc == 0 && zbuf_reserve(out, want + 1, e)) rc = -1;
  if (rc == 0 && same) {
    memcpy(out->data, res, want);
  } else if (rc == 0) { /* a truncated block: into a chunk of fill values, Fortran order */
    for (size_t i = 0; i < cn; i++) memcpy(out->data + i * es, k->fill, es);
    int64_t idx[ZARR_MAX_DIMS] = {0};
    size_t row = (size_t)block[0] * es;
    if (bn > 0)
      for (;;) {
        size_t so = 0, dso = 0, sstride = 1, dstride = 1;
        for (int d = 0; d < nd; d++) {
          so += (size_t)idx[d] * sstride;
          dso += (size_t)idx[d] * dstride;
          sstride *= (size_t)block[d];
          dstride *= (size_t)ch->chunk_shape[d];
        }
        memcpy(out->data + dso * es, res + so * es, row);
        int d = 1;
        while (d < nd && ++idx[d] == block[d]) idx[d++] = 0;
        if (d >= nd) break;
      }
  }
  if (rc == 0) out->size = want;
  zbuf_free(&a);
  zbuf_free(&b);
  return rc;
}

static int n5_encode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  const n5_cfg *k = ZCODEC_CFG(c, const n5_cfg);
  const zchain *ch = k->nested;
  size_t head = 4 + 4 * (size_t)ch->ndim;
  const uint8_t *res;
  size_t res_n;
  zbuf a = {0}, b = {0};
  int rc = chain_encode_bytes(ch, src, n, &a, &b, &res, &res_n, e);
  if (rc == 0 && zbuf_reserve(out, head + res_n + 1, e)) rc = -1;
  if (rc == 0) {
    uint8_t *h = out->data;
    h[0] = h[1] = 0; /* the default mode */
    h[2] = (uint8_t)(ch->ndim >> 8);
    h[3] = (uint8_t)ch->ndim;
    for (int d = 0; d < ch->ndim; d++) {
      uint32_t v = (uint32_t)ch->chunk_shape[d];
      for (int j = 0; j < 4; j++) h[4 + 4 * d + j] = (uint8_t)(v >> (24 - 8 * j));
    }
    memmove(out->data + head, res, res_n);
    out->size = head + res_n;
  }
  zbuf_free(&a);
  zbuf_free(&b);
  return rc;
}

const zcodec_vt zc_n5_default = {.name = "n5_default", .parse = n5_parse, .decode = n5_decode,
                                 .encode = n5_encode, .overhead = -1, .bounded = 1};
