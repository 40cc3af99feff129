/* Small entry points behind the R classes: single codecs on raw vectors (the
 * zarr_codec_*$encode()/$decode() methods), element conversion for the bytes
 * codec, fill value bytes, local file access for the store classes. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "zarr.h"

static SEXP raw_from(const uint8_t *p, size_t n) {
  SEXP r = allocVector(RAWSXP, (R_xlen_t)n);
  if (n) memcpy(RAW(r), p, n);
  return r;
}

static void need_raw(SEXP data) {
  if (TYPEOF(data) != RAWSXP) zarr_raise(ZE_VALUE, NULL, NULL, "the data must be a raw vector");
}

SEXP ffi_codec_encode(SEXP codec, SEXP data) {
  need_raw(data);
  zcodec c;
  parse_bb(codec, &c);
  zbuf out = {0};
  zerr e = {ZE_OK, ""};
  if (bb_encode(&c, RAW(data), (size_t)XLENGTH(data), &out, &e)) {
    zbuf_free(&out);
    zarr_raise_err(&e, NULL, NULL);
  }
  SEXP r = PROTECT(raw_from(out.data, out.size));
  zbuf_free(&out);
  UNPROTECT(1);
  return r;
}

SEXP ffi_codec_decode(SEXP codec, SEXP data, SEXP expect) {
  need_raw(data);
  double x = isNull(expect) ? 0 : asReal(expect);
  if (!(x >= 0 && x <= 4503599627370496.0))
    zarr_raise(ZE_VALUE, NULL, NULL, "the expected size must be a number of bytes");
  zcodec c;
  parse_bb(codec, &c);
  zbuf out = {0};
  zerr e = {ZE_OK, ""};
  size_t ex = (size_t)x;
  if (bb_decode(&c, RAW(data), (size_t)XLENGTH(data), &out, ex, &e)) {
    zbuf_free(&out);
    zarr_raise_err(&e, NULL, NULL);
  }
  SEXP r = PROTECT(raw_from(out.data, out.size));
  zbuf_free(&out);
  UNPROTECT(1);
  return r;
}

SEXP ffi_crc32c(SEXP data) {
  need_raw(data);
  uint32_t v = crc32c(0, RAW(data), (size_t)XLENGTH(data));
  return ScalarReal((double)v);
}

/* ---- elements <-> bytes (the bytes codec on its own) ----------------------- */

static void one_dim_slab(zslab *s, int64_t n, int64_t *idx) {
  memset(s, 0, sizeof *s);
  s->ndim = 1;
  for (int64_t i = 0; i < n; i++) idx[i] = i;
  s->dim[0].cnt = n;
  s->dim[0].local = idx;
  s->dim[0].outpos = idx;
  s->cstride[0] = 1;
  s->ostride[0] = 1;
}

static zrtype rtype_of(SEXP x) {
  if (inherits(x, "integer64")) return RT_INT64;
  switch (TYPEOF(x)) {
  case RAWSXP: return RT_RAW;
  case LGLSXP: return RT_LOGICAL;
  case INTSXP: return RT_INTEGER;
  case CPLXSXP: return RT_COMPLEX;
  default: return RT_DOUBLE;
  }
}

SEXP ffi_encode_elements(SEXP data, SEXP dtype, SEXP big_endian, SEXP fill, SEXP na) {
  int dt = dtype_from_name(CHAR(STRING_ELT(dtype, 0)));
  if (dt < 0) zarr_raise(ZE_CODEC, NULL, NULL, "unknown data type");
  zrtype rt = rtype_of(data);
  if (!kernel_supported((zdtype)dt, rt, 1))
    zarr_raise(ZE_VALUE, NULL, NULL, "these R values cannot be stored in this data type");
  size_t es = dtype_size((zdtype)dt);
  int64_t n = rt == RT_RAW ? XLENGTH(data) / (int64_t)es : XLENGTH(data);
  int64_t first;
  if (slab_validate((zdtype)dt, rt, DATAPTR(data), n, &first) > 0)
    zarr_raise(ZE_VALUE, NULL, NULL, "values cannot be stored in this data type");
  SEXP out = PROTECT(allocVector(RAWSXP, (R_xlen_t)(n * (int64_t)es)));
  int64_t *idx = (int64_t *)R_alloc((size_t)n + 1, sizeof(int64_t));
  zslab s;
  one_dim_slab(&s, n, idx);
  zconv cv;
  memset(&cv, 0, sizeof cv);
  memcpy(cv.fill, RAW(fill), es);
  cv.na = asLogical(na) == TRUE;
  slab_encode(&s, (zdtype)dt, rt, DATAPTR(data), RAW(out), &cv);
  size_t unit = dtype_def((zdtype)dt)->swap;
  if (asLogical(big_endian) == TRUE && unit > 1) byteswap_inplace(RAW(out), (size_t)n * es / unit, unit);
  UNPROTECT(1);
  return out;
}

