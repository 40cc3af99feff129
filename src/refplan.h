/* Planning the reads of a reference store (refplan.c): R-free. */
#ifndef ZARR_REFPLAN_H
#define ZARR_REFPLAN_H

#include "zarr_core.h"

/* A piece of a referenced file that request `req` of a batch wants. */
typedef struct {
  size_t req;
  int32_t target;
  int64_t start, len;
} zref_piece;

/* One read of a file: pieces[first .. first + count) (after ref_plan sorted
 * them) all lie within [start, start + len). */
typedef struct {
  int32_t target;
  int64_t start, len;
  size_t first, count;
} zref_span;

/* Bytes [*start, *start + *n) of the file for a request (off, len) (see
 * zrange) on a reference to ref_len bytes at ref_off. -1 when the reference
 * itself is invalid. */
int ref_translate(int64_t ref_off, int64_t ref_len, int64_t off, int64_t len, int64_t *start,
                  int64_t *n);

/* Sort the pieces by file and offset and merge them into spans; the caller
 * frees *spans. */
int ref_plan(zref_piece *p, size_t n, int64_t gap, int64_t max, zref_span **spans, size_t *nspans,
             zerr *e);

#endif
