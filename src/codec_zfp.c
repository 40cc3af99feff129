/* zfp (registered Zarr v3 extensions `zfp`, zarr-extensions codecs/zfp, and
 * its older name `zarrs.zfp`): an array -> bytes codec compressing a chunk
 * with the zfp library (system libzfp) as one zfp field, with no zfp header:
 * the codec's configuration says everything a header would. Modes:
 * reversible, fixed_rate, fixed_precision, fixed_accuracy and expert (zfp's
 * own parameters).
 *
 * R describes the codec as a little-endian `bytes` step followed by this row,
 * so it sees the chunk's elements as little-endian bytes in C order; zfp's
 * first dimension (nx) varies fastest, so it is the chunk's last. A chunk of
 * no dimensions is a field of one element. Chunks of more than 4 dimensions
 * are refused by `zfp`; `zarrs.zfp` ("squeeze") compresses them as the field
 * of their dimensions longer than 1, when at most 4 are.
 *
 * The zfp decoder does not check the end of its input: it reads whole
 * blocks of bits from the stream. A stored chunk is therefore decoded from a
 * zero-padded copy at least as long as the largest stream the configuration
 * can produce plus one block, and a stream that needed more bytes than it had
 * is refused as corrupt. */
#ifdef HAVE_ZFP /* configure found libzfp; else the row below the #else */
#include <stdlib.h>
#include <string.h>
#include <zfp.h>
#include "zarr_core.h"

enum { ZFP_M_REVERSIBLE, ZFP_M_RATE, ZFP_M_PRECISION, ZFP_M_ACCURACY, ZFP_M_EXPERT };

typedef struct {
  zfp_type type;
  int elsize;
  int mode;
  int zdims;         /* dimensions of the zfp field, 1-4 */
  size_t n[4];       /* nx (fastest), ny, nz, nw */
  double rate, tolerance;
  int precision, minbits, maxbits, maxprec, minexp;
} zfp_cfg;
ZCODEC_CFG_FITS(zfp_cfg);

static int zfp_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  zfp_cfg *k = ZCODEC_CFG(c, zfp_cfg);
  znum t;
  const char *mode;
  int64_t shape[ZARR_MAX_DIMS];
  int ndim, squeeze;
  if (cfg_num_type(cfg, "zfp", "dtype", &t, e) || cfg_str(cfg, "zfp", "mode", &mode, e) ||
      cfg_int(cfg, "zfp", "squeeze", 0, 1, &squeeze, e))
    return -1;
  if (t.big) return zerr_set(e, ZE_CODEC, "codec 'zfp' reads little-endian elements");
  if (t.kind == 'f' && t.size == 4) k->type = zfp_type_float;
  else if (t.kind == 'f' && t.size == 8) k->type = zfp_type_double;
  else if (t.kind == 'i' && t.size == 4) k->type = zfp_type_int32;
  else if (t.kind == 'i' && t.size == 8) k->type = zfp_type_int64;
  else return zerr_set(e, ZE_CODEC, "codec 'zfp' compresses float32, float64, int32 and int64 only");
  k->elsize = t.size;
  if (cfg->dims == NULL) return zerr_set(e, ZE_CODEC, "codec 'zfp' runs only inside an array's codec chain");
  if ((ndim = cfg->dims(cfg, "chunk_shape", shape, ZARR_MAX_DIMS, e)) < 0) {
    if (e->kind == ZE_OK) zerr_set(e, ZE_CODEC, "codec 'zfp' needs the chunk shape");
    return -1;
  }
  if (ndim > 4 && !squeeze)
    return zerr_set(e, ZE_CODEC, "codec 'zfp': chunks of %d dimensions (at most 4; 'zarrs.zfp' drops "
                    "dimensions of length 1)", ndim);
  /* zfp's dimensions: the chunk's, last first; beyond 4, those longer than 1 */
  k->zdims = 0;
  for (int d = ndim - 1; d >= 0; d--) {
    if (shape[d] < 1) return zerr_set(e, ZE_CODEC, "codec 'zfp': empty chunks have no zfp field");
    if (ndim > 4 && shape[d] == 1) continue;
    if (k->zdims == 4)
      return zerr_set(e, ZE_CODEC, "codec 'zfp': chunks have at most 4 dimensions longer than 1");
    k->n[k->zdims++] = (size_t)shape[d];
  }
  if (k->zdims == 0) k->n[k->zdims++] = 1; /* one element */

  if (strcmp(mode, "reversible") == 0) {
    k->mode = ZFP_M_REVERSIBLE;
  } else if (strcmp(mode, "fixed_rate") == 0) {
    k->mode = ZFP_M_RATE;
    if (cfg_dbl(cfg, "zfp", "rate", &k->rate, e)) return -1;
    if (!(k->rate > 0 && k->rate <= 8.0 * t.size))
      return zerr_set(e, ZE_CODEC, "codec 'zfp': rate must be above 0 and at most %d bits", 8 * t.size);
  } else if (strcmp(mode, "fixed_precision") == 0) {
    k->mode = ZFP_M_PRECISION;
    if (cfg_int(cfg, "zfp", "precision", 1, ZFP_MAX_PREC, &k->precision, e)) return -1;
  } else if (strcmp(mode, "fixed_accuracy") == 0) {
    k->mode = ZFP_M_ACCURACY;
    if (cfg_dbl(cfg, "zfp", "tolerance", &k->tolerance, e)) return -1;
    if (!(k->tolerance >= 0) || k->tolerance > 1e300)
      return zerr_set(e, ZE_CODEC, "codec 'zfp': tolerance must be a finite number, at least 0");
    if (t.kind == 'i') return zerr_set(e, ZE_CODEC, "codec 'zfp': fixed_accuracy is for float32 and float64 only");
  } else if (strcmp(mode, "expert") == 0) {
    k->mode = ZFP_M_EXPERT;
    if (cfg_int(cfg, "zfp", "minbits", 0, ZFP_MAX_BITS, &k->minbits, e) ||
        cfg_int(cfg, "zfp", "maxbits", 1, ZFP_MAX_BITS, &k->maxbits, e) ||
        cfg_int(cfg, "zfp", "maxprec", 1, ZFP_MAX_PREC, &k->maxprec, e) ||
        cfg_int(cfg, "zfp", "minexp", ZFP_MIN_EXP, 1100, &k->minexp, e))
      return -1;
    if (k->minbits > k->maxbits) return zerr_set(e, ZE_CODEC, "codec 'zfp': minbits exceeds maxbits");
  } else {
    return zerr_set(e, ZE_CODEC,
                    "codec 'zfp': mode must be \"reversible\", \"fixed_rate\", \"fixed_precision\", "
                    "\"fixed_accuracy\" or \"expert\"");
  }
  return 0;
}