SEXP ffi_decode_elements(SEXP raw, SEXP dtype, SEXP rtype, SEXP big_endian, SEXP fill, SEXP na) {
  int dt = dtype_from_name(CHAR(STRING_ELT(dtype, 0)));
  int rt = rtype_from_name(CHAR(STRING_ELT(rtype, 0)));
  if (dt < 0 || rt < 0 || rt == RT_CHARACTER || rt == RT_RAWLIST || !kernel_supported((zdtype)dt, (zrtype)rt, 0))
    zarr_raise(ZE_CODEC, NULL, NULL, "unsupported data type conversion");
  size_t es = dtype_size((zdtype)dt);
  if ((size_t)XLENGTH(raw) % es != 0)
    zarr_raise(ZE_CORRUPT, NULL, NULL, "byte count is not a multiple of the element size");
  int64_t n = XLENGTH(raw) / (int64_t)es;
  SEXP tmp = PROTECT(duplicate(raw));
  size_t unit = dtype_def((zdtype)dt)->swap;
  if (asLogical(big_endian) == TRUE && unit > 1) byteswap_inplace(RAW(tmp), (size_t)n * es / unit, unit);
  SEXPTYPE st = rtype_sexp((zrtype)rt);
  SEXP out = PROTECT(allocVector(st, (R_xlen_t)(rt == RT_RAW ? n * (int64_t)es : n)));
  int64_t *idx = (int64_t *)R_alloc((size_t)n + 1, sizeof(int64_t));
  zslab s;
  one_dim_slab(&s, n, idx);
  zconv cv;
  memset(&cv, 0, sizeof cv);
  memcpy(cv.fill, RAW(fill), es);
  cv.na = asLogical(na) == TRUE;
  slab_decode(&s, (zdtype)dt, (zrtype)rt, RAW(tmp), DATAPTR(out), &cv);
  UNPROTECT(2);
  return out;
}

/* ---- fill values ---------------------------------------------------------- */

/* Parse one fill value component (a number, a JSON special, or "0x" bits) into
 * `out` as data type `dt` (native byte order), through the row's encoder from
 * R doubles (so every numeric type of the table parses its fill the same
 * way). Returns 0 on success. */
static int fill_component(SEXP v, zdtype dt, uint8_t *out) {
  const zdtype_def *def = dtype_def(dt);
  size_t es = def->size;
  const char *s = NULL;
  double x = NA_REAL;
  if (TYPEOF(v) == STRSXP) s = CHAR(STRING_ELT(v, 0));
  else if (TYPEOF(v) == LGLSXP) x = LOGICAL(v)[0] == NA_LOGICAL ? NA_REAL : LOGICAL(v)[0];
  else x = asReal(v);
  if (s != NULL && strncmp(s, "0x", 2) == 0) { /* raw bits, big-endian hex */
    uint64_t bits = strtoull(s + 2, NULL, 16);
    for (size_t i = 0; i < es && i < 8; i++) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
      out[es - 1 - i] = (uint8_t)(bits >> (8 * i));
#else
      out[i] = (uint8_t)(bits >> (8 * i));
#endif
    }
    return 0;
  }
  int is_int = def->kind == 'b' || def->kind == 'i' || def->kind == 'u';
  if (s != NULL) {
    if (is_int) { /* 64-bit integers arrive as strings to keep every digit */
      errno = 0;
      char *end;
      if (def->kind == 'u' && es == 8) {
        if (strchr(s, '-') != NULL) return -1;
        unsigned long long u = strtoull(s, &end, 10);
        if (*end || errno) return -1;
        uint64_t t = u;
        memcpy(out, &t, 8);
        return 0;
      }
      long long l = strtoll(s, &end, 10);
      if (*end || errno) return -1;
      if (def->kind == 'i' && es == 8) {
        int64_t t = l;
        memcpy(out, &t, 8);
        return 0;
      }
      x = (double)l;
    } else if (strcmp(s, "NaN") == 0) x = NAN;
    else if (strcmp(s, "Infinity") == 0) x = INFINITY;
    else if (strcmp(s, "-Infinity") == 0) x = -INFINITY;
    else {
      char *end;
      x = strtod(s, &end);
      if (*end) return -1;
    }
  }
  if (is_int && (isnan(x) || x != floor(x))) return -1;
  if (def->kind == 'b') {
    out[0] = x != 0;
    return 0;
  }
  zkern k = def->enc[RT_DOUBLE];
  if (k == NULL || def->kind == 'c') return -1;
  zconv cv;
  memset(&cv, 0, sizeof cv);
  k(out, 0, (const uint8_t *)&x, 0, 1, &cv);
  return cv.bad ? -1 : 0;
}

