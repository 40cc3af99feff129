/* R entry points for Icechunk objects (icechunk.c parses them): each takes
 * the object's bytes and its key (for messages) and returns plain R lists.
 * The parsed object lives in an external pointer while R objects are made,
 * so an allocation failure of R cannot leak it. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "zarr.h"
#include "icechunk.h"

typedef struct {
  int type;
  union {
    ic_repo r;
    ic_snapshot s;
    ic_manifest m;
  } u;
} holder;

static void holder_free(holder *h) {
  if (h == NULL) return;
  if (h->type == IC_REPO) ic_repo_free(&h->u.r);
  else if (h->type == IC_SNAPSHOT) ic_snapshot_free(&h->u.s);
  else ic_manifest_free(&h->u.m);
  free(h);
}

static void holder_fin(SEXP p) {
  holder_free(R_ExternalPtrAddr(p));
  R_ClearExternalPtr(p);
}

/* Parse `raw` as an object of `type` into a holder protected on the stack
 * (one PROTECT); raises the error naming `key`. `limit`: the parse budget
 * in bytes (zarr.max_decoded_bytes). */
static holder *parse(SEXP raw, SEXP key, SEXP limit, int type) {
  if (TYPEOF(raw) != RAWSXP || TYPEOF(key) != STRSXP || XLENGTH(key) != 1 || TYPEOF(limit) != REALSXP ||
      XLENGTH(limit) != 1 || !(REAL(limit)[0] >= 1))
    zarr_raise(ZE_STORE, NULL, NULL, "internal: bad arguments to an Icechunk parser");
  double lim = REAL(limit)[0];
  size_t budget = lim >= (double)(SIZE_MAX / 2) ? SIZE_MAX / 2 : (size_t)lim;
  holder *h = calloc(1, sizeof *h);
  if (h == NULL) zarr_raise(ZE_NOMEM, NULL, CHAR(STRING_ELT(key, 0)), "cannot allocate an Icechunk object");
  h->type = type;
  SEXP ptr = PROTECT(R_MakeExternalPtr(h, R_NilValue, R_NilValue));
  R_RegisterCFinalizerEx(ptr, holder_fin, TRUE);
  zerr e = {ZE_OK, ""};
  const uint8_t *p = RAW(raw);
  size_t n = (size_t)XLENGTH(raw);
  int rc = type == IC_REPO       ? ic_repo_parse(p, n, budget, &h->u.r, &e)
           : type == IC_SNAPSHOT ? ic_snapshot_parse(p, n, budget, &h->u.s, &e)
                                 : ic_manifest_parse(p, n, budget, &h->u.m, &e);
  if (rc) {
    holder_free(h);
    R_ClearExternalPtr(ptr);
    zarr_raise_err(&e, NULL, CHAR(STRING_ELT(key, 0)));
  }
  return h;
}

static SEXP mkstr(ic_str s) {
  if (s.n > INT_MAX) zarr_raise(ZE_ICECHUNK, NULL, NULL, "a string of an Icechunk object is too long for R");
  return mkCharLenCE(s.s, (int)s.n, CE_UTF8);
}

static SEXP id_str(const uint8_t *id, size_t n) {
  char buf[32];
  ic_base32(id, n, buf);
  return mkChar(buf);
}

static SEXP named_list(const char **names, int n) {
  SEXP out = PROTECT(allocVector(VECSXP, n));
  SEXP nm = PROTECT(allocVector(STRSXP, n));
  for (int i = 0; i < n; i++) SET_STRING_ELT(nm, i, mkChar(names[i]));
  setAttrib(out, R_NamesSymbol, nm);
  UNPROTECT(2);
  return out;
}

static void header_fields(SEXP out, const ic_header *h) {
  SET_VECTOR_ELT(out, 0, ScalarInteger(h->spec));
  SET_VECTOR_ELT(out, 1, mkString(h->impl));
}

