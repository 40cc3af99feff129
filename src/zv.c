/* R entry points of the Zarr Vectors layouts (zv_layout.c). A blob comes as
 * a raw vector, or as the integer vector that reading a uint8 array gives;
 * temporary memory is R_alloc()ed, so an error leaves nothing behind. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include "zarr.h"
#include "zv.h"

static void zv_fail(const zerr *e, const char *what) { zarr_raise_err(e, what, NULL); }

static void zv_abort(const char *what, const char *msg) {
  zerr e = {ZE_OK, {0}};
  zerr_set(&e, ZE_ZV, "%s", msg);
  zv_fail(&e, what);
}

/* The bytes of a blob: a raw vector as it is, integers 0-255 narrowed. */
static const uint8_t *blob_bytes(SEXP x, size_t *n, const char *what) {
  if (TYPEOF(x) == RAWSXP) {
    *n = (size_t)XLENGTH(x);
    return RAW(x);
  }
  if (TYPEOF(x) != INTSXP && TYPEOF(x) != REALSXP) zv_abort(what, "a blob must be a raw or integer vector");
  R_xlen_t m = XLENGTH(x);
  uint8_t *b = (uint8_t *)R_alloc(m ? (size_t)m : 1, 1);
  if (TYPEOF(x) == INTSXP) {
    const int *v = INTEGER(x);
    for (R_xlen_t i = 0; i < m; i++) {
      if (v[i] < 0 || v[i] > 255) zv_abort(what, "a blob's bytes must lie in 0-255");
      b[i] = (uint8_t)v[i];
    }
  } else {
    const double *v = REAL(x);
    for (R_xlen_t i = 0; i < m; i++) {
      if (!(v[i] >= 0 && v[i] <= 255)) zv_abort(what, "a blob's bytes must lie in 0-255");
      b[i] = (uint8_t)v[i];
    }
  }
  *n = (size_t)m;
  return b;
}

/* The parse budget (option zarr.max_decoded_bytes, passed from R): what a
 * blob may make this file allocate, checked before allocating, since a few
 * bytes can name billions of rows (a range fragment, a manifest block). */
static void within_budget(double need, SEXP budget, const char *what, const char *thing) {
  double b = asReal(budget);
  if (ISNAN(b) || need <= b) return;
  char msg[256];
  snprintf(msg, sizeof msg, "%s would take %.0f bytes, more than the budget of %.0f (option zarr.max_decoded_bytes)",
           thing, need, b);
  zv_abort(what, msg);
}

static const char *what_of(SEXP what) {
  return (TYPEOF(what) == STRSXP && XLENGTH(what) == 1) ? CHAR(STRING_ELT(what, 0)) : NULL;
}

static zv_type type_of(SEXP dtype, const char *what) {
  zv_type t = ZV_F32; /* clang cannot see that zv_abort() does not return */
  if (TYPEOF(dtype) != STRSXP || XLENGTH(dtype) != 1 || zv_type_parse(CHAR(STRING_ELT(dtype, 0)), &t))
    zv_abort(what, "unknown element type of a ZV blob");
  return t;
}

/* Parse a fragment index: list(is_range, start, count, offsets, rows), where
 * offsets (F + 1) index rows, the rows of every fragment in turn. */