SEXP ffi_fill_bytes(SEXP dtype, SEXP value) {
  int dt = dtype_from_name(CHAR(STRING_ELT(dtype, 0)));
  if (dt < 0) zarr_raise(ZE_VALUE, NULL, NULL, "unknown data type");
  const zdtype_def *def = dtype_def((zdtype)dt);
  size_t es = def->size;
  SEXP out = PROTECT(allocVector(RAWSXP, (R_xlen_t)es));
  memset(RAW(out), 0, es);
  int ok;
  if (def->kind == 'c') {
    if (XLENGTH(value) != 2) zarr_raise(ZE_VALUE, NULL, NULL, "a complex fill value needs two parts");
    zdtype part = (zdtype)def->part;
    SEXP re = PROTECT(TYPEOF(value) == VECSXP ? VECTOR_ELT(value, 0) : ScalarReal(REAL(coerceVector(value, REALSXP))[0]));
    SEXP im = PROTECT(TYPEOF(value) == VECSXP ? VECTOR_ELT(value, 1) : ScalarReal(REAL(coerceVector(value, REALSXP))[1]));
    ok = fill_component(re, part, RAW(out)) == 0 && fill_component(im, part, RAW(out) + es / 2) == 0;
    UNPROTECT(2);
  } else if (def->kind == 'r') {
    /* raw bits: the bytes themselves */
    ok = TYPEOF(value) == RAWSXP && (size_t)XLENGTH(value) == es;
    if (ok) memcpy(RAW(out), RAW(value), es);
  } else {
    if (XLENGTH(value) != 1) zarr_raise(ZE_VALUE, NULL, NULL, "a fill value must be a single value");
    ok = fill_component(value, (zdtype)dt, RAW(out)) == 0;
  }
  if (!ok) zarr_raise(ZE_VALUE, NULL, NULL, "the fill value does not fit the data type");
  UNPROTECT(1);
  return out;
}

/* ---- local files ------------------------------------------------------------- */

SEXP ffi_file_read(SEXP path, SEXP range) {
  const char *p = translateCharUTF8(STRING_ELT(path, 0));
  int64_t off = 0, len = -1;
  if (!isNull(range)) {
    off = (int64_t)REAL(range)[0];
    len = (int64_t)REAL(range)[1];
  }
  zbuf b = {0};
  zerr e = {ZE_OK, ""};
  int missing = 0;
  if (file_read(p, off, len, &b, &missing, &e)) {
    zbuf_free(&b);
    zarr_raise_err(&e, NULL, NULL);
  }
  if (missing) {
    zbuf_free(&b);
    return R_NilValue;
  }
  SEXP r = PROTECT(raw_from(b.data, b.size));
  zbuf_free(&b);
  UNPROTECT(1);
  return r;
}

SEXP ffi_file_write(SEXP path, SEXP data) {
  zerr e = {ZE_OK, ""};
  if (file_write_atomic(translateCharUTF8(STRING_ELT(path, 0)), RAW(data),
                        (size_t)XLENGTH(data), &e))
    zarr_raise_err(&e, NULL, NULL);
  return R_NilValue;
}

SEXP ffi_file_size(SEXP path) {
  return ScalarReal((double)file_size(translateCharUTF8(STRING_ELT(path, 0))));
}

/* The key of metadata documents in the cache of parsed ones (R/store.R):
 * the kind, then each document's bytes ("\001" for an absent one), joined
 * by "\002"; NULL for documents too large to keep (over 64 KiB together)
 * or holding a NUL byte. */
