/* The per-object part of building an R6 object of this package (R/r6_fast.R):
 * copies of each level's methods bound to the object's enclosing
 * environments, and the environments' bindings (locked methods, active
 * bindings), in one call instead of an R loop over every method of every
 * object. */
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
static SEXP rebind_all(SEXP funs, SEXP env) {
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

/* One merged method list of a level: element i is the method at position
 * pos[i] of level lev[i] (both 0-based) among the bound lists `bound`. */
static SEXP merged_list(SEXP bound, SEXP spec) {
  SEXP lev = VECTOR_ELT(spec, 0), pos = VECTOR_ELT(spec, 1), names = VECTOR_ELT(spec, 2);
  R_xlen_t n = XLENGTH(lev);
  SEXP out = PROTECT(allocVector(VECSXP, n));
  for (R_xlen_t i = 0; i < n; i++) {
    SEXP lst = VECTOR_ELT(bound, INTEGER(lev)[i]);
    SET_VECTOR_ELT(out, i, VECTOR_ELT(lst, INTEGER(pos)[i]));
  }
  if (n) setAttrib(out, R_NamesSymbol, names);
  UNPROTECT(1);
  return out;
}

/* x: the values; syms: their names as symbols (made once per plan: looking
 * names up in the symbol table for every object cost as much as the rest) */
static void define_all(SEXP x, SEXP syms, SEXP env, int active, int lock) {
  R_xlen_t n = XLENGTH(x);
  for (R_xlen_t i = 0; i < n; i++) {
    SEXP sym = VECTOR_ELT(syms, i);
    if (active) R_MakeActiveBinding(sym, VECTOR_ELT(x, i), env);
    else {
      defineVar(sym, VECTOR_ELT(x, i), env);
      if (lock) R_LockBinding(sym, env);
    }
  }
}

/* A new object of a class from its plan (r6_plan_c() in R/r6_fast.R, which
 * says what each element is), laid out as R6 lays out its objects (see
 * the top of R/r6_fast.R). */
SEXP ffi_r6_build(SEXP plan) {
  if (TYPEOF(plan) != VECSXP || XLENGTH(plan) != 14) zarr_raise(ZE_VALUE, NULL, NULL, "r6_build: invalid plan");
  int n = asInteger(VECTOR_ELT(plan, 0));
  SEXP parents = VECTOR_ELT(plan, 1), merged = VECTOR_ELT(plan, 5), has_act = VECTOR_ELT(plan, 6);
  SEXP pub_fields = VECTOR_ELT(plan, 7), priv_fields = VECTOR_ELT(plan, 8), classes = VECTOR_ELT(plan, 11);
  SEXP pub_field_syms = VECTOR_ELT(plan, 12), priv_field_syms = VECTOR_ELT(plan, 13);
  int has_priv = asLogical(VECTOR_ELT(plan, 9)) == TRUE, lock_objects = asLogical(VECTOR_ELT(plan, 10)) == TRUE;
  static SEXP sym_enclos = NULL, sym_active, sym_self, sym_private, sym_super;
  if (!sym_enclos) {
    sym_enclos = install(".__enclos_env__");
    sym_active = install(".__active__");
    sym_self = install("self");
    sym_private = install("private");
    sym_super = install("super");
  }
  int nprot = 0;
  SEXP public_env = PROTECT(R_NewEnv(R_EmptyEnv, FALSE, 0)); nprot++;
  SEXP private_env = R_NilValue;
  if (has_priv) { private_env = PROTECT(R_NewEnv(R_EmptyEnv, FALSE, 0)); nprot++; }
  /* the bound methods of each level, [what][level], what = public, private, active */
  SEXP bound = PROTECT(allocVector(VECSXP, 3)); nprot++;
  for (int w = 0; w < 3; w++) SET_VECTOR_ELT(bound, w, allocVector(VECSXP, n));
  SEXP super_bind = R_NilValue, enclos = R_NilValue;
  SEXP m_pub = R_NilValue, m_priv = R_NilValue, m_act = R_NilValue;
  PROTECT_INDEX ipx;
  PROTECT_WITH_INDEX(R_NilValue, &ipx); nprot++;
  SEXP keep = PROTECT(allocVector(VECSXP, 5)); nprot++; /* enclos, super_bind, merged lists */
  for (int k = 0; k < n; k++) {
    enclos = R_NewEnv(VECTOR_ELT(parents, k), FALSE, 0);
    SET_VECTOR_ELT(keep, 0, enclos);
    SEXP bind = R_NilValue;
    if (k < n - 1) {
      bind = R_NewEnv(R_EmptyEnv, FALSE, 0);
      REPROTECT(bind, ipx);
      defineVar(sym_enclos, enclos, bind);
    }
    defineVar(sym_self, public_env, enclos);
    if (has_priv) defineVar(sym_private, private_env, enclos);
    if (super_bind != R_NilValue) defineVar(sym_super, super_bind, enclos);
    for (int w = 0; w < 3; w++)
      SET_VECTOR_ELT(VECTOR_ELT(bound, w), k, rebind_all(VECTOR_ELT(VECTOR_ELT(plan, 2 + w), k), enclos));
    SEXP mk = VECTOR_ELT(merged, k);
    m_pub = merged_list(VECTOR_ELT(bound, 0), VECTOR_ELT(mk, 0));
    SET_VECTOR_ELT(keep, 2, m_pub);
    m_priv = merged_list(VECTOR_ELT(bound, 1), VECTOR_ELT(mk, 1));
    SET_VECTOR_ELT(keep, 3, m_priv);
    m_act = LOGICAL(has_act)[k] ? merged_list(VECTOR_ELT(bound, 2), VECTOR_ELT(mk, 2)) : allocVector(VECSXP, 0);
    SET_VECTOR_ELT(keep, 4, m_act);
    if (k < n - 1) {
      /* a superclass level: what `super$` reaches from the level above */
      define_all(m_pub, VECTOR_ELT(VECTOR_ELT(mk, 0), 3), bind, 0, 0);
      define_all(m_priv, VECTOR_ELT(VECTOR_ELT(mk, 1), 3), bind, 0, 0);
      if (LOGICAL(has_act)[k]) define_all(m_act, VECTOR_ELT(VECTOR_ELT(mk, 2), 3), bind, 1, 0);
      defineVar(sym_active, m_act, enclos);
      super_bind = bind;
      SET_VECTOR_ELT(keep, 1, super_bind);
    }
  }
  /* methods are locked, fields not (as R6 does) */
  SEXP last = VECTOR_ELT(merged, n - 1);
  define_all(m_pub, VECTOR_ELT(VECTOR_ELT(last, 0), 3), public_env, 0, 1);
  define_all(pub_fields, pub_field_syms, public_env, 0, 0);
  if (has_priv) {
    define_all(m_priv, VECTOR_ELT(VECTOR_ELT(last, 1), 3), private_env, 0, 1);
    define_all(priv_fields, priv_field_syms, private_env, 0, 0);
  }
  if (LOGICAL(has_act)[n - 1]) define_all(m_act, VECTOR_ELT(VECTOR_ELT(last, 2), 3), public_env, 1, 0);
  /* (R6 keeps the list, empty too, when there is an active binding or a superclass) */
  if (n > 1 || XLENGTH(VECTOR_ELT(VECTOR_ELT(plan, 4), n - 1))) defineVar(sym_active, m_act, enclos);
  defineVar(sym_enclos, enclos, public_env);
  if (lock_objects) {
    if (has_priv) R_LockEnvironment(private_env, FALSE);
    R_LockEnvironment(public_env, FALSE);
  }
  if (classes != R_NilValue) setAttrib(public_env, R_ClassSymbol, classes);
  UNPROTECT(nprot);
  return public_env;
}