SEXP ffi_zv_frag_parse(SEXP blob, SEXP nrows, SEXP what, SEXP budget) {
  const char *w = what_of(what);
  size_t n;
  const uint8_t *p = blob_bytes(blob, &n, w);
  zv_frag f;
  zerr e = {ZE_OK, {0}};
  double nr = asReal(nrows);
  if (zv_frag_parse(p, n, (nr >= 0 && nr <= 9007199254740992.0) ? (int64_t)nr : -1, &f, &e)) zv_fail(&e, w);
  uint64_t total = zv_frag_total(&f);
  if (total > ((uint64_t)1 << 40)) zv_abort(w, "fragment index claims more rows than can be held");
  /* rows: an int64 and a double each; per fragment: five numbers */
  char thing[96];
  snprintf(thing, sizeof thing, "a fragment index of %llu rows", (unsigned long long)total);
  within_budget(16.0 * (double)total + 40.0 * ((double)f.F + 1), budget, w, thing);
  SEXP isr = PROTECT(allocVector(LGLSXP, f.F)), st = PROTECT(allocVector(REALSXP, f.F)),
       ct = PROTECT(allocVector(REALSXP, f.F)), off = PROTECT(allocVector(REALSXP, (R_xlen_t)f.F + 1)),
       rows = PROTECT(allocVector(REALSXP, (R_xlen_t)total));
  int64_t *o = (int64_t *)R_alloc((size_t)f.F + 1, sizeof(int64_t));
  int64_t *r = (int64_t *)R_alloc(total ? (size_t)total : 1, sizeof(int64_t));
  zv_frag_expand(&f, o, r);
  for (uint32_t i = 0, k = 0; i < f.F; i++) {
    int ir = zv_frag_is_range(&f, i);
    LOGICAL(isr)[i] = ir;
    REAL(st)[i] = ir ? (double)zv_frag_range_start(&f, k++) : NA_REAL;
    REAL(ct)[i] = (double)(o[i + 1] - o[i]);
  }
  for (uint32_t i = 0; i <= f.F; i++) REAL(off)[i] = (double)o[i];
  for (uint64_t i = 0; i < total; i++) REAL(rows)[i] = (double)r[i];
  SEXP out = PROTECT(allocVector(VECSXP, 5)), nm = PROTECT(allocVector(STRSXP, 5));
  const char *names[] = {"is_range", "start", "count", "offsets", "rows"};
  SEXP parts[] = {isr, st, ct, off, rows};
  for (int i = 0; i < 5; i++) {
    SET_VECTOR_ELT(out, i, parts[i]);
    SET_STRING_ELT(nm, i, mkChar(names[i]));
  }
  setAttrib(out, R_NamesSymbol, nm);
  UNPROTECT(7);
  return out;
}

static int64_t as_i64(double v, const char *what) {
  if (!(v >= 0 && v <= 9007199254740992.0) || v != (double)(int64_t)v) zv_abort(what, "fragment rows must be whole non-negative numbers");
  return (int64_t)v;
}

/* Encode a fragment index. is_range: logical (F); start, count: per range
 * fragment; offsets (E + 1) and indices: the explicit fragments' rows. */
SEXP ffi_zv_frag_encode(SEXP is_range, SEXP start, SEXP count, SEXP offsets, SEXP indices) {
  R_xlen_t F = XLENGTH(is_range);
  if (TYPEOF(is_range) != LGLSXP || TYPEOF(start) != REALSXP || TYPEOF(count) != REALSXP ||
      TYPEOF(offsets) != REALSXP || TYPEOF(indices) != REALSXP || F > (R_xlen_t)UINT32_MAX)
    zv_abort(NULL, "bad arguments to the fragment index encoder");
  uint32_t R = 0;
  int *ir = (int *)R_alloc(F ? (size_t)F : 1, sizeof(int));
  for (R_xlen_t i = 0; i < F; i++) R += (ir[i] = LOGICAL(is_range)[i] == TRUE);
  uint32_t E = (uint32_t)F - R;
  if (XLENGTH(start) != R || XLENGTH(count) != R || XLENGTH(offsets) != (R_xlen_t)E + 1)
    zv_abort(NULL, "fragment index parts disagree in length");
  int64_t *s = (int64_t *)R_alloc(R ? R : 1, sizeof(int64_t)), *c = (int64_t *)R_alloc(R ? R : 1, sizeof(int64_t));
  for (uint32_t i = 0; i < R; i++) {
    s[i] = as_i64(REAL(start)[i], NULL);
    c[i] = as_i64(REAL(count)[i], NULL);
  }
  uint32_t *o = (uint32_t *)R_alloc((size_t)E + 1, sizeof(uint32_t));
  for (uint32_t i = 0; i <= E; i++) {
    double v = REAL(offsets)[i];
    if (!(v >= 0 && v <= (double)UINT32_MAX) || (i && v < o[i - 1]) || (i == 0 && v != 0))
      zv_abort(NULL, "explicit offsets must start at 0 and not decrease");
    o[i] = (uint32_t)v;
  }
  if (XLENGTH(indices) != (R_xlen_t)o[E]) zv_abort(NULL, "explicit offsets and indices disagree");
  int64_t *x = (int64_t *)R_alloc(o[E] ? o[E] : 1, sizeof(int64_t));
  for (uint32_t i = 0; i < o[E]; i++) x[i] = as_i64(REAL(indices)[i], NULL);
  SEXP out = PROTECT(allocVector(RAWSXP, (R_xlen_t)zv_frag_size((uint32_t)F, R, o[E])));
  zv_frag_encode(RAW(out), (uint32_t)F, ir, s, c, E, o, x);
  UNPROTECT(1);
  return out;
}