SEXP ffi_meta_doc_key(SEXP kind, SEXP docs) {
  const char *k = CHAR(STRING_ELT(kind, 0));
  R_xlen_t nd = XLENGTH(docs);
  size_t total = strlen(k), body = 0;
  for (R_xlen_t i = 0; i < nd; i++) {
    SEXP d = VECTOR_ELT(docs, i);
    size_t n = TYPEOF(d) == RAWSXP ? (size_t)XLENGTH(d) : 1;
    body += TYPEOF(d) == RAWSXP ? n : 0;
    if (body > 65536 || (TYPEOF(d) == RAWSXP && n && memchr(RAW(d), 0, n) != NULL)) return R_NilValue;
    total += 1 + n;
  }
  char *buf = R_alloc(total + 1, 1);
  size_t at = strlen(k);
  memcpy(buf, k, at);
  for (R_xlen_t i = 0; i < nd; i++) {
    SEXP d = VECTOR_ELT(docs, i);
    buf[at++] = '\002';
    if (TYPEOF(d) == RAWSXP) {
      if (XLENGTH(d)) memcpy(buf + at, RAW(d), (size_t)XLENGTH(d));
      at += (size_t)XLENGTH(d);
    } else {
      buf[at++] = '\001';
    }
  }
  return ScalarString(mkCharLenCE(buf, (int)at, CE_NATIVE));
}

/* What is at a local store's root, in one call for zarr_localstore$new()
 * and open_zarr(): c(kind, zarr.json, .zgroup, .zarray, .zmetadata) with
 * kind 0 (nothing), 1 (a folder) or 2 (something else), then for a folder
 * whether each document exists, looked for in that order only until one is
 * found (the others are then -1: not looked at). */
SEXP ffi_local_probe(SEXP path) {
  static const char *const docs[] = {"zarr.json", ".zgroup", ".zarray", ".zmetadata"};
  const char *p = translateCharUTF8(STRING_ELT(path, 0));
  SEXP out = PROTECT(allocVector(INTSXP, 5));
  int *o = INTEGER(out);
  for (int i = 0; i < 5; i++) o[i] = -1;
  struct stat st;
  o[0] = zarr_stat(p, &st) != 0 ? 0 : S_ISDIR(st.st_mode) ? 1 : 2;
  size_t n = strlen(p);
  if (o[0] == 1 && n + 16 < 8192) {
    char buf[8192];
    memcpy(buf, p, n);
    if (n == 0 || buf[n - 1] != '/') buf[n++] = '/';
    for (int i = 0; i < 4; i++) {
      strcpy(buf + n, docs[i]);
      o[i + 1] = zarr_stat(buf, &st) == 0;
      if (o[i + 1]) break;
    }
  }
  UNPROTECT(1);
  return out;
}

SEXP ffi_key_is_safe(SEXP key) {
  R_xlen_t n = XLENGTH(key);
  SEXP out = PROTECT(allocVector(LGLSXP, n));
  for (R_xlen_t i = 0; i < n; i++)
    LOGICAL(out)[i] = STRING_ELT(key, i) != NA_STRING &&
                      key_is_safe(translateCharUTF8(STRING_ELT(key, i)));
  UNPROTECT(1);
  return out;
}

/* redact() of R/errors.R: each string with its secrets replaced (redact.c). */
SEXP ffi_redact(SEXP x) {
  if (TYPEOF(x) != STRSXP) zarr_raise(ZE_VALUE, NULL, NULL, "internal: redact() needs strings");
  R_xlen_t n = XLENGTH(x);
  SEXP out = PROTECT(allocVector(STRSXP, n));
  for (R_xlen_t i = 0; i < n; i++) {
    SEXP s = STRING_ELT(x, i);
    if (s == NA_STRING) {
      SET_STRING_ELT(out, i, NA_STRING);
      continue;
    }
    const char *p = translateCharUTF8(s);
    size_t len = strlen(p), need = redact_text(p, len, NULL, 0);
    char *buf = R_alloc(need + 1, 1);
    redact_text(p, len, buf, need + 1);
    SET_STRING_ELT(out, i, mkCharLenCE(buf, (int)need, CE_UTF8));
  }
  setAttrib(out, R_NamesSymbol, getAttrib(x, R_NamesSymbol));
  UNPROTECT(1);
  return out;
}