static SEXP refs_list(const ic_ref *r, size_t n) {
  static const char *nm[] = {"name", "snapshot"};
  SEXP out = PROTECT(named_list(nm, 2));
  SEXP name = PROTECT(allocVector(STRSXP, (R_xlen_t)n));
  SEXP snap = PROTECT(allocVector(INTSXP, (R_xlen_t)n));
  for (size_t i = 0; i < n; i++) {
    SET_STRING_ELT(name, (R_xlen_t)i, mkstr(r[i].name));
    INTEGER(snap)[i] = (int)r[i].snap + 1;
  }
  SET_VECTOR_ELT(out, 0, name);
  SET_VECTOR_ELT(out, 1, snap);
  UNPROTECT(3);
  return out;
}

SEXP ffi_icechunk_repo(SEXP raw, SEXP key, SEXP limit) {
  holder *h = parse(raw, key, limit, IC_REPO);
  ic_repo *r = &h->u.r;
  if (r->nsnaps > INT_MAX - 1) zarr_raise(ZE_ICECHUNK, NULL, CHAR(STRING_ELT(key, 0)), "too many snapshots for R");
  static const char *nm[] = {"spec_version", "implementation", "branches", "tags", "snapshots"};
  SEXP out = PROTECT(named_list(nm, 5));
  header_fields(out, &r->h);
  SET_VECTOR_ELT(out, 2, refs_list(r->branches, r->nbranches));
  SET_VECTOR_ELT(out, 3, refs_list(r->tags, r->ntags));
  static const char *sn[] = {"id", "parent", "time", "message"};
  SEXP snaps = PROTECT(named_list(sn, 4));
  R_xlen_t n = (R_xlen_t)r->nsnaps;
  SEXP id = PROTECT(allocVector(STRSXP, n)), par = PROTECT(allocVector(INTSXP, n));
  SEXP tm = PROTECT(allocVector(REALSXP, n)), msg = PROTECT(allocVector(STRSXP, n));
  for (R_xlen_t i = 0; i < n; i++) {
    const ic_snapinfo *s = &r->snaps[i];
    SET_STRING_ELT(id, i, id_str(s->id, 12));
    INTEGER(par)[i] = s->parent < 0 ? NA_INTEGER : s->parent + 1;
    REAL(tm)[i] = (double)s->flushed_at / 1e6;
    SET_STRING_ELT(msg, i, mkstr(s->message));
  }
  SET_VECTOR_ELT(snaps, 0, id);
  SET_VECTOR_ELT(snaps, 1, par);
  SET_VECTOR_ELT(snaps, 2, tm);
  SET_VECTOR_ELT(snaps, 3, msg);
  SET_VECTOR_ELT(out, 4, snaps);
  UNPROTECT(7); /* + the holder */
  return out;
}

