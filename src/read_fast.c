/* The per-call work of a small read that R code did element by element:
 * the options a read depends on, read in one call, and the indices of `[`
 * recognised as plain runs. Both run on every `a[i, j]`, where the R
 * versions cost several times the engine's own work on a small chunk. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "zarr.h"

static SEXP opt_sym[8];
static SEXP range_class = NULL;

enum { O_THREADS, O_MISSING, O_GAP, O_MAX, O_CACHE, O_SCRATCH, O_COMPACT, O_PMIN };

static void syms_init(void) {
  if (opt_sym[0] != NULL) return;
  const char *names[] = {"zarr.num_threads", "zarr.missing_chunks", "zarr.range_gap", "zarr.range_max",
                         "zarr.chunk_cache_bytes", "zarr.scratch_bytes", "zarr.compact_results",
                         "zarr.progress_min_bytes"};
  for (int k = 0; k < 8; k++) opt_sym[k] = install(names[k]);
}

/* isTRUE() / isFALSE() of R */
static int is_true(SEXP v) {
  return TYPEOF(v) == LGLSXP && XLENGTH(v) == 1 && LOGICAL(v)[0] == TRUE;
}
static int is_false(SEXP v) {
  return TYPEOF(v) == LGLSXP && XLENGTH(v) == 1 && LOGICAL(v)[0] == FALSE;
}

/* A numeric option as zarr_num_option() takes it without coercion: the
 * default when unset, else 0 (the caller falls back to R, which coerces
 * or raises the option's error). */
static int num_opt(SEXP v, double dflt, double min, double *out) {
  if (isNull(v)) {
    *out = dflt;
    return 1;
  }
  if (TYPEOF(v) != REALSXP || XLENGTH(v) != 1 || ISNAN(REAL(v)[0]) || REAL(v)[0] < min) return 0;
  *out = REAL(v)[0];
  return 1;
}

/* The engine options of a read (as engine_opts() makes them) and what the
 * R code around the engine call asks: the threshold of progress bars. NULL when an option
 * holds a value only R takes (a string count, a bad value: engine_opts()
 * coerces it or raises its classed error). `dflt`: engine_opt_defaults of
 * R/options.R (range_gap, range_max, cache_bytes, scratch_bytes,
 * progress_min). */
SEXP ffi_read_opts(SEXP fill_as_na, SEXP dflt) {
  syms_init();
  if (TYPEOF(dflt) != REALSXP || XLENGTH(dflt) != 5) zarr_raise(ZE_VALUE, NULL, NULL, "internal: read option defaults");
  const double *df = REAL(dflt);
  SEXP v = GetOption1(opt_sym[O_THREADS]);
  int nthreads;
  if (isNull(v)) {
    static int cores = 0; /* (sysconf() reads a file: once a session, as num_cores() in R) */
    if (cores == 0) cores = zarr_num_cores();
    nthreads = cores;
    const char *limit = getenv("_R_CHECK_LIMIT_CORES_");
    if (limit != NULL && *limit && strcasecmp(limit, "false") != 0 && nthreads > 2) nthreads = 2;
  } else if ((TYPEOF(v) == INTSXP && XLENGTH(v) == 1 && INTEGER(v)[0] != NA_INTEGER && INTEGER(v)[0] >= 1) ||
             (TYPEOF(v) == REALSXP && XLENGTH(v) == 1 && R_FINITE(REAL(v)[0]) && REAL(v)[0] >= 1 &&
              REAL(v)[0] <= INT_MAX)) {
    nthreads = asInteger(v);
  } else {
    return R_NilValue;
  }
  v = GetOption1(opt_sym[O_MISSING]);
  int missing_error = 0;
  if (!isNull(v)) {
    if (TYPEOF(v) != STRSXP || XLENGTH(v) != 1 || STRING_ELT(v, 0) == NA_STRING) return R_NilValue;
    const char *s = CHAR(STRING_ELT(v, 0));
    if (strcmp(s, "error") == 0) missing_error = 1;
    else if (strcmp(s, "fill") != 0) return R_NilValue;
  }
  double gap, rmax, cache, scratch, pmin;
  if (!num_opt(GetOption1(opt_sym[O_GAP]), df[0], 0, &gap) ||
      !num_opt(GetOption1(opt_sym[O_MAX]), df[1], 1, &rmax) ||
      !num_opt(GetOption1(opt_sym[O_CACHE]), df[2], 0, &cache) ||
      !num_opt(GetOption1(opt_sym[O_SCRATCH]), df[3], 0, &scratch))
    return R_NilValue;
  v = GetOption1(opt_sym[O_PMIN]);
  if (isNull(v)) pmin = df[4];
  else if ((TYPEOF(v) == REALSXP || TYPEOF(v) == INTSXP) && XLENGTH(v) == 1) pmin = asReal(v);
  else return R_NilValue;
  if (ISNAN(pmin)) pmin = 0; /* bytes < NA is NA in R: the full check decides */
  const char *names[] = {"nthreads", "fill_as_na", "missing_error", "range_gap", "range_max", "cache_bytes",
                         "scratch_bytes", "compact", "progress_min", ""};
  SEXP out = PROTECT(mkNamed(VECSXP, names));
  SET_VECTOR_ELT(out, 0, ScalarInteger(nthreads));
  SET_VECTOR_ELT(out, 1, ScalarLogical(is_true(fill_as_na)));
  SET_VECTOR_ELT(out, 2, ScalarLogical(missing_error));
  SET_VECTOR_ELT(out, 3, ScalarReal(gap));
  SET_VECTOR_ELT(out, 4, ScalarReal(rmax));
  SET_VECTOR_ELT(out, 5, ScalarReal(cache));
  SET_VECTOR_ELT(out, 6, ScalarReal(scratch));
  SET_VECTOR_ELT(out, 7, ScalarLogical(!is_false(GetOption1(opt_sym[O_COMPACT]))));
  SET_VECTOR_ELT(out, 8, ScalarReal(pmin));
  UNPROTECT(1);
  return out;
}

