/* The read and write engine: one .Call per selection.
 *
 * 1. plan: for every dimension, group the selected indices by chunk;
 * 2. fetch: one batch of key or byte-range requests through the store
 *    interface (store.c), decoded as the bytes arrive; when the chain's
 *    array -> bytes codec decodes by parts (engine.h; sharding does), the
 *    codec plans a first batch (e.g. the shard indexes) and a second one
 *    (the parts under the selection, neighbours merged into one range);
 * 3. decode / encode every touched chunk in parallel;
 * 4. stitch with one strided copy per chunk (slab.c).
 *
 * A point selection (one element per row of a matrix of coordinates, for
 * `a[m]` and linear indices) makes one job per chunk holding a point: the
 * chunk is decoded whole and its points copied one by one.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <sys/mman.h> /* madvise(): pre-faulting is only an optimisation */
#endif
#include <time.h>
#include <unistd.h>
#include "store.h"
#include "progress.h"
#include "engine.h"
#include "chunk_cache.h"

#define KEY_CAP 4096
#define MAX_DEPTH ZENGINE_MAX_DEPTH
/* bytes of decoded chunks under which a call runs on one thread */
#define ZARR_SMALL_WORK (1024.0 * 1024.0)

/* ---- per-dimension plan ------------------------------------------------ */

typedef struct {
  int64_t n;      /* selected indices */
  int64_t nch;    /* distinct chunks touched */
  int64_t *ch;    /* chunk ids */
  int64_t *start; /* first pair of each chunk (a range: its first output position) */
  int64_t *cnt;   /* pairs per chunk */
  int64_t *local; /* index within the chunk (NULL for a range) */
  int64_t *outpos;/* position in the R array (NULL for a range) */
  int64_t *l0;    /* a range: first index within each chunk */
} dimplan;

/* A contiguous range c(start, count) (class "zarr_range" in R): per chunk
 * only where it starts, so selecting a whole extent costs no memory. */
static void plan_range(double start, double count, int64_t extent, int64_t chunk,
                       const int64_t *edges, int64_t nedges, dimplan *p, const char *name) {
  if (!(start >= 0 && count >= 0 && start + count <= (double)extent))
    zarr_raise(ZE_VALUE, name, NULL, "index out of bounds in a selection");
  int64_t r0 = (int64_t)start, n = (int64_t)count;
  p->n = n;
  p->local = p->outpos = NULL;
  int64_t c0, c1;
  if (edges == NULL) {
    c0 = n ? r0 / chunk : 0;
    c1 = n ? (r0 + n - 1) / chunk : -1;
  } else {
    c0 = n ? grid_find(edges, nedges, r0) : 0;
    c1 = n ? grid_find(edges, nedges, r0 + n - 1) : -1;
  }
  p->nch = n ? c1 - c0 + 1 : 0;
  p->ch = (int64_t *)R_alloc((size_t)p->nch + 1, sizeof(int64_t));
  p->start = (int64_t *)R_alloc((size_t)p->nch + 1, sizeof(int64_t));
  p->cnt = (int64_t *)R_alloc((size_t)p->nch + 1, sizeof(int64_t));
  p->l0 = (int64_t *)R_alloc((size_t)p->nch + 1, sizeof(int64_t));
  for (int64_t j = 0; j < p->nch; j++) {
    int64_t c = c0 + j;
    int64_t cs = edges ? edges[c] : c * chunk, ce = edges ? edges[c + 1] : (c + 1) * chunk;
    int64_t lo = cs > r0 ? cs : r0, hi = ce < r0 + n ? ce : r0 + n;
    p->ch[j] = c;
    p->start[j] = lo - r0;
    p->cnt[j] = hi - lo;
    p->l0[j] = lo - cs;
  }
}

typedef struct {
  int64_t chunk, local, outpos;
} triple;

static int cmp_triple(const void *a, const void *b) {
  const triple *x = a, *y = b;
  if (x->chunk != y->chunk) return x->chunk < y->chunk ? -1 : 1;
  if (x->outpos != y->outpos) return x->outpos < y->outpos ? -1 : 1;
  return 0;
}

/* Group (0-based) indices by chunk: chunks of `chunk` elements, or for a
 * rectilinear grid, of `nedges` chunks between `edges`. All memory comes
 * from R_alloc, so an R error anywhere in this .Call frees it. */
static void plan_dim(SEXP idx, int64_t extent, int64_t chunk, const int64_t *edges, int64_t nedges,
                     dimplan *p, const char *name) {
  if (inherits(idx, "zarr_range") && XLENGTH(idx) == 2 && TYPEOF(idx) == REALSXP) {
    plan_range(REAL(idx)[0], REAL(idx)[1], extent, chunk, edges, nedges, p, name);
    return;
  }
  p->l0 = NULL;
  R_xlen_t n = XLENGTH(idx);
  p->n = n;
  p->local = (int64_t *)R_alloc((size_t)n + 1, sizeof(int64_t));
  p->outpos = (int64_t *)R_alloc((size_t)n + 1, sizeof(int64_t));
  triple *t = (triple *)R_alloc((size_t)n + 1, sizeof(triple));
  int sorted = 1;
  for (R_xlen_t i = 0; i < n; i++) {
    double v = TYPEOF(idx) == REALSXP ? REAL(idx)[i] : (double)INTEGER(idx)[i];
    if (!(v >= 0 && v < (double)extent))
      zarr_raise(ZE_VALUE, name, NULL, "index out of bounds in a selection");
    int64_t iv = (int64_t)v;
    if (edges == NULL) {
      t[i].chunk = iv / chunk;
      t[i].local = iv - t[i].chunk * chunk;
    } else {
      t[i].chunk = grid_find(edges, nedges, iv);
      t[i].local = iv - edges[t[i].chunk];
    }
    t[i].outpos = i;
    if (i > 0 && t[i].chunk < t[i - 1].chunk) sorted = 0;
  }
  if (!sorted) qsort(t, (size_t)n, sizeof(triple), cmp_triple);
  int64_t nch = 0;
  for (R_xlen_t i = 0; i < n; i++)
    if (i == 0 || t[i].chunk != t[i - 1].chunk) nch++;
  p->nch = nch;
  p->ch = (int64_t *)R_alloc((size_t)nch + 1, sizeof(int64_t));
  p->start = (int64_t *)R_alloc((size_t)nch + 1, sizeof(int64_t));
  p->cnt = (int64_t *)R_alloc((size_t)nch + 1, sizeof(int64_t));
  int64_t j = -1;
  for (R_xlen_t i = 0; i < n; i++) {
    if (i == 0 || t[i].chunk != t[i - 1].chunk) {
      j++;
      p->ch[j] = t[i].chunk;
      p->start[j] = i;
      p->cnt[j] = 0;
    }
    p->cnt[j]++;
    p->local[i] = t[i].local;
    p->outpos[i] = t[i].outpos;
  }
}

/* ---- shared engine state -------------------------------------------------- */

typedef struct {
  zbuf a[MAX_DEPTH], b[MAX_DEPTH], elem[MAX_DEPTH];
  zbuf whole; /* a point selection: the chunk being read, decoded whole */
  zpool *pools; /* string text decoded by this thread; freed after the call */
  const char *key; /* the chunk this thread is decoding, and its job */
  int64_t job;
  int from_cache;  /* its first request's bytes came from the cache */
} tbufs;

typedef struct {
  const zarray *arr;
  int ndim;
  dimplan dp[ZARR_MAX_DIMS];
  int64_t njobs;
  /* a point selection (pts): per job its chunk's coordinates (ndim each) and
   * its first point; per point, grouped by job and in output order within
   * one, its coordinates within the chunk (ndim each) and output position */
  int pts, recycle;
  int64_t npts, *pch, *pstart, *ploc, *pout;
  zstore *st;
  volatile int stop;         /* set on failure or interrupt: every batch ends */
  int nthreads;              /* threads that fetch and decode: at most one per chunk */
  int all_threads;           /* threads asked for: the copy of one large chunk splits between them */
  /* the jobs a batch is about (NULL: all), and reads by parts */
  const int64_t *jobs;
  int64_t range_gap, range_max;
  const zab_engine *part;    /* the chain's codec reads by parts (NULL: whole values) */
  void **plans;              /* per job: the codec's plan of the parts still to fetch */
  int64_t *r2_job, *r2_range;/* second batch: request -> (job, range) */
  /* R side */
  uint8_t *rdata;
  int64_t ostride[ZARR_MAX_DIMS];
  int na;
  int missing_error;         /* zarr.missing_chunks = "error": an absent chunk fails the read */
  /* write */
  uint8_t **merged;          /* partial chunks: existing content, decoded up front */
  uint8_t **out;             /* encoded chunk per job (main-thread stores) */
  size_t *out_n;
  int *out_state;            /* 0 untouched, 1 written, 2 erased (all fill) */
  /* the decoded-chunk cache (chunk_cache.c), reads only: cache = 1 when
   * this call looks chunks up; whole = 1 when whole chunks are entries
   * (else a shard's index and inner chunks are); fillable[job]: the job's
   * chunk is partly selected, so what it decodes is kept */
  int cache, cache_whole;
  const char *cache_ident;
  uint64_t cache_meta, cache_owner;
  size_t cache_owner_cap;
  char *fillable;
  zstamp *stamps;            /* per job: its value's stamp, taken before it is read
                              * (NULL: the store has none) */
  zcache_entry **hits;       /* a batch's jobs found in the cache */
  /* results */
  tbufs *tb;
  zbuf *fetch;               /* per thread: the stored bytes of get() stores (NULL: the store's own) */
  int interrupted;
  double next_poll;
  int failed;
  zerr err;
  char err_key[KEY_CAP];
  int64_t lost, bad;
} engine;

static void engine_fail(engine *g, const zerr *e, const char *key) {
  int expected = 0;
  if (__atomic_compare_exchange_n(&g->failed, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE)) {
    g->err = *e;
    snprintf(g->err_key, sizeof g->err_key, "%s", key ? key : "");
  }
  __atomic_store_n(&g->stop, 1, __ATOMIC_RELEASE);
}

/* Thread 0, between tasks: a user interrupt stops the call (checked at most
 * every 50 ms of wall time: the check itself is not free); `progress`: the
 * progress bar is brought up to date too (not before the bar's total is
 * known). */
