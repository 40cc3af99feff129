/* Turn the array description built by R (chunk_grid_regular's c_spec() in R/chunk_grid.R)
 * into a zarray. R has already validated the metadata, but the description may
 * still come from a hostile store, so everything the engine relies on (ranks,
 * codec counts, permutations, and that no element or byte count overflows) is
 * checked again here. Every failure is a classed condition (zarr_raise); a
 * zarray holds no resources, so raising at any point leaks nothing. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "zarr.h"

static const char *spec_name = NULL; /* the array being parsed, for messages */

static void
#ifdef __GNUC__
    __attribute__((noreturn))
#endif
    ZARR_PRINTF(2, 3) spec_fail(zerr_kind kind, const char *fmt, ...) {
  char msg[ZARR_MSG_LEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *name = spec_name; /* only set while spec_parse runs */
  spec_name = NULL;
  zarr_raise(kind, name, NULL, msg);
}

/* a * b into *out; 0 when it overflows int64 (operands are >= 0) */
static int mul_ok(int64_t a, int64_t b, int64_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}

SEXP list_get(SEXP list, const char *name) {
  SEXP names = getAttrib(list, R_NamesSymbol);
  if (isNull(names)) return R_NilValue;
  for (R_xlen_t i = 0; i < XLENGTH(list); i++)
    if (strcmp(CHAR(STRING_ELT(names, i)), name) == 0) return VECTOR_ELT(list, i);
  return R_NilValue;
}

const char *list_str(SEXP list, const char *name, const char *dflt) {
  SEXP v = list_get(list, name);
  if (TYPEOF(v) != STRSXP || XLENGTH(v) < 1) return dflt;
  return CHAR(STRING_ELT(v, 0));
}


static int parse_dims(SEXP v, int64_t *out, int max, const char *what) {
  if (!isNumeric(v) || isLogical(v)) spec_fail(ZE_METADATA, "the %s is not numeric", what);
  R_xlen_t n = XLENGTH(v);
  if (n > max)
    spec_fail(ZE_METADATA, "the %s has %.0f dimensions; at most %d are supported", what,
              (double)n, max);
  for (R_xlen_t i = 0; i < n; i++) {
    double x = TYPEOF(v) == REALSXP ? REAL(v)[i]
               : INTEGER(v)[i] == NA_INTEGER ? NA_REAL : (double)INTEGER(v)[i];
    /* 2^63 is not an int64; casting it (or NaN) would be undefined */
    if (!(x >= 0) || !(x < 9223372036854775808.0) || x != (double)(int64_t)x)
      spec_fail(ZE_METADATA, "the %s holds %g, not a whole number from 0 to 2^63 - 1", what, x);
    out[i] = (int64_t)x;
  }
  return (int)n;
}

/* The product of n extents, or a classed error naming `what` when it does
 * not fit in an int64. */
static int64_t dims_product(const int64_t *x, int n, const char *what) {
  int64_t p = 1;
  for (int d = 0; d < n; d++)
    if (!mul_ok(p, x[d], &p))
      spec_fail(ZE_METADATA, "the %s holds more than 2^63 - 1 elements", what);
  return p;
}

/* A chunk of `ne` elements of `es` bytes must fit in memory as one buffer,
 * with room for the codecs' bookkeeping: both as a size_t and as an R vector
 * length. */
static void check_chunk_bytes(int64_t ne, size_t es, const char *what) {
  int64_t bytes;
  if (!mul_ok(ne, (int64_t)(es ? es : 1), &bytes) || (uint64_t)bytes > (uint64_t)(SIZE_MAX / 2) ||
      bytes > (int64_t)4503599627370496LL /* R_XLEN_T_MAX */)
    spec_fail(ZE_METADATA, "a %s of %.0f elements of %.0f bytes is too large to hold in memory",
              what, (double)ne, (double)es);
}

/* A codec's flat description as the codec table's rows read it. `a` and
 * `dtype` (for nested chains) are set only while a chain is parsed. */
typedef struct {
  SEXP cd;
  zarray *a;
  zdtype dtype;
} rctx;

#define CD(c) (((const rctx *)(c)->ctx)->cd)

static int rcfg_num(const zcfg *c, const char *key, double *out) {
  SEXP v = list_get(CD(c), key);
  if ((!isNumeric(v) && !isLogical(v)) || XLENGTH(v) < 1) return 0;
  double x = asReal(v);
  if (R_IsNA(x)) return 0; /* NaN is a value (cast_value's scalar map) */
  *out = x;
  return 1;
}

static const char *rcfg_str(const zcfg *c, const char *key) {
  SEXP v = list_get(CD(c), key);
  if (TYPEOF(v) != STRSXP || XLENGTH(v) < 1 || STRING_ELT(v, 0) == NA_STRING) return NULL;
  return CHAR(STRING_ELT(v, 0));
}

static void *rcfg_obj(const zcfg *c, const char *key) {
  SEXP v = list_get(CD(c), key);
  return isNull(v) ? NULL : (void *)v;
}

static int rcfg_dims(const zcfg *c, const char *key, int64_t *out, int max, zerr *e) {
  (void)e; /* parse_dims raises the classed error itself */
  return parse_dims(list_get(CD(c), key), out, max, key);
}

static void parse_chain(SEXP codecs, int ndim, const int64_t *chunk_shape, zchain *c,
                        zarray *a, zdtype dtype);

/* A nested chain (sharding): from the array's pool, so it lives as long as
 * the array; each chunk it describes must fit in memory. */
static zchain *rcfg_sub_chain(const zcfg *c, const char *key, int ndim, const int64_t *shape,
                              int is_index, zerr *e) {
  const rctx *x = c->ctx;
  zarray *a = x->a;
  (void)e;
  if (a->pool_used >= (int)(sizeof a->pool / sizeof a->pool[0]))
    spec_fail(ZE_CODEC, "codecs (sharding, conditional) are nested too deeply");
  zchain *out = &a->pool[a->pool_used++];
  if (is_index) /* the index holds 16 bytes per inner chunk */
    check_chunk_bytes(dims_product(shape, ndim, "shard index"), 8, "shard index");
  else
    check_chunk_bytes(dims_product(shape, ndim, "inner chunk shape"), a->elsize, "inner chunk");
  parse_chain(list_get(x->cd, key), ndim, shape, out, a, is_index ? DT_UINT64 : x->dtype);
  return out;
}

static zcfg rcfg(const rctx *x) {
  zcfg cfg = {x, rcfg_num, rcfg_str, rcfg_obj, rcfg_dims, rcfg_sub_chain};
  return cfg;
}

/* One bytes -> bytes codec of an array's chain: one that holds codecs of its
 * own (conditional) takes them as a nested chain from the array's pool. */
static void parse_bb_of(SEXP cd, zcodec *bb, zarray *a, zdtype dtype) {
  rctx x = {cd, a, dtype};
  zcfg cfg = rcfg(&x);
  if (a == NULL) cfg.sub_chain = NULL;
  zerr e = {ZE_OK, ""};
  const char *name = list_str(cd, "name", "");
  const zcodec_vt *vt = zcodec_find(name);
  if (vt != NULL && vt->kind != ZC_BYTES_BYTES)
    spec_fail(ZE_CODEC, "codec '%s' is not a bytes-to-bytes codec", name);
  if (zcodec_init(bb, name, &cfg, &e)) spec_fail(e.kind, "%s", e.msg);
}

/* One bytes -> bytes codec on its own (the single-codec entry points). */
void parse_bb(SEXP cd, zcodec *bb) { parse_bb_of(cd, bb, NULL, DT_UINT8); }

/* A chain: every codec through its row of the codec table. */
static void parse_chain(SEXP codecs, int ndim, const int64_t *chunk_shape, zchain *c,
                        zarray *a, zdtype dtype) {
  memset(c, 0, sizeof *c);
  c->ndim = ndim;
  for (int d = 0; d < ndim; d++) {
    c->chunk_shape[d] = chunk_shape[d];
    c->order[d] = d;
  }
  c->ab = AB_BYTES;
  int seen_ab = 0;
  if (TYPEOF(codecs) != VECSXP) spec_fail(ZE_CODEC, "the codecs are not a list");
  for (R_xlen_t i = 0; i < XLENGTH(codecs); i++) {
    SEXP cd = VECTOR_ELT(codecs, i);
    const char *name = list_str(cd, "name", "");
    const zcodec_vt *vt = zcodec_find(name);
    if (vt == NULL) spec_fail(ZE_CODEC, "codec '%s' has no C implementation", name);
    if (vt->kind != ZC_BYTES_BYTES) {
      if (seen_ab) spec_fail(ZE_CODEC, "array codec '%s' after the array -> bytes codec", name);
      rctx x = {cd, a, dtype};
      zcfg cfg = rcfg(&x);
      zerr e = {ZE_OK, ""};
      if (vt->configure(c, &cfg, &e)) spec_fail(e.kind, "%s", e.msg);
      seen_ab = vt->kind == ZC_ARRAY_BYTES;
      if (seen_ab) c->ab_vt = vt;
      continue;
    }
    if (!seen_ab) spec_fail(ZE_CODEC, "bytes-to-bytes codec '%s' before the array codec", name);
    if (c->n_bb >= ZARR_MAX_CODECS)
      spec_fail(ZE_CODEC, "more than %d bytes-to-bytes codecs", ZARR_MAX_CODECS);
    parse_bb_of(cd, &c->bb[c->n_bb++], a, dtype);
  }
}

void spec_parse(SEXP spec, zarray *a) {
  memset(a, 0, sizeof *a);
  a->name = list_str(spec, "name", "/");
  spec_name = a->name;
  a->ndim = parse_dims(list_get(spec, "shape"), a->shape, ZARR_MAX_DIMS, "shape");
  int dt = dtype_from_name(list_str(spec, "dtype", ""));
  if (dt < 0)
    spec_fail(ZE_CODEC, "data type '%s' has no C implementation", list_str(spec, "dtype", ""));
  a->dtype = (zdtype)dt;
  a->elsize = dtype_size(a->dtype);
  int rt = rtype_from_name(list_str(spec, "rtype", ""));
  if (rt < 0) spec_fail(ZE_VALUE, "unknown R type '%s'", list_str(spec, "rtype", ""));
  a->rtype = (zrtype)rt;
  SEXP fill = list_get(spec, "fill");
  if (a->dtype == DT_STRING) { /* the fill is UTF-8 text; `fill` holds a handle to it */
    const char *kind = list_str(spec, "strkind", "");
    a->strkind = strcmp(kind, "vlen-utf8") == 0    ? SK_VLEN_UTF8
                 : strcmp(kind, "vlen-bytes") == 0 ? SK_VLEN_BYTES
                 : strcmp(kind, "utf32") == 0      ? SK_UTF32
                 : strcmp(kind, "bytes") == 0      ? SK_FIXED_BYTES
                 : strcmp(kind, "record") == 0     ? SK_RECORD
                                                   : SK_NONE;
    if (a->strkind == SK_NONE) spec_fail(ZE_CODEC, "unknown string kind '%s'", kind);
    double ss = asReal(list_get(spec, "stored_size"));
    if (a->strkind == SK_RECORD && (rt != RT_RAWLIST || !(ss >= 1 && ss < (double)sizeof a->fill_text)))
      spec_fail(ZE_METADATA, "records of %g bytes: 1 to %d bytes are supported", ss, (int)sizeof a->fill_text - 1);
    if (a->strkind == SK_UTF32 || a->strkind == SK_FIXED_BYTES || a->strkind == SK_RECORD) {
      /* one element is one stored_size bytes: whole, positive, and UTF-32 in 4-byte units */
      if (!(ss >= 0 && ss <= 2147483647.0) || ss != (double)(int64_t)ss ||
          (a->strkind == SK_UTF32 && (int64_t)ss % 4 != 0))
        spec_fail(ZE_METADATA, "invalid size %g of a fixed-length string", ss);
      a->stored_size = (size_t)ss;
    }
    size_t n = TYPEOF(fill) == RAWSXP ? (size_t)XLENGTH(fill) : 0;
    if (a->strkind == SK_RECORD && n != a->stored_size)
      spec_fail(ZE_VALUE, "the fill value has %.0f bytes, a record %.0f", (double)n, (double)a->stored_size);
    if (n >= sizeof a->fill_text) { /* keep whole UTF-8 sequences */
      n = sizeof a->fill_text - 1;
      while (n > 0 && (RAW(fill)[n] & 0xC0) == 0x80) n--;
    }
    if (n) memcpy(a->fill_text, RAW(fill), n);
    if (a->strkind == SK_FIXED_BYTES)
      while (n > 0 && a->fill_text[n - 1] == 0) n--; /* NUL padding, as for elements */
    /* missing chunks read as the fill: it must become an R string without fail */
    if (a->rtype == RT_CHARACTER && utf8_check((const uint8_t *)a->fill_text, n) != 0)
      spec_fail(ZE_METADATA, "the fill value is not UTF-8 text an R string can hold");
    zstr h = {a->fill_text, (int64_t)n};
    memcpy(a->fill, &h, sizeof h);
  } else {
    if (TYPEOF(fill) != RAWSXP || (size_t)XLENGTH(fill) != a->elsize)
      spec_fail(ZE_VALUE, "the fill value has %.0f bytes, the data type %.0f",
                TYPEOF(fill) == RAWSXP ? (double)XLENGTH(fill) : 0.0, (double)a->elsize);
    memcpy(a->fill, RAW(fill), a->elsize);
  }
  a->fill_marks_missing = asLogical(list_get(spec, "fill_marks_missing")) == TRUE;
  int64_t chunk_shape[ZARR_MAX_DIMS];
  int cd = parse_dims(list_get(spec, "chunk_shape"), chunk_shape, ZARR_MAX_DIMS, "chunk shape");
  if (cd != a->ndim)
    spec_fail(ZE_METADATA, "the chunk shape has %d dimensions, the shape %d", cd, a->ndim);
  for (int d = 0; d < cd; d++)
    if (chunk_shape[d] < 1) spec_fail(ZE_METADATA, "chunk shape must be positive");
  /* Every count the engine computes must fit: elements of the array, of a
   * chunk (and its bytes, in memory), and the number of chunks. */
  dims_product(a->shape, a->ndim, "shape");
  int64_t grid[ZARR_MAX_DIMS];
  for (int d = 0; d < cd; d++) grid[d] = a->shape[d] / chunk_shape[d] + (a->shape[d] % chunk_shape[d] != 0);
  dims_product(grid, cd, "chunk grid");
  check_chunk_bytes(dims_product(chunk_shape, cd, "chunk shape"),
                    a->strkind == SK_UTF32 || a->strkind == SK_FIXED_BYTES || a->strkind == SK_RECORD
                        ? (a->stored_size > a->elsize ? a->stored_size : a->elsize)
                        : a->elsize,
                    "chunk");
  parse_chain(list_get(spec, "codecs"), a->ndim, chunk_shape, &a->chain, a, a->dtype);
  a->key_prefix = list_str(spec, "key_prefix", "");
  a->key_sep = list_str(spec, "key_sep", "/")[0];
  a->key_v2 = asLogical(list_get(spec, "key_v2")) == TRUE;
  spec_name = NULL;
}
