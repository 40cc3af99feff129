/* Icechunk objects written (spec 2): snapshots, manifests, transaction logs
 * and the repo info, each a flatbuffer (flatbuf.h's writer) behind the
 * 39-byte header, zstd-compressed, as the reader in icechunk.c checks them.
 * R (R/icechunk_write.R) decides what goes in; these functions only lay out
 * the bytes of the lists it hands over. Ids travel as Crockford base 32. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>
#include "zarr.h"
#include "icechunk.h"

#define IMPL_NAME "zarr-r"

static SEXP el(SEXP list, const char *name) {
  SEXP nm = getAttrib(list, R_NamesSymbol);
  if (TYPEOF(list) == VECSXP && nm != R_NilValue)
    for (R_xlen_t i = 0; i < XLENGTH(list); i++)
      if (strcmp(CHAR(STRING_ELT(nm, i)), name) == 0) return VECTOR_ELT(list, i);
  zarr_raise(ZE_STORE, NULL, NULL, "internal: an Icechunk object description lacks a field");
  return R_NilValue;
}

static void want(int ok) {
  if (!ok) zarr_raise(ZE_STORE, NULL, NULL, "internal: an Icechunk object description has a field of the wrong type");
}

/* Crockford base 32 (as ic_base32() writes it) back to `n` bytes. */
static void id_bytes(SEXP s, R_xlen_t i, uint8_t *out, size_t n) {
  want(TYPEOF(s) == STRSXP && i < XLENGTH(s) && STRING_ELT(s, i) != NA_STRING);
  const char *p = CHAR(STRING_ELT(s, i));
  if (strlen(p) != (n * 8 + 4) / 5) zarr_raise(ZE_ICECHUNK, NULL, NULL, "an object id of the wrong length");
  static const char A[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  uint32_t acc = 0;
  int bits = 0;
  size_t k = 0;
  for (; *p && k < n; p++) {
    const char *c = strchr(A, *p);
    if (c == NULL || *p == '\0') zarr_raise(ZE_ICECHUNK, NULL, NULL, "an object id that is not base 32");
    acc = (acc << 5) | (uint32_t)(c - A);
    bits += 5;
    if (bits >= 8) {
      out[k++] = (uint8_t)(acc >> (bits - 8));
      bits -= 8;
    }
  }
}

static const char *utf8(SEXP s, R_xlen_t i) {
  want(TYPEOF(s) == STRSXP && i < XLENGTH(s) && STRING_ELT(s, i) != NA_STRING);
  return translateCharUTF8(STRING_ELT(s, i));
}

static fb_ref str_at(fbw *b, SEXP s, R_xlen_t i) {
  const char *p = utf8(s, i);
  return fbw_string(b, p, strlen(p));
}

static double num(SEXP x, R_xlen_t i) {
  want((TYPEOF(x) == REALSXP || TYPEOF(x) == INTSXP) && i < XLENGTH(x));
  return TYPEOF(x) == REALSXP ? REAL(x)[i] : (double)INTEGER(x)[i];
}

static uint64_t u64_at(SEXP x, R_xlen_t i) {
  double v = num(x, i);
  if (!(v >= 0 && v < 18446744073709551616.0)) zarr_raise(ZE_ICECHUNK, NULL, NULL, "a number out of range");
  return (uint64_t)v;
}

static uint32_t u32_at(SEXP x, R_xlen_t i) {
  double v = num(x, i);
  if (!(v >= 0 && v <= 4294967295.0)) zarr_raise(ZE_ICECHUNK, NULL, NULL, "a number out of range");
  return (uint32_t)v;
}

/* A vector of ObjectId8 or ObjectId12 structs from base 32 ids. */
static fb_ref id_vector(fbw *b, SEXP ids, size_t n) {
  want(TYPEOF(ids) == STRSXP);
  R_xlen_t k = XLENGTH(ids);
  uint8_t *buf = (uint8_t *)R_alloc((size_t)k + 1, n);
  for (R_xlen_t i = 0; i < k; i++) id_bytes(ids, i, buf + (size_t)i * n, n);
  return fbw_vector(b, buf, (size_t)k, n, 1);
}

/* The builder's buffer lives in an external pointer, so an R error in the
 * middle (a bad description) frees it. */
static void fbw_fin(SEXP p) {
  fbw *b = R_ExternalPtrAddr(p);
  if (b) {
    fbw_free(b);
    free(b);
  }
  R_ClearExternalPtr(p);
}

static fbw *builder(zerr *e) {
  fbw *b = calloc(1, sizeof *b);
  if (b == NULL) zarr_raise(ZE_NOMEM, NULL, NULL, "cannot allocate a flatbuffer builder");
  SEXP ptr = PROTECT(R_MakeExternalPtr(b, R_NilValue, R_NilValue));
  R_RegisterCFinalizerEx(ptr, fbw_fin, TRUE);
  fbw_init(b, e);
  return b; /* one PROTECT left on the stack */
}

/* Header and zstd-compressed payload: the object's bytes. */
static SEXP object(fbw *b, fb_ref root, int type, int spec, zerr *e) {
  size_t n = 0;
  const uint8_t *p = fbw_finish(b, root, &n);
  if (p == NULL) zarr_raise_err(e, NULL, NULL);
  size_t bound = ZSTD_compressBound(n);
  /* R_alloc: freed with the call, also when allocVector() below fails */
  uint8_t *z = (uint8_t *)R_alloc(bound, 1);
  size_t got = ZSTD_compress(z, bound, p, n, 3);
  if (ZSTD_isError(got)) zarr_raise(ZE_ICECHUNK, NULL, NULL, "zstd cannot compress an Icechunk object");
  SEXP out = PROTECT(allocVector(RAWSXP, (R_xlen_t)(IC_HEADER_LEN + got)));
  uint8_t *o = RAW(out);
  memcpy(o, IC_MAGIC, sizeof IC_MAGIC);
  memset(o + 12, ' ', 24);
  memcpy(o + 12, IMPL_NAME, strlen(IMPL_NAME));
  o[36] = (uint8_t)spec;
  o[37] = (uint8_t)type;
  o[38] = 1;
  memcpy(o + IC_HEADER_LEN, z, got);
  UNPROTECT(1);
  return out;
}

/* ---- snapshot ---------------------------------------------------------------- */

static fb_ref array_data(fbw *b, SEXP shape, SEXP nchunks, SEXP dimnames, SEXP man, int spec) {
  R_xlen_t nd = XLENGTH(shape);
  want(XLENGTH(nchunks) == nd);
  fb_ref dn = 0;
  if (dimnames != R_NilValue) {
    want(TYPEOF(dimnames) == STRSXP && XLENGTH(dimnames) == nd);
    fb_ref *r = (fb_ref *)R_alloc((size_t)nd + 1, sizeof *r);
    for (R_xlen_t d = 0; d < nd; d++) {
      fb_ref s = STRING_ELT(dimnames, d) == NA_STRING ? 0 : str_at(b, dimnames, d);
      fbw_start(b);
      if (s) fbw_ref(b, 0, s);
      r[d] = fbw_end(b);
    }
    dn = fbw_vec_refs(b, r, (size_t)nd);
  }
  SEXP ids = el(man, "id"), from = el(man, "from"), to = el(man, "to");
  R_xlen_t nm = XLENGTH(ids);
  want(XLENGTH(from) == nm * nd && XLENGTH(to) == nm * nd);
  fb_ref *mr = (fb_ref *)R_alloc((size_t)nm + 1, sizeof *mr);
  for (R_xlen_t j = 0; j < nm; j++) {
    uint8_t *ext = (uint8_t *)R_alloc((size_t)nd + 1, 8);
    for (R_xlen_t d = 0; d < nd; d++) {
      fb_wr32(ext + 8 * d, u32_at(from, j + d * nm)); /* matrices: one row per manifest */
      fb_wr32(ext + 8 * d + 4, u32_at(to, j + d * nm));
    }
    fb_ref ev = fbw_vector(b, ext, (size_t)nd, 8, 4);
    uint8_t id[12];
    id_bytes(ids, j, id, 12);
    fbw_start(b);
    fbw_struct(b, 0, id, 12, 1);
    fbw_ref(b, 1, ev);
    mr[j] = fbw_end(b);
  }
  fb_ref mv = fbw_vec_refs(b, mr, (size_t)nm);
  fb_ref sv2 = 0, sv;
  if (spec >= 2) {
    fb_ref *sr = (fb_ref *)R_alloc((size_t)nd + 1, sizeof *sr);
    for (R_xlen_t d = 0; d < nd; d++) {
      fbw_start(b);
      fbw_u64(b, 0, u64_at(shape, d));
      fbw_u32(b, 1, u32_at(nchunks, d));
      sr[d] = fbw_end(b);
    }
    sv2 = fbw_vec_refs(b, sr, (size_t)nd);
    sv = fbw_vector(b, NULL, 0, 16, 8); /* spec 2: the old shape stays empty */
  } else { /* spec 1: lengths and chunk lengths (as ceil(length / chunks)) */
    uint8_t *ds = (uint8_t *)R_alloc((size_t)nd + 1, 16);
    for (R_xlen_t d = 0; d < nd; d++) {
      uint64_t len = u64_at(shape, d), nc = u32_at(nchunks, d);
      fb_wr64(ds + 16 * d, len);
      fb_wr64(ds + 16 * d + 8, nc ? (len + nc - 1) / nc : 0);
    }
    sv = fbw_vector(b, ds, (size_t)nd, 16, 8);
  }
  fbw_start(b);
  fbw_ref(b, 0, sv);
  if (dn) fbw_ref(b, 1, dn);
  fbw_ref(b, 2, mv);
  if (sv2) fbw_ref(b, 3, sv2);
  return fbw_end(b);
}

static fb_ref snapshot(fbw *b, SEXP spec, int sv) {
  SEXP nodes = el(spec, "nodes");
  SEXP path = el(nodes, "path"), nid = el(nodes, "node_id"), ud = el(nodes, "user_data"), arr = el(nodes, "is_array");
  SEXP shape = el(nodes, "shape"), nch = el(nodes, "num_chunks"), dimn = el(nodes, "dimension_names"),
       man = el(nodes, "manifests");
  want(TYPEOF(path) == STRSXP && TYPEOF(arr) == LGLSXP && TYPEOF(shape) == VECSXP && TYPEOF(nch) == VECSXP &&
       TYPEOF(dimn) == VECSXP && TYPEOF(man) == VECSXP);
  R_xlen_t n = XLENGTH(path);
  want(XLENGTH(nid) == n && XLENGTH(ud) == n && XLENGTH(arr) == n && XLENGTH(shape) == n && XLENGTH(nch) == n &&
       XLENGTH(dimn) == n && XLENGTH(man) == n);
  fb_ref *nr = (fb_ref *)R_alloc((size_t)n + 1, sizeof *nr);
  for (R_xlen_t i = 0; i < n; i++) {
    fb_ref p = str_at(b, path, i);
    const char *u = utf8(ud, i);
    fb_ref uv = fbw_vector(b, u, strlen(u), 1, 1);
    fb_ref data;
    if (LOGICAL(arr)[i]) {
      data = array_data(b, VECTOR_ELT(shape, i), VECTOR_ELT(nch, i), VECTOR_ELT(dimn, i), VECTOR_ELT(man, i), sv);
    } else {
      fbw_start(b);
      data = fbw_end(b);
    }
    uint8_t id[8];
    id_bytes(nid, i, id, 8);
    fbw_start(b);
    fbw_struct(b, 0, id, 8, 1);
    fbw_ref(b, 1, p);
    fbw_ref(b, 2, uv);
    fbw_u8(b, 3, LOGICAL(arr)[i] ? 1 : 2);
    fbw_ref(b, 4, data);
    nr[i] = fbw_end(b);
  }
  fb_ref nv = fbw_vec_refs(b, nr, (size_t)n);
  SEXP mf = el(spec, "manifest_files");
  SEXP mid = el(mf, "id"), msize = el(mf, "size"), mrefs = el(mf, "nrefs");
  R_xlen_t nm = XLENGTH(mid);
  fb_ref mfv = 0, mf1;
  if (sv >= 2) {
    fb_ref *mr = (fb_ref *)R_alloc((size_t)nm + 1, sizeof *mr);
    for (R_xlen_t j = 0; j < nm; j++) {
      uint8_t id[12];
      id_bytes(mid, j, id, 12);
      fbw_start(b);
      fbw_struct(b, 0, id, 12, 1);
      fbw_u64(b, 1, u64_at(msize, j));
      fbw_u32(b, 2, u32_at(mrefs, j));
      mr[j] = fbw_end(b);
    }
    mfv = fbw_vec_refs(b, mr, (size_t)nm);
    mf1 = fbw_vector(b, NULL, 0, 32, 8);
  } else { /* spec 1: structs of id, padding, size, count, padding */
    uint8_t *mf = (uint8_t *)R_alloc((size_t)nm + 1, 32);
    memset(mf, 0, 32 * ((size_t)nm + 1));
    for (R_xlen_t j = 0; j < nm; j++) {
      id_bytes(mid, j, mf + 32 * j, 12);
      fb_wr64(mf + 32 * j + 16, u64_at(msize, j));
      fb_wr32(mf + 32 * j + 24, u32_at(mrefs, j));
    }
    mf1 = fbw_vector(b, mf, (size_t)nm, 32, 8);
  }
  fb_ref msg = str_at(b, el(spec, "message"), 0);
  fb_ref meta = fbw_vec_refs(b, NULL, 0);
  uint8_t id[12];
  id_bytes(el(spec, "id"), 0, id, 12);
  SEXP parent = sv < 2 ? el(spec, "parent") : R_NilValue;
  int has_parent = sv < 2 && TYPEOF(parent) == STRSXP && XLENGTH(parent) == 1 && STRING_ELT(parent, 0) != NA_STRING;
  uint8_t pid[12];
  if (has_parent) id_bytes(parent, 0, pid, 12);
  fbw_start(b);
  fbw_struct(b, 0, id, 12, 1);
  if (has_parent) fbw_struct(b, 1, pid, 12, 1);
  fbw_ref(b, 2, nv);
  fbw_u64(b, 3, u64_at(el(spec, "flushed_at"), 0));
  fbw_ref(b, 4, msg);
  fbw_ref(b, 5, meta);
  fbw_ref(b, 6, mf1);
  if (mfv) fbw_ref(b, 7, mfv);
  return fbw_end(b);
}

/* ---- manifest ---------------------------------------------------------------- */

static fb_ref manifest(fbw *b, SEXP spec, int sv) {
  SEXP arrays = el(spec, "arrays");
  want(TYPEOF(arrays) == VECSXP);
  R_xlen_t na = XLENGTH(arrays);
  fb_ref *ar = (fb_ref *)R_alloc((size_t)na + 1, sizeof *ar);
  for (R_xlen_t a = 0; a < na; a++) {
    SEXP x = VECTOR_ELT(arrays, a);
    SEXP coords = el(x, "coords"), kind = el(x, "kind"), inl = el(x, "inline"), off = el(x, "offset"),
         len = el(x, "length"), cid = el(x, "chunk_id"), loc = el(x, "location"), etag = el(x, "etag"),
         mt = el(x, "last_modified");
    int nd = asInteger(el(x, "ndim"));
    want(TYPEOF(kind) == INTSXP && TYPEOF(coords) == INTSXP && TYPEOF(inl) == VECSXP && nd >= 0 &&
         nd <= ZARR_MAX_DIMS);
    R_xlen_t nr = XLENGTH(kind);
    want(XLENGTH(coords) == nr * nd && XLENGTH(inl) == nr && XLENGTH(off) == nr && XLENGTH(len) == nr &&
         XLENGTH(cid) == nr && XLENGTH(loc) == nr && XLENGTH(etag) == nr && XLENGTH(mt) == nr);
    fb_ref *rr = (fb_ref *)R_alloc((size_t)nr + 1, sizeof *rr);
    uint32_t ix[ZARR_MAX_DIMS];
    for (R_xlen_t i = 0; i < nr; i++) {
      for (int d = 0; d < nd; d++) {
        int c = INTEGER(coords)[i * nd + d];
        if (c < 0) zarr_raise(ZE_ICECHUNK, NULL, NULL, "a negative chunk index");
        ix[d] = (uint32_t)c;
      }
      fb_ref iv = fbw_vec_u32(b, ix, (size_t)nd);
      int k = INTEGER(kind)[i];
      fb_ref iref = 0, lref = 0, eref = 0;
      if (k == IC_INLINE) {
        SEXP r = VECTOR_ELT(inl, i);
        want(TYPEOF(r) == RAWSXP);
        iref = fbw_vector(b, RAW(r), (size_t)XLENGTH(r), 1, 1);
      } else if (k == IC_VIRTUAL) {
        lref = str_at(b, loc, i);
        if (STRING_ELT(etag, i) != NA_STRING) eref = str_at(b, etag, i);
      } else {
        want(k == IC_NATIVE);
      }
      uint8_t id[12];
      if (k == IC_NATIVE) id_bytes(cid, i, id, 12);
      fbw_start(b);
      fbw_ref(b, 0, iv);
      if (iref) fbw_ref(b, 1, iref);
      if (k != IC_INLINE) {
        fbw_u64(b, 2, u64_at(off, i));
        fbw_u64(b, 3, u64_at(len, i));
      }
      if (k == IC_NATIVE) fbw_struct(b, 4, id, 12, 1);
      if (lref) fbw_ref(b, 5, lref);
      if (eref) fbw_ref(b, 6, eref);
      if (k == IC_VIRTUAL && !ISNAN(num(mt, i))) fbw_u32(b, 7, u32_at(mt, i));
      rr[i] = fbw_end(b);
    }
    fb_ref rv = fbw_vec_refs(b, rr, (size_t)nr);
    uint8_t nid[8];
    id_bytes(el(x, "node_id"), 0, nid, 8);
    fbw_start(b);
    fbw_struct(b, 0, nid, 8, 1);
    fbw_ref(b, 1, rv);
    ar[a] = fbw_end(b);
  }
  fb_ref av = fbw_vec_refs(b, ar, (size_t)na);
  uint8_t id[12];
  id_bytes(el(spec, "id"), 0, id, 12);
  fbw_start(b);
  fbw_struct(b, 0, id, 12, 1);
  fbw_ref(b, 1, av);
  if (sv >= 2) fbw_u8(b, 3, 0); /* locations are written as they are */
  return fbw_end(b);
}

/* ---- transaction log ------------------------------------------------------------ */

static fb_ref txlog(fbw *b, SEXP spec, int sv) {
  static const char *lists[] = {"new_groups", "new_arrays", "deleted_groups", "deleted_arrays", "updated_arrays",
                                "updated_groups"};
  fb_ref v[6];
  for (int i = 0; i < 6; i++) v[i] = id_vector(b, el(spec, lists[i]), 8);
  SEXP uc = el(spec, "updated_chunks");
  SEXP nid = el(uc, "node_id"), coords = el(uc, "coords"), ndim = el(uc, "ndim");
  want(TYPEOF(coords) == VECSXP && TYPEOF(ndim) == INTSXP);
  R_xlen_t na = XLENGTH(nid);
  want(XLENGTH(coords) == na && XLENGTH(ndim) == na);
  fb_ref *ar = (fb_ref *)R_alloc((size_t)na + 1, sizeof *ar);
  uint32_t ix[ZARR_MAX_DIMS];
  for (R_xlen_t a = 0; a < na; a++) {
    SEXP c = VECTOR_ELT(coords, a);
    int nd = INTEGER(ndim)[a];
    want(TYPEOF(c) == INTSXP && nd >= 0 && nd <= ZARR_MAX_DIMS && (nd == 0 || XLENGTH(c) % nd == 0));
    R_xlen_t nc = nd ? XLENGTH(c) / nd : XLENGTH(c);
    fb_ref *cr = (fb_ref *)R_alloc((size_t)nc + 1, sizeof *cr);
    for (R_xlen_t i = 0; i < nc; i++) {
      for (int d = 0; d < nd; d++) ix[d] = (uint32_t)INTEGER(c)[i * nd + d];
      fb_ref iv = fbw_vec_u32(b, ix, (size_t)nd);
      fbw_start(b);
      fbw_ref(b, 0, iv);
      cr[i] = fbw_end(b);
    }
    fb_ref cv = fbw_vec_refs(b, cr, (size_t)nc);
    uint8_t id[8];
    id_bytes(nid, a, id, 8);
    fbw_start(b);
    fbw_struct(b, 0, id, 8, 1);
    fbw_ref(b, 1, cv);
    ar[a] = fbw_end(b);
  }
  fb_ref av = fbw_vec_refs(b, ar, (size_t)na);
  fb_ref moved = sv >= 2 ? fbw_vec_refs(b, NULL, 0) : 0;
  uint8_t id[12];
  id_bytes(el(spec, "id"), 0, id, 12);
  fbw_start(b);
  fbw_struct(b, 0, id, 12, 1);
  for (int i = 0; i < 6; i++) fbw_ref(b, 1 + i, v[i]);
  fbw_ref(b, 7, av);
  if (moved) fbw_ref(b, 8, moved);
  return fbw_end(b);
}

/* ---- repo info ------------------------------------------------------------------ */

static fb_ref ref_vector(fbw *b, SEXP refs) {
  SEXP name = el(refs, "name"), idx = el(refs, "index");
  R_xlen_t n = XLENGTH(name);
  want(XLENGTH(idx) == n);
  fb_ref *r = (fb_ref *)R_alloc((size_t)n + 1, sizeof *r);
  for (R_xlen_t i = 0; i < n; i++) {
    fb_ref s = str_at(b, name, i);
    fbw_start(b);
    fbw_ref(b, 0, s);
    fbw_u32(b, 1, u32_at(idx, i));
    r[i] = fbw_end(b);
  }
  return fbw_vec_refs(b, r, (size_t)n);
}

/* Update kinds of the schema's union UpdateType, 1-based. */
enum { UP_INIT = 1, UP_TAG_CREATED = 5, UP_BRANCH_CREATED = 7, UP_BRANCH_RESET = 9, UP_NEW_COMMIT = 10 };

static fb_ref update(fbw *b, SEXP ups, R_xlen_t i) {
  int type = INTEGER(el(ups, "type"))[i];
  SEXP name = el(ups, "name"), prev = el(ups, "previous"), next = el(ups, "new");
  fb_ref s = 0;
  uint8_t id[12];
  if (type != UP_INIT) s = str_at(b, name, i);
  fbw_start(b);
  switch (type) {
  case UP_INIT: break;
  case UP_TAG_CREATED:
  case UP_BRANCH_CREATED: fbw_ref(b, 0, s); break;
  case UP_BRANCH_RESET:
    fbw_ref(b, 0, s);
    id_bytes(prev, i, id, 12);
    fbw_struct(b, 1, id, 12, 1);
    break;
  case UP_NEW_COMMIT:
    fbw_ref(b, 0, s);
    id_bytes(next, i, id, 12);
    fbw_struct(b, 1, id, 12, 1);
    break;
  default: zarr_raise(ZE_STORE, NULL, NULL, "internal: an unknown Icechunk update");
  }
  fb_ref value = fbw_end(b);
  SEXP bk = el(ups, "backup");
  fb_ref bp = STRING_ELT(bk, i) == NA_STRING ? 0 : str_at(b, bk, i);
  fbw_start(b);
  fbw_u8(b, 0, (uint8_t)type);
  fbw_ref(b, 1, value);
  fbw_u64(b, 2, u64_at(el(ups, "at"), i));
  if (bp) fbw_ref(b, 3, bp);
  return fbw_end(b);
}

/* What the old repo info has that R does not handle (its configuration,
 * feature flags and metadata) carries over as it is. */
typedef struct {
  fb_buf buf; /* the old payload, which the vectors point into */
  fb_vec config, enabled, disabled, meta;
  int has_config, has_enabled, has_disabled, has_meta;
} repo_extra;

static fb_ref repo(fbw *b, SEXP spec, const repo_extra *x, zerr *e) {
  fb_ref tags = ref_vector(b, el(spec, "tags"));
  fb_ref branches = ref_vector(b, el(spec, "branches"));
  SEXP dt = el(spec, "deleted_tags");
  R_xlen_t ndt = XLENGTH(dt);
  fb_ref *dr = (fb_ref *)R_alloc((size_t)ndt + 1, sizeof *dr);
  for (R_xlen_t i = 0; i < ndt; i++) dr[i] = str_at(b, dt, i);
  fb_ref dtv = fbw_vec_refs(b, dr, (size_t)ndt);
  SEXP sn = el(spec, "snapshots");
  SEXP sid = el(sn, "id"), par = el(sn, "parent"), at = el(sn, "flushed_at"), msg = el(sn, "message");
  R_xlen_t ns = XLENGTH(sid);
  want(TYPEOF(par) == INTSXP && XLENGTH(par) == ns && XLENGTH(at) == ns && XLENGTH(msg) == ns);
  fb_ref *sr = (fb_ref *)R_alloc((size_t)ns + 1, sizeof *sr);
  for (R_xlen_t i = 0; i < ns; i++) {
    fb_ref m = str_at(b, msg, i);
    uint8_t id[12];
    id_bytes(sid, i, id, 12);
    fbw_start(b);
    fbw_struct(b, 0, id, 12, 1);
    fbw_i32(b, 1, INTEGER(par)[i]);
    fbw_u64(b, 2, u64_at(at, i));
    fbw_ref(b, 3, m);
    sr[i] = fbw_end(b);
  }
  fb_ref sv = fbw_vec_refs(b, sr, (size_t)ns);
  fbw_start(b);
  fbw_u8(b, 0, 0); /* online */
  fbw_u64(b, 1, u64_at(el(spec, "status_at"), 0));
  fb_ref status = fbw_end(b);
  SEXP ups = el(spec, "updates");
  R_xlen_t nu = XLENGTH(el(ups, "type"));
  fb_ref *ur = (fb_ref *)R_alloc((size_t)nu + 1, sizeof *ur);
  for (R_xlen_t i = 0; i < nu; i++) ur[i] = update(b, ups, i);
  fb_ref uv = fbw_vec_refs(b, ur, (size_t)nu);
  SEXP before = el(spec, "before");
  fb_ref bf = STRING_ELT(before, 0) == NA_STRING ? 0 : str_at(b, before, 0);
  fb_ref cfg = 0, en = 0, dis = 0, meta = 0;
  if (x->has_config) cfg = fbw_vector(b, fb_vec_at(&x->config, 0), x->config.count, 1, 1);
  if (x->has_enabled) en = fbw_vector(b, fb_vec_at(&x->enabled, 0), x->enabled.count, 2, 2);
  if (x->has_disabled) dis = fbw_vector(b, fb_vec_at(&x->disabled, 0), x->disabled.count, 2, 2);
  if (x->has_meta) {
    fb_ref *mr = (fb_ref *)R_alloc(x->meta.count + 1, sizeof *mr);
    for (size_t i = 0; i < x->meta.count; i++) {
      fb_table t;
      const char *s;
      size_t n;
      fb_vec v;
      if (fb_vec_table(&x->meta, i, &t, e) || fb_string(&t, 0, &s, &n, e) < 0 || fb_vector(&t, 1, 1, &v, e) < 0)
        zarr_raise_err(e, NULL, "repo");
      fb_ref ns_ = fbw_string(b, s, n), vv = fbw_vector(b, v.count ? fb_vec_at(&v, 0) : NULL, v.count, 1, 1);
      fbw_start(b);
      fbw_ref(b, 0, ns_);
      fbw_ref(b, 1, vv);
      mr[i] = fbw_end(b);
    }
    meta = fbw_vec_refs(b, mr, x->meta.count);
  }
  fbw_start(b);
  fbw_u8(b, 0, 2);
  fbw_ref(b, 1, tags);
  fbw_ref(b, 2, branches);
  fbw_ref(b, 3, dtv);
  fbw_ref(b, 4, sv);
  fbw_ref(b, 5, status);
  if (meta) fbw_ref(b, 6, meta);
  fbw_ref(b, 7, uv);
  if (bf) fbw_ref(b, 8, bf);
  if (cfg) fbw_ref(b, 9, cfg);
  if (en) fbw_ref(b, 10, en);
  if (dis) fbw_ref(b, 11, dis);
  return fbw_end(b);
}

static void carried(SEXP old, zbuf *payload, repo_extra *x, zerr *e) {
  memset(x, 0, sizeof *x);
  if (old == R_NilValue) return;
  want(TYPEOF(old) == RAWSXP);
  ic_header h;
  fb_table root;
  if (ic_payload(RAW(old), (size_t)XLENGTH(old), IC_REPO, 1 << 28, &h, payload, e)) zarr_raise_err(e, NULL, "repo");
  x->buf.p = payload->data;
  x->buf.n = payload->size;
  if (fb_root(&x->buf, &root, e)) zarr_raise_err(e, NULL, "repo");
  if ((x->has_meta = fb_vector(&root, 6, 4, &x->meta, e)) < 0 ||
      (x->has_config = fb_vector(&root, 9, 1, &x->config, e)) < 0 ||
      (x->has_enabled = fb_vector(&root, 10, 2, &x->enabled, e)) < 0 ||
      (x->has_disabled = fb_vector(&root, 11, 2, &x->disabled, e)) < 0)
    zarr_raise_err(e, NULL, "repo");
}

static void zbuf_fin(SEXP p) {
  zbuf *z = R_ExternalPtrAddr(p);
  if (z) {
    zbuf_free(z);
    free(z);
  }
  R_ClearExternalPtr(p);
}

/* The bytes of an Icechunk object of `type` described by `spec`; `old`: the
 * repo info being replaced (NULL for a new repository), for what carries over. */
SEXP ffi_icechunk_write(SEXP type, SEXP spec, SEXP old) {
  int t = asInteger(type);
  zerr e = {ZE_OK, ""};
  zbuf *payload = calloc(1, sizeof *payload);
  if (payload == NULL) zarr_raise(ZE_NOMEM, NULL, NULL, "cannot allocate an Icechunk object");
  SEXP zp = PROTECT(R_MakeExternalPtr(payload, R_NilValue, R_NilValue));
  R_RegisterCFinalizerEx(zp, zbuf_fin, TRUE);
  repo_extra x;
  if (t == IC_REPO) carried(old, payload, &x, &e);
  fbw *b = builder(&e);
  /* the spec version of the object (1 or 2; the repo object exists in 2 only) */
  int sv = 2;
  SEXP nm = getAttrib(spec, R_NamesSymbol);
  for (R_xlen_t i = 0; nm != R_NilValue && i < XLENGTH(spec); i++)
    if (strcmp(CHAR(STRING_ELT(nm, i)), "spec_version") == 0) sv = asInteger(VECTOR_ELT(spec, i));
  if ((sv != 1 && sv != 2) || (sv == 1 && t == IC_REPO))
    zarr_raise(ZE_STORE, NULL, NULL, "internal: an Icechunk object of an unknown spec version");
  fb_ref root = t == IC_SNAPSHOT ? snapshot(b, spec, sv)
                : t == IC_MANIFEST ? manifest(b, spec, sv)
                : t == IC_TXLOG    ? txlog(b, spec, sv)
                : t == IC_REPO     ? repo(b, spec, &x, &e)
                                   : 0;
  SEXP out = object(b, root, t, sv, &e);
  UNPROTECT(2);
  return out;
}

/* `n` random bytes as base 32: new object ids. From the system's source of
 * randomness (ids of one repository must not collide across processes);
 * R's generator is left alone. */
SEXP ffi_icechunk_new_id(SEXP n_) {
  int n = asInteger(n_);
  if (n != 8 && n != 12) zarr_raise(ZE_STORE, NULL, NULL, "internal: ids are 8 or 12 bytes");
  uint8_t id[12];
  int ok = 0;
  FILE *f = fopen("/dev/urandom", "rb");
  if (f) {
    ok = fread(id, 1, (size_t)n, f) == (size_t)n;
    fclose(f);
  }
  if (!ok) { /* Windows: time, clock and an address mixed (splitmix64) */
    static uint64_t s = 0;
    s += (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ULL + (uint64_t)clock() + (uint64_t)(uintptr_t)&s;
    for (int i = 0; i < n; i += 8) {
      uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
      z ^= z >> 31;
      for (int k = 0; k < 8 && i + k < n; k++) id[i + k] = (uint8_t)(z >> (8 * k));
    }
  }
  char buf[32];
  ic_base32(id, (size_t)n, buf);
  return mkString(buf);
}