SEXP ffi_icechunk_snapshot(SEXP raw, SEXP key, SEXP limit) {
  holder *h = parse(raw, key, limit, IC_SNAPSHOT);
  ic_snapshot *s = &h->u.s;
  static const char *nm[] = {"spec_version", "implementation", "id", "parent", "time", "message", "nodes",
                             "manifest_files"};
  SEXP out = PROTECT(named_list(nm, 8));
  header_fields(out, &s->h);
  SET_VECTOR_ELT(out, 2, ScalarString(id_str(s->id, 12)));
  SET_VECTOR_ELT(out, 3, ScalarString(s->has_parent ? id_str(s->parent, 12) : NA_STRING));
  SET_VECTOR_ELT(out, 4, ScalarReal((double)s->flushed_at / 1e6));
  SET_VECTOR_ELT(out, 5, ScalarString(mkstr(s->message)));
  static const char *nn[] = {"path", "node_id", "is_array", "user_data", "manifests"};
  SEXP nodes = PROTECT(named_list(nn, 5));
  R_xlen_t n = (R_xlen_t)s->nnodes;
  SEXP path = PROTECT(allocVector(STRSXP, n)), nid = PROTECT(allocVector(STRSXP, n));
  SEXP arr = PROTECT(allocVector(LGLSXP, n)), ud = PROTECT(allocVector(STRSXP, n));
  SEXP man = PROTECT(allocVector(VECSXP, n));
  for (R_xlen_t i = 0; i < n; i++) {
    const ic_node *nd = &s->nodes[i];
    SET_STRING_ELT(path, i, mkstr(nd->path));
    SET_STRING_ELT(nid, i, id_str(nd->id, 8));
    LOGICAL(arr)[i] = nd->is_array;
    if (memchr(nd->user_data.s, 0, nd->user_data.n) != NULL) {
      zerr e;
      zerr_set(&e, ZE_ICECHUNK, "malformed snapshot: the metadata of node '%.*s' holds a NUL",
               (int)(nd->path.n > 200 ? 200 : nd->path.n), nd->path.s);
      SET_STRING_ELT(ud, i, NA_STRING);
      zarr_raise_err(&e, NULL, CHAR(STRING_ELT(key, 0))); /* the finalizer frees the snapshot */
    }
    SET_STRING_ELT(ud, i, mkstr(nd->user_data));
    if (!nd->is_array) continue;
    static const char *mn[] = {"id", "from", "to"};
    SEXP m = PROTECT(named_list(mn, 3));
    R_xlen_t k = (R_xlen_t)nd->nman;
    int nd_dim = k ? nd->man[0].ndim : 0;
    SEXP ids = PROTECT(allocVector(STRSXP, k));
    SEXP from = PROTECT(allocMatrix(REALSXP, (int)k, nd_dim)), to = PROTECT(allocMatrix(REALSXP, (int)k, nd_dim));
    for (R_xlen_t j = 0; j < k; j++) {
      const ic_mref *r = &nd->man[j];
      SET_STRING_ELT(ids, j, id_str(r->id, 12));
      if (r->ndim != nd_dim) {
        zerr e;
        zerr_set(&e, ZE_ICECHUNK, "malformed snapshot: manifest extents of node '%.*s' differ in dimensions",
                 (int)(nd->path.n > 200 ? 200 : nd->path.n), nd->path.s);
        zarr_raise_err(&e, NULL, CHAR(STRING_ELT(key, 0)));
      }
      for (int d = 0; d < nd_dim; d++) {
        REAL(from)[j + (R_xlen_t)d * k] = r->from[d];
        REAL(to)[j + (R_xlen_t)d * k] = r->to[d];
      }
    }
    SET_VECTOR_ELT(m, 0, ids);
    SET_VECTOR_ELT(m, 1, from);
    SET_VECTOR_ELT(m, 2, to);
    SET_VECTOR_ELT(man, i, m);
    UNPROTECT(4);
  }
  SET_VECTOR_ELT(nodes, 0, path);
  SET_VECTOR_ELT(nodes, 1, nid);
  SET_VECTOR_ELT(nodes, 2, arr);
  SET_VECTOR_ELT(nodes, 3, ud);
  SET_VECTOR_ELT(nodes, 4, man);
  SET_VECTOR_ELT(out, 6, nodes);
  static const char *fn[] = {"id", "size", "nrefs"};
  SEXP mf = PROTECT(named_list(fn, 3));
  R_xlen_t nf = (R_xlen_t)s->nmfiles;
  SEXP fid = PROTECT(allocVector(STRSXP, nf)), fsz = PROTECT(allocVector(REALSXP, nf));
  SEXP fnr = PROTECT(allocVector(REALSXP, nf));
  for (R_xlen_t i = 0; i < nf; i++) {
    SET_STRING_ELT(fid, i, id_str(s->mfiles[i].id, 12));
    REAL(fsz)[i] = (double)s->mfiles[i].size;
    REAL(fnr)[i] = (double)s->mfiles[i].nrefs;
  }
  SET_VECTOR_ELT(mf, 0, fid);
  SET_VECTOR_ELT(mf, 1, fsz);
  SET_VECTOR_ELT(mf, 2, fnr);
  SET_VECTOR_ELT(out, 7, mf);
  UNPROTECT(12);
  return out;
}

