/* Progress reports (progress.c): cheap no-ops unless the R side turned them on. */
#ifndef ZARR_PROGRESS_H
#define ZARR_PROGRESS_H
#include <stdint.h>
#include <Rinternals.h>

int progress_active(void);
void progress_total(int64_t n);  /* R thread: more work units in this call */
void progress_add(int64_t n);    /* any thread: units done */
int progress_poll(void);         /* R thread, between tasks: maybe call R; 1: the user interrupted */
SEXP ffi_progress_begin(SEXP fn, SEXP delay);
SEXP ffi_progress_end(void);
#endif