static int poll_stop(engine *g, int progress) {
  double now = zarr_now();
  if (now < g->next_poll) return 0;
  g->next_poll = now + 0.05;
  if (!(progress && progress_poll()) && !interrupt_pending()) return 0;
  g->interrupted = 1;
  zerr e = {ZE_OK, ""};
  zerr_set(&e, ZE_INTERRUPT, "interrupted by the user");
  engine_fail(g, &e, NULL);
  return 1;
}

static int engine_poll(void *ctx) { return poll_stop(ctx, 1); }

static void job_coords(const engine *g, int64_t job, int64_t *jc) {
  if (g->pts) {
    memcpy(jc, g->pch + job * g->ndim, sizeof(int64_t) * (size_t)g->ndim);
    return;
  }
  for (int d = 0; d < g->ndim; d++) {
    jc[d] = job % g->dp[d].nch;
    job /= g->dp[d].nch;
  }
}

/* The chunk coordinate along d of a job's chunk (point selections keep
 * chunk coordinates in jc itself). */
static inline int64_t job_chunk(const engine *g, const int64_t *jc, int d) {
  return g->pts ? jc[d] : g->dp[d].ch[jc[d]];
}

static int64_t chain_nelem(const zchain *c) {
  int64_t n = 1;
  for (int d = 0; d < c->ndim; d++) n *= c->chunk_shape[d];
  return n;
}

/* ---- decoding one chunk into a slab ------------------------------------------ */

static int decode_into(engine *g, const zchain *ch, const uint8_t *src, size_t n, int missing,
                       int writable, zslab *slab, tbufs *tb, int depth, uint8_t *dst_chunk,
                       zconv *cv, zerr *e);

static int emit(engine *g, const zchain *ch, const uint8_t *elems, zslab *slab,
                uint8_t *dst_chunk, zconv *cv, zerr *e);
static int points_copy(const engine *g, const zchain *ch, int64_t job, uint8_t *chunk,
                       int fill_only, int dir, zconv *cv);

/* ---- the decoded-chunk cache ------------------------------------------------- */

/* Copy what a job (or a part of its chunk, depth > 0) selects out of a
 * decoded chunk, or out of the fill value when it is missing. */
static int serve(engine *g, const zchain *ch, int64_t job, const uint8_t *elems, int missing,
                 zslab *slab, int depth, zconv *cv, zerr *e) {
  if (g->pts && depth == 0) {
    if (points_copy(g, ch, job, (uint8_t *)(missing ? g->arr->fill : elems), missing, 0, cv))
      return zerr_set(e, ZE_CODEC, "no conversion from this data type to R");
    return 0;
  }
  return emit(g, ch, missing ? g->arr->fill : elems, slab, NULL, cv, e);
}

/* Decode a unit (a chunk, or part `part` of one) whole into a buffer of its
 * own, serve the selection from it, and hand it to the cache. */
static int fill_unit(engine *g, const zchain *ch, const char *key, int64_t job, int64_t part,
                     const uint8_t *src, size_t n, int missing, int writable, zslab *slab,
                     tbufs *tb, int depth, zconv *cv, zerr *e) {
  size_t nb = missing ? 0 : (size_t)chain_nelem(ch) * g->arr->elsize;
  uint8_t *buf = missing ? NULL : malloc(nb ? nb : 1);
  if (!missing && buf == NULL) return zerr_set(e, ZE_NOMEM, "out of memory");
  if (!missing && decode_into(g, ch, src, n, 0, writable, NULL, tb, depth, buf, cv, e)) {
    free(buf);
    return -1;
  }
  if (serve(g, ch, job, buf, missing, slab, depth, cv, e)) {
    free(buf);
    return -1;
  }
  zcache_put(g->cache_ident, key, g->cache_meta, part, g->cache_owner, g->cache_owner_cap,
             g->stamps ? &g->stamps[job] : NULL, buf, nb, missing);
  return 0;
}

/* A cache entry of a job's value, or NULL; an entry made from another
 * version of the value (changed by another process, or through a store
 * this process does not know reaches the same file) is discarded.
 * `refresh`: compare with the value as it is now (and keep that as the
 * job's stamp: R thread only); else with the job's stamp of this call. */
static zcache_entry *cache_lookup(engine *g, const char *key, int64_t job, int64_t part,
                                  int refresh) {
  zcache_entry *en = zcache_get(g->cache_ident, key, g->cache_meta, part);
  if (en == NULL || g->stamps == NULL) return en;
  zstamp now, *st = &g->stamps[job];
  if (refresh || !st->valid) {
    g->st->ops->stamp(g->st, key, &now);
    if (refresh) *st = now;
    else st = &now;
  }
  if (zstamp_same(zcache_stamp(en), st)) return en;
  zcache_discard(en);
  return NULL;
}

/* Does the slab select as many elements as the chunk holds along every
 * dimension (a whole read): then what is decoded is not kept. */
static int slab_covers(const zchain *ch, const zslab *s) {
  for (int d = 0; d < s->ndim; d++)
    if (s->dim[d].cnt < ch->chunk_shape[d]) return 0;
  return 1;
}

/* A codec's parts come back to the engine's own decoding; the parts of a
 * partly selected chunk that are partly selected themselves are kept. */
static int env_part(const zdec_env *env, const zchain *ch, const uint8_t *src, size_t n,
                    int missing, int writable, zslab *slab, uint8_t *dst, int depth, int64_t id,
                    zerr *e) {
  engine *g = env->engine;
  tbufs *tb = env->thread;
  if (g->cache && id >= 0 && depth == 1 && dst == NULL && slab != NULL && tb->key != NULL &&
      g->fillable[tb->job] && !slab_covers(ch, slab))
    return fill_unit(g, ch, tb->key, tb->job, id, src, n, missing, writable, slab, tb, depth,
                     env->conv, e);
  return decode_into(g, ch, src, n, missing, writable, slab, tb, depth, dst, env->conv, e);
}

static int env_cached(const zdec_env *env, const zchain *ch, int64_t id, zslab *slab, int depth,
                      zerr *e) {
  engine *g = env->engine;
  tbufs *tb = env->thread;
  if (!g->cache || depth != 1 || slab == NULL || tb->key == NULL) return 0;
  zcache_entry *en = cache_lookup(g, tb->key, tb->job, id, 0);
  __atomic_add_fetch(en ? &g->st->cache_hits : &g->st->cache_misses, 1, __ATOMIC_RELAXED);
  if (en == NULL) return 0;
  size_t n;
  int missing;
  const uint8_t *d = zcache_data(en, &n, &missing);
  int rc = serve(g, ch, tb->job, d, missing, slab, depth, env->conv, e);
  zcache_release(en);
  return rc ? -1 : 1;
}

static void env_init(engine *g, tbufs *tb, zconv *cv, zdec_env *env) {
  env->part = env_part;
  env->cached = env_cached;
  env->engine = g;
  env->thread = tb;
  env->conv = cv;
  env->a = tb->a;
  env->b = tb->b;
  env->elsize = g->arr->elsize;
  env->range_gap = g->range_gap;
  env->range_max = g->range_max;
}

/* A read of fewer chunks than threads (one chunk per call, as a block loop
 * makes) would copy each large chunk into R on one thread while the others
 * wait: the copy (transpose and widening) is split between them along the
 * dimension slowest in R, so that the pieces write apart. */
#define SPLIT_MIN_ELEMS ((int64_t)1 << 20)
#define MAX_SHARES_COPY 16
typedef struct {
  const zslab *slab;
  int dim, pieces;
  zdtype dt;
  zrtype rt;
  const uint8_t *elems;
  uint8_t *rdata;
  const zconv *cv;
  int64_t lost[MAX_SHARES_COPY];
} split_ctx;

static void split_task(void *ctx, size_t i, int thread) {
  (void)thread;
  split_ctx *c = ctx;
  zslab s = *c->slab;
  zdimmap *m = &s.dim[c->dim];
  int64_t lo = m->cnt * (int64_t)i / c->pieces, hi = m->cnt * (int64_t)(i + 1) / c->pieces;
  if (m->local != NULL) {
    m->local += lo;
    m->outpos += lo;
  } else {
    m->l0 += lo;
    m->o0 += lo;
  }
  m->cnt = hi - lo;
  zconv cv = *c->cv;
  cv.lost = 0;
  slab_decode(&s, c->dt, c->rt, c->elems, c->rdata, &cv);
  c->lost[i] = cv.lost;
}

static int slab_decode_split(engine *g, const zslab *slab, const uint8_t *elems, zconv *cv) {
  const zarray *a = g->arr;
  int nt = g->all_threads < MAX_SHARES_COPY ? g->all_threads : MAX_SHARES_COPY;
  int64_t n = 1;
  for (int d = 0; d < slab->ndim; d++) n *= slab->dim[d].cnt;
  int dim = -1;
  /* not the parts of a chunk (inner chunks of a shard): those are decoded
   * on all the threads already */
  if (nt > 1 && g->njobs < nt && g->part == NULL && n >= SPLIT_MIN_ELEMS && a->dtype != DT_STRING)
    for (int d = 0; d < slab->ndim; d++)
      if (slab->dim[d].cnt >= 2 * nt && (dim < 0 || slab->ostride[d] > slab->ostride[dim])) dim = d;
  if (dim < 0) return slab_decode(slab, a->dtype, a->rtype, elems, g->rdata, cv);
  if (dtype_def(a->dtype)->dec[a->rtype] == NULL) return -1;
  split_ctx c = {slab, dim, nt, a->dtype, a->rtype, elems, g->rdata, cv, {0}};
  parallel_for((size_t)nt, nt, split_task, &c, NULL);
  for (int i = 0; i < nt; i++) cv->lost += c.lost[i];
  return 0;
}

/* Either stitch into the R array (dst_chunk == NULL) or copy the decoded
 * elements into a whole-chunk buffer (writes merging into existing data). */
static int emit(engine *g, const zchain *ch, const uint8_t *elems, zslab *slab,
                uint8_t *dst_chunk, zconv *cv, zerr *e) {
  const zarray *a = g->arr;
  if (dst_chunk != NULL) {
    memcpy(dst_chunk, elems, (size_t)chain_nelem(ch) * a->elsize);
    return 0;
  }
  if (elems == a->fill) {
    for (int d = 0; d < slab->ndim; d++) slab->cstride[d] = 0;
  } else {
    chunk_strides(ch, slab->cstride);
  }
  if (elems == a->fill ? slab_decode(slab, a->dtype, a->rtype, elems, g->rdata, cv)
                       : slab_decode_split(g, slab, elems, cv))
    return zerr_set(e, ZE_CODEC, "no conversion from this data type to R");
  return 0;
}

