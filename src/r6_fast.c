/* The per-object part of building an R6 object of this package (R/r6_fast.R):
 * copies of a level's methods bound to the object's enclosing environment,
 * and an environment's bindings (locked methods, active bindings). One call
 * each instead of an R loop over every method of every object. */
#include <Rversion.h>
#include "zarr.h"

static SEXP rebound(SEXP f, SEXP env) {
#if R_VERSION >= R_Version(4, 5, 0)
  SEXP g = PROTECT(R_mkClosure(R_ClosureFormals(f), R_ClosureBody(f), env));
  DUPLICATE_ATTRIB(g, f); /* srcref, when the package keeps sources */
#else
  /* a closure's duplicate shares its formals and body (what `environment<-` does) */
  SEXP g = PROTECT(duplicate(f));
  SET_CLOENV(g, env);
#endif
  UNPROTECT(1);
  return g;
}

/* funs: a list of functions (names kept); env: their new enclosure. */
SEXP ffi_r6_rebind(SEXP funs, SEXP env) {
  if (TYPEOF(funs) != VECSXP || TYPEOF(env) != ENVSXP) zarr_raise(ZE_VALUE, NULL, NULL, "r6_rebind: a list and an environment are needed");
  R_xlen_t n = XLENGTH(funs);
  SEXP out = PROTECT(allocVector(VECSXP, n));
  for (R_xlen_t i = 0; i < n; i++) {
    SEXP f = VECTOR_ELT(funs, i);
    SET_VECTOR_ELT(out, i, TYPEOF(f) == CLOSXP ? rebound(f, env) : f);
  }
  setAttrib(out, R_NamesSymbol, getAttrib(funs, R_NamesSymbol));
  UNPROTECT(1);
  return out;
}

/* Define the elements of the named list `x` in `env`: as active bindings
 * when `active` is TRUE, else as values, locked when `lock` is TRUE. */
SEXP ffi_r6_define(SEXP x, SEXP env, SEXP active, SEXP lock) {
  if (TYPEOF(x) != VECSXP || TYPEOF(env) != ENVSXP) zarr_raise(ZE_VALUE, NULL, NULL, "r6_define: a list and an environment are needed");
  SEXP names = getAttrib(x, R_NamesSymbol);
  R_xlen_t n = XLENGTH(x);
  if (n && (TYPEOF(names) != STRSXP || XLENGTH(names) != n)) zarr_raise(ZE_VALUE, NULL, NULL, "r6_define: the list needs names");
  int act = asLogical(active) == TRUE, lk = asLogical(lock) == TRUE;
  for (R_xlen_t i = 0; i < n; i++) {
    SEXP sym = installTrChar(STRING_ELT(names, i));
    if (act) R_MakeActiveBinding(sym, VECTOR_ELT(x, i), env);
    else {
      defineVar(sym, VECTOR_ELT(x, i), env);
      if (lk) R_LockBinding(sym, env);
    }
  }
  return R_NilValue;
}
