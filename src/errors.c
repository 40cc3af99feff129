/* Error plumbing: C records a kind and message, then (after freeing its own
 * resources) calls the R function zarr:::c_error() so that every failure is a
 * classed R condition carrying the array and key it concerns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zarr.h"

static const char *kind_name(zerr_kind k) {
  switch (k) {
  case ZE_CORRUPT: return "corrupt_chunk";
  case ZE_CHECKSUM: return "checksum";
  case ZE_IO: return "io";
  case ZE_NOMEM: return "memory";
  case ZE_CODEC: return "codec";
  case ZE_VALUE: return "value";
  case ZE_KEY: return "key";
  case ZE_STORE: return "store";
  case ZE_INTERRUPT: return "interrupted";
  case ZE_HTTP: return "http";
  case ZE_READ_ONLY: return "read_only";
  case ZE_METADATA: return "metadata";
  case ZE_S3: return "s3";
  case ZE_AZURE: return "azure";
  case ZE_ICECHUNK: return "icechunk";
  case ZE_ICECHUNK_STALE: return "icechunk_stale";
  case ZE_ZV: return "zv";
  case ZE_UNSUPPORTED: return "unsupported";
  case ZE_MISSING_CHUNK: return "missing_chunk";
  default: return "internal";
  }
}

void zarr_raise(zerr_kind kind, const char *array, const char *key, const char *msg) {
  SEXP ns = PROTECT(R_FindNamespace(PROTECT(mkString("zarr"))));
  SEXP fn = PROTECT(findFun(install("c_error"), ns));
  SEXP k = PROTECT(mkString(kind_name(kind)));
  SEXP m = PROTECT(ScalarString(mkCharCE(msg, CE_UTF8)));
  SEXP a = PROTECT(array ? ScalarString(mkCharCE(array, CE_UTF8)) : R_NilValue);
  SEXP y = PROTECT(key ? ScalarString(mkCharCE(key, CE_UTF8)) : R_NilValue);
  SEXP call = PROTECT(lang5(fn, k, m, a, y));
  eval(call, ns);
  UNPROTECT(8);
  Rf_error("%s", msg); /* not reached: c_error() always signals */
}

void zarr_raise_err(const zerr *e, const char *array, const char *key) {
  zerr copy = *e; /* the caller's storage may be freed before we unwind */
  zarr_raise(copy.kind, array, key, copy.msg);
}

static void check_interrupt_fn(void *unused) {
  (void)unused;
  R_CheckUserInterrupt();
}

/* R_CheckUserInterrupt() jumps away on an interrupt; inside R_ToplevelExec
 * the jump stops there, so C can clean up before raising an error. */
int interrupt_pending(void) { return R_ToplevelExec(check_interrupt_fn, NULL) == FALSE; }