/* Where in the R result a chunk can be decoded to directly, or NULL: the
 * chunk must be whole (not an edge chunk, every element selected, in order),
 * stored in R's order, and its elements must need no conversion. */
static uint8_t *direct_target(const engine *g, const zchain *ch, const zslab *s, int big) {
  const zarray *a = g->arr;
  if (g->na || big || a->dtype == DT_STRING) return NULL;
  if (dtype_def(a->dtype)->direct != (int)a->rtype) return NULL;
  int64_t cstride[ZARR_MAX_DIMS];
  chunk_strides(ch, cstride);
  int64_t off = 0;
  for (int d = 0; d < s->ndim; d++) {
    const zdimmap *m = &s->dim[d];
    if (m->cnt != ch->chunk_shape[d]) return NULL;
    if (m->local != NULL) return NULL; /* only ranges: cheap to check */
    if (m->l0 != 0) return NULL;
    if (m->cnt > 1 && cstride[d] != s->ostride[d]) return NULL;
    off += m->o0 * s->ostride[d];
  }
  return g->rdata + off * (int64_t)elem_rsize(a->dtype, a->rtype);
}

static int decode_into(engine *g, const zchain *ch, const uint8_t *src, size_t n, int missing,
                       int writable, zslab *slab, tbufs *tb, int depth, uint8_t *dst_chunk,
                       zconv *cv, zerr *e) {
  const zarray *a = g->arr;
  if (depth >= MAX_DEPTH) return zerr_set(e, ZE_CODEC, "codecs are nested too deeply");
  if (missing) {
    if (dst_chunk != NULL) {
      int64_t ne = chain_nelem(ch);
      for (int64_t i = 0; i < ne; i++) memcpy(dst_chunk + i * (int64_t)a->elsize, a->fill, a->elsize);
      return 0;
    }
    return emit(g, ch, a->fill, slab, NULL, cv, e);
  }
  int64_t ne = chain_nelem(ch);
  uint8_t *direct = (dst_chunk == NULL && ch->ab == AB_BYTES) ? direct_target(g, ch, slab, ch->big_endian) : NULL;
  if (direct != NULL) { /* zero-copy: the last codec writes into the result */
    int rc = chain_decode_to(ch, src, n, direct, (size_t)ne * a->elsize, &tb->a[depth], &tb->b[depth], e);
    if (rc <= 0) return rc;
  }
  size_t expect = ch->ab != AB_BYTES ? 0
                  : a->dtype == DT_STRING ? (size_t)ne * a->stored_size
                                          : (size_t)ne * a->elsize;
  const uint8_t *res;
  size_t res_n;
  if (chain_decode_bytes(ch, src, n, expect, &tb->a[depth], &tb->b[depth], &res, &res_n, e))
    return -1;
  const zab_engine *ae = chain_engine(ch);
  if (ae != NULL && ae->decode != NULL) {
    zdec_env env;
    env_init(g, tb, cv, &env);
    return ae->decode(ch, res, res_n, slab, dst_chunk, depth, &env, e);
  }
  if (a->dtype == DT_STRING) {
    if (zbuf_reserve(&tb->elem[depth], (size_t)ne * sizeof(zstr) + 1, e)) return -1;
    if (strings_decode(a, res, res_n, ne, ch->big_endian, tb->elem[depth].data, &tb->pools, e))
      return -1;
    return emit(g, ch, tb->elem[depth].data, slab, dst_chunk, cv, e);
  }
  if (ch->ab == AB_VLEN) return zerr_set(e, ZE_CODEC, "variable-length codec on a non-string array");
  if (res_n != expect)
    return zerr_set(e, ZE_CORRUPT, "chunk decodes to %.0f bytes, expected %.0f", (double)res_n,
                    (double)expect);
  size_t unit = dtype_def(a->dtype)->swap;
  if (ch->big_endian && unit > 1) {
    /* swap in a buffer we own; never in the caller's (maybe R's) memory */
    if (res == src && !writable) {
      if (zbuf_reserve(&tb->elem[depth], res_n, e)) return -1;
      memcpy(tb->elem[depth].data, res, res_n);
      res = tb->elem[depth].data;
    }
    byteswap_inplace((uint8_t *)res, res_n / unit, unit);
  }
  return emit(g, ch, res, slab, dst_chunk, cv, e);
}

/* ---- jobs --------------------------------------------------------------------- */

static void job_slab(const engine *g, const int64_t *jc, zslab *s) {
  memset(s, 0, sizeof *s);
  s->ndim = g->ndim;
  if (g->pts) return; /* points are copied one by one (points_copy) */
  for (int d = 0; d < g->ndim; d++) {
    const dimplan *p = &g->dp[d];
    s->dim[d].cnt = p->cnt[jc[d]];
    if (p->local == NULL) { /* a range */
      s->dim[d].l0 = p->l0[jc[d]];
      s->dim[d].o0 = p->start[jc[d]];
    } else {
      s->dim[d].local = p->local + p->start[jc[d]];
      s->dim[d].outpos = p->outpos + p->start[jc[d]];
    }
    s->ostride[d] = g->ostride[d];
  }
}

static int job_key(const engine *g, const int64_t *jc, char *key) {
  int64_t coords[ZARR_MAX_DIMS];
  for (int d = 0; d < g->ndim; d++) coords[d] = job_chunk(g, jc, d);
  return chunk_key(g->arr, coords, key, KEY_CAP);
}

/* Coordinates, key and slab of a job; 0 on success (else the engine has failed). */
static int job_begin(engine *g, int64_t job, int64_t *jc, char *key, zslab *s) {
  if (g->stop) return -1;
  job_coords(g, job, jc);
  if (job_key(g, jc, key)) {
    zerr e = {ZE_OK, ""};
    zerr_set(&e, ZE_KEY, "chunk key is too long");
    engine_fail(g, &e, NULL);
    return -1;
  }
  job_slab(g, jc, s);
  return 0;
}

/* The chain of a job's chunk: the array's, or for a rectilinear grid a copy
 * with that chunk's shape. */
static const zchain *job_chain(const engine *g, const int64_t *jc, zchain *tmp) {
  const zarray *a = g->arr;
  if (!a->rectilinear) return &a->chain;
  *tmp = a->chain;
  for (int d = 0; d < g->ndim; d++) tmp->chunk_shape[d] = grid_len(a, d, job_chunk(g, jc, d));
  return tmp;
}

static void conv_init(const engine *g, zconv *cv) {
  memset(cv, 0, sizeof *cv);
  cv->na = g->na;
  memcpy(cv->fill, g->arr->fill, sizeof cv->fill);
}

static int chunk_is_edge(const engine *g, const int64_t *jc) {
  const zarray *a = g->arr;
  for (int d = 0; d < g->ndim; d++) {
    int64_t c = job_chunk(g, jc, d);
    if (grid_start(a, d, c) + grid_len(a, d, c) > a->shape[d]) return 1;
  }
  return 0;
}

/* Does the selection overwrite every element of this chunk inside the array? */
static int chunk_fully_covered(const engine *g, const int64_t *jc) {
  const zarray *a = g->arr;
  if (g->pts) return 0;
  for (int d = 0; d < g->ndim; d++) {
    const dimplan *p = &g->dp[d];
    int64_t cs = grid_len(a, d, p->ch[jc[d]]), c0 = grid_start(a, d, p->ch[jc[d]]);
    int64_t ext = a->shape[d] - c0 < cs ? a->shape[d] - c0 : cs;
    if (p->cnt[jc[d]] != ext) return 0;
    if (p->local == NULL) {
      if (p->l0[jc[d]] != 0) return 0;
      continue;
    }
    const int64_t *loc = p->local + p->start[jc[d]];
    for (int64_t k = 0; k < ext; k++)
      if (loc[k] != k) return 0;
  }
  return 1;
}

/* Copy a job's points between its chunk (decoded whole, ch's layout; or the
 * fill value alone when `fill_only`) and the R vector: dir 0 reads, 1 writes
 * (in output order, so that the last of repeated points wins, as in R). */
static int points_copy(const engine *g, const zchain *ch, int64_t job, uint8_t *chunk,
                       int fill_only, int dir, zconv *cv) {
  const zarray *a = g->arr;
  zkern k = dir == 0 ? dtype_def(a->dtype)->dec[a->rtype] : dtype_def(a->dtype)->enc[a->rtype];
  if (k == NULL) return -1;
  int64_t cst[ZARR_MAX_DIMS];
  chunk_strides(ch, cst);
  const int nd = g->ndim;
  const int64_t csz = (int64_t)a->elsize, rsz = (int64_t)elem_rsize(a->dtype, a->rtype);
  for (int64_t q = g->pstart[job]; q < g->pstart[job + 1]; q++) {
    int64_t off = 0;
    if (!fill_only)
      for (int d = 0; d < nd; d++) off += g->ploc[q * nd + d] * cst[d];
    uint8_t *c = chunk + off * csz, *o = g->rdata + (g->recycle ? 0 : g->pout[q] * rsz);
    if (dir == 0) k(o, 0, c, 0, 1, cv);
    else k(c, 0, o, 0, 1, cv);
  }
  return 0;
}

/* A point selection's chunk arrived: decode it whole, then pick its points. */
static int points_read(engine *g, const int64_t *jc, int64_t job, const uint8_t *p, size_t n,
                       int missing, int writable, tbufs *tb, zconv *cv, zerr *e) {
  const zarray *a = g->arr;
  zchain tmp;
  const zchain *ch = job_chain(g, jc, &tmp);
  uint8_t *chunk = (uint8_t *)a->fill;
  if (!missing) {
    if (zbuf_reserve(&tb->whole, (size_t)chain_nelem(ch) * a->elsize + 1, e)) return -1;
    chunk = tb->whole.data;
    if (decode_into(g, ch, p, n, 0, writable, NULL, tb, 0, chunk, cv, e)) return -1;
  }
  if (points_copy(g, ch, job, chunk, missing, 0, cv))
    return zerr_set(e, ZE_CODEC, "no conversion from this data type to R");
  return 0;
}