/* A zfp stream set to the codec's mode, and a field of its type and shape
 * over `data` (NULL: none yet). */
static int zfp_setup(const zfp_cfg *k, void *data, zfp_stream **zs, zfp_field **f, zerr *e) {
  *f = zfp_field_alloc();
  *zs = zfp_stream_open(NULL);
  if (*f == NULL || *zs == NULL) return zerr_set(e, ZE_NOMEM, "zfp: out of memory");
  zfp_field_set_type(*f, k->type);
  zfp_field_set_pointer(*f, data);
  switch (k->zdims) {
  case 1: zfp_field_set_size_1d(*f, k->n[0]); break;
  case 2: zfp_field_set_size_2d(*f, k->n[0], k->n[1]); break;
  case 3: zfp_field_set_size_3d(*f, k->n[0], k->n[1], k->n[2]); break;
  default: zfp_field_set_size_4d(*f, k->n[0], k->n[1], k->n[2], k->n[3]); break;
  }
  int ok = 1;
  switch (k->mode) {
  case ZFP_M_REVERSIBLE: zfp_stream_set_reversible(*zs); break;
  case ZFP_M_RATE: zfp_stream_set_rate(*zs, k->rate, k->type, (unsigned)k->zdims, zfp_false); break;
  case ZFP_M_PRECISION: zfp_stream_set_precision(*zs, (unsigned)k->precision); break;
  case ZFP_M_ACCURACY: zfp_stream_set_accuracy(*zs, k->tolerance); break;
  default:
    ok = zfp_stream_set_params(*zs, (unsigned)k->minbits, (unsigned)k->maxbits, (unsigned)k->maxprec,
                               k->minexp);
  }
  if (!ok) return zerr_set(e, ZE_CODEC, "codec 'zfp': zfp refuses these expert parameters");
  return 0;
}

static void zfp_teardown(zfp_stream *zs, zfp_field *f, bitstream *bs) {
  if (bs) stream_close(bs);
  if (zs) zfp_stream_close(zs);
  if (f) zfp_field_free(f);
}

static size_t zfp_count(const zfp_cfg *k) {
  size_t n = 1;
  for (int d = 0; d < k->zdims; d++) n *= k->n[d];
  return n;
}

static int host_is_big(void) {
  const uint16_t one = 1;
  return *(const uint8_t *)&one == 0;
}