/* Whether the R index `e` is an ascending run of whole numbers a, a+1, ...
 * inside 1..n (no NA, no class): its 0-based start in *start. */
static int index_run(SEXP e, double n, double *start) {
  if ((TYPEOF(e) != INTSXP && TYPEOF(e) != REALSXP) || OBJECT(e) || XLENGTH(e) == 0) return 0;
  R_xlen_t len = XLENGTH(e);
  if (TYPEOF(e) == INTSXP) {
    const int *p = INTEGER(e);
    if (p[0] == NA_INTEGER || p[0] < 1 || (double)p[0] + (double)len - 1 > n) return 0;
    for (R_xlen_t k = 1; k < len; k++)
      if (p[k] != p[0] + (int)k) return 0; /* (NA is INT_MIN: never a successor) */
    *start = (double)p[0] - 1;
    return 1;
  }
  if (TYPEOF(e) == REALSXP) {
    const double *p = REAL(e);
    double a = p[0];
    if (ISNAN(a) || a < 1 || a != trunc(a) || a + (double)len - 1 > n) return 0;
    for (R_xlen_t k = 1; k < len; k++)
      if (p[k] != a + (double)k) return 0;
    *start = a - 1;
    return 1;
  }
  return 0;
}

/* The selection (one R index per dimension) as zarr_range()s, c(start,
 * count) of class "zarr_range", when every index is a plain run inside the
 * extent; else NULL (R resolves it in full). */
SEXP ffi_index_runs(SEXP sel, SEXP shape) {
  if (TYPEOF(sel) != VECSXP || (TYPEOF(shape) != REALSXP && TYPEOF(shape) != INTSXP) ||
      XLENGTH(sel) != XLENGTH(shape))
    return R_NilValue;
  R_xlen_t nd = XLENGTH(sel);
  double starts[ZARR_MAX_DIMS];
  if (nd > ZARR_MAX_DIMS) return R_NilValue;
  for (R_xlen_t d = 0; d < nd; d++) {
    double n = TYPEOF(shape) == REALSXP ? REAL(shape)[d] : (double)INTEGER(shape)[d];
    if (!index_run(VECTOR_ELT(sel, d), n, &starts[d])) return R_NilValue;
  }
  if (range_class == NULL) {
    range_class = mkString("zarr_range");
    R_PreserveObject(range_class);
  }
  SEXP out = PROTECT(allocVector(VECSXP, nd));
  for (R_xlen_t d = 0; d < nd; d++) {
    SEXP r = allocVector(REALSXP, 2);
    SET_VECTOR_ELT(out, d, r);
    REAL(r)[0] = starts[d];
    REAL(r)[1] = (double)XLENGTH(VECTOR_ELT(sel, d));
    setAttrib(r, R_ClassSymbol, range_class);
  }
  UNPROTECT(1);
  return out;
}

/* The number of elements a selection picks per dimension (sel_lengths()):
 * a zarr_range's count, an index vector's length. */
SEXP ffi_sel_lengths(SEXP sel) {
  R_xlen_t nd = XLENGTH(sel);
  SEXP out = PROTECT(allocVector(REALSXP, nd));
  for (R_xlen_t d = 0; d < nd; d++) {
    SEXP e = VECTOR_ELT(sel, d);
    REAL(out)[d] = inherits(e, "zarr_range") && TYPEOF(e) == REALSXP && XLENGTH(e) == 2 ? REAL(e)[1]
                   : (double)xlength(e); /* (xlength: 0 for NULL) */
  }
  UNPROTECT(1);
  return out;
}

/* Whether a selection is a list of `nd` zarr_range()s (what `[` passes
 * $read() for plain runs): nothing to normalize. */
SEXP ffi_all_ranges(SEXP sel, SEXP nd) {
  if (TYPEOF(sel) != VECSXP || OBJECT(sel) || XLENGTH(sel) != (R_xlen_t)asInteger(nd)) return ScalarLogical(0);
  for (R_xlen_t d = 0; d < XLENGTH(sel); d++) {
    SEXP e = VECTOR_ELT(sel, d);
    if (TYPEOF(e) != REALSXP || XLENGTH(e) != 2 || !inherits(e, "zarr_range")) return ScalarLogical(0);
  }
  return ScalarLogical(1);
}
