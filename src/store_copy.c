/* Copy values between two stores as they are (no decoding): the chunks of
 * an array whose codecs are the same in the copy. The source is read with
 * store_fetch (concurrently, as any engine read); each value is written by
 * the worker that received it, or, when the destination must be called on
 * the R thread, kept and written by the R thread once the batch is in.
 */
#include <stdlib.h>
#include <string.h>
#include "store.h"
#include "chunk_cache.h"
#include "progress.h"

typedef struct {
  const char **from, **to;
  zstore *dst;
  uint8_t **kept; /* main-thread destination: a copy of value i, or NULL */
  size_t *kept_n;
  int dst_failed;
  char failed_key[1024];
} copy_ctx;

static int copy_req(void *ctx, size_t i, zrange *r, char *keybuf, size_t cap, zerr *e) {
  (void)keybuf;
  (void)cap;
  (void)e;
  copy_ctx *c = ctx;
  r->key = c->from[i];
  r->off = 0;
  r->len = -1;
  return 0;
}

static int copy_handle(void *ctx, size_t i, int thread, uint8_t *p, size_t n, int missing,
                       int writable, zerr *e) {
  (void)thread;
  (void)writable;
  copy_ctx *c = ctx;
  if (!missing) {
    if (c->kept != NULL) {
      c->kept[i] = malloc(n ? n : 1);
      if (c->kept[i] == NULL) return zerr_set(e, ZE_NOMEM, "out of memory");
      if (n) memcpy(c->kept[i], p, n);
      c->kept_n[i] = n;
    } else if (c->dst->ops->set(c->dst, c->to[i], p, n, e)) { /* keys checked in ffi_store_copy() */
      int expected = 0;
      if (__atomic_compare_exchange_n(&c->dst_failed, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE))
        snprintf(c->failed_key, sizeof c->failed_key, "%s", c->to[i]);
      return -1;
    }
  }
  progress_add(1);
  return 0;
}

/* from, to: character vectors of keys; returns the number of values found. */
SEXP ffi_store_copy(SEXP src, SEXP dst, SEXP from, SEXP to, SEXP nthreads) {
  zstore *s = store_from(src), *d = store_from(dst);
  if (d->ops->set == NULL) zarr_raise(ZE_READ_ONLY, NULL, NULL, "the destination store is read-only");
  if (TYPEOF(from) != STRSXP || TYPEOF(to) != STRSXP || XLENGTH(from) != XLENGTH(to))
    zarr_raise(ZE_VALUE, NULL, NULL, "internal: from and to must be character vectors of one length");
  size_t n = (size_t)XLENGTH(from);
  copy_ctx c;
  memset(&c, 0, sizeof c);
  c.dst = d;
  /* R memory first: nothing below raises while C memory is held */
  c.from = (const char **)R_alloc(n + 1, sizeof(char *));
  c.to = (const char **)R_alloc(n + 1, sizeof(char *));
  zerr e = {ZE_OK, ""};
  for (size_t i = 0; i < n; i++) {
    c.from[i] = translateCharUTF8(STRING_ELT(from, (R_xlen_t)i));
    c.to[i] = translateCharUTF8(STRING_ELT(to, (R_xlen_t)i));
  }
  /* every key first: a bad one (from store content) copies nothing */
  for (size_t i = 0; i < n; i++) {
    if (store_key_ok(s, c.from[i], 0, &e)) zarr_raise_err(&e, NULL, c.from[i]);
    if (store_key_ok(d, c.to[i], 1, &e)) zarr_raise_err(&e, NULL, c.to[i]);
  }
  if (d->ops->main_thread) {
    c.kept = (uint8_t **)R_alloc(n + 1, sizeof(uint8_t *));
    c.kept_n = (size_t *)R_alloc(n + 1, sizeof(size_t));
    memset(c.kept, 0, sizeof(uint8_t *) * (n + 1));
  }
  const char *dst_id = store_ident(d);
  progress_total((int64_t)n);
  volatile int stop = 0;
  int rc = store_fetch(s, n, copy_req, copy_handle, &c, asInteger(nthreads), &stop, &e);
  for (size_t i = 0; i < n; i++) zcache_drop(dst_id, c.to[i]); /* rewritten, or maybe */
  size_t found = 0;
  int set_failed = 0;
  const char *bad_key = NULL;
  for (size_t i = 0; c.kept != NULL && i < n; i++) {
    if (c.kept[i] == NULL) continue;
    if (rc == 0 && !set_failed) {
      if (d->ops->set(d, c.to[i], c.kept[i], c.kept_n[i], &e)) {
        set_failed = 1;
        bad_key = c.to[i];
      }
    }
    free(c.kept[i]);
    found++;
  }
  if (set_failed) store_raise(d, &e, NULL, bad_key);
  if (rc) {
    if (c.dst_failed) store_raise(d, &e, NULL, c.failed_key);
    store_raise(s, &e, NULL, NULL);
  }
  if (c.kept == NULL) found = n; /* counted as requests, missing ones included */
  return ScalarReal((double)found);
}

/* Erase keys of one store, in order, on the calling thread (a store written
 * in R is called there); a key that does not exist is not an error. */
SEXP ffi_store_erase(SEXP ptr, SEXP keys) {
  zstore *s = store_from(ptr);
  if (s->ops->erase == NULL) zarr_raise(ZE_READ_ONLY, NULL, NULL, "the store is read-only");
  if (TYPEOF(keys) != STRSXP) zarr_raise(ZE_VALUE, NULL, NULL, "internal: keys must be a character vector");
  zerr e = {ZE_OK, ""};
  /* every key first: a bad one (from store content) erases nothing */
  for (R_xlen_t i = 0; i < XLENGTH(keys); i++) {
    const char *k = translateCharUTF8(STRING_ELT(keys, i));
    if (store_key_ok(s, k, 1, &e)) zarr_raise_err(&e, NULL, k);
  }
  for (R_xlen_t i = 0; i < XLENGTH(keys); i++) {
    const char *k = translateCharUTF8(STRING_ELT(keys, i));
    int rc = s->ops->erase(s, k, &e);
    zcache_drop(store_ident(s), k);
    if (rc) store_raise(s, &e, NULL, k);
    if ((i & 255) == 255) R_CheckUserInterrupt();
  }
  return R_NilValue;
}
