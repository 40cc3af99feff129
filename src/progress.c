/* Progress reports for long engine calls.
 *
 * The R side turns reporting on (ffi_progress_begin, with an R function)
 * only when progress is wanted (an interactive session, or the option
 * zarr.progress is TRUE) and the call is large; otherwise
 * nothing here runs beyond one load of `active`. Workers only add to an
 * atomic counter; the R thread, in the polls it already makes between tasks
 * and while it waits for the store, calls the R function with (done, total)
 * once `delay` seconds have passed, then at most every 0.2 s. An error in
 * the R function turns reporting off; it never stops the read or write. An
 * interrupt that arrives while the R function runs is reported to the
 * engine, which stops as for any other interrupt.
 */
#include <time.h>
#include "zarr.h"
#include "progress.h"

static struct {
  int active;     /* read by workers */
  SEXP fn;        /* preserved while active */
  double start, next, delay;
  int64_t total;  /* R thread only */
  int64_t done;   /* atomic */
} P;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int progress_active(void) { return __atomic_load_n(&P.active, __ATOMIC_RELAXED); }

void progress_total(int64_t n) {
  if (progress_active()) P.total += n;
}

void progress_add(int64_t n) {
  if (progress_active()) __atomic_add_fetch(&P.done, n, __ATOMIC_RELAXED);
}


static SEXP report_body(void *data) {
  SEXP call = data;
  return eval(call, R_GlobalEnv);
}

/* An error in the report ends reporting; an interrupt is the user's. */
static SEXP report_failed(SEXP cond, void *data) {
  int *interrupted = data;
  if (inherits(cond, "interrupt")) *interrupted = 1;
  __atomic_store_n(&P.active, 0, __ATOMIC_RELAXED);
  return R_NilValue;
}

int progress_poll(void) {
  if (!progress_active()) return 0;
  /* a bar of total 0 is complete at once (cli closes it, and every later
   * report fails): nothing until the engine has counted its steps; polls
   * before then (a metadata fetch ahead of the read) leave the first report
   * due as soon as it has */
  if (P.total <= 0) return 0;
  double t = now_s();
  if (t < P.next) return 0;
  P.next = t + 0.2;
  if (t - P.start < P.delay) return 0;
  SEXP a = PROTECT(ScalarReal((double)__atomic_load_n(&P.done, __ATOMIC_RELAXED)));
  SEXP b = PROTECT(ScalarReal((double)P.total));
  SEXP call = PROTECT(lang3(P.fn, a, b));
  SEXP conds = PROTECT(allocVector(STRSXP, 2));
  SET_STRING_ELT(conds, 0, mkChar("error"));
  SET_STRING_ELT(conds, 1, mkChar("interrupt"));
  /* nothing may jump out of the engine from here */
  int interrupted = 0;
  R_tryCatch(report_body, call, conds, report_failed, &interrupted, NULL, NULL);
  UNPROTECT(4);
  return interrupted;
}

SEXP ffi_progress_begin(SEXP fn, SEXP delay) {
  if (P.fn != NULL) {
    R_ReleaseObject(P.fn);
    P.fn = NULL;
  }
  R_PreserveObject(fn);
  P.fn = fn;
  P.start = now_s();
  P.next = 0;
  P.delay = asReal(delay);
  P.total = 0;
  __atomic_store_n(&P.done, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&P.active, 1, __ATOMIC_RELAXED);
  return R_NilValue;
}

/* Ends reporting; returns c(done, total). */
SEXP ffi_progress_end(void) {
  __atomic_store_n(&P.active, 0, __ATOMIC_RELAXED);
  if (P.fn != NULL) {
    R_ReleaseObject(P.fn);
    P.fn = NULL;
  }
  SEXP out = PROTECT(allocVector(REALSXP, 2));
  REAL(out)[0] = (double)__atomic_load_n(&P.done, __ATOMIC_RELAXED);
  REAL(out)[1] = (double)P.total;
  UNPROTECT(1);
  return out;
}