/* ---- fetching: batches of requests through the store --------------------------- */

static int64_t batch_job(const engine *g, size_t i) { return g->jobs ? g->jobs[i] : (int64_t)i; }

/* First batch: every chunk whole, or what the codec reading by parts asks
 * for first (a shard's index). */
static int req_chunk(void *ctx, size_t i, zrange *r, char *keybuf, size_t cap, zerr *e) {
  engine *g = ctx;
  (void)cap;
  int64_t jc[ZARR_MAX_DIMS];
  job_coords(g, batch_job(g, i), jc);
  if (job_key(g, jc, keybuf)) return zerr_set(e, ZE_KEY, "chunk key is too long");
  r->key = keybuf;
  r->off = 0;
  r->len = -1;
  /* before the bytes are read: a change after this makes the stamp differ */
  int64_t job = batch_job(g, i);
  if (g->stamps != NULL && (g->fillable[job] || g->part != NULL))
    g->st->ops->stamp(g->st, keybuf, &g->stamps[job]);
  if (g->part != NULL) return g->part->plan_first(&g->arr->chain, &r->off, &r->len, e);
  return 0;
}


/* A read (not the merge of a partial write, where absent chunks are the
 * rule) that finds a chunk absent, when the user asked for that to fail. */
static int missing_fails(engine *g, const char *key, zerr *e) {
  if (!g->missing_error || g->merged != NULL) return 0;
  zerr_set(e, ZE_MISSING_CHUNK, "chunk '%s' is missing (option zarr.missing_chunks is \"error\")", key);
  engine_fail(g, e, key);
  return 1;
}

static int handle_chunk(void *ctx, size_t i, int thread, uint8_t *p, size_t n, int missing,
                        int writable, zerr *e) {
  engine *g = ctx;
  int64_t job = batch_job(g, i), jc[ZARR_MAX_DIMS];
  char key[KEY_CAP];
  zslab s;
  if (job_begin(g, job, jc, key, &s)) return -1;
  if (missing && missing_fails(g, key, e)) return -1;
  zconv cv;
  conv_init(g, &cv);
  tbufs *tb = &g->tb[thread];
  tb->key = key;
  tb->job = job;
  int rc;
  int keep = g->cache && g->fillable[job];
  if (g->part != NULL && keep && !tb->from_cache) { /* the first request's bytes (a shard's index) */
    uint8_t *copy = missing ? NULL : malloc(n ? n : 1);
    if (copy != NULL) memcpy(copy, p, n);
    if (missing || copy != NULL)
      zcache_put(g->cache_ident, key, g->cache_meta, ZCACHE_INDEX, g->cache_owner,
                 g->cache_owner_cap, g->stamps ? &g->stamps[job] : NULL, copy, missing ? 0 : n,
                 missing);
  }
  if (g->part != NULL && !missing) {
    zdec_env env;
    env_init(g, tb, &cv, &env);
    rc = g->part->plan_next(&g->arr->chain, p, n, &s, &env, &g->plans[job], e);
  } else if (keep && g->cache_whole) {
    zchain tmp;
    rc = fill_unit(g, job_chain(g, jc, &tmp), key, job, ZCACHE_WHOLE, p, n, missing, writable, &s,
                   tb, 0, &cv, e);
  } else if (g->pts && g->merged == NULL) {
    rc = points_read(g, jc, job, p, n, missing, writable, tb, &cv, e);
  } else {
    zchain tmp;
    rc = decode_into(g, job_chain(g, jc, &tmp), p, n, missing, writable, &s, tb, 0,
                     g->merged ? g->merged[job] : NULL, &cv, e);
  }
  tb->key = NULL;
  if (cv.lost) __atomic_add_fetch(&g->lost, cv.lost, __ATOMIC_RELAXED);
  if (rc) engine_fail(g, e, key);
  progress_add(1);
  return rc;
}

/* Second batch of a read by parts: the ranges the codec planned. */
static int req_range(void *ctx, size_t i, zrange *r, char *keybuf, size_t cap, zerr *e) {
  engine *g = ctx;
  (void)cap;
  int64_t job = g->r2_job[i], jc[ZARR_MAX_DIMS];
  job_coords(g, job, jc);
  if (job_key(g, jc, keybuf)) return zerr_set(e, ZE_KEY, "chunk key is too long");
  r->key = keybuf;
  g->part->plan_range(g->plans[job], g->r2_range[i], &r->off, &r->len);
  return 0;
}

static int handle_range(void *ctx, size_t i, int thread, uint8_t *p, size_t n, int missing,
                        int writable, zerr *e) {
  engine *g = ctx;
  int64_t job = g->r2_job[i], jc[ZARR_MAX_DIMS];
  char key[KEY_CAP];
  zslab s;
  if (job_begin(g, job, jc, key, &s)) return -1;
  zconv cv;
  conv_init(g, &cv);
  zdec_env env;
  tbufs *tb = &g->tb[thread];
  env_init(g, tb, &cv, &env);
  tb->key = key;
  tb->job = job;
  int rc = g->part->decode_partial(&g->arr->chain, g->plans[job], g->r2_range[i], p, n, missing,
                                   writable, &env, e);
  tb->key = NULL;
  if (cv.lost) __atomic_add_fetch(&g->lost, cv.lost, __ATOMIC_RELAXED);
  if (rc) engine_fail(g, e, key);
  return rc;
}

/* A batch's job found in the cache: its decoded chunk copied out, or (reads
 * by parts) its first request's bytes handled as if they had arrived. */
static void serve_task(void *ctx, size_t i, int thread) {
  engine *g = ctx;
  size_t n;
  int missing;
  const uint8_t *d = zcache_data(g->hits[i], &n, &missing);
  zerr e = {ZE_OK, ""};
  if (g->part != NULL) {
    g->tb[thread].from_cache = 1;
    handle_chunk(g, i, thread, (uint8_t *)d, n, missing, 0, &e);
    g->tb[thread].from_cache = 0;
    return;
  }
  int64_t job = g->jobs[i], jc[ZARR_MAX_DIMS];
  char key[KEY_CAP];
  zslab s;
  if (job_begin(g, job, jc, key, &s)) return;
  if (missing && missing_fails(g, key, &e)) return;
  zconv cv;
  conv_init(g, &cv);
  zchain tmp;
  const zchain *ch = job_chain(g, jc, &tmp);
  if (serve(g, ch, job, d, missing, &s, 0, &cv, &e)) engine_fail(g, &e, key);
  if (cv.lost) __atomic_add_fetch(&g->lost, cv.lost, __ATOMIC_RELAXED);
  progress_add(1);
}

/* Serve the jobs whose chunks (or first requests) the cache holds; the
 * others are left in *jobs (R_alloc'd), their number returned. */
static int64_t serve_cached(engine *g, const int64_t **jobs, int64_t njobs) {
  int64_t *hit = (int64_t *)R_alloc((size_t)njobs + 1, sizeof(int64_t));
  int64_t *rest = (int64_t *)R_alloc((size_t)njobs + 1, sizeof(int64_t));
  g->hits = (zcache_entry **)R_alloc((size_t)njobs + 1, sizeof(zcache_entry *));
  int64_t nhit = 0, nrest = 0, jc[ZARR_MAX_DIMS];
  char key[KEY_CAP];
  /* no R calls from here until the entries are released */
  for (int64_t i = 0; i < njobs; i++) {
    int64_t job = *jobs ? (*jobs)[i] : i;
    job_coords(g, job, jc);
    zcache_entry *en = job_key(g, jc, key) ? NULL
                       : cache_lookup(g, key, job, g->part ? ZCACHE_INDEX : ZCACHE_WHOLE, 1);
    if (en != NULL) {
      g->hits[nhit] = en;
      hit[nhit++] = job;
    } else {
      rest[nrest++] = job;
    }
  }
  __atomic_add_fetch(&g->st->cache_hits, g->part ? 0 : nhit, __ATOMIC_RELAXED);
  __atomic_add_fetch(&g->st->cache_misses, g->part ? 0 : nrest, __ATOMIC_RELAXED);
  g->jobs = hit;
  if (nhit > 0) parallel_for((size_t)nhit, g->nthreads, serve_task, g, engine_poll);
  for (int64_t i = 0; i < nhit; i++) zcache_release(g->hits[i]);
  g->hits = NULL;
  *jobs = rest;
  return nrest;
}

/* Fetch and decode the chunks of a batch of jobs (all of them when jobs is
 * NULL): into the R array, or into g->merged for a partial write. */
static void engine_fetch(engine *g, const int64_t *jobs, int64_t njobs) {
  g->jobs = jobs;
  zerr e = {ZE_OK, ""};
  /* reads (not the merges of a partial write) by parts, where the codec can
   * and no bytes -> bytes codec follows it (its ranges are then not the
   * stored value's: a gzipped shard is read whole) */
  const zab_engine *ae = g->merged == NULL && !g->pts && g->arr->chain.n_bb == 0 &&
                                 !g->arr->rectilinear /* shards of many shapes: read whole */
                             ? chain_engine(&g->arr->chain) : NULL;
  g->part = ae != NULL && ae->plan_first != NULL ? ae : NULL;
  int by_parts = g->part != NULL;
  if (by_parts) {
    g->plans = (void **)R_alloc((size_t)g->njobs + 1, sizeof(void *));
    memset(g->plans, 0, sizeof(void *) * ((size_t)g->njobs + 1));
  }
  if (g->cache && (by_parts || g->cache_whole)) njobs = serve_cached(g, &jobs, njobs);
  g->jobs = jobs;
  if (!g->failed &&
      store_fetch_bufs(g->st, (size_t)njobs, req_chunk, handle_chunk, g, g->nthreads, g->fetch, &g->stop, &e))
    engine_fail(g, &e, NULL);
  if (by_parts && !g->failed) {
    int64_t nr = 0;
    for (int64_t j = 0; j < g->njobs; j++) nr += g->plans[j] ? g->part->plan_count(g->plans[j]) : 0;
    g->r2_job = malloc(sizeof(int64_t) * (size_t)(nr + 1));
    g->r2_range = malloc(sizeof(int64_t) * (size_t)(nr + 1));
    if (g->r2_job == NULL || g->r2_range == NULL) {
      zerr_set(&e, ZE_NOMEM, "out of memory");
      engine_fail(g, &e, NULL);
    } else {
      nr = 0;
      for (int64_t j = 0; j < g->njobs; j++)
        for (int64_t k = 0, m = g->plans[j] ? g->part->plan_count(g->plans[j]) : 0; k < m; k++) {
          g->r2_job[nr] = j;
          g->r2_range[nr++] = k;
        }
      if (store_fetch_bufs(g->st, (size_t)nr, req_range, handle_range, g, g->nthreads, g->fetch, &g->stop, &e))
        engine_fail(g, &e, NULL);
    }
    free(g->r2_job);
    free(g->r2_range);
    g->r2_job = g->r2_range = NULL;
  }
  if (by_parts)
    for (int64_t j = 0; j < g->njobs; j++)
      if (g->plans[j] != NULL) g->part->plan_free(g->plans[j]);
  g->part = NULL;
  g->jobs = NULL;
}

