/* Running a batch of requests against any store, and the R handle of a store.
 *
 * store_fetch() is the one place that knows how a store delivers bytes:
 * - a store with a thread-safe get() is read by the engine's worker threads
 *   themselves, each fetching and then handling one request at a time;
 * - a store with get_many() (HTTP) runs it on a fetch thread; the bytes go
 *   through a bounded queue to the worker threads, so decoding overlaps
 *   fetching and at most ZARR_QUEUE_BYTES wait to be decoded;
 * - a main_thread store (an R store) is asked on the R thread, then the
 *   workers handle what it returned.
 * Thread 0 is always the R thread: it polls for interrupts between its tasks.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "store.h"
#include "progress.h"
#include "chunk_cache.h"

#define ZARR_QUEUE_BYTES ((size_t)256 << 20)
#define KEY_CAP 4096

/* ---- the R handle ------------------------------------------------------- */

static SEXP store_tag(void) { return install("zarr_store_io"); }

static void store_finalize(SEXP ptr) {
  zstore *s = R_ExternalPtrAddr(ptr);
  if (s != NULL) {
    if (s->ops->destroy != NULL) s->ops->destroy(s);
    if (s->ident != NULL && !s->ops->shared_where) zcache_drop_prefix(s->ident, ""); /* unreachable now */
    free(s->ident);
    free(s->where);
    free(s);
  }
  R_ClearExternalPtr(ptr);
}

/* `keep` stays alive as long as the store (R closures, a zip index). */
SEXP store_wrap(zstore *s, SEXP keep) {
  SEXP ptr = PROTECT(R_MakeExternalPtr(s, store_tag(), keep));
  R_RegisterCFinalizerEx(ptr, store_finalize, TRUE);
  UNPROTECT(1);
  return ptr;
}

zstore *store_from(SEXP ptr) {
  if (TYPEOF(ptr) != EXTPTRSXP || R_ExternalPtrTag(ptr) != store_tag())
    zarr_raise(ZE_STORE, NULL, NULL, "internal: not a store handle");
  zstore *s = R_ExternalPtrAddr(ptr);
  if (s == NULL)
    zarr_raise(ZE_STORE, NULL, NULL,
               "the store handle is gone (saved and restored in another session?): open the store again");
  return s;
}

zstore *store_alloc(const zstore_ops *ops, void *impl, const char *where) {
  zstore *s = calloc(1, sizeof *s);
  char *w = strdup(where ? where : "");
  if (s == NULL || w == NULL) {
    free(s);
    free(w);
    return NULL;
  }
  s->ops = ops;
  s->impl = impl;
  s->where = w;
  return s;
}

/* Cache entries are named ident + key. A store that shares what it holds
 * with other stores names it in its constructor (local: the folder's real
 * path; remote: the URL, credentials going in its cache_salt); else the
 * kind and `where`.
 * Any other store is an identity of its own, ended by a byte no key has, so
 * that no identity is the start of another. */
const char *store_ident(zstore *s) {
  if (s->ident == NULL) {
    static uint64_t next = 0; /* R thread only */
    char buf[64];
    const char *w = s->where ? s->where : "";
    if (s->ops->shared_where) {
      size_t n = strlen(s->ops->kind) + strlen(w) + 3;
      s->ident = malloc(n);
      if (s->ident != NULL) snprintf(s->ident, n, "%s:%s/", s->ops->kind, w);
    } else {
      snprintf(buf, sizeof buf, "#%llu\x1f", (unsigned long long)++next);
      s->ident = strdup(buf);
    }
    if (s->ident == NULL) zarr_raise(ZE_NOMEM, NULL, NULL, "out of memory");
  }
  return s->ident;
}

static void count_request(zstore *s, size_t bytes) {
  __atomic_add_fetch(&s->requests, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&s->bytes, (int64_t)bytes, __ATOMIC_RELAXED);
}

/* ---- keys ---------------------------------------------------------------------- */

