/* Turn the array description built by R (chunk_grid_regular's c_spec() in R/chunk_grid.R)
 * into a zarray. R has already validated the metadata; errors here mean the
 * description itself is inconsistent. */
#include <string.h>
#include "zarr.h"

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

static int list_int(SEXP list, const char *name, int dflt) {
  SEXP v = list_get(list, name);
  if (!isNumeric(v) && !isLogical(v)) return dflt;
  if (XLENGTH(v) < 1) return dflt;
  return asInteger(v);
}

static int parse_dims(SEXP v, int64_t *out, int max) {
  if (!isNumeric(v)) Rf_error("internal: dimension vector is not numeric");
  R_xlen_t n = XLENGTH(v);
  if (n > max) Rf_error("arrays with more than %d dimensions are not supported", max);
  for (R_xlen_t i = 0; i < n; i++) {
    double x = TYPEOF(v) == REALSXP ? REAL(v)[i] : (double)INTEGER(v)[i];
    if (!(x >= 0)) Rf_error("internal: negative or missing dimension");
    out[i] = (int64_t)x;
  }
  return (int)n;
}

static void parse_chain(SEXP codecs, int ndim, const int64_t *chunk_shape, zchain *c,
                        zarray *a, zdtype dtype);

/* c(kind, size, big) as built by R's num_spec() */
static znum parse_num(SEXP v) {
  znum t = {'f', 8, 0};
  if (TYPEOF(v) == VECSXP && XLENGTH(v) == 3) {
    t.kind = CHAR(STRING_ELT(VECTOR_ELT(v, 0), 0))[0];
    t.size = asInteger(VECTOR_ELT(v, 1));
    t.big = asLogical(VECTOR_ELT(v, 2)) == TRUE;
  }
  return t;
}

void parse_bb(SEXP cd, const char *name, zcodec_bb *bb, zdtype dtype) {
  memset(bb, 0, sizeof *bb);
  if (strcmp(name, "gzip") == 0) {
    bb->kind = BB_GZIP;
    bb->level = list_int(cd, "level", 5);
  } else if (strcmp(name, "zlib") == 0) {
    bb->kind = BB_ZLIB;
    bb->level = list_int(cd, "level", 5);
  } else if (strcmp(name, "zstd") == 0) {
    bb->kind = BB_ZSTD;
    bb->level = list_int(cd, "level", 0);
    bb->checksum = list_int(cd, "checksum", 0);
  } else if (strcmp(name, "blosc") == 0) {
    bb->kind = BB_BLOSC;
    bb->level = list_int(cd, "clevel", 5);
    bb->shuffle = list_int(cd, "shuffle", 0);
    bb->typesize = list_int(cd, "typesize", (int)dtype_size(dtype));
    bb->blocksize = list_int(cd, "blocksize", 0);
    const char *cname = list_str(cd, "cname", "lz4");
    snprintf(bb->cname, sizeof bb->cname, "%s", cname);
  } else if (strcmp(name, "crc32c") == 0) {
    bb->kind = BB_CRC32C;
  } else if (strcmp(name, "lz4") == 0) {
    bb->kind = BB_LZ4;
    bb->level = list_int(cd, "acceleration", 1);
  } else if (strcmp(name, "bz2") == 0) {
    bb->kind = BB_BZ2;
    bb->level = list_int(cd, "level", 9);
  } else if (strcmp(name, "adler32") == 0) {
    bb->kind = BB_ADLER32;
    bb->at_end = strcmp(list_str(cd, "location", "start"), "end") == 0;
  } else if (strcmp(name, "fletcher32") == 0) {
    bb->kind = BB_FLETCHER32;
  } else if (strcmp(name, "shuffle") == 0) {
    bb->kind = BB_SHUFFLE;
    bb->typesize = list_int(cd, "elementsize", 1);
  } else if (strcmp(name, "delta") == 0 || strcmp(name, "fixedscaleoffset") == 0 ||
             strcmp(name, "bitround") == 0) {
    bb->kind = name[0] == 'd' ? BB_DELTA : name[0] == 'f' ? BB_FIXEDSCALEOFFSET : BB_BITROUND;
    bb->dtype = parse_num(list_get(cd, "dtype"));
    bb->astype = parse_num(list_get(cd, "astype"));
    SEXP sc = list_get(cd, "scale"), of = list_get(cd, "offset");
    bb->scale = isNull(sc) ? 1 : asReal(sc);
    bb->offset = isNull(of) ? 0 : asReal(of);
    bb->keepbits = list_int(cd, "keepbits", 52);
  } else if (strcmp(name, "quantize") == 0 || strcmp(name, "astype") == 0) {
    /* R gives the decoded type as dtype, the stored one as astype, and
     * quantize's scale (a power of two computed from digits) */
    bb->kind = name[0] == 'q' ? BB_QUANTIZE : BB_ASTYPE;
    bb->dtype = parse_num(list_get(cd, "dtype"));
    bb->astype = parse_num(list_get(cd, "astype"));
    SEXP sc = list_get(cd, "scale");
    bb->scale = isNull(sc) ? 1 : asReal(sc);
  } else {
    Rf_error("internal: codec '%s' has no C implementation", name);
  }
}

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
  for (R_xlen_t i = 0; i < XLENGTH(codecs); i++) {
    SEXP cd = VECTOR_ELT(codecs, i);
    const char *name = list_str(cd, "name", "");
    if (strcmp(name, "transpose") == 0) {
      SEXP ord = list_get(cd, "order");
      if (XLENGTH(ord) != ndim) Rf_error("internal: transpose order has the wrong length");
      int prev[ZARR_MAX_DIMS];
      memcpy(prev, c->order, sizeof prev);
      for (int k = 0; k < ndim; k++) {
        int p = TYPEOF(ord) == REALSXP ? (int)REAL(ord)[k] : INTEGER(ord)[k];
        c->order[k] = prev[p];
      }
    } else if (strcmp(name, "bytes") == 0) {
      c->ab = AB_BYTES;
      c->big_endian = strcmp(list_str(cd, "endian", "little"), "big") == 0;
      seen_ab = 1;
    } else if (strcmp(name, "vlen-utf8") == 0 || strcmp(name, "vlen-bytes") == 0 ||
               strcmp(name, "json2") == 0) { /* json2 chunks are decoded in R */
      c->ab = AB_VLEN;
      seen_ab = 1;
    } else if (strcmp(name, "sharding_indexed") == 0) {
      if (a->pool_used + 2 > (int)(sizeof a->pool / sizeof a->pool[0]))
        Rf_error("sharding is nested too deeply");
      c->ab = AB_SHARDING;
      c->inner = &a->pool[a->pool_used++];
      c->index = &a->pool[a->pool_used++];
      int64_t inner_shape[ZARR_MAX_DIMS];
      parse_dims(list_get(cd, "chunk_shape"), inner_shape, ZARR_MAX_DIMS);
      parse_chain(list_get(cd, "codecs"), ndim, inner_shape, c->inner, a, dtype);
      int64_t index_shape[ZARR_MAX_DIMS + 1];
      for (int d = 0; d < ndim; d++) {
        index_shape[d] = (c->chunk_shape[d] + inner_shape[d] - 1) / inner_shape[d];
      }
      index_shape[ndim] = 2;
      parse_chain(list_get(cd, "index_codecs"), ndim + 1, index_shape, c->index, a, DT_UINT64);
      c->index_at_end = strcmp(list_str(cd, "index_location", "end"), "end") == 0;
      seen_ab = 1;
    } else {
      if (!seen_ab) Rf_error("internal: bytes-to-bytes codec '%s' before the array codec", name);
      if (c->n_bb >= ZARR_MAX_CODECS) Rf_error("too many codecs");
      parse_bb(cd, name, &c->bb[c->n_bb++], dtype);
    }
  }
}

