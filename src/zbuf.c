/* Error records and growable buffers: the R-free half of the error plumbing
 * (errors.c turns a record into an R condition). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "zarr_core.h"

int zerr_set(zerr *e, zerr_kind kind, const char *fmt, ...) {
  if (e == NULL || e->kind != ZE_OK) return -1; /* keep the first error */
  e->kind = kind;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  return -1;
}

int zbuf_reserve(zbuf *b, size_t cap, zerr *e) {
  if (b->cap >= cap) return 0;
  /* double when growing step by step; a larger jump gets exactly what it asks */
  size_t ncap = b->cap == 0 ? 4096 : b->cap < ((size_t)1 << 40) ? b->cap * 2 : cap;
  if (ncap < cap) ncap = cap;
  uint8_t *p = realloc(b->data, ncap);
  if (p == NULL)
    return zerr_set(e, ZE_NOMEM, "cannot allocate %.0f bytes", (double)ncap);
  b->data = p;
  b->cap = ncap;
  return 0;
}

void zbuf_free(zbuf *b) {
  free(b->data);
  b->data = NULL;
  b->size = b->cap = 0;
}