int store_key_ok(zstore *s, const char *key, int write, zerr *e) {
  if (!key_is_safe(key))
    return zerr_set(e, ZE_KEY,
                    "invalid key '%.300s': a key is a relative path without empty, '.' or '..' segments, "
                    "backslashes or control characters",
                    key ? key : "");
  if (write && s->ops->inside != NULL) return s->ops->inside(s, key, e);
  return 0;
}

int store_set(zstore *s, const char *key, const uint8_t *p, size_t n, zerr *e) {
  if (s->ops->set == NULL) return zerr_set(e, ZE_READ_ONLY, "the store is read-only");
  if (store_key_ok(s, key, 1, e)) return -1;
  return s->ops->set(s, key, p, n, e);
}

int store_erase(zstore *s, const char *key, zerr *e) {
  if (s->ops->erase == NULL) return zerr_set(e, ZE_READ_ONLY, "the store is read-only");
  if (store_key_ok(s, key, 1, e)) return -1;
  return s->ops->erase(s, key, e);
}

/* ---- a batch ----------------------------------------------------------------- */

typedef struct {
  zstore *s;
  size_t n;
  zreq_fn req;
  zhandle_fn handle;
  void *ctx;
  volatile int *stop;
  int failed;
  zerr err;
  double next_poll;
  zbuf *fetch;  /* get(): one buffer per thread */
  /* get_many(): requests made up front, and the queue of arrived bodies */
  zrange *r;
  char *keys;
  size_t *order;   /* queue slots, in arrival order */
  zbuf *bodies;    /* by request */
  int *missing;
  size_t head, tail;
  size_t queued;   /* bytes arrived and not yet handled */
  int done;        /* the fetch is over (all arrived, or it stopped) */
  pthread_mutex_t mu;
  pthread_cond_t arrived, drained;
} batch;

