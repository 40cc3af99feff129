/* A store written in R (the memory store, or any R6 subclass of zarr_store):
 * three R functions held in an environment,
 *   get(keys)          -> a list of raw vectors (NULL: absent), whole values;
 *   set(key, value)    -> stores one raw vector;
 *   erase(key)         -> removes one key.
 * They run on the R thread only (main_thread). An error they signal is kept
 * and signalled again, as it was, once the engine has freed its memory. */
#include <stdlib.h>
#include <string.h>
#include "store.h"

typedef struct {
  SEXP env; /* protected by the store handle */
} rstore;

static SEXP env_get(SEXP env, const char *name) { return findVarInFrame(env, install(name)); }

static void keep_condition(SEXP env, SEXP cond) { defineVar(install("pending"), cond, env); }

typedef struct {
  SEXP call, env;
} eval_arg;

static SEXP eval_body(void *data) {
  eval_arg *a = data;
  return eval(a->call, a->env);
}

static SEXP eval_caught(SEXP cond, void *data) {
  eval_arg *a = data;
  keep_condition(a->env, cond);
  return R_UnboundValue; /* a marker no R function can return */
}

/* Evaluate `call` in the store's environment; the condition of an error is
 * kept for store_raise(). Returns R_UnboundValue on error. */
static SEXP eval_store(SEXP call, SEXP env) {
  eval_arg a = {call, env};
  return R_tryCatchError(eval_body, &a, eval_caught, &a);
}

static int call_failed(const char *what, const char *key, zerr *e) {
  return zerr_set(e, ZE_STORE, "the store's %s() failed%s%s", what, key ? " for " : "",
                  key ? key : "");
}

static int r_get_many(zstore *s, const zrange *r, size_t n, zsink_fn sink, void *ctx,
                      const volatile int *stop, zerr *e) {
  (void)stop;
  SEXP env = ((rstore *)s->impl)->env;
  SEXP keys = PROTECT(allocVector(STRSXP, (R_xlen_t)n));
  for (size_t i = 0; i < n; i++) SET_STRING_ELT(keys, (R_xlen_t)i, mkCharCE(r[i].key, CE_UTF8));
  SEXP call = PROTECT(lang2(env_get(env, "get"), keys));
  SEXP vals = eval_store(call, env);
  if (vals == R_UnboundValue) {
    UNPROTECT(2);
    return call_failed("get", NULL, e);
  }
  /* kept in the environment: the bodies are borrowed until the next batch */
  defineVar(install("values"), vals, env);
  UNPROTECT(2);
  if (TYPEOF(vals) != VECSXP || (size_t)XLENGTH(vals) != n)
    return zerr_set(e, ZE_STORE, "the store's get() returned %s values for %.0f keys",
                    TYPEOF(vals) == VECSXP ? "the wrong number of" : "no list of", (double)n);
  for (size_t i = 0; i < n; i++) {
    SEXP v = VECTOR_ELT(vals, (R_xlen_t)i);
    zbuf body = {NULL, 0, 0};
    if (v == R_NilValue) {
      if (sink(ctx, i, &body, 1)) return 0;
      continue;
    }
    if (TYPEOF(v) != RAWSXP)
      return zerr_set(e, ZE_STORE, "the store's get() returned a value that is not a raw vector for %s",
                      r[i].key);
    int64_t size = XLENGTH(v), off = r[i].off, len = r[i].len;
    if (off < 0) { /* a suffix */
      off = size + off < 0 ? 0 : size + off;
      len = size - off;
    }
    if (off > size) off = size;
    if (len < 0 || off + len > size) len = size - off;
    body.data = RAW(v) + off;
    body.size = (size_t)len;
    if (sink(ctx, i, &body, 0)) return 0;
  }
  return 0;
}

static int r_call_key(zstore *s, const char *fn, const char *key, const uint8_t *p, size_t n,
                      int with_value, zerr *e) {
  SEXP env = ((rstore *)s->impl)->env;
  SEXP k = PROTECT(ScalarString(mkCharCE(key, CE_UTF8)));
  SEXP call;
  if (with_value) {
    SEXP v = PROTECT(allocVector(RAWSXP, (R_xlen_t)n));
    if (n) memcpy(RAW(v), p, n);
    call = lang3(env_get(env, fn), k, v);
    UNPROTECT(1);
  } else {
    call = lang2(env_get(env, fn), k);
  }
  PROTECT(call);
  SEXP res = eval_store(call, env);
  UNPROTECT(2);
  return res == R_UnboundValue ? call_failed(fn, key, e) : 0;
}

static int r_set(zstore *s, const char *key, const uint8_t *p, size_t n, zerr *e) {
  return r_call_key(s, "set", key, p, n, 1, e);
}

static int r_erase(zstore *s, const char *key, zerr *e) {
  return r_call_key(s, "erase", key, NULL, 0, 0, e);
}

static SEXP r_pending(zstore *s) {
  SEXP env = ((rstore *)s->impl)->env;
  SEXP cond = env_get(env, "pending");
  if (cond == R_UnboundValue) return R_NilValue;
  PROTECT(cond);
  defineVar(install("pending"), R_NilValue, env);
  UNPROTECT(1);
  return cond;
}

static void r_destroy(zstore *s) { free(s->impl); }

static const zstore_ops r_ops = {"r", NULL, r_get_many, r_set, r_erase, r_destroy, 1, r_pending, 0, NULL, NULL, NULL};

/* env: an environment with the functions get, set and erase. */
SEXP ffi_store_r(SEXP env) {
  if (TYPEOF(env) != ENVSXP) zarr_raise(ZE_STORE, NULL, NULL, "internal: an R store needs an environment");
  rstore *rs = malloc(sizeof *rs);
  zstore *s = rs ? store_alloc(&r_ops, rs, "R store") : NULL;
  if (s == NULL) {
    free(rs);
    zarr_raise(ZE_NOMEM, NULL, NULL, "out of memory");
  }
  rs->env = env;
  return store_wrap(s, env);
}
