/* Progress reports for long engine calls.
 *
 * The R side turns reporting on (ffi_progress_begin, with an R function)
 * only when the option zarr.progress is on and the call is large; otherwise
 * nothing here runs beyond one load of `active`. Workers only add to an
 * atomic counter; the R thread, in the polls it already makes between tasks
 * and while it waits for the store, calls the R function with (done, total)
 * once `delay` seconds have passed, then at most every 0.2 s. An error in
 * the R function turns reporting off; it never stops the read or write.
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


void progress_poll(void) {
  if (!progress_active()) return;
  double t = now_s();
  if (t < P.next) return;
  P.next = t + 0.2;
  if (t - P.start < P.delay) return;
  SEXP a = PROTECT(ScalarReal((double)__atomic_load_n(&P.done, __ATOMIC_RELAXED)));
  SEXP b = PROTECT(ScalarReal((double)P.total));
  SEXP call = PROTECT(lang3(P.fn, a, b));
  /* an error (or an interrupt) inside the report must not jump out of the
   * engine: it ends reporting instead, silently */
  int failed = 0;
  R_tryEvalSilent(call, R_GlobalEnv, &failed);
  UNPROTECT(3);
  if (failed) __atomic_store_n(&P.active, 0, __ATOMIC_RELAXED);
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