static int all_fill(const uint8_t *p, int64_t ne, const uint8_t *fill, size_t es) {
  for (int64_t i = 0; i < ne; i++, p += es)
    if (memcmp(p, fill, es) != 0) return 0;
  return 1;
}

static void write_chunk(engine *g, size_t task, int thread);

/* A codec may give up a chunk half-way once the call stops (zarr_cancel_flag) */
static void write_task(void *ctx, size_t task, int thread) {
  engine *g = ctx;
  zarr_cancel_flag = &g->stop;
  write_chunk(g, task, thread);
  zarr_cancel_flag = NULL;
}

static void write_chunk(engine *g, size_t task, int thread) {
  const zarray *a = g->arr;
  tbufs *tb = &g->tb[thread];
  int64_t jc[ZARR_MAX_DIMS];
  char key[KEY_CAP];
  zslab s;
  if (job_begin(g, task, jc, key, &s)) return;
  zchain tmp;
  const zchain *ch = job_chain(g, jc, &tmp);
  zerr e = {ZE_OK, ""};
  const zab_engine *ae = chain_engine(ch);
  if (ae != NULL && ae->write_check != NULL && ae->write_check(a, ch, &e)) {
    engine_fail(g, &e, key);
    return;
  }
  int64_t ne = chain_nelem(ch);
  size_t nbytes = (size_t)ne * a->elsize;
  zbuf *cb = &tb->elem[MAX_DEPTH - 1];
  if (zbuf_reserve(cb, nbytes + 1, &e)) {
    engine_fail(g, &e, key);
    return;
  }
  zconv cv;
  conv_init(g, &cv);
  if (g->merged[task] != NULL) {
    memcpy(cb->data, g->merged[task], nbytes);
  } else if (chunk_is_edge(g, jc)) {
    for (int64_t i = 0; i < ne; i++) memcpy(cb->data + i * (int64_t)a->elsize, a->fill, a->elsize);
  }
  chunk_strides(ch, s.cstride);
  if (g->pts ? points_copy(g, ch, task, cb->data, 0, 1, &cv)
             : slab_encode(&s, a->dtype, a->rtype, g->rdata, cb->data, &cv)) {
    zerr_set(&e, ZE_CODEC, "no conversion from R to this data type");
    engine_fail(g, &e, key);
    return;
  }
  if (cv.bad) __atomic_add_fetch(&g->bad, cv.bad, __ATOMIC_RELAXED);
  int empty = all_fill(cb->data, ne, a->fill, a->elsize);
  const uint8_t *res = NULL;
  size_t res_n = 0;
  if (!empty) {
    const uint8_t *payload = cb->data;
    size_t payload_n = nbytes;
    if (ae != NULL && ae->encode != NULL) {
      if (ae->encode(a, ch, cb->data, &tb->elem[0], &tb->elem[1], &tb->a[1], &tb->b[1], &empty, &e)) {
        engine_fail(g, &e, key);
        return;
      }
      payload = tb->elem[0].data;
      payload_n = tb->elem[0].size;
    } else if (a->dtype == DT_STRING) {
      if (strings_encode(a, cb->data, ne, ch->big_endian, &tb->elem[0], &e)) {
        engine_fail(g, &e, key);
        return;
      }
      payload = tb->elem[0].data;
      payload_n = tb->elem[0].size;
    } else if (ch->big_endian && dtype_def(a->dtype)->swap > 1) {
      size_t unit = dtype_def(a->dtype)->swap;
      byteswap_inplace(cb->data, nbytes / unit, unit);
    }
    if (chain_encode_bytes(ch, payload, payload_n, &tb->a[0], &tb->b[0], &res, &res_n, &e)) {
      engine_fail(g, &e, key);
      return;
    }
  }
  if (g->out == NULL) { /* the store takes writes from any thread */
    if (empty ? store_erase(g->st, key, &e) : store_set(g->st, key, res, res_n, &e))
      engine_fail(g, &e, key);
  } else if (empty) {
    g->out_state[task] = 2;
  } else {
    g->out[task] = malloc(res_n ? res_n : 1);
    if (g->out[task] == NULL) {
      zerr_set(&e, ZE_NOMEM, "out of memory");
      engine_fail(g, &e, key);
      return;
    }
    memcpy(g->out[task], res, res_n);
    g->out_n[task] = res_n;
    g->out_state[task] = 1;
  }
  progress_add(1);
}

/* ---- setup shared by read and write -------------------------------------------- */

/* Order of point records {ndim, chunk coordinates..., output position}. */
static int cmp_point(const void *x, const void *y) {
  const int64_t *p = x, *q = y;
  for (int64_t d = 1; d <= p[0] + 1; d++)
    if (p[d] != q[d]) return p[d] < q[d] ? -1 : 1;
  return 0;
}

/* Group the points of an n x ndim matrix of 0-based coordinates (doubles)
 * by chunk. All memory comes from R_alloc, as for plan_dim(). */
static void plan_points(engine *g, SEXP pts) {
  const zarray *a = g->arr;
  const int nd = g->ndim;
  SEXP dim = getAttrib(pts, R_DimSymbol);
  if (TYPEOF(pts) != REALSXP || TYPEOF(dim) != INTSXP || XLENGTH(dim) != 2 || INTEGER(dim)[1] != nd)
    zarr_raise(ZE_VALUE, a->name, NULL, "a point selection needs one column per dimension");
  const int64_t n = INTEGER(dim)[0];
  const double *x = REAL(pts);
  const size_t w = (size_t)nd + 2;
  int64_t *rec = (int64_t *)R_alloc((size_t)n * w + 1, sizeof(int64_t));
  for (int64_t k = 0; k < n; k++) {
    int64_t *r = rec + (size_t)k * w;
    r[0] = nd;
    for (int d = 0; d < nd; d++) {
      double v = x[k + (int64_t)d * n];
      if (!(v >= 0 && v < (double)a->shape[d]))
        zarr_raise(ZE_VALUE, a->name, NULL, "index out of bounds in a selection");
      int64_t iv = (int64_t)v;
      r[1 + d] = a->edges[d] ? grid_find(a->edges[d], a->nchunks[d], iv) : iv / a->chain.chunk_shape[d];
    }
    r[nd + 1] = k;
  }
  qsort(rec, (size_t)n, w * sizeof(int64_t), cmp_point);
  int64_t nj = 0;
  for (int64_t k = 0; k < n; k++)
    if (k == 0 || memcmp(rec + (size_t)k * w + 1, rec + (size_t)(k - 1) * w + 1, sizeof(int64_t) * (size_t)nd))
      nj++;
  g->pts = 1;
  g->npts = n;
  g->njobs = nj;
  g->pch = (int64_t *)R_alloc((size_t)nj * (size_t)nd + 1, sizeof(int64_t));
  g->pstart = (int64_t *)R_alloc((size_t)nj + 1, sizeof(int64_t));
  g->ploc = (int64_t *)R_alloc((size_t)n * (size_t)nd + 1, sizeof(int64_t));
  g->pout = (int64_t *)R_alloc((size_t)n + 1, sizeof(int64_t));
  int64_t j = -1;
  for (int64_t k = 0; k < n; k++) {
    const int64_t *r = rec + (size_t)k * w;
    if (k == 0 || memcmp(r + 1, r + 1 - w, sizeof(int64_t) * (size_t)nd)) {
      j++;
      memcpy(g->pch + j * nd, r + 1, sizeof(int64_t) * (size_t)nd);
      g->pstart[j] = k;
    }
    int64_t o = r[nd + 1];
    g->pout[k] = o;
    for (int d = 0; d < nd; d++)
      g->ploc[k * nd + d] = (int64_t)x[o + (int64_t)d * n] - grid_start(a, d, r[1 + d]);
  }
  g->pstart[nj] = n;
}

static void engine_init(engine *g, const zarray *a, SEXP sel, SEXP store, SEXP opts) {
  memset(g, 0, sizeof *g);
  g->arr = a;
  g->ndim = a->ndim;
  g->st = store_from(store);
  if (TYPEOF(sel) != VECSXP) {
    plan_points(g, sel);
  } else {
    if (XLENGTH(sel) != a->ndim)
      zarr_raise(ZE_VALUE, a->name, NULL, "selection has the wrong number of dimensions");
    g->njobs = 1;
    for (int d = 0; d < a->ndim; d++) {
      plan_dim(VECTOR_ELT(sel, d), a->shape[d], a->chain.chunk_shape[d], a->edges[d], a->nchunks[d],
               &g->dp[d], a->name);
      g->njobs *= g->dp[d].nch;
    }
    int64_t acc = 1;
    for (int d = 0; d < a->ndim; d++) {
      g->ostride[d] = acc;
      acc *= g->dp[d].n;
    }
  }
  /* which fill values stand for NA is decided in R (fill_is_missing_marker()) */
  g->na = asLogical(list_get(opts, "fill_as_na")) == TRUE && a->fill_marks_missing;
  g->missing_error = asLogical(list_get(opts, "missing_error")) == TRUE;
  int32_t f32;
  memcpy(&f32, a->fill, 4);
  if (a->dtype == DT_INT32 && a->rtype == RT_INTEGER && f32 == INT32_MIN) g->na = 0; /* already NA */
  double gap = asReal(list_get(opts, "range_gap")), max = asReal(list_get(opts, "range_max"));
  g->range_gap = ISNAN(gap) || gap < 0 ? 0 : (int64_t)gap;
  g->range_max = ISNAN(max) || max < 1 ? 1 : (int64_t)max;
  int nt = asInteger(list_get(opts, "nthreads"));
  if (nt == NA_INTEGER || nt < 1) nt = 1;
  if (nt > 64) nt = 64;
  int all = nt;
  if (g->njobs < nt) nt = (int)(g->njobs > 0 ? g->njobs : 1);
  /* little to decode: starting and joining threads costs more than it saves */
  double work = (double)g->njobs * (double)chain_nelem(&a->chain) * (double)a->elsize;
  if (work < ZARR_SMALL_WORK) nt = all = 1;
  if (chain_main_thread(&a->chain)) nt = all = 1; /* a codec written in R */
  g->nthreads = nt;
  g->all_threads = all;
}