static void swap_elements(uint8_t *p, size_t count, int es) {
  for (size_t i = 0; i < count; i++, p += es)
    for (int a = 0, b = es - 1; a < b; a++, b--) {
      uint8_t t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
}

static int zfp_dec(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, size_t limit, zerr *e) {
  const zfp_cfg *k = ZCODEC_CFG(c, const zfp_cfg);
  size_t count = zfp_count(k), want = count * (size_t)k->elsize;
  if (limit && want > limit)
    return zerr_set(e, ZE_CORRUPT, "zfp chunk is larger than the expected %.0f bytes", (double)limit);
  if (zbuf_reserve(out, want + 1, e)) return -1;
  zfp_stream *zs = NULL;
  zfp_field *f = NULL;
  bitstream *bs = NULL;
  uint8_t *copy = NULL;
  int rc = zfp_setup(k, out->data, &zs, &f, e);
  if (rc == 0) {
    /* the longest stream this configuration writes, one more block of slack,
     * rounded to whole 64-bit words: the decoder never reads past it */
    size_t room = zfp_stream_maximum_size(zs, f);
    if (room == 0) rc = zerr_set(e, ZE_CODEC, "codec 'zfp': zfp gives no stream size for this field");
    room += ZFP_MAX_BITS / 8 + 16;
    room = (room + 7) & ~(size_t)7;
    if (rc == 0 && n > room) rc = zerr_set(e, ZE_CORRUPT, "zfp chunk is longer than its configuration allows");
    if (rc == 0 && (copy = calloc(room, 1)) == NULL) rc = zerr_set(e, ZE_NOMEM, "zfp: out of memory");
    if (rc == 0) {
      if (n) memcpy(copy, src, n);
      bs = stream_open(copy, room);
      if (bs == NULL) rc = zerr_set(e, ZE_NOMEM, "zfp: out of memory");
    }
  }
  if (rc == 0) {
    zfp_stream_set_bit_stream(zs, bs);
    zfp_stream_rewind(zs);
    size_t used = zfp_decompress(zs, f);
    if (used == 0) rc = zerr_set(e, ZE_CORRUPT, "zfp could not decode the chunk");
    /* the stream is flushed to whole words when written */
    else if (used > ((n + 7) & ~(size_t)7))
      rc = zerr_set(e, ZE_CORRUPT, "zfp chunk is truncated (%.0f bytes, the stream needs %.0f)", (double)n,
                    (double)used);
  }
  if (rc == 0) {
    if (host_is_big()) swap_elements(out->data, count, k->elsize);
    out->size = want;
  }
  zfp_teardown(zs, f, bs);
  free(copy);
  return rc;
}

static int zfp_enc(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  const zfp_cfg *k = ZCODEC_CFG(c, const zfp_cfg);
  size_t count = zfp_count(k);
  if (n != count * (size_t)k->elsize)
    return zerr_set(e, ZE_CODEC, "codec 'zfp': a chunk of %.0f bytes is not %.0f elements", (double)n,
                    (double)count);
  uint8_t *native = NULL;
  if (host_is_big()) { /* zfp reads native elements */
    if ((native = malloc(n ? n : 1)) == NULL) return zerr_set(e, ZE_NOMEM, "zfp: out of memory");
    memcpy(native, src, n);
    swap_elements(native, count, k->elsize);
  }
  zfp_stream *zs = NULL;
  zfp_field *f = NULL;
  bitstream *bs = NULL;
  zbuf tmp = {0}; /* src may be out's own data */
  int rc = zfp_setup(k, native ? (void *)native : (void *)(uintptr_t)src, &zs, &f, e);
  if (rc == 0) {
    size_t room = zfp_stream_maximum_size(zs, f);
    if (room == 0) rc = zerr_set(e, ZE_CODEC, "codec 'zfp': zfp gives no stream size for this field");
    else if (zbuf_reserve(&tmp, room, e)) rc = -1;
    else if ((bs = stream_open(tmp.data, room)) == NULL) rc = zerr_set(e, ZE_NOMEM, "zfp: out of memory");
  }
  if (rc == 0) {
    zfp_stream_set_bit_stream(zs, bs);
    zfp_stream_rewind(zs);
    size_t used = zfp_compress(zs, f);
    if (used == 0) rc = zerr_set(e, ZE_CODEC, "zfp could not compress the chunk");
    else if (zbuf_reserve(out, used + 1, e)) rc = -1;
    else {
      memcpy(out->data, tmp.data, used);
      out->size = used;
    }
  }
  zfp_teardown(zs, f, bs);
  zbuf_free(&tmp);
  free(native);
  return rc;
}

const zcodec_vt zc_zfp = {.name = "zfp", .parse = zfp_parse, .decode = zfp_dec, .encode = zfp_enc,
                          .overhead = -1, .bounded = 1};

#else
#include "zarr_core.h"
ZCODEC_MISSING(zfp, "libzfp");
#endif