SEXP ffi_chunk_keys(SEXP spec, SEXP coords) {
  zarray a;
  spec_parse(spec, &a);
  /* coords: a matrix with one row per chunk, one column per dimension */
  int nr = isMatrix(coords) ? nrows(coords) : (a.ndim == 0 ? 1 : 0);
  SEXP out = PROTECT(allocVector(STRSXP, nr));
  char key[4096];
  int64_t c[ZARR_MAX_DIMS];
  for (int i = 0; i < nr; i++) {
    for (int d = 0; d < a.ndim; d++) c[d] = (int64_t)REAL(coords)[i + (R_xlen_t)d * nr];
    if (chunk_key(&a, c, key, sizeof key)) zarr_raise(ZE_KEY, a.name, NULL, "chunk key is too long");
    SET_STRING_ELT(out, i, mkCharCE(key, CE_UTF8));
  }
  UNPROTECT(1);
  return out;
}

SEXP ffi_num_cores(void) { return ScalarInteger(zarr_num_cores()); }

/* ---- one ListObjectsV2 page, for zarr_s3store$list_objects() ---- */

static SEXP strings_from(char **s, size_t n) {
  SEXP r = PROTECT(allocVector(STRSXP, (R_xlen_t)n));
  for (size_t i = 0; i < n; i++) SET_STRING_ELT(r, (R_xlen_t)i, mkCharCE(s[i], CE_UTF8));
  UNPROTECT(1);
  return r;
}

static SEXP s3_list_build(void *data) {
  const zs3list *l = data;
  const char *names[] = {"keys", "sizes", "prefixes", "truncated", "token", ""};
  SEXP out = PROTECT(mkNamed(VECSXP, names));
  SET_VECTOR_ELT(out, 0, strings_from(l->keys, l->n_keys));
  SEXP sizes = allocVector(REALSXP, (R_xlen_t)l->n_keys);
  SET_VECTOR_ELT(out, 1, sizes);
  for (size_t i = 0; i < l->n_keys; i++) REAL(sizes)[i] = l->sizes[i] < 0 ? NA_REAL : l->sizes[i];
  SET_VECTOR_ELT(out, 2, strings_from(l->prefixes, l->n_prefixes));
  SET_VECTOR_ELT(out, 3, ScalarLogical(l->truncated));
  if (l->token != NULL) SET_VECTOR_ELT(out, 4, ScalarString(mkCharCE(l->token, CE_UTF8)));
  UNPROTECT(1);
  return out;
}

static void s3_list_cleanup(void *data) { xml_s3_list_free(data); }

/* One listing page of an object store, parsed by `parse` ("S3" or "Azure"
 * in messages). */
static SEXP parse_list(SEXP body, SEXP where, const char *service,
                       int (*parse)(const uint8_t *, size_t, zs3list *, zerr *)) {
  need_raw(body);
  zs3list l;
  zerr e = {ZE_OK, ""};
  if (parse(RAW(body), (size_t)XLENGTH(body), &l, &e)) {
    char msg[ZARR_MSG_LEN + 200];
    snprintf(msg, sizeof msg, "%s listing of %.190s: %s", service, CHAR(STRING_ELT(where, 0)), e.msg);
    zarr_raise(e.kind, NULL, NULL, msg);
  }
  /* R allocations may jump: the page is freed whatever happens */
  return R_ExecWithCleanup(s3_list_build, &l, s3_list_cleanup, &l);
}

SEXP ffi_s3_parse_list(SEXP body, SEXP where) { return parse_list(body, where, "S3", xml_s3_list); }

SEXP ffi_azure_parse_list(SEXP body, SEXP where) { return parse_list(body, where, "Azure", xml_azure_list); }

/* The text of the first <tag> of an XML document (an S3 error's Code or
 * Message), or NULL. */
SEXP ffi_xml_text(SEXP body, SEXP tag) {
  need_raw(body);
  char out[1024];
  if (xml_first_text(RAW(body), (size_t)XLENGTH(body), CHAR(STRING_ELT(tag, 0)), out, sizeof out)) return R_NilValue;
  return ScalarString(mkCharCE(out, CE_UTF8));
}

/* Tests only: set the piece size of zlib/libbz2 calls (zarr_core.h) so that
 * the piecewise paths of chunks over 4 GiB run on small chunks; NULL leaves
 * it. Returns the previous size. */
SEXP ffi_codec_piece(SEXP n) {
  double old = (double)zarr_codec_piece;
  if (!isNull(n)) {
    double v = asReal(n);
    if (!(v >= 1 && v <= (double)((size_t)1 << 30)))
      zarr_raise(ZE_VALUE, NULL, NULL, "the piece size must be between 1 byte and 1 GiB");
    zarr_codec_piece = (size_t)v;
  }
  return ScalarReal(old);
}