SEXP ffi_icechunk_manifest(SEXP raw, SEXP key, SEXP limit) {
  holder *h = parse(raw, key, limit, IC_MANIFEST);
  ic_manifest *m = &h->u.m;
  static const char *nm[] = {"spec_version", "implementation", "arrays", "coords", "kind", "offset", "length",
                             "chunk_id", "location", "etag", "last_modified", "inline"};
  SEXP out = PROTECT(named_list(nm, 12));
  header_fields(out, &m->h);
  static const char *an[] = {"node_id", "first", "count", "ndim"};
  SEXP arrays = PROTECT(named_list(an, 4));
  R_xlen_t na = (R_xlen_t)m->narrays, n = (R_xlen_t)m->nrefs;
  if (m->nrefs > INT_MAX) zarr_raise(ZE_ICECHUNK, NULL, CHAR(STRING_ELT(key, 0)), "too many chunk references for R");
  SEXP nid = PROTECT(allocVector(STRSXP, na)), first = PROTECT(allocVector(INTSXP, na));
  SEXP count = PROTECT(allocVector(INTSXP, na)), ndim = PROTECT(allocVector(INTSXP, na));
  size_t ncoords = 0;
  for (R_xlen_t i = 0; i < na; i++) {
    SET_STRING_ELT(nid, i, id_str(m->arrays[i].node, 8));
    INTEGER(first)[i] = (int)m->arrays[i].first + 1;
    INTEGER(count)[i] = (int)m->arrays[i].count;
    INTEGER(ndim)[i] = m->arrays[i].ndim;
    ncoords += m->arrays[i].count * (size_t)m->arrays[i].ndim;
  }
  SET_VECTOR_ELT(arrays, 0, nid);
  SET_VECTOR_ELT(arrays, 1, first);
  SET_VECTOR_ELT(arrays, 2, count);
  SET_VECTOR_ELT(arrays, 3, ndim);
  SET_VECTOR_ELT(out, 2, arrays);
  SEXP coords = PROTECT(allocVector(INTSXP, (R_xlen_t)ncoords));
  for (size_t i = 0; i < ncoords; i++) {
    if (m->coords[i] > INT_MAX) {
      zerr e;
      zerr_set(&e, ZE_ICECHUNK, "chunk index %u is beyond what R can index", m->coords[i]);
      zarr_raise_err(&e, NULL, CHAR(STRING_ELT(key, 0)));
    }
    INTEGER(coords)[i] = (int)m->coords[i];
  }
  SET_VECTOR_ELT(out, 3, coords);
  SEXP kind = PROTECT(allocVector(INTSXP, n)), off = PROTECT(allocVector(REALSXP, n));
  SEXP len = PROTECT(allocVector(REALSXP, n)), cid = PROTECT(allocVector(STRSXP, n));
  SEXP loc = PROTECT(allocVector(STRSXP, n)), etag = PROTECT(allocVector(STRSXP, n));
  SEXP mt = PROTECT(allocVector(REALSXP, n)), inl = PROTECT(allocVector(VECSXP, n));
  for (R_xlen_t i = 0; i < n; i++) {
    INTEGER(kind)[i] = m->kind[i];
    REAL(off)[i] = (double)m->off[i];
    REAL(len)[i] = (double)m->len[i];
    SET_STRING_ELT(cid, i, m->kind[i] == IC_NATIVE ? id_str(m->chunk_id + 12 * i, 12) : NA_STRING);
    SET_STRING_ELT(loc, i, m->kind[i] == IC_VIRTUAL ? mkstr(m->loc[i]) : NA_STRING);
    SET_STRING_ELT(etag, i, m->kind[i] == IC_VIRTUAL && m->etag[i].n ? mkstr(m->etag[i]) : NA_STRING);
    REAL(mt)[i] = m->kind[i] == IC_VIRTUAL && m->mtime[i] ? (double)m->mtime[i] : NA_REAL;
    if (m->kind[i] == IC_INLINE) {
      SEXP b = allocVector(RAWSXP, (R_xlen_t)m->inl[i].n);
      SET_VECTOR_ELT(inl, i, b);
      if (m->inl[i].n) memcpy(RAW(b), m->inl[i].s, m->inl[i].n);
    }
  }
  SEXP cols[] = {kind, off, len, cid, loc, etag, mt, inl};
  for (int j = 0; j < 8; j++) SET_VECTOR_ELT(out, 4 + j, cols[j]);
  UNPROTECT(16);
  return out;
}
