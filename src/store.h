/* The store interface: what the engine asks of any store.
 *
 * A store is a map from keys (relative paths such as "a/c/0/0") to byte
 * values. Each kind (local files, zip members, an R store called back on
 * the R thread, HTTP) fills one zstore_ops table; the engine plans key and
 * byte-range requests and never looks at which kind it talks to.
 *
 * "Not found" is a result (missing = 1), never an error.
 */
#ifndef ZARR_STORE_H
#define ZARR_STORE_H

#include "zarr.h"
#include "chunk_cache.h"

/* One request: a whole value, a range, or a suffix. */
typedef struct {
  const char *key;  /* below the store root */
  int64_t off;      /* >= 0: first byte; < 0: the last -off bytes (len ignored) */
  int64_t len;      /* bytes from off; -1: to the end */
} zrange;

typedef struct zstore zstore;

/* Called once per request as it completes, on whichever thread fetched it
 * (never touching the R API unless the store is main_thread). `body` holds
 * the bytes; the sink may take them over (then it sets body->data = NULL and
 * body->size = body->cap = 0). With missing = 1 the key does not exist. A
 * nonzero return stops the batch. */
typedef int (*zsink_fn)(void *ctx, size_t i, zbuf *body, int missing);

typedef struct {
  const char *kind; /* for messages only: the engine never branches on it */
  /* Read one request, blocking; safe to call from several threads at once.
   * NULL when the store reads only in batches. */
  int (*get)(zstore *s, const zrange *r, zbuf *out, int *missing, zerr *e);
  /* Read n requests, concurrently where the store can, calling sink for each
   * as it completes. Returns promptly once *stop becomes nonzero (the engine
   * failed or the user interrupted). NULL: the engine calls get() from its
   * worker threads. */
  int (*get_many)(zstore *s, const zrange *r, size_t n, zsink_fn sink, void *ctx,
                  const volatile int *stop, zerr *e);
  /* Write or remove one key (atomically where the store can). NULL: the
   * store is read-only. Thread-safe unless main_thread. */
  int (*set)(zstore *s, const char *key, const uint8_t *p, size_t n, zerr *e);
  int (*erase)(zstore *s, const char *key, zerr *e);
  void (*destroy)(zstore *s);
  /* get_many/set/erase call R: run them on the R thread only. A body such a
   * store hands to the sink is borrowed (cap == 0), valid until the batch
   * ends. */
  int main_thread;
  /* The R condition a failed R call signalled (then cleared), or R_NilValue;
   * NULL for stores that do not call R. */
  SEXP (*pending_condition)(zstore *s);
  /* Two stores of this kind with one `where` hold the same keys (files,
   * URLs): the decoded-chunk cache shares their chunks, and a write through
   * either drops them. Else each store is a cache identity of its own. */
  int shared_where;
  /* When a value was last modified (seconds since 1970, -1 when the store
   * cannot tell) and its ETag (as the server sends it, "" when the store
   * cannot tell; etag holds ZSTAT_ETAG_MAX bytes), *missing = 1 when it
   * does not exist. NULL: not known. */
  int (*stat)(zstore *s, const char *key, double *mtime, char *etag, int *missing, zerr *e);
  /* What a value is now (local files: stat()), for checking what the
   * decoded-chunk cache made from it; thread-safe, never fails (a failure
   * is an unknown stamp). NULL: the store cannot tell cheaply. */
  void (*stamp)(zstore *s, const char *key, zstamp *out);
  /* Whether a write or erase of `key` (already a safe key) stays inside the
   * store once the store resolves it (a local folder that is a symbolic
   * link to elsewhere); 0 when it does, else e set. NULL: keys cannot
   * leave this store. */
  int (*inside)(zstore *s, const char *key, zerr *e);
} zstore_ops;

/* stat() of a file as a stamp (store_local.c) */
void file_stamp(const char *path, zstamp *out);

#define ZSTAT_ETAG_MAX 160

struct zstore {
  const zstore_ops *ops;
  void *impl;
  char *where;      /* root path or URL, for messages */
  int64_t requests; /* made through store_fetch(), and the bytes they gave */
  int64_t bytes;
  int64_t cache_hits, cache_misses; /* chunks of this store found (not) in the cache */
  char *ident;      /* its name in the decoded-chunk cache (store_ident()); a
                     * constructor may set it (what the store reaches: a
                     * folder, a URL) */
  uint64_t cache_salt; /* what else decides the bytes a key gets (credentials, a
                        * URL's query): entries are shared only by stores with
                        * one salt, and dropped by a write through any */
};

/* What the engine asks for: request i of a batch. `keybuf` (cap bytes) may
 * hold the key; r->key must stay valid until the call returns. */
typedef int (*zreq_fn)(void *ctx, size_t i, zrange *r, char *keybuf, size_t cap, zerr *e);
/* What the engine does with the answer to request i, on worker `thread`
 * (0 is the R thread; none may call R). `p` may be modified when writable. */
typedef int (*zhandle_fn)(void *ctx, size_t i, int thread, uint8_t *p, size_t n, int missing,
                          int writable, zerr *e);