/* CF unpacking in one pass (R/cf.R's cf_decode): x (integer or double) ->
 * x * scale + offset as double, NA where x is NA, equals one of `markers`
 * (_FillValue, missing_value) or lies outside range = c(lo, hi) (NA: no
 * bound). Compared on the stored values, as netCDF does. */
SEXP ffi_cf_unpack(SEXP x, SEXP scale, SEXP offset, SEXP markers, SEXP range) {
  R_xlen_t n = XLENGTH(x);
  int nm = LENGTH(markers);
  const double *m = REAL(markers);
  double s = Rf_asReal(scale), o = Rf_asReal(offset);
  double lo = REAL(range)[0], hi = REAL(range)[1];
  int has_lo = !ISNAN(lo), has_hi = !ISNAN(hi);
  SEXP out = PROTECT(Rf_allocVector(REALSXP, n));
  double *r = REAL(out);
  int is_int = TYPEOF(x) == INTSXP;
  const int *xi = is_int ? INTEGER(x) : NULL;
  const double *xd = is_int ? NULL : REAL(x);
  for (R_xlen_t i = 0; i < n; i++) {
    double v;
    if (is_int) {
      if (xi[i] == NA_INTEGER) { r[i] = NA_REAL; continue; }
      v = (double)xi[i];
    } else {
      v = xd[i];
      if (ISNAN(v)) { r[i] = ISNA(v) ? NA_REAL : v; continue; }
    }
    int miss = (has_lo && v < lo) || (has_hi && v > hi);
    for (int k = 0; !miss && k < nm; k++) miss = v == m[k];
    r[i] = miss ? NA_REAL : v * s + o;
  }
  UNPROTECT(1);
  return out;
}

/* json_member_spans() of R/consolidated.R: list(names, bytes) of the members
 * of the object at `path` in the document `raw`, NULL when it has none,
 * FALSE when a member name holds an escape (R decodes those). */
typedef struct {
  SEXP raw;
  zjson_member *m;
  size_t nm;
} spans_call;

static SEXP spans_result(void *data) {
  const spans_call *c = data;
  for (size_t i = 0; i < c->nm; i++)
    if (c->m[i].name_len > INT_MAX) return ScalarLogical(FALSE); /* longer than R's strings: the R scan refuses it */
  const char *src = (const char *)RAW(c->raw);
  SEXP names = PROTECT(allocVector(STRSXP, (R_xlen_t)c->nm));
  SEXP bytes = PROTECT(allocVector(VECSXP, (R_xlen_t)c->nm));
  for (size_t i = 0; i < c->nm; i++) {
    const zjson_member *x = &c->m[i];
    SET_STRING_ELT(names, (R_xlen_t)i, mkCharLenCE(src + x->name_off, (int)x->name_len, CE_UTF8));
    SEXP b = allocVector(RAWSXP, (R_xlen_t)(x->to - x->from));
    SET_VECTOR_ELT(bytes, (R_xlen_t)i, b);
    if (XLENGTH(b)) memcpy(RAW(b), src + x->from, (size_t)XLENGTH(b));
  }
  const char *fields[] = {"names", "bytes", ""};
  SEXP out = PROTECT(mkNamed(VECSXP, fields));
  SET_VECTOR_ELT(out, 0, names);
  SET_VECTOR_ELT(out, 1, bytes);
  UNPROTECT(3);
  return out;
}

static void spans_free(void *data) { free(((spans_call *)data)->m); }

SEXP ffi_json_member_spans(SEXP raw, SEXP path) {
  if (TYPEOF(raw) != RAWSXP || TYPEOF(path) != STRSXP) return R_NilValue;
  int np = LENGTH(path);
  const char **keys = (const char **)R_alloc((size_t)np + 1, sizeof(char *));
  for (int i = 0; i < np; i++) keys[i] = translateCharUTF8(STRING_ELT(path, i));
  spans_call c = {raw, NULL, 0};
  int rc = json_object_members(RAW(raw), (size_t)XLENGTH(raw), keys, np, &c.m, &c.nm);
  if (rc == JSON_NOMEM) zarr_raise(ZE_NOMEM, NULL, NULL, "out of memory scanning a JSON document");
  if (rc == JSON_NO_OBJECT) return R_NilValue;
  if (rc == JSON_ESCAPED) return ScalarLogical(FALSE);
  /* the members are freed however building the result ends */
  return R_ExecWithCleanup(spans_result, &c, spans_free, &c);
}