static void batch_fail(batch *b, const zerr *e) {
  int expected = 0;
  if (__atomic_compare_exchange_n(&b->failed, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    b->err = *e;
  __atomic_store_n(b->stop, 1, __ATOMIC_RELEASE);
}

static int batch_stopped(const batch *b) { return __atomic_load_n(b->stop, __ATOMIC_ACQUIRE) != 0; }

/* Seconds on a monotonic clock: when to poll again. (Not clock(): the
 * process's CPU time stands still while it waits for the network.) */
double zarr_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The R thread, between tasks: at most every 50 ms (the check is not free). */
static int batch_poll(batch *b) {
  double now = zarr_now();
  if (now < b->next_poll) return batch_stopped(b);
  b->next_poll = now + 0.05;
  if (progress_poll() || interrupt_pending()) {
    zerr e = {ZE_OK, ""};
    zerr_set(&e, ZE_INTERRUPT, "interrupted by the user");
    batch_fail(b, &e);
  }
  return batch_stopped(b);
}

static void handle_one(batch *b, size_t i, int thread, uint8_t *p, size_t n, int missing,
                       int writable) {
  zerr e = {ZE_OK, ""};
  if (b->handle(b->ctx, i, thread, p, n, missing, writable, &e)) {
    if (e.kind == ZE_OK) zerr_set(&e, ZE_STORE, "internal: a request handler failed silently");
    batch_fail(b, &e);
  }
}

/* -- stores read by the workers (get) -- */

static void get_task(void *ctx, size_t i, int thread) {
  batch *b = ctx;
  if (batch_stopped(b)) return;
  char key[KEY_CAP];
  zrange r = {key, 0, -1};
  zerr e = {ZE_OK, ""};
  if (b->req(b->ctx, i, &r, key, sizeof key, &e) || store_key_ok(b->s, r.key, 0, &e)) {
    batch_fail(b, &e);
    return;
  }
  zbuf *buf = &b->fetch[thread];
  int missing = 0;
  if (b->s->ops->get(b->s, &r, buf, &missing, &e)) {
    batch_fail(b, &e);
    return;
  }
  count_request(b->s, missing ? 0 : buf->size);
  handle_one(b, i, thread, buf->data, missing ? 0 : buf->size, missing, 1);
}

static int poll_fn(void *ctx) { return batch_poll(ctx); }

/* -- requests made up front (get_many stores) -- */

static int make_requests(batch *b, zerr *e) {
  b->r = calloc(b->n ? b->n : 1, sizeof *b->r);
  size_t cap = 0, used = 0;
  size_t *at = malloc(sizeof(size_t) * (b->n ? b->n : 1));
  if (b->r == NULL || at == NULL) {
    free(at);
    return zerr_set(e, ZE_NOMEM, "out of memory");
  }
  char key[KEY_CAP];
  for (size_t i = 0; i < b->n; i++) {
    zrange r = {key, 0, -1};
    if (b->req(b->ctx, i, &r, key, sizeof key, e) || store_key_ok(b->s, r.key, 0, e)) {
      free(at);
      return -1;
    }
    size_t k = strlen(r.key) + 1;
    if (used + k > cap) {
      size_t ncap = cap ? cap * 2 : 4096;
      while (ncap < used + k) ncap *= 2;
      char *p = realloc(b->keys, ncap);
      if (p == NULL) {
        free(at);
        return zerr_set(e, ZE_NOMEM, "out of memory");
      }
      b->keys = p;
      cap = ncap;
    }
    memcpy(b->keys + used, r.key, k);
    at[i] = used;
    used += k;
    b->r[i] = r;
  }
  for (size_t i = 0; i < b->n; i++) b->r[i].key = b->keys + at[i];
  free(at);
  return 0;
}

/* -- get_many on a fetch thread, bodies through a bounded queue -- */

static int queue_sink(void *ctx, size_t i, zbuf *body, int missing) {
  batch *b = ctx;
  pthread_mutex_lock(&b->mu);
  while (b->queued > ZARR_QUEUE_BYTES && !batch_stopped(b)) pthread_cond_wait(&b->drained, &b->mu);
  if (i < b->n) {
    b->bodies[i] = *body;
    body->data = NULL;
    body->size = body->cap = 0;
    b->missing[i] = missing;
    b->queued += b->bodies[i].size;
    b->order[b->tail++] = i;
    count_request(b->s, b->bodies[i].size);
  }
  pthread_cond_broadcast(&b->arrived);
  pthread_mutex_unlock(&b->mu);
  return batch_stopped(b);
}

static void *fetch_main(void *ctx) {
  batch *b = ctx;
  zerr e = {ZE_OK, ""};
  if (b->s->ops->get_many(b->s, b->r, b->n, queue_sink, b, b->stop, &e) && e.kind != ZE_OK)
    batch_fail(b, &e);
  pthread_mutex_lock(&b->mu);
  b->done = 1;
  pthread_cond_broadcast(&b->arrived);
  pthread_mutex_unlock(&b->mu);
  return NULL;
}

typedef struct {
  batch *b;
  int thread;
} decoder_arg;

static void decode_loop(batch *b, int thread) {
  while (1) {
    pthread_mutex_lock(&b->mu);
    while (b->head == b->tail && !b->done && !batch_stopped(b)) {
      if (thread == 0) { /* wake up now and then to poll for interrupts */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
          ts.tv_sec++;
          ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&b->arrived, &b->mu, &ts);
        pthread_mutex_unlock(&b->mu);
        batch_poll(b);
        pthread_mutex_lock(&b->mu);
      } else {
        pthread_cond_wait(&b->arrived, &b->mu);
      }
    }
    if (b->head == b->tail || batch_stopped(b)) {
      pthread_cond_broadcast(&b->drained);
      pthread_mutex_unlock(&b->mu);
      return;
    }
    size_t i = b->order[b->head++];
    pthread_mutex_unlock(&b->mu);
    zbuf *body = &b->bodies[i];
    handle_one(b, i, thread, body->data, body->size, b->missing[i], 1);
    size_t n = body->size;
    zbuf_free(body);
    pthread_mutex_lock(&b->mu);
    b->queued -= n;
    pthread_cond_broadcast(&b->drained);
    pthread_mutex_unlock(&b->mu);
    if (thread == 0) batch_poll(b);
  }
}

static void *decoder_main(void *p) {
  decoder_arg *a = p;
  decode_loop(a->b, a->thread);
  return NULL;
}

static void run_queued(batch *b, int nthreads) {
  pthread_mutex_init(&b->mu, NULL);
  pthread_cond_init(&b->arrived, NULL);
  pthread_cond_init(&b->drained, NULL);
  pthread_t fetcher;
  if (pthread_create(&fetcher, NULL, fetch_main, b) != 0) {
    zerr e = {ZE_OK, ""};
    zerr_set(&e, ZE_NOMEM, "cannot start a fetch thread");
    batch_fail(b, &e);
    goto out;
  }
  pthread_t tids[64];
  decoder_arg args[64];
  int started = 0;
  for (int t = 1; t < nthreads && t < 64; t++) {
    args[t].b = b;
    args[t].thread = t;
    if (pthread_create(&tids[t], NULL, decoder_main, &args[t]) != 0) break;
    started++;
  }
  decode_loop(b, 0);
  /* the fetch may still be under way when we stopped early: wake it up */
  pthread_mutex_lock(&b->mu);
  pthread_cond_broadcast(&b->drained);
  pthread_mutex_unlock(&b->mu);
  pthread_join(fetcher, NULL);
  for (int t = 1; t <= started; t++) pthread_join(tids[t], NULL);
out:
  pthread_cond_destroy(&b->arrived);
  pthread_cond_destroy(&b->drained);
  pthread_mutex_destroy(&b->mu);
}

/* -- main_thread stores: ask R for the whole batch, then handle on the workers -- */

static int borrowed_sink(void *ctx, size_t i, zbuf *body, int missing) {
  batch *b = ctx;
  if (i < b->n) {
    b->bodies[i] = *body; /* borrowed (cap == 0): valid until the batch ends */
    b->missing[i] = missing;
    count_request(b->s, body->size);
  }
  return 0;
}

static void borrowed_task(void *ctx, size_t i, int thread) {
  batch *b = ctx;
  if (batch_stopped(b)) return;
  handle_one(b, i, thread, b->bodies[i].data, b->bodies[i].size, b->missing[i],
             b->bodies[i].cap > 0);
}

int store_fetch(zstore *s, size_t n, zreq_fn req, zhandle_fn handle, void *ctx, int nthreads,
                volatile int *stop, zerr *e) {
  return store_fetch_bufs(s, n, req, handle, ctx, nthreads, NULL, stop, e);
}

int store_fetch_bufs(zstore *s, size_t n, zreq_fn req, zhandle_fn handle, void *ctx, int nthreads,
                     zbuf *fetch, volatile int *stop, zerr *e) {
  if (n == 0) return 0;
  if (nthreads < 1) nthreads = 1;
  if (nthreads > 64) nthreads = 64;
  batch b;
  memset(&b, 0, sizeof b);
  b.s = s;
  b.n = n;
  b.req = req;
  b.handle = handle;
  b.ctx = ctx;
  b.stop = stop;
  int rc = 0;
  if (s->ops->get_many == NULL) {
    b.fetch = fetch != NULL ? fetch : calloc((size_t)nthreads, sizeof(zbuf));
    if (b.fetch == NULL) return zerr_set(e, ZE_NOMEM, "out of memory");
    parallel_for(n, nthreads, get_task, &b, poll_fn);
    if (fetch == NULL) {
      for (int t = 0; t < nthreads; t++) zbuf_free(&b.fetch[t]);
      free(b.fetch);
    }
  } else {
    b.bodies = calloc(n, sizeof(zbuf));
    b.missing = calloc(n, sizeof(int));
    b.order = calloc(n, sizeof(size_t));
    if (b.bodies == NULL || b.missing == NULL || b.order == NULL) {
      zerr_set(&b.err, ZE_NOMEM, "out of memory");
      b.failed = 1;
    } else if (make_requests(&b, &b.err)) {
      b.failed = 1;
    } else if (s->ops->main_thread) {
      zerr fe = {ZE_OK, ""};
      if (s->ops->get_many(s, b.r, n, borrowed_sink, &b, stop, &fe)) batch_fail(&b, &fe);
      else parallel_for(n, nthreads, borrowed_task, &b, poll_fn);
    } else {
      run_queued(&b, nthreads);
    }
    if (b.bodies != NULL && !s->ops->main_thread)
      for (size_t i = 0; i < n; i++) zbuf_free(&b.bodies[i]);
    free(b.bodies);
    free(b.missing);
    free(b.order);
    free(b.r);
    free(b.keys);
  }
  if (b.failed) {
    *e = b.err;
    rc = -1;
  }
  return rc;
}

/* ---- R entry points ----------------------------------------------------------- */

/* One request from R: what is asked, and its bytes (copied out of the
 * store's buffer, which is reused). */
typedef struct {
  const char *key;
  int64_t off, len;
  uint8_t *data;
  size_t n;
  int missing;
} one_get;

/* ctx: an array of one_get, request i its element i */
static int one_req(void *ctx, size_t i, zrange *r, char *keybuf, size_t cap, zerr *e) {
  (void)keybuf;
  (void)cap;
  (void)e;
  const one_get *g = (const one_get *)ctx + i;
  r->key = g->key;
  r->off = g->off;
  r->len = g->len;
  return 0;
}

static int one_handle(void *ctx, size_t i, int thread, uint8_t *p, size_t n, int missing,
                      int writable, zerr *e) {
  (void)thread;
  (void)writable;
  one_get *g = (one_get *)ctx + i;
  g->missing = missing;
  if (missing) return 0;
  g->data = malloc(n ? n : 1);
  if (g->data == NULL) return zerr_set(e, ZE_NOMEM, "out of memory");
  if (n) memcpy(g->data, p, n);
  g->n = n;
  return 0;
}

/* Values up to this size (metadata documents) are copied into R without a
 * condition handler; R fails to allocate them only when nothing else works. */
#define SMALL_VALUE ((size_t)1 << 16)

static SEXP copy_small(void *data) {
  one_get *g = data;
  SEXP out = allocVector(RAWSXP, (R_xlen_t)g->n);
  if (g->n) memcpy(RAW(out), g->data, g->n);
  return out;
}

static void free_get(void *data) {
  one_get *g = data;
  free(g->data);
  g->data = NULL;
}

static SEXP alloc_raw(void *data) { return allocVector(RAWSXP, (R_xlen_t)((one_get *)data)->n); }
static SEXP alloc_failed(SEXP cond, void *data) {
  (void)cond;
  (void)data;
  return R_NilValue;
}

static SEXP raw_from_get(one_get *g);

/* The value of one key as an R raw vector, or NULL when absent (off/len as
 * in zrange: len -1 for "to the end", a negative offset a suffix); `quiet`:
 * NULL too when it cannot be read. */
static SEXP store_value(zstore *s, const char *key, int64_t off, int64_t len, int quiet) {
  one_get g;
  memset(&g, 0, sizeof g);
  g.key = key;
  g.off = off;
  g.len = len;
  volatile int stop = 0;
  zerr e = {ZE_OK, ""};
  if (store_fetch(s, 1, one_req, one_handle, &g, 1, &stop, &e)) {
    free(g.data);
    if (quiet) return R_NilValue;
    store_raise(s, &e, NULL, g.key);
  }
  if (g.missing) return R_NilValue;
  if (g.n > (size_t)R_XLEN_T_MAX) {
    free(g.data);
    zarr_raise(ZE_NOMEM, NULL, g.key, "the value is too large for an R vector");
  }
  return raw_from_get(&g);
}

/* The bytes fetched into g (malloc'd, freed here) as an R raw vector. */
static SEXP raw_from_get(one_get *g) {
  if (g->n <= SMALL_VALUE) /* the C copy is freed however the allocation ends */
    return R_ExecWithCleanup(copy_small, g, free_get, g);
  /* a large R allocation may fail: then a classed error naming the key,
   * after the C copy is freed (R_tryCatchError runs R code: not for small
   * documents, where it cost more than reading them) */
  SEXP out = R_tryCatchError(alloc_raw, g, alloc_failed, NULL);
  if (out == R_NilValue) {
    free(g->data);
    zarr_raise(ZE_NOMEM, NULL, g->key, "cannot allocate an R vector for the value");
  }
  if (g->n) memcpy(RAW(out), g->data, g->n);
  free(g->data);
  return out;
}

/* The value of one key (range: NULL, or c(offset, length) with length -1
 * for "to the end"; a negative offset is a suffix), or NULL when absent. */
SEXP ffi_store_get(SEXP ptr, SEXP key, SEXP range) {
  zstore *s = store_from(ptr);
  int64_t off = 0, len = -1;
  if (!isNull(range)) {
    off = (int64_t)REAL(range)[0];
    len = (int64_t)REAL(range)[1];
  }
  return store_value(s, translateCharUTF8(STRING_ELT(key, 0)), off, len, 0);
}

/* A metadata document read directly where the store reads one key at a
 * time (a local folder): not counted in io_stats(), which count the
 * requests for data, as when documents were read from R. NULL when absent
 * (or, `quiet`, unreadable). */
static SEXP doc_value(zstore *s, const char *key, int quiet) {
  if (s->ops->get == NULL) return store_value(s, key, 0, -1, quiet);
  zerr e = {ZE_OK, ""};
  zbuf b = {0};
  one_get g;
  memset(&g, 0, sizeof g);
  g.key = key;
  zrange r = {key, 0, -1};
  if (store_key_ok(s, key, 0, &e) || s->ops->get(s, &r, &b, &g.missing, &e)) {
    zbuf_free(&b);
    if (quiet) return R_NilValue;
    store_raise(s, &e, NULL, key);
  }
  if (g.missing) {
    zbuf_free(&b);
    return R_NilValue;
  }
  if (b.data == NULL && zbuf_reserve(&b, 1, &e)) zarr_raise_err(&e, NULL, key);
  g.data = b.data; /* handed over: raw_from_get() frees it */
  g.n = b.size;
  return raw_from_get(&g);
}

/* The metadata documents of the node at `prefix` ("" or "a/b/"), read in
 * the order get_metadata() needs them and no further: zarr.json; without
 * it .zarray, or else .zgroup; with either, .zattrs; and with `root`, the
 * .zmetadata of a v2 root group (NULL also when it cannot be read: the hierarchy
 * is then listed, as when it is absent). One call instead of one R method
 * call per document: a list (zarr.json, .zarray, .zgroup, .zattrs,
 * .zmetadata) of raw vectors or NULLs. */
SEXP ffi_store_node_docs(SEXP ptr, SEXP prefix, SEXP root) {
  static const char *const names[] = {"zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata"};
  zstore *s = store_from(ptr);
  if (TYPEOF(prefix) != STRSXP || XLENGTH(prefix) != 1 || STRING_ELT(prefix, 0) == NA_STRING)
    zarr_raise(ZE_VALUE, NULL, NULL, "internal: a node prefix must be one string");
  const char *pre = translateCharUTF8(STRING_ELT(prefix, 0));
  int with_root = asLogical(root) == TRUE;
  size_t np = strlen(pre);
  char key[4096];
  if (np + 16 > sizeof key) zarr_raise(ZE_KEY, NULL, NULL, "the node path is too long for a store key");
  memcpy(key, pre, np);
  SEXP out = PROTECT(allocVector(VECSXP, 5));
  for (int i = 0; i < 5; i++) {
    if (i == 1 && VECTOR_ELT(out, 0) != R_NilValue) break;  /* v3: nothing else */
    if (i == 2 && VECTOR_ELT(out, 1) != R_NilValue) continue; /* an array is no group */
    if (i == 3 && VECTOR_ELT(out, 1) == R_NilValue && VECTOR_ELT(out, 2) == R_NilValue) break;
    if (i == 4 && (!with_root || VECTOR_ELT(out, 2) == R_NilValue)) break; /* of a root group only */
    strcpy(key + np, names[i]);
    SET_VECTOR_ELT(out, i, doc_value(s, key, i == 4));
  }
  UNPROTECT(1);
  return out;
}

/* The values of several keys (small documents, such as the metadata of many
 * arrays), fetched as one batch on `nthreads` threads where the store can:
 * a list of raw vectors, NULL for absent keys. */
SEXP ffi_store_get_keys(SEXP ptr, SEXP keys, SEXP nthreads) {
  zstore *s = store_from(ptr);
  if (TYPEOF(keys) != STRSXP) zarr_raise(ZE_STORE, NULL, NULL, "internal: keys must be character");
  size_t n = (size_t)XLENGTH(keys);
  SEXP out = PROTECT(allocVector(VECSXP, (R_xlen_t)n));
  if (n == 0) {
    UNPROTECT(1);
    return out;
  }
  for (size_t i = 0; i < n; i++) translateCharUTF8(STRING_ELT(keys, (R_xlen_t)i)); /* R errors before C memory */
  one_get *g = calloc(n, sizeof *g);
  if (g == NULL) zarr_raise(ZE_NOMEM, NULL, NULL, "out of memory");
  for (size_t i = 0; i < n; i++) {
    g[i].key = translateCharUTF8(STRING_ELT(keys, (R_xlen_t)i));
    g[i].len = -1;
  }
  volatile int stop = 0;
  zerr e = {ZE_OK, ""};
  int nt = asInteger(nthreads);
  if (nt == NA_INTEGER || nt < 1) nt = 1;
  int rc = store_fetch(s, n, one_req, one_handle, g, nt, &stop, &e);
  for (size_t i = 0; i < n && rc == 0; i++) {
    if (g[i].missing) continue;
    SEXP v = g[i].n <= (size_t)R_XLEN_T_MAX ? R_tryCatchError(alloc_raw, &g[i], alloc_failed, NULL) : R_NilValue;
    if (v == R_NilValue) {
      zerr_set(&e, ZE_NOMEM, "cannot allocate an R vector for the value of '%.200s'", g[i].key);
      rc = -1;
      break;
    }
    SET_VECTOR_ELT(out, (R_xlen_t)i, v);
    if (g[i].n) memcpy(RAW(v), g[i].data, g[i].n);
  }
  for (size_t i = 0; i < n; i++) free(g[i].data);
  if (rc) {
    char key[256];
    snprintf(key, sizeof key, "%s", n ? translateCharUTF8(STRING_ELT(keys, 0)) : "");
    free(g);
    store_raise(s, &e, NULL, key);
  }
  free(g);
  UNPROTECT(1);
  return out;
}

SEXP ffi_store_set(SEXP ptr, SEXP key, SEXP value) {
  zstore *s = store_from(ptr);
  const char *k = translateCharUTF8(STRING_ELT(key, 0));
  if (s->ops->set == NULL) zarr_raise(ZE_READ_ONLY, NULL, k, "the store is read-only");
  zerr e = {ZE_OK, ""};
  if (store_key_ok(s, k, 1, &e)) zarr_raise_err(&e, NULL, k); /* nothing was changed */
  int rc = isNull(value) ? s->ops->erase(s, k, &e)
                         : s->ops->set(s, k, RAW(value), (size_t)XLENGTH(value), &e);
  zcache_drop(store_ident(s), k);
  if (rc) store_raise(s, &e, NULL, k);
  return R_NilValue;
}

/* Refuse (a zarr_error_key naming the first) unless every key is safe and,
 * with write, stays inside the store when written or erased: a caller about
 * to act on many keys from store content (a journal) checks them all first,
 * so that a bad one changes nothing. */
SEXP ffi_store_check_keys(SEXP ptr, SEXP keys, SEXP write) {
  zstore *s = store_from(ptr);
  if (TYPEOF(keys) != STRSXP) zarr_raise(ZE_VALUE, NULL, NULL, "internal: keys must be a character vector");
  int w = asLogical(write) == TRUE;
  zerr e = {ZE_OK, ""};
  for (R_xlen_t i = 0; i < XLENGTH(keys); i++) {
    if (STRING_ELT(keys, i) == NA_STRING) zarr_raise(ZE_KEY, NULL, NULL, "a key is NA");
    const char *k = translateCharUTF8(STRING_ELT(keys, i));
    if (store_key_ok(s, k, w, &e)) zarr_raise_err(&e, NULL, k);
  }
  return R_NilValue;
}

/* Requests made and bytes delivered since the store was opened; chunks of
 * this store found and not found in the decoded-chunk cache, and the bytes
 * the cache holds (for every store). */
SEXP ffi_store_stats(SEXP ptr) {
  zstore *s = store_from(ptr);
  size_t bytes, entries, cap;
  zcache_stats(&bytes, &entries, &cap);
  const char *names[] = {"requests", "bytes", "cache_hits", "cache_misses", "cache_bytes"};
  double v[] = {(double)__atomic_load_n(&s->requests, __ATOMIC_RELAXED),
                (double)__atomic_load_n(&s->bytes, __ATOMIC_RELAXED),
                (double)__atomic_load_n(&s->cache_hits, __ATOMIC_RELAXED),
                (double)__atomic_load_n(&s->cache_misses, __ATOMIC_RELAXED), (double)bytes};
  SEXP out = PROTECT(allocVector(REALSXP, 5));
  SEXP nm = PROTECT(allocVector(STRSXP, 5));
  for (int i = 0; i < 5; i++) {
    REAL(out)[i] = v[i];
    SET_STRING_ELT(nm, i, mkChar(names[i]));
  }
  setAttrib(out, R_NamesSymbol, nm);
  UNPROTECT(2);
  return out;
}

SEXP ffi_cache_count(void) { return ScalarReal((double)zcache_count()); }

/* Drop cached chunks: of some keys of a store, of its keys under a prefix,
 * or (ptr NULL) of every store. */
SEXP ffi_cache_drop(SEXP ptr, SEXP keys, SEXP prefix) {
  if (isNull(ptr)) {
    zcache_drop_prefix(NULL, "");
    return R_NilValue;
  }
  const char *id = store_ident(store_from(ptr));
  for (R_xlen_t i = 0; TYPEOF(keys) == STRSXP && i < XLENGTH(keys); i++)
    zcache_drop(id, translateCharUTF8(STRING_ELT(keys, i)));
  if (TYPEOF(prefix) == STRSXP && XLENGTH(prefix) == 1)
    zcache_drop_prefix(id, translateCharUTF8(STRING_ELT(prefix, 0)));
  return R_NilValue;
}

/* Raise a store failure: an R store's own condition as it was signalled,
 * anything else as a zarr_error_<kind>. */
void store_raise(zstore *s, const zerr *e, const char *array, const char *key) {
  if (s != NULL && s->ops->pending_condition != NULL) {
    SEXP cond = PROTECT(s->ops->pending_condition(s));
    if (cond != R_NilValue) {
      SEXP call = PROTECT(lang2(install("stop"), cond));
      eval(call, R_BaseEnv);
      UNPROTECT(1);
    }
    UNPROTECT(1);
  }
  zarr_raise_err(e, array, key);
}
