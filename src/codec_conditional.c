/* conditional (a registered Zarr v3 extension): a bytes -> bytes codec that
 * applies each of its own bytes -> bytes codecs to a chunk or not, and says
 * which in a header of `header_bytes` bytes before the data: bit k (least
 * significant bit of the first byte first) set means codec k was applied.
 * Decoding reads the header and undoes the applied codecs in reverse order.
 *
 * The nested codecs come as a chain of their own (from the array's pool, see
 * spec.c) whose array -> bytes step is a plain `bytes` that moves nothing.
 * Writing decides per chunk and per codec: a codec is applied unless its
 * output is larger than its input, so that compressing data that does not
 * compress stores it as it is; checksums (which always add bytes) are
 * always applied. */
#include <string.h>
#include "zarr_core.h"

#define COND_MAX_HEADER 8 /* bytes: 64 codec bits, more than a chain may hold */

typedef struct {
  const zchain *nested;
  int header_bytes;
} cond_cfg;
ZCODEC_CFG_FITS(cond_cfg);

static int cond_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  cond_cfg *k = ZCODEC_CFG(c, cond_cfg);
  if (cfg_int(cfg, "conditional", "header_bytes", 1, COND_MAX_HEADER, &k->header_bytes, e)) return -1;
  if (cfg->sub_chain == NULL)
    return zerr_set(e, ZE_CODEC, "codec 'conditional' runs only inside an array's codec chain");
  int64_t one = 1;
  k->nested = cfg->sub_chain(cfg, "codecs", 1, &one, 0, e);
  if (k->nested == NULL) return -1;
  if (k->nested->ab != AB_BYTES || k->nested->inner != NULL)
    return zerr_set(e, ZE_CODEC, "codec 'conditional' holds bytes -> bytes codecs only");
  for (int i = 0; i < k->nested->n_bb; i++)
    if (k->nested->bb[i].vt->main_thread)
      return zerr_set(e, ZE_CODEC, "codec 'conditional' cannot hold a codec written in R");
  if (k->nested->n_bb > k->header_bytes * 8)
    return zerr_set(e, ZE_CODEC, "codec 'conditional': %d codecs do not fit a header of %d bits",
                    k->nested->n_bb, k->header_bytes * 8);
  return 0;
}

static int cond_decode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, size_t limit,
                       zerr *e) {
  const cond_cfg *k = ZCODEC_CFG(c, const cond_cfg);
  size_t hb = (size_t)k->header_bytes;
  if (n < hb) return zerr_set(e, ZE_CORRUPT, "chunk is too short to hold the conditional codec's header");
  zchain applied = *k->nested;
  applied.n_bb = 0;
  for (size_t byte = 0; byte < hb; byte++)
    for (int bit = 0; bit < 8; bit++) {
      int idx = (int)byte * 8 + bit;
      if (!((src[byte] >> bit) & 1)) continue;
      if (idx >= k->nested->n_bb)
        return zerr_set(e, ZE_CORRUPT, "the conditional codec's header names codec %d of %d", idx + 1,
                        k->nested->n_bb);
      applied.bb[applied.n_bb++] = k->nested->bb[idx];
    }
  const uint8_t *res;
  size_t res_n;
  zbuf scratch = {0};
  int rc = chain_decode_bytes(&applied, src + hb, n - hb, limit, out, &scratch, &res, &res_n, e);
  if (rc == 0 && limit && res_n > limit)
    rc = zerr_set(e, ZE_CORRUPT, "chunk decodes to more than the expected %.0f bytes", (double)limit);
  if (rc == 0 && res != out->data) { /* the payload as it was, or in the scratch buffer */
    if (zbuf_reserve(out, res_n + 1, e)) rc = -1;
    else {
      memmove(out->data, res, res_n);
      out->size = res_n;
    }
  } else if (rc == 0) {
    out->size = res_n;
  }
  zbuf_free(&scratch);
  return rc;
}

static int cond_encode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  const cond_cfg *k = ZCODEC_CFG(c, const cond_cfg);
  size_t hb = (size_t)k->header_bytes;
  uint8_t header[COND_MAX_HEADER] = {0};
  zbuf bufs[2] = {{0}, {0}};
  const uint8_t *cur = src;
  size_t cur_n = n;
  int which = 0, rc = 0;
  for (int i = 0; i < k->nested->n_bb && rc == 0; i++) {
    const zcodec *cd = &k->nested->bb[i];
    zbuf *dst = &bufs[which];
    if (bb_encode(cd, cur, cur_n, dst, e)) {
      rc = -1;
      break;
    }
    if (dst->size <= cur_n || cd->vt->overhead > 0) {
      header[i / 8] |= (uint8_t)(1u << (i % 8));
      cur = dst->data;
      cur_n = dst->size;
      which = !which;
    }
  }
  if (rc == 0 && zbuf_reserve(out, hb + cur_n + 1, e) == 0) {
    memmove(out->data + hb, cur, cur_n); /* cur may be src, which may be out's own data */
    memcpy(out->data, header, hb);
    out->size = hb + cur_n;
  } else {
    rc = -1;
  }
  zbuf_free(&bufs[0]);
  zbuf_free(&bufs[1]);
  return rc;
}

const zcodec_vt zc_conditional = {.name = "conditional", .parse = cond_parse, .decode = cond_decode,
                                  .encode = cond_encode, .overhead = -1, .bounded = 1};