/* The manifests of objects `ids` (0-based) in object_index/data, whose
 * objects start at byte `starts` (one per object; the last ends with the
 * data): list(object, mode, first, count, coords (matrix), explicit). */
SEXP ffi_zv_manifests(SEXP data, SEXP starts, SEXP ids, SEXP ndim, SEXP what, SEXP budget) {
  const char *w = what_of(what);
  size_t n;
  const uint8_t *p = blob_bytes(data, &n, w);
  int nd = asInteger(ndim);
  if (TYPEOF(starts) != REALSXP || TYPEOF(ids) != REALSXP) zv_abort(w, "bad arguments to the manifest reader");
  R_xlen_t B = XLENGTH(starts), k = XLENGTH(ids);
  const double *sv = REAL(starts);
  for (R_xlen_t i = 0; i < B; i++)
    if (!(sv[i] >= 0 && sv[i] <= (double)n) || (i && sv[i] < sv[i - 1]))
      zv_abort(w, "object_index offsets must not decrease and must lie inside its data");
  size_t *lo = (size_t *)R_alloc(k ? (size_t)k : 1, sizeof(size_t)), *hi = (size_t *)R_alloc(k ? (size_t)k : 1, sizeof(size_t));
  for (R_xlen_t i = 0; i < k; i++) {
    double id = REAL(ids)[i];
    if (!(id >= 0 && id < (double)B) || id != (double)(R_xlen_t)id) zv_abort(w, "no such object in object_index");
    R_xlen_t j = (R_xlen_t)id;
    lo[i] = (size_t)sv[j];
    hi[i] = j + 1 < B ? (size_t)sv[j + 1] : n;
  }
  zerr e = {ZE_OK, {0}};
  int64_t nb = 0, nx = 0;
  for (R_xlen_t i = 0; i < k; i++)
    if (zv_manifest_scan(p + lo[i], hi[i] - lo[i], nd, (int64_t)REAL(ids)[i], NULL, NULL, NULL, &nb, &nx, &e)) zv_fail(&e, w);
  /* per block: the struct, its coordinates twice (int64, double), four
   * numbers; per explicit reference: an int64 and a double */
  char thing[96];
  snprintf(thing, sizeof thing, "manifests of %lld blocks", (long long)nb);
  within_budget((double)nb * ((double)sizeof(zv_block) + 16.0 * nd + 32.0) + 16.0 * (double)nx, budget, w, thing);
  if (nb > INT_MAX) zv_abort(w, "manifests of more blocks than a matrix holds");
  zv_block *bl = (zv_block *)R_alloc(nb ? (size_t)nb : 1, sizeof(zv_block));
  int64_t *co = (int64_t *)R_alloc(nb ? (size_t)nb * (size_t)nd : 1, sizeof(int64_t));
  int64_t *ex = (int64_t *)R_alloc(nx ? (size_t)nx : 1, sizeof(int64_t));
  int64_t b2 = 0, x2 = 0;
  for (R_xlen_t i = 0; i < k; i++)
    if (zv_manifest_scan(p + lo[i], hi[i] - lo[i], nd, (int64_t)REAL(ids)[i], bl, co, ex, &b2, &x2, &e)) zv_fail(&e, w);
  SEXP obj = PROTECT(allocVector(REALSXP, nb)), mode = PROTECT(allocVector(INTSXP, nb)),
       first = PROTECT(allocVector(REALSXP, nb)), cnt = PROTECT(allocVector(REALSXP, nb)),
       coords = PROTECT(allocMatrix(REALSXP, (int)nb, nd)), expl = PROTECT(allocVector(REALSXP, nx));
  for (int64_t i = 0; i < nb; i++) {
    REAL(obj)[i] = (double)bl[i].object;
    INTEGER(mode)[i] = bl[i].mode;
    REAL(first)[i] = (double)bl[i].first;
    REAL(cnt)[i] = (double)bl[i].count;
    for (int d = 0; d < nd; d++) REAL(coords)[(R_xlen_t)d * nb + i] = (double)co[i * nd + d];
  }
  for (int64_t i = 0; i < nx; i++) REAL(expl)[i] = (double)ex[i];
  SEXP out = PROTECT(allocVector(VECSXP, 6)), nm = PROTECT(allocVector(STRSXP, 6));
  const char *names[] = {"object", "mode", "first", "count", "coords", "explicit"};
  SEXP parts[] = {obj, mode, first, cnt, coords, expl};
  for (int i = 0; i < 6; i++) {
    SET_VECTOR_ELT(out, i, parts[i]);
    SET_STRING_ELT(nm, i, mkChar(names[i]));
  }
  setAttrib(out, R_NamesSymbol, nm);
  UNPROTECT(8);
  return out;
}