void spec_parse(SEXP spec, zarray *a) {
  memset(a, 0, sizeof *a);
  a->name = list_str(spec, "name", "/");
  a->ndim = parse_dims(list_get(spec, "shape"), a->shape, ZARR_MAX_DIMS);
  int dt = dtype_from_name(list_str(spec, "dtype", ""));
  if (dt < 0) Rf_error("internal: data type '%s' has no C implementation", list_str(spec, "dtype", ""));
  a->dtype = (zdtype)dt;
  a->elsize = dtype_size(a->dtype);
  int rt = rtype_from_name(list_str(spec, "rtype", ""));
  if (rt < 0) Rf_error("internal: unknown R type");
  a->rtype = (zrtype)rt;
  SEXP fill = list_get(spec, "fill");
  if (a->dtype == DT_STRING) { /* the fill is UTF-8 text; `fill` holds a handle to it */
    const char *kind = list_str(spec, "strkind", "");
    a->strkind = strcmp(kind, "vlen-utf8") == 0    ? SK_VLEN_UTF8
                 : strcmp(kind, "vlen-bytes") == 0 ? SK_VLEN_BYTES
                 : strcmp(kind, "utf32") == 0      ? SK_UTF32
                 : strcmp(kind, "bytes") == 0      ? SK_FIXED_BYTES
                                                   : SK_NONE;
    if (a->strkind == SK_NONE) Rf_error("internal: unknown string kind '%s'", kind);
    a->stored_size = (size_t)asReal(list_get(spec, "stored_size"));
    size_t n = TYPEOF(fill) == RAWSXP ? (size_t)XLENGTH(fill) : 0;
    if (n >= sizeof a->fill_text) n = sizeof a->fill_text - 1;
    if (n) memcpy(a->fill_text, RAW(fill), n);
    zstr h = {a->fill_text, (int64_t)n};
    memcpy(a->fill, &h, sizeof h);
  } else {
    if (TYPEOF(fill) != RAWSXP || (size_t)XLENGTH(fill) != a->elsize)
      Rf_error("internal: fill value bytes have the wrong size");
    memcpy(a->fill, RAW(fill), a->elsize);
  }
  a->fill_is_nan = asLogical(list_get(spec, "fill_is_nan")) == TRUE;
  int64_t chunk_shape[ZARR_MAX_DIMS];
  int cd = parse_dims(list_get(spec, "chunk_shape"), chunk_shape, ZARR_MAX_DIMS);
  if (cd != a->ndim) Rf_error("internal: chunk shape and shape differ in length");
  for (int d = 0; d < cd; d++)
    if (chunk_shape[d] < 1) Rf_error("internal: chunk shape must be positive");
  parse_chain(list_get(spec, "codecs"), a->ndim, chunk_shape, &a->chain, a, a->dtype);
  a->key_prefix = list_str(spec, "key_prefix", "");
  a->key_sep = list_str(spec, "key_sep", "/")[0];
  a->key_v2 = asLogical(list_get(spec, "key_v2")) == TRUE;
}