/* Elements the selection holds. */
static int64_t engine_total(const engine *g) {
  if (g->pts) return g->npts;
  int64_t total = 1;
  for (int d = 0; d < g->ndim; d++) total *= g->dp[d].n;
  return total;
}

static tbufs *tbufs_new(int nt) { return calloc((size_t)nt, sizeof(tbufs)); }

static void tbufs_free(tbufs *tb, int nt) {
  if (tb == NULL) return;
  for (int t = 0; t < nt; t++) {
    pool_free(tb[t].pools);
    zbuf_free(&tb[t].whole);
    for (int d = 0; d < MAX_DEPTH; d++) {
      zbuf_free(&tb[t].a[d]);
      zbuf_free(&tb[t].b[d]);
      zbuf_free(&tb[t].elem[d]);
    }
  }
  free(tb);
}

/* A read's scratch (a chunk's stored bytes, its decoded values) is fresh
 * memory every call otherwise: large buffers come from the system, whose
 * kernel zeroes every page on its first write again (a 256^3 uint16 zstd
 * chunk read alone: 14 % of its cpu in page faults). So one set, with the
 * buffers a local store reads chunk bytes into, is kept between reads while
 * it holds at most zarr.scratch_bytes; a read that starts while it is in
 * use (a store or codec written in R reading an array) gets a set of its
 * own, freed after it. */
static tbufs *kept_tb;
static zbuf *kept_fetch; /* the store's buffers for chunk bytes, one per thread */
static int kept_nt, kept_busy;

static size_t kept_bytes(void) {
  size_t n = 0;
  for (int t = 0; t < kept_nt; t++) {
    const tbufs *tb = &kept_tb[t];
    n += tb->whole.cap + kept_fetch[t].cap;
    for (int d = 0; d < MAX_DEPTH; d++) n += tb->a[d].cap + tb->b[d].cap + tb->elem[d].cap;
  }
  return n;
}

/* Also at unload: a read left by a long jump (an interrupt in a store
 * written in R) leaves the set marked busy, so later reads use their own. */
void tbufs_release(void) {
  tbufs_free(kept_tb, kept_nt);
  for (int t = 0; kept_fetch != NULL && t < kept_nt; t++) zbuf_free(&kept_fetch[t]);
  free(kept_fetch);
  kept_fetch = NULL;
  kept_tb = NULL;
  kept_nt = 0;
  kept_busy = 0;
}

/* *fetch: the kept store buffers, or NULL with a set of its own */
static tbufs *tbufs_take(int nt, zbuf **fetch) {
  *fetch = NULL;
  if (kept_busy) return tbufs_new(nt);
  if (kept_nt < nt) {
    tbufs_release();
    kept_tb = tbufs_new(nt);
    kept_fetch = calloc((size_t)nt, sizeof(zbuf));
    if (kept_tb == NULL || kept_fetch == NULL) {
      tbufs_release();
      return NULL;
    }
    kept_nt = nt;
  }
  kept_busy = 1;
  *fetch = kept_fetch;
  return kept_tb;
}

static void tbufs_give(tbufs *tb, int nt, double cap) {
  if (tb != kept_tb) {
    tbufs_free(tb, nt);
    return;
  }
  for (int t = 0; t < kept_nt; t++) { /* what belongs to one call */
    pool_free(tb[t].pools);
    tb[t].pools = NULL;
    tb[t].key = NULL;
    tb[t].job = 0;
    tb[t].from_cache = 0;
  }
  kept_busy = 0;
  if (!((double)kept_bytes() <= cap)) tbufs_release();
}

SEXPTYPE rtype_sexp(zrtype rt) {
  switch (rt) {
  case RT_LOGICAL: return LGLSXP;
  case RT_INTEGER: return INTSXP;
  case RT_COMPLEX: return CPLXSXP;
  case RT_CHARACTER: return STRSXP;
  case RT_RAWLIST: return VECSXP;
  case RT_RAW: return RAWSXP;
  default: return REALSXP;
  }
}

/* Main thread only: handles -> R strings (or raw vectors). Text equal to
 * `na_fill` (when not NULL) becomes NA, as the fill value of other types. */
static void strings_to_r(engine *g, SEXP out, const zstr *h, int64_t n, zrtype rt,
                         const zstr *na_fill) {
  for (int64_t i = 0; i < n; i++) {
    /* millions of strings take seconds: stop on an interrupt (the caller
     * frees the text, then raises) */
    if ((i & 65535) == 65535 && engine_poll(g)) return;
    if (na_fill != NULL && h[i].ptr != NULL && h[i].len == na_fill->len &&
        (h[i].len == 0 || memcmp(h[i].ptr, na_fill->ptr, (size_t)h[i].len) == 0)) {
      SET_STRING_ELT(out, (R_xlen_t)i, NA_STRING);
      continue;
    }
    if (rt == RT_RAWLIST) {
      if (h[i].ptr == NULL) continue;
      SEXP r = allocVector(RAWSXP, (R_xlen_t)h[i].len);
      SET_VECTOR_ELT(out, (R_xlen_t)i, r);
      if (h[i].len) memcpy(RAW(r), h[i].ptr, (size_t)h[i].len);
    } else {
      SET_STRING_ELT(out, (R_xlen_t)i,
                     h[i].ptr ? mkCharLenCE(h[i].ptr, (int)h[i].len, CE_UTF8) : NA_STRING);
    }
  }
}

/* Main thread only: R strings (or raw vectors) -> handles; NA is written as
 * the fill value, as for other types. */
static zstr *strings_from_r(SEXP x, const zstr *fill) {
  R_xlen_t n = XLENGTH(x);
  zstr *h = (zstr *)R_alloc((size_t)n + 1, sizeof(zstr));
  for (R_xlen_t i = 0; i < n; i++) {
    if (TYPEOF(x) == STRSXP) {
      SEXP c = STRING_ELT(x, i);
      if (c == NA_STRING) {
        h[i] = *fill;
        continue;
      }
      h[i].ptr = translateCharUTF8(c);
      h[i].len = (int64_t)strlen(h[i].ptr);
    } else {
      SEXP r = VECTOR_ELT(x, i);
      h[i].ptr = TYPEOF(r) == RAWSXP ? (const char *)RAW(r) : NULL;
      h[i].len = TYPEOF(r) == RAWSXP ? XLENGTH(r) : 0;
    }
  }
  return h;
}

/* A large result is fresh memory from the system: every first write to one
 * of its pages is a page fault, with the kernel's cost of one fault per page
 * (4 KiB: 16,000 faults per 64 MB) on whichever thread writes there. Asking
 * for the pages up front, a piece per task spread over the threads, costs
 * one system call per piece instead. Only an optimisation: errors (a kernel
 * without MADV_POPULATE_WRITE) leave the pages to fault in as before. */
#define PREFAULT_MIN ((size_t)8 << 20)
#define PREFAULT_PIECE ((size_t)4 << 20)
#define HUGE_PAGE ((uintptr_t)2 << 20)

#ifndef _WIN32
typedef struct {
  uint8_t *p;
  size_t n;
  engine *g; /* polled between pieces: pre-faulting gigabytes takes seconds */
} prefault_ctx;

static int prefault_poll(void *ctx) { return engine_poll(((prefault_ctx *)ctx)->g); }

static void prefault_task(void *ctx, size_t i, int thread) {
  (void)thread;
#ifdef MADV_POPULATE_WRITE
  prefault_ctx *c = ctx;
  size_t off = i * PREFAULT_PIECE, len = c->n - off < PREFAULT_PIECE ? c->n - off : PREFAULT_PIECE;
  (void)madvise(c->p + off, len, MADV_POPULATE_WRITE);
#else
  (void)ctx;
  (void)i;
#endif
}

/* A read of fewer chunks than threads decodes on fewer threads than it has:
 * an idle one faults the result's pages in meanwhile (in the background,
 * joined after the fetch) instead of all threads before it. Populating
 * leaves the contents alone, so it may overlap the copies into the result. */
typedef struct {
  prefault_ctx c;
  pthread_t tid;
  int started;
} prefault_bg;

static void *prefault_main(void *p) {
  prefault_ctx *c = p;
  size_t np = (c->n + PREFAULT_PIECE - 1) / PREFAULT_PIECE;
  for (size_t i = 0; i < np && !c->g->stop; i++) prefault_task(c, i, 0);
  return NULL;
}

/* bg: NULL to fault the pages in now on `nthreads` threads; else started on
 * a thread of its own, to be joined with prefault_join(). */
