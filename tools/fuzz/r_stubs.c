/* Stand-ins for the R API functions that the R entry points of store_zip.c
 * and store_local.c (ffi_zip_*, ffi_store_local, ffi_dir_files) reference,
 * so that fuzz_zip links without libR. The fuzz target never calls those
 * entry points; any call here is a bug and aborts. */
#include <stdlib.h>
#include <Rinternals.h>
#include "store.h"

#define NEVER abort()

SEXP R_NilValue = NULL;
SEXP R_NamesSymbol = NULL;
Rbyte *(RAW)(SEXP x) { (void)x; NEVER; }
double *(REAL)(SEXP x) { (void)x; NEVER; }
int (TYPEOF)(SEXP x) { (void)x; NEVER; }
void R_ClearExternalPtr(SEXP s) { (void)s; NEVER; }
void *R_ExternalPtrAddr(SEXP s) { (void)s; NEVER; }
SEXP R_ExternalPtrTag(SEXP s) { (void)s; NEVER; }
SEXP R_MakeExternalPtr(void *p, SEXP tag, SEXP prot) { (void)p; (void)tag; (void)prot; NEVER; }
void R_RegisterCFinalizerEx(SEXP s, R_CFinalizer_t fun, Rboolean onexit) { (void)s; (void)fun; (void)onexit; NEVER; }
SEXP Rf_allocVector(SEXPTYPE t, R_xlen_t n) { (void)t; (void)n; NEVER; }
SEXP Rf_install(const char *s) { (void)s; NEVER; }
Rboolean Rf_isNull(SEXP s) { (void)s; NEVER; }
int Rf_asLogical(SEXP s) { (void)s; NEVER; }
SEXP Rf_ScalarReal(double x) { (void)x; NEVER; }
double Rf_asReal(SEXP s) { (void)s; NEVER; }
int interrupt_pending(void) { return 0; }
SEXP Rf_mkChar(const char *s) { (void)s; NEVER; }
SEXP Rf_mkCharLenCE(const char *s, int n, cetype_t enc) { (void)s; (void)n; (void)enc; NEVER; }
SEXP Rf_mkCharCE(const char *s, cetype_t enc) { (void)s; (void)enc; NEVER; }
SEXP R_ExecWithCleanup(SEXP (*fun)(void *), void *data, void (*cleanfun)(void *), void *cleandata) {
  (void)fun; (void)data; (void)cleanfun; (void)cleandata; NEVER;
}
SEXP Rf_protect(SEXP s) { (void)s; NEVER; }
SEXP Rf_setAttrib(SEXP v, SEXP n, SEXP val) { (void)v; (void)n; (void)val; NEVER; }
const char *Rf_translateCharUTF8(SEXP s) { (void)s; NEVER; }
void Rf_unprotect(int n) { (void)n; NEVER; }
void SET_STRING_ELT(SEXP x, R_xlen_t i, SEXP v) { (void)x; (void)i; (void)v; NEVER; }
SEXP SET_VECTOR_ELT(SEXP x, R_xlen_t i, SEXP v) { (void)x; (void)i; (void)v; NEVER; }
SEXP (STRING_ELT)(SEXP x, R_xlen_t i) { (void)x; (void)i; NEVER; }
void zarr_raise(zerr_kind kind, const char *array, const char *key, const char *msg) {
  (void)kind; (void)array; (void)key; (void)msg; NEVER;
}
void zarr_raise_err(const zerr *e, const char *array, const char *key) {
  (void)e; (void)array; (void)key; NEVER;
}
zstore *store_alloc(const zstore_ops *ops, void *impl, const char *where) {
  (void)ops; (void)impl; (void)where; NEVER;
}
SEXP store_wrap(zstore *s, SEXP keep) { (void)s; (void)keep; NEVER; }