static void put32(uint8_t *q, uint32_t v) {
  for (int i = 0; i < 4; i++) q[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *q, int64_t v) {
  uint64_t u;
  memcpy(&u, &v, 8);
  for (int i = 0; i < 8; i++) q[i] = (uint8_t)(u >> (8 * i));
}

/* Encode the manifests of objects 0..nobj-1 from rows (object, chunk
 * coordinates, fragment) sorted by object, then chunk: one block per run of
 * a chunk, mode 0 for one fragment, 1 for consecutive ones, 2 otherwise.
 * list(data (raw), starts (double, one per object)). */
SEXP ffi_zv_manifest_encode(SEXP object, SEXP coords, SEXP fragment, SEXP nobj) {
  R_xlen_t m = XLENGTH(object);
  SEXP dim = getAttrib(coords, R_DimSymbol);
  if (TYPEOF(object) != REALSXP || TYPEOF(coords) != REALSXP || TYPEOF(fragment) != REALSXP ||
      XLENGTH(fragment) != m || TYPEOF(dim) != INTSXP || XLENGTH(dim) != 2 || INTEGER(dim)[0] != m)
    zv_abort(NULL, "bad arguments to the manifest encoder");
  int nd = INTEGER(dim)[1];
  R_xlen_t B = (R_xlen_t)asReal(nobj);
  const double *ob = REAL(object), *co = REAL(coords), *fr = REAL(fragment);
  for (R_xlen_t i = 0; i < m; i++)
    if (!(ob[i] >= 0 && ob[i] < (double)B) || (i && ob[i] < ob[i - 1])) zv_abort(NULL, "manifest rows must be sorted by object");
  /* pass 1 sizes, pass 2 writes */
  size_t total = 0;
  uint8_t *buf = NULL;
  SEXP starts = PROTECT(allocVector(REALSXP, B));
  for (int pass = 0; pass < 2; pass++) {
    size_t at = 0;
    R_xlen_t i = 0;
    for (R_xlen_t o = 0; o < B; o++) {
      REAL(starts)[o] = (double)at;
      size_t head = at;
      uint32_t nblocks = 0;
      at += 4;
      while (i < m && ob[i] == (double)o) {
        R_xlen_t j = i + 1;
        int consecutive = 1;
        while (j < m && ob[j] == ob[i]) {
          int same = 1;
          for (int d = 0; d < nd && same; d++) same = co[(R_xlen_t)d * m + j] == co[(R_xlen_t)d * m + i];
          if (!same) break;
          if (fr[j] != fr[j - 1] + 1) consecutive = 0;
          j++;
        }
        R_xlen_t cnt = j - i;
        int mode = cnt == 1 ? 0 : consecutive ? 1 : 2;
        if (buf) {
          for (int d = 0; d < nd; d++) put64(buf + at + 8 * (size_t)d, (int64_t)co[(R_xlen_t)d * m + i]);
          buf[at + 8 * (size_t)nd] = (uint8_t)mode;
        }
        at += 8 * (size_t)nd + 1;
        if (mode == 0) {
          if (buf) put64(buf + at, (int64_t)fr[i]);
          at += 8;
        } else if (mode == 1) {
          if (buf) {
            put64(buf + at, (int64_t)fr[i]);
            put64(buf + at + 8, (int64_t)cnt);
          }
          at += 16;
        } else {
          if (buf) {
            put32(buf + at, (uint32_t)cnt);
            for (R_xlen_t k = 0; k < cnt; k++) put64(buf + at + 4 + 8 * (size_t)k, (int64_t)fr[i + k]);
          }
          at += 4 + 8 * (size_t)cnt;
        }
        nblocks++;
        i = j;
      }
      if (buf) put32(buf + head, nblocks);
    }
    if (!buf) {
      total = at;
      buf = (uint8_t *)R_alloc(total ? total : 1, 1);
    }
  }
  SEXP data = PROTECT(allocVector(RAWSXP, (R_xlen_t)total));
  if (total) memcpy(RAW(data), buf, total);
  SEXP out = PROTECT(allocVector(VECSXP, 2)), nm = PROTECT(allocVector(STRSXP, 2));
  SET_VECTOR_ELT(out, 0, data);
  SET_VECTOR_ELT(out, 1, starts);
  SET_STRING_ELT(nm, 0, mkChar("data"));
  SET_STRING_ELT(nm, 1, mkChar("starts"));
  setAttrib(out, R_NamesSymbol, nm);
  UNPROTECT(4);
  return out;
}

/* One blob's rows per task, on the worker threads (R-free). */
typedef struct {
  const uint8_t **p;
  size_t *n;
  const int64_t *at, *rows;
  zv_type t;
  int nc;
  double **cols;
  int *chunk, *row; /* NULL, or each row's blob (1-based) and row within it */
  int failed;
  zerr err;
} rows_job;

static void rows_task(void *ctx, size_t i, int thread) {
  rows_job *j = ctx;
  (void)thread;
  zerr e = {ZE_OK, {0}};
  if (j->chunk != NULL)
    for (int64_t r = 0; r < j->rows[i]; r++) {
      j->chunk[j->at[i] + r] = (int)i + 1;
      j->row[j->at[i] + r] = (int)r;
    }
  if (zv_rows_decode(j->p[i], j->n[i], j->t, j->nc, j->cols, j->at[i], j->rows[i], &e)) {
    int expected = 0;
    if (__atomic_compare_exchange_n(&j->failed, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      j->err = e;
  }
}

/* The rows of a list of blobs, one after the other, as a double matrix of
 * ncol columns, or (columns TRUE) a list of ncol double vectors, which a data
 * frame takes without a copy; attribute "rows" gives the rows of each blob.
 * columns 2: the list also holds, last, each row's blob (integer, 1-based)
 * and its row in the blob (0-based). Blobs are decoded on up to nthreads
 * threads. */
SEXP ffi_zv_rows_decode(SEXP blobs, SEXP dtype, SEXP ncol, SEXP columns, SEXP what, SEXP nthreads, SEXP budget) {
  const char *w = what_of(what);
  zv_type t = type_of(dtype, w);
  int nc = asInteger(ncol), as_cols = asInteger(columns);
  if (as_cols == NA_INTEGER || as_cols < 0 || as_cols > 2) as_cols = 0;
  if (TYPEOF(blobs) != VECSXP || nc < 1 || nc > ZARR_MAX_DIMS * 4) zv_abort(w, "bad arguments to the row decoder");
  R_xlen_t k = XLENGTH(blobs);
  size_t rs = zv_type_size(t) * (size_t)nc;
  SEXP rows = PROTECT(allocVector(REALSXP, k));
  rows_job j;
  memset(&j, 0, sizeof j);
  j.p = (const uint8_t **)R_alloc((size_t)k + 1, sizeof(uint8_t *));
  j.n = (size_t *)R_alloc((size_t)k + 1, sizeof(size_t));
  int64_t *at = (int64_t *)R_alloc((size_t)k + 1, sizeof(int64_t));
  int64_t *nr = (int64_t *)R_alloc((size_t)k + 1, sizeof(int64_t));
  int64_t total = 0;
  for (R_xlen_t i = 0; i < k; i++) {
    SEXP b = VECTOR_ELT(blobs, i);
    R_xlen_t len = (TYPEOF(b) == RAWSXP || TYPEOF(b) == INTSXP || TYPEOF(b) == REALSXP) ? XLENGTH(b) : -1;
    if (len < 0 || len % (R_xlen_t)rs) {
      zerr e = {ZE_OK, {0}};
      zerr_set(&e, ZE_ZV, "a blob of %lld bytes is not a whole number of %d-column rows of %zu bytes",
               (long long)len, nc, rs);
      zv_fail(&e, w);
    }
    size_t n;
    j.p[i] = blob_bytes(b, &n, w);
    j.n[i] = n;
    REAL(rows)[i] = (double)(len / (R_xlen_t)rs);
    at[i] = total;
    nr[i] = len / (R_xlen_t)rs;
    total += nr[i];
  }
  /* a byte (int8, bool) becomes a double: 8 times its size */
  char thing[96];
  snprintf(thing, sizeof thing, "%lld rows of %d columns", (long long)total, nc);
  within_budget((double)total * (8.0 * nc + (as_cols == 2 ? 8.0 : 0.0)), budget, w, thing);
  if (!as_cols && total > INT_MAX) zv_abort(w, "more rows than a matrix holds");
  SEXP out;
  double *cols[ZARR_MAX_DIMS * 4];
  if (as_cols) {
    out = PROTECT(allocVector(VECSXP, nc + (as_cols == 2 ? 2 : 0)));
    for (int c = 0; c < nc; c++) {
      SET_VECTOR_ELT(out, c, allocVector(REALSXP, (R_xlen_t)total));
      cols[c] = REAL(VECTOR_ELT(out, c));
    }
    if (as_cols == 2) {
      if (total > INT_MAX) zv_abort(w, "more rows than an integer vector indexes");
      SET_VECTOR_ELT(out, nc, allocVector(INTSXP, (R_xlen_t)total));
      SET_VECTOR_ELT(out, nc + 1, allocVector(INTSXP, (R_xlen_t)total));
      j.chunk = INTEGER(VECTOR_ELT(out, nc));
      j.row = INTEGER(VECTOR_ELT(out, nc + 1));
    }
  } else {
    out = PROTECT(allocMatrix(REALSXP, (int)total, nc));
    for (int c = 0; c < nc; c++) cols[c] = REAL(out) + (R_xlen_t)c * total;
  }
  j.at = at;
  j.rows = nr;
  j.t = t;
  j.nc = nc;
  j.cols = cols;
  int nt = asInteger(nthreads);
  if (nt == NA_INTEGER || nt < 1 || (double)total * (double)rs < 1024.0 * 1024.0) nt = 1; /* threads would cost more */
  parallel_for((size_t)k, nt, rows_task, &j, NULL);
  if (j.failed) zv_fail(&j.err, w);
  setAttrib(out, install("rows"), rows);
  UNPROTECT(2);
  return out;
}

/* Rows breaks[i]..breaks[i+1]-1 of a double matrix, each run as one raw
 * blob of element type dtype. */
SEXP ffi_zv_rows_encode(SEXP x, SEXP dtype, SEXP breaks) {
  zv_type t = type_of(dtype, NULL);
  SEXP dim = getAttrib(x, R_DimSymbol);
  if (TYPEOF(x) != REALSXP || TYPEOF(breaks) != REALSXP || TYPEOF(dim) != INTSXP || XLENGTH(dim) != 2)
    zv_abort(NULL, "bad arguments to the row encoder");
  int64_t nr = INTEGER(dim)[0];
  int nc = INTEGER(dim)[1];
  R_xlen_t k = XLENGTH(breaks) - 1;
  if (k < 0) k = 0;
  const double *br = REAL(breaks);
  for (R_xlen_t i = 0; i < k; i++)
    if (!(br[i] >= 0 && br[i + 1] >= br[i] && br[i + 1] <= (double)nr)) zv_abort(NULL, "row breaks must not decrease");
  SEXP out = PROTECT(allocVector(VECSXP, k));
  size_t rs = zv_type_size(t) * (size_t)nc;
  zerr e = {ZE_OK, {0}};
  for (R_xlen_t i = 0; i < k; i++) {
    int64_t a = (int64_t)br[i], m = (int64_t)br[i + 1] - a;
    SEXP b = allocVector(RAWSXP, (R_xlen_t)((size_t)m * rs));
    SET_VECTOR_ELT(out, i, b);
    if (zv_rows_encode(REAL(x), nr, a, m, nc, t, RAW(b), &e)) zv_fail(&e, NULL);
  }
  UNPROTECT(1);
  return out;
}