static void prefault(engine *g, uint8_t *p, size_t n, int nthreads, prefault_bg *bg) {
  long pg = sysconf(_SC_PAGESIZE);
  if (n < PREFAULT_MIN || pg <= 0) return;
  uintptr_t a = ((uintptr_t)p + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
  uintptr_t b = ((uintptr_t)p + n) & ~((uintptr_t)pg - 1);
  if (b <= a) return;
#ifdef MADV_HUGEPAGE
  /* where transparent huge pages are on request ("madvise"), ask for them:
   * one fault per 2 MiB instead of per 4 KiB (numpy does the same for its
   * large arrays); ignored where they are off or always on */
  uintptr_t ha = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
  uintptr_t hb = ((uintptr_t)p + n) & ~(HUGE_PAGE - 1);
  if (hb > ha) (void)madvise((void *)ha, (size_t)(hb - ha), MADV_HUGEPAGE);
#endif
  prefault_ctx c = {(uint8_t *)a, (size_t)(b - a), g};
  if (bg != NULL) {
    bg->c = c;
    bg->started = pthread_create(&bg->tid, NULL, prefault_main, &bg->c) == 0;
    if (bg->started) return;
  }
  parallel_for((c.n + PREFAULT_PIECE - 1) / PREFAULT_PIECE, nthreads, prefault_task, &c, prefault_poll);
}

static void prefault_join(prefault_bg *bg) {
  if (bg->started) pthread_join(bg->tid, NULL);
  bg->started = 0;
}
#else /* Windows: no madvise(), the pages fault in as they are written */
typedef struct {
  int started;
} prefault_bg;

static void prefault(engine *g, uint8_t *p, size_t n, int nthreads, prefault_bg *bg) {
  (void)g, (void)p, (void)n, (void)nthreads, (void)bg;
}

static void prefault_join(prefault_bg *bg) { (void)bg; }
#endif

typedef struct {
  engine *g;
  prefault_bg *bg;
} fetch_call;

static SEXP fetch_all(void *data) {
  fetch_call *fc = data;
  engine_fetch(fc->g, NULL, fc->g->njobs);
  return R_NilValue;
}

static void fetch_all_done(void *data) { prefault_join(((fetch_call *)data)->bg); }

/* Checking that every value to write fits the data type reads all of them:
 * on hundreds of MB that takes long enough to be worth threads, and to look
 * for an interrupt between pieces. */
typedef struct {
  engine *g;
  const uint8_t *data;
  int64_t n, piece;
  size_t rsize;
  int64_t *bad, *first; /* per piece */
} validate_ctx;

static int validate_poll(void *ctx) { return poll_stop(((validate_ctx *)ctx)->g, 0); }

static void validate_task(void *ctx, size_t i, int thread) {
  (void)thread;
  validate_ctx *c = ctx;
  int64_t off = (int64_t)i * c->piece, m = c->n - off < c->piece ? c->n - off : c->piece;
  c->bad[i] = slab_validate(c->g->arr->dtype, c->g->arr->rtype, c->data + off * (int64_t)c->rsize, m,
                            &c->first[i]);
  if (c->first[i] >= 0) c->first[i] += off;
}

/* The number of values that do not fit (*first: the first of them), or -1
 * when interrupted (the engine then holds the error). */
static int64_t validate_values(engine *g, const uint8_t *data, int64_t n, int64_t *first) {
  validate_ctx c = {g, data, n, 0, elem_rsize(g->arr->dtype, g->arr->rtype), NULL, NULL};
  c.piece = (int64_t)(PREFAULT_PIECE / c.rsize);
  if (n <= c.piece) return slab_validate(g->arr->dtype, g->arr->rtype, data, n, first);
  size_t np = (size_t)((n + c.piece - 1) / c.piece);
  c.bad = (int64_t *)R_alloc(np, sizeof(int64_t));
  c.first = (int64_t *)R_alloc(np, sizeof(int64_t));
  for (size_t i = 0; i < np; i++) c.bad[i] = 0; /* pieces not run (interrupted) */
  parallel_for(np, g->nthreads, validate_task, &c, validate_poll);
  if (g->failed) return -1;
  int64_t bad = 0;
  *first = -1;
  for (size_t i = 0; i < np; i++) {
    if (c.bad[i] > 0 && *first < 0) *first = c.first[i];
    bad += c.bad[i];
  }
  return bad;
}

/* Integers (or logicals) written to a floating-point type: widened to
 * doubles as as.double() does (NA stays NA), in pieces that look for an
 * interrupt between them. */
typedef struct {
  engine *g;
  const int *src;
  double *dst;
  int64_t n, piece;
} widen_ctx;

static int widen_poll(void *ctx) { return poll_stop(((widen_ctx *)ctx)->g, 0); }

static void widen_task(void *ctx, size_t i, int thread) {
  (void)thread;
  widen_ctx *c = ctx;
  int64_t j = (int64_t)i * c->piece, end = c->n - j < c->piece ? c->n : j + c->piece;
  for (; j < end; j++) c->dst[j] = c->src[j] == NA_INTEGER ? NA_REAL : (double)c->src[j];
}

/* A new double vector (protected by the caller), or R_NilValue when interrupted. */
static SEXP widen_to_double(engine *g, SEXP x) {
  SEXP out = PROTECT(allocVector(REALSXP, XLENGTH(x)));
  widen_ctx c = {g, (const int *)DATAPTR_RO(x), REAL(out), (int64_t)XLENGTH(x), (int64_t)1 << 20};
  parallel_for((size_t)((c.n + c.piece - 1) / c.piece), g->nthreads, widen_task, &c, widen_poll);
  UNPROTECT(1);
  return g->failed ? R_NilValue : out;
}

/* What identifies an array's chunks in the cache besides their keys: every
 * field of its description that changes how stored bytes decode or where
 * they go (a new codec, a resize), not how the values reach R. */
static uint64_t spec_hash(uint64_t h, SEXP x) {
  int t = TYPEOF(x);
  R_xlen_t n = isVector(x) ? XLENGTH(x) : 0;
  h = zcache_hash(h, &t, sizeof t);
  h = zcache_hash(h, &n, sizeof n);
  switch (t) {
  case NILSXP: break;
  case VECSXP: {
    SEXP nm = getAttrib(x, R_NamesSymbol);
    for (R_xlen_t i = 0; i < n; i++) {
      if (TYPEOF(nm) == STRSXP) {
        const char *k = CHAR(STRING_ELT(nm, i));
        if (!strcmp(k, "rtype") || !strcmp(k, "name") || !strcmp(k, "fill_marks_missing") ||
            !strcmp(k, "cache_bytes"))
          continue;
        h = zcache_hash(h, k, strlen(k) + 1);
      }
      h = spec_hash(h, VECTOR_ELT(x, i));
    }
    break;
  }
  case REALSXP: h = zcache_hash(h, REAL(x), (size_t)n * sizeof(double)); break;
  case INTSXP: h = zcache_hash(h, INTEGER(x), (size_t)n * sizeof(int)); break;
  case LGLSXP: h = zcache_hash(h, LOGICAL(x), (size_t)n * sizeof(int)); break;
  case RAWSXP: h = zcache_hash(h, RAW(x), (size_t)n); break;
  case CPLXSXP: h = zcache_hash(h, COMPLEX(x), (size_t)n * sizeof(Rcomplex)); break;
  case STRSXP:
    for (R_xlen_t i = 0; i < n; i++) {
      SEXP c = STRING_ELT(x, i);
      h = c == NA_STRING ? zcache_hash(h, "\xff", 1) : zcache_hash(h, CHAR(c), (size_t)LENGTH(c) + 1);
    }
    break;
  default: h = zcache_hash(h, &x, sizeof x); /* functions (codecs written in R): this one */
  }
  return h;
}

/* Whether this read uses the decoded-chunk cache (g->cache), and how: the
 * cap is the option zarr.chunk_cache_bytes (opts), an array's own cap its
 * `cache_bytes` (spec). Chunks the selection covers whole are looked up
 * but not kept; strings are not cached. */
static void cache_setup(engine *g, SEXP spec, SEXP opts) {
  double cap = asReal(list_get(opts, "cache_bytes"));
  cap = ISNAN(cap) || cap < 0 ? 0 : cap;
  zcache_set_cap(cap >= (double)SIZE_MAX ? SIZE_MAX : (size_t)cap);
  SEXP own = list_get(spec, "cache_bytes");
  double ocap = isNull(own) ? R_PosInf : asReal(own);
  if (cap <= 0 || !(ocap > 0) || g->arr->dtype == DT_STRING || g->njobs == 0) return;
  g->fillable = (char *)R_alloc((size_t)g->njobs + 1, 1);
  int any = 0;
  int64_t jc[ZARR_MAX_DIMS];
  for (int64_t j = 0; j < g->njobs; j++) {
    job_coords(g, j, jc);
    g->fillable[j] = (char)!chunk_fully_covered(g, jc);
    any |= g->fillable[j];
  }
  if (!any && zcache_count() == 0) return;
  g->cache_ident = store_ident(g->st);
  g->cache_meta = spec_hash(0xcbf29ce484222325ULL, spec);
  g->cache_meta = zcache_hash(g->cache_meta, &g->st->cache_salt, sizeof g->st->cache_salt);
  g->cache_owner = zcache_hash(g->cache_meta, g->cache_ident, strlen(g->cache_ident));
  g->cache_owner_cap = ocap >= (double)SIZE_MAX ? SIZE_MAX : (size_t)ocap;
  g->cache_whole = g->arr->chain.ab != AB_SHARDING;
  if (g->st->ops->stamp != NULL) {
    g->stamps = (zstamp *)R_alloc((size_t)g->njobs + 1, sizeof(zstamp));
    memset(g->stamps, 0, sizeof(zstamp) * ((size_t)g->njobs + 1));
  }
  g->cache = 1;
}

SEXP ffi_array_read(SEXP spec, SEXP store, SEXP sel, SEXP opts) {
  zarray a;
  spec_parse(spec, &a);
  grid_parse(spec, &a);
  if (!kernel_supported(a.dtype, a.rtype, 0))
    zarr_raise(ZE_CODEC, a.name, NULL, "reading this data type is not supported");
  /* a large result of a type narrower than its R type keeps the stored
   * width (compact_vector.c): decoded as raw bits, converted when used */
  zrtype want = a.rtype;
  int compact = asLogical(list_get(opts, "compact")) == TRUE && compact_possible(a.dtype, a.rtype);
  if (compact) a.rtype = RT_RAW;
  engine g;
  engine_init(&g, &a, sel, store, opts);
  int64_t total = engine_total(&g);
  if (compact && total < COMPACT_MIN_ELEMENTS) { /* the plan does not depend on the R type */
    compact = 0;
    a.rtype = want;
  }
  int compact_na = g.na;
  if (compact) g.na = 0; /* the conversion marks them */
  /* raw bits: as many bytes per element as the data type has */
  R_xlen_t rlen = (R_xlen_t)total * (a.rtype == RT_RAW ? (R_xlen_t)a.elsize : 1);
  /* R's own allocation failure would be a plain R error, and catching it in
   * R (a condition handler around this call) kept each large result alive
   * into the next read: a full collection per read in a loop. So a large
   * result's memory is probed here and NULL tells R to raise its classed
   * error. */
  size_t rbytes = (size_t)total * elem_rsize(a.dtype, a.rtype);
  if (a.dtype != DT_STRING && rbytes >= ((size_t)1 << 24)) {
    void *probe = malloc(rbytes + 64);
    if (probe == NULL) return R_NilValue;
    free(probe);
  }
  /* a compact result's elements are not in R's heap (compact_vector.c) */
  uint8_t *payload = NULL;
  SEXP out = PROTECT(compact ? compact_payload(rbytes, &payload) : result_alloc(rtype_sexp(a.rtype), rlen, rbytes));
  if (out == R_NilValue) {
    UNPROTECT(1);
    return R_NilValue;
  }
  if (total == 0) {
    UNPROTECT(1);
    return out;
  }
  int strings = a.dtype == DT_STRING;
  g.rdata = strings ? (uint8_t *)R_alloc((size_t)total, sizeof(zstr)) : compact ? payload : (uint8_t *)DATAPTR(out);
  cache_setup(&g, spec, opts);
  g.tb = tbufs_take(g.nthreads, &g.fetch);
  if (g.tb == NULL) zarr_raise(ZE_NOMEM, a.name, NULL, "out of memory");
  /* a store whose requests take the time (get_many: remote) starts them at
   * once; its pages fault in while the bytes arrive */
  int remote = g.st->ops->get_many != NULL && !g.st->ops->main_thread;
  /* the bar's total before the prefault: on a result of several GB touching
   * the pages takes seconds, and the bar is shown (at 0) meanwhile */
  progress_total(g.njobs);
  prefault_bg bg = {0};
  if (!strings && !remote && getenv("ZARR_NO_PREFAULT") == NULL)
    prefault(&g, g.rdata, (size_t)total * elem_rsize(a.dtype, a.rtype), g.nthreads,
             g.njobs < g.all_threads ? &bg : NULL);
  if (!g.failed) {
    fetch_call fc = {&g, &bg};
    /* the pages are touched until joined: joined however the fetch ends */
    R_ExecWithCleanup(fetch_all, &fc, fetch_all_done, &fc);
  }
  prefault_join(&bg);
  if (strings && !g.failed) {
    zstr fill;
    memcpy(&fill, a.fill, sizeof fill);
    strings_to_r(&g, out, (const zstr *)g.rdata, total, a.rtype,
                 g.na && a.rtype == RT_CHARACTER ? &fill : NULL);
  }
  double keep = asReal(list_get(opts, "scratch_bytes"));
  tbufs_give(g.tb, g.nthreads, keep);
  result_pool_limit(keep);
  if (g.failed) store_raise(g.st, &g.err, a.name, g.err_key);
  /* only when there is something to report: R copies the whole result to
   * remove an attribute from it */
  if (compact) {
    out = compact_wrap(out, total, a.dtype, want, compact_na, a.fill);
    UNPROTECT(1);
    PROTECT(out);
    a.rtype = want;
  }
  if (g.lost > 0) setAttrib(out, install("zarr_lost"), ScalarReal((double)g.lost));
  if (a.ndim > 1 && a.rtype != RT_RAW && !g.pts) { /* here too: R copies the result to set its dim once R code has seen it */
    SEXP dim = PROTECT(allocVector(INTSXP, a.ndim));
    for (int d = 0; d < a.ndim; d++) INTEGER(dim)[d] = (int)g.dp[d].n;
    setAttrib(out, R_DimSymbol, dim);
    UNPROTECT(1);
  }
  UNPROTECT(1);
  return out;
}

SEXP ffi_array_write(SEXP spec, SEXP store, SEXP sel, SEXP data, SEXP opts) {
  zarray a;
  spec_parse(spec, &a);
  grid_parse(spec, &a);
  zrtype given = a.rtype;
  int widen = dtype_def(a.dtype)->kind == 'f' && (given == RT_INTEGER || given == RT_LOGICAL);
  if (widen) a.rtype = RT_DOUBLE;
  if (!kernel_supported(a.dtype, a.rtype, 1))
    zarr_raise(ZE_VALUE, a.name, NULL, "these R values cannot be written to this data type");
  engine g;
  engine_init(&g, &a, sel, store, opts);
  if (g.st->ops->set == NULL || g.st->ops->erase == NULL)
    zarr_raise(ZE_READ_ONLY, a.name, NULL, "the store is read-only");
  int64_t total = engine_total(&g);
  if (total == 0) return R_NilValue;
  if ((SEXPTYPE)TYPEOF(data) != rtype_sexp(given))
    zarr_raise(ZE_VALUE, a.name, NULL, "internal: data has the wrong R type");
  if (widen) {
    data = PROTECT(widen_to_double(&g, data));
    if (data == R_NilValue) store_raise(g.st, &g.err, a.name, g.err_key); /* interrupted */
  }
  R_xlen_t ndata = XLENGTH(data) / (a.rtype == RT_RAW ? (R_xlen_t)a.elsize : 1);
  if (ndata == 1 && total > 1) {
    for (int d = 0; d < a.ndim; d++) g.ostride[d] = 0; /* recycle one value */
    g.recycle = 1;
  } else if (ndata != total || (a.rtype == RT_RAW && XLENGTH(data) % (R_xlen_t)a.elsize)) {
    zarr_raise(ZE_VALUE, a.name, NULL, "data length does not match the selection");
  }
  zstr fill;
  memcpy(&fill, a.fill, sizeof fill);
  /* read-only: a writable pointer into R's wrapper of a shared vector (what
   * dropping its dim in R gives) would copy all of it here, uninterruptibly */
  g.rdata = a.dtype == DT_STRING ? (uint8_t *)strings_from_r(data, &fill) : (uint8_t *)DATAPTR_RO(data);
  int64_t first = -1;
  int64_t bad = validate_values(&g, g.rdata, ndata, &first);
  if (bad < 0) store_raise(g.st, &g.err, a.name, g.err_key); /* interrupted */
  if (bad > 0) {
    char msg[ZARR_MSG_LEN];
    snprintf(msg, sizeof msg,
             "%.0f value(s) cannot be stored as %s (the first is element %.0f); nothing was written",
             (double)bad, list_str(spec, "dtype", "?"), (double)first + 1);
    zarr_raise(ZE_VALUE, a.name, NULL, msg);
  }
  /* R memory first: nothing below may raise an R error while C memory is held */
  int collect = g.st->ops->main_thread; /* the store is written from the R thread */
  if (collect) {
    g.out = (uint8_t **)R_alloc((size_t)g.njobs + 1, sizeof(uint8_t *));
    g.out_n = (size_t *)R_alloc((size_t)g.njobs + 1, sizeof(size_t));
    g.out_state = (int *)R_alloc((size_t)g.njobs + 1, sizeof(int));
    for (int64_t j = 0; j < g.njobs; j++) {
      g.out[j] = NULL;
      g.out_n[j] = 0;
      g.out_state[j] = 0;
    }
  }
  const char *ident = store_ident(g.st);
  g.merged = (uint8_t **)R_alloc((size_t)g.njobs + 1, sizeof(uint8_t *));
  int64_t *partial = (int64_t *)R_alloc((size_t)g.njobs + 1, sizeof(int64_t));
  g.tb = tbufs_new(g.nthreads);
  if (g.tb == NULL) zarr_raise(ZE_NOMEM, a.name, NULL, "out of memory");
  /* phase 1: the existing content of partly covered chunks, decoded before
   * anything is written, so that a corrupt chunk fails the call */
  size_t chunk_bytes = (size_t)chain_nelem(&a.chain) * a.elsize;
  int64_t npartial = 0;
  int nomem = 0;
  int64_t jc0[ZARR_MAX_DIMS];
  for (int64_t j = 0; j < g.njobs; j++) {
    job_coords(&g, j, jc0);
    g.merged[j] = NULL;
    if (!nomem && !chunk_fully_covered(&g, jc0)) {
      g.merged[j] = malloc(chunk_bytes ? chunk_bytes : 1);
      nomem = g.merged[j] == NULL;
      partial[npartial++] = j;
    }
  }
  progress_total(npartial + g.njobs);
  g.next_poll = 0; /* the checks above polled without the bar: bring it up now */
  if (!nomem && npartial) engine_fetch(&g, partial, npartial);
  /* phase 2: encode and store every chunk; the R thread only looks for an
   * interrupt meanwhile (every 20 ms), so a stop waits for the chunks being
   * encoded then (and codecs that can give up a chunk half-way do), not for
   * one of its own; even one chunk of gzip 9 can take seconds */
  double work = (double)g.njobs * (double)chunk_bytes;
  int watch = !chain_main_thread(&a.chain) && work >= ZARR_SMALL_WORK; /* one thread: one worker */
  if (!nomem && !g.failed)
    (watch ? parallel_for_watched : parallel_for)((size_t)g.njobs, g.nthreads, write_task, &g, engine_poll);
  for (int64_t j = 0; j < g.njobs; j++) free(g.merged[j]);
  tbufs_free(g.tb, g.nthreads);
  if (collect) { /* the R thread stores what the workers encoded */
    char key[KEY_CAP];
    int64_t jc[ZARR_MAX_DIMS];
    zerr e = {ZE_OK, ""};
    for (int64_t j = 0; j < g.njobs; j++) {
      /* a store written in R can take its time per chunk: each is whole, so stop between them */
      if (!g.failed && !nomem && g.out_state[j] != 0 && !engine_poll(&g)) {
        job_coords(&g, j, jc);
        job_key(&g, jc, key);
        int rc = g.out_state[j] == 1 ? store_set(g.st, key, g.out[j], g.out_n[j], &e)
                                     : store_erase(g.st, key, &e);
        if (rc) engine_fail(&g, &e, key);
      }
      free(g.out[j]);
    }
  }
  /* the chunks written (or maybe written, on failure) are no longer what the cache holds */
  if (zcache_count() > 0) {
    char key[KEY_CAP];
    int64_t jc[ZARR_MAX_DIMS];
    for (int64_t j = 0; j < g.njobs; j++) {
      job_coords(&g, j, jc);
      if (job_key(&g, jc, key) == 0) zcache_drop(ident, key);
    }
  }
  if (nomem) zarr_raise(ZE_NOMEM, a.name, NULL, "out of memory");
  if (g.failed) store_raise(g.st, &g.err, a.name, g.err_key);
  UNPROTECT(widen);
  return R_NilValue;
}