/* store.c: the external pointer that R holds, and the one place that runs a
 * batch for any store (on worker threads, a fetch thread or the R thread),
 * polling for user interrupts on the R thread meanwhile. A nonzero *stop
 * ends the batch early; a failure sets it. */
zstore *store_alloc(const zstore_ops *ops, void *impl, const char *where);
zstore *store_from(SEXP ptr);
SEXP store_wrap(zstore *s, SEXP keep);
int store_fetch(zstore *s, size_t n, zreq_fn req, zhandle_fn handle, void *ctx, int nthreads,
                volatile int *stop, zerr *e);
/* The same, with `fetch`: nthreads buffers the caller lends for the bytes
 * of stores read by the workers (NULL: the batch's own, freed after it). */
int store_fetch_bufs(zstore *s, size_t n, zreq_fn req, zhandle_fn handle, void *ctx, int nthreads,
                     zbuf *fetch, volatile int *stop, zerr *e);
double zarr_now(void); /* seconds, monotonic: for polling intervals */
/* Keys come from store content (listings, journals, consolidated metadata,
 * references): every read, write, erase and copy goes through these, which
 * refuse a key that is not safe (keys.c key_is_safe()) with a ZE_KEY error
 * naming it, and a write or erase the store resolves to outside itself. */
int store_key_ok(zstore *s, const char *key, int write, zerr *e);
int store_set(zstore *s, const char *key, const uint8_t *p, size_t n, zerr *e);
int store_erase(zstore *s, const char *key, zerr *e);
/* The store's name in the decoded-chunk cache (R thread; made on first use). */
const char *store_ident(zstore *s);
void store_raise(zstore *s, const zerr *e, const char *array, const char *key)
#ifdef __GNUC__
    __attribute__((noreturn))
#endif
    ;

/* Constructors (each in its own store_<kind>.c; NULL with e set on failure). */
zstore *local_store_new(const char *root, int resolved, zerr *e);
zstore *zip_store_new(const zipidx *z, const char *prefix, zerr *e);

/* HTTP (store_http.c): `base` is the URL of the store root without a
 * trailing slash or query; `query` ("" or "a=b&c=d", without '?') is added
 * to every request (signed URLs). */
typedef struct {
  int concurrency;        /* requests in flight at once */
  int retries;            /* further attempts after the first */
  double backoff;         /* first retry delay in seconds, doubled each time, with jitter */
  double backoff_max;     /* cap on one delay (Retry-After is honoured up to this) */
  double connect_timeout; /* seconds */
  double low_speed_time;  /* abort when below 1 byte/s for this many seconds */
  double max_body;        /* largest body whose length the request does not bound */
  const char *user_agent;
} zhttp_opts;
zstore *http_store_new(const char *base, const char *query, const zhttp_opts *o, zerr *e);
void http_global_init(void);

/* R entry points */
SEXP ffi_store_local(SEXP root, SEXP resolved);
SEXP ffi_dir_files(SEXP dir, SEXP links);
SEXP ffi_store_zip(SEXP index, SEXP prefix);
SEXP ffi_store_r(SEXP env);
SEXP ffi_store_get(SEXP ptr, SEXP key, SEXP range);
SEXP ffi_store_node_docs(SEXP ptr, SEXP prefix, SEXP root);
SEXP ffi_store_get_keys(SEXP ptr, SEXP keys, SEXP nthreads);
SEXP ffi_store_set(SEXP ptr, SEXP key, SEXP value);
SEXP ffi_store_stats(SEXP ptr);
SEXP ffi_store_http(SEXP base, SEXP query, SEXP opts);
SEXP ffi_store_http_options(SEXP ptr, SEXP opts);
SEXP ffi_store_s3(SEXP cfg, SEXP opts);
SEXP ffi_store_s3_request(SEXP ptr, SEXP method, SEXP key, SEXP query, SEXP body, SEXP at_bucket,
                          SEXP condition);
SEXP ffi_store_s3_options(SEXP ptr, SEXP opts);
SEXP ffi_store_azure(SEXP cfg, SEXP opts);
SEXP ffi_store_ref(SEXP keys, SEXP kind, SEXP target, SEXP off, SEXP len, SEXP data, SEXP t_store,
                   SEXP t_key, SEXP t_err, SEXP stores, SEXP opts, SEXP t_check);
SEXP ffi_store_ref_options(SEXP ptr, SEXP opts);
SEXP ffi_store_copy(SEXP src, SEXP dst, SEXP from, SEXP to, SEXP nthreads);
SEXP ffi_store_erase(SEXP ptr, SEXP keys);
SEXP ffi_store_check_keys(SEXP ptr, SEXP keys, SEXP write);
SEXP ffi_cache_drop(SEXP ptr, SEXP keys, SEXP prefix);
SEXP ffi_cache_count(void);
/* Icechunk objects (icechunk_r.c) */
SEXP ffi_icechunk_repo(SEXP raw, SEXP key, SEXP limit);
SEXP ffi_icechunk_write(SEXP type, SEXP spec, SEXP old);
SEXP ffi_icechunk_new_id(SEXP n);
SEXP ffi_icechunk_snapshot(SEXP raw, SEXP key, SEXP limit);
SEXP ffi_icechunk_manifest(SEXP raw, SEXP key, SEXP limit);

#endif
