/* Reference store (Kerchunk): a read-only map from keys to
 *   - inline bytes (metadata documents, small chunks),
 *   - a byte range of a file (target, offset, length),
 *   - a whole file (target).
 * Targets are served by sub-stores made in R (a local store rooted at "" for
 * local files, an HTTP store per scheme, host and query for URLs) and named
 * by their key in that sub-store. A target without a sub-store (an s3:// URL
 * before the S3 store exists, an unknown scheme) carries the message that
 * reading it fails with.
 *
 * get_many() answers missing and inline keys at once, translates the rest
 * into bytes of their files (refplan.c), merges nearby ranges of one file
 * served by a batch store such as HTTP (gap and max: options zarr.range_gap
 * / zarr.range_max; local files are read piece by piece with positioned
 * reads) and reads the spans through each sub-store's get_many (or get),
 * then cuts every span back into the pieces asked for. A referenced file that does not exist, or is shorter
 * than the reference says, is an error naming the key and the file: a
 * reference promises the bytes are there.
 *
 * Nothing but the constructor and the R entry points touches the R API.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include "refplan.h"
#include "store.h"

enum { REF_INLINE = 0, REF_RANGE = 1, REF_WHOLE = 2 };

typedef struct {
  /* entries */
  size_t n;
  char **keys;
  uint8_t *kind;
  int32_t *target;
  int64_t *off, *len; /* RANGE: bytes of the target; INLINE: offset/length in `inl` */
  uint8_t *inl;
  /* open-addressing hash table of entry indexes (-1: empty) */
  size_t cap;
  int64_t *slot;
  /* targets and sub-stores */
  size_t ntargets;
  int32_t *t_store; /* index into stores, or -1 */
  char **t_key;     /* the key in the sub-store */
  char **t_err;     /* why it cannot be read, when t_store is -1 */
  /* Icechunk: a missing target of t_own (the repository's own chunk
   * objects) is an Icechunk error rather than a store error */
  uint8_t *t_own;
  /* Icechunk: conditions on targets, entry i's e_cond[i] (-1: none):
   * target c_target[c] must not have been modified after c_since[c]
   * (seconds since 1970; NaN: no such condition), or must still have the
   * ETag c_etag[c] (NULL: none); checked once, before the first read of an
   * entry with the condition (c_ok). Entries of one target with and without
   * conditions share the target, so their ranges merge. */
  int32_t *e_cond;
  size_t nconds;
  int32_t *c_target;
  double *c_since;
  char **c_etag;
  int *c_ok;
  /* Icechunk: keys below these prefixes without an entry fail with the
   * message (their array's manifest could not be read) */
  size_t nbad;
  char **bad_prefix, **bad_msg;
  size_t nstores;
  zstore **stores; /* borrowed: R keeps their handles alive */
  int64_t gap, max;
} refstore;

static uint64_t hash_key(const char *k) {
  uint64_t h = 1469598103934665603ULL;
  for (const unsigned char *p = (const unsigned char *)k; *p; p++) {
    h ^= *p;
    h *= 1099511628211ULL;
  }
  return h;
}

static int64_t ref_find(const refstore *rs, const char *key) {
  if (rs->cap == 0) return -1;
  size_t mask = rs->cap - 1;
  for (size_t j = (size_t)hash_key(key) & mask;; j = (j + 1) & mask) {
    int64_t at = rs->slot[j];
    if (at < 0) return -1;
    if (strcmp(rs->keys[at], key) == 0) return at;
  }
}

static void refstore_free(refstore *rs) {
  if (rs == NULL) return;
  if (rs->keys)
    for (size_t i = 0; i < rs->n; i++) free(rs->keys[i]);
  free(rs->keys);
  free(rs->kind);
  free(rs->target);
  free(rs->off);
  free(rs->len);
  free(rs->inl);
  free(rs->slot);
  for (size_t t = 0; t < rs->ntargets; t++) {
    if (rs->t_key) free(rs->t_key[t]);
    if (rs->t_err) free(rs->t_err[t]);
  }
  for (size_t c = 0; c < rs->nconds; c++) free(rs->c_etag[c]);
  free(rs->e_cond);
  free(rs->c_target);
  free(rs->c_since);
  free(rs->c_etag);
  free(rs->c_ok);
  for (size_t k = 0; k < rs->nbad; k++) {
    free(rs->bad_prefix[k]);
    free(rs->bad_msg[k]);
  }
  free(rs->bad_prefix);
  free(rs->bad_msg);
  free(rs->t_store);
  free(rs->t_own);
  free(rs->t_key);
  free(rs->t_err);
  free(rs->stores);
  free(rs);
}

static void ref_destroy(zstore *s) {
  if (s != NULL) refstore_free(s->impl);
}

/* ---- get_many ------------------------------------------------------------ */

typedef struct {
  size_t req;     /* request of the outer batch */
  int32_t target;
  int64_t off, len; /* as asked of the sub-store */
} passreq;

typedef struct {
  refstore *rs;
  zsink_fn sink;
  void *ctx;
  const zrange *r;  /* the outer requests */
  zref_piece *pieces;
  zref_span *spans;
  /* the sub-batch under way: entries < nspan_sub are spans, the rest whole-file requests */
  size_t *sub_idx;  /* span index or passreq index */
  size_t nspan_sub;
  passreq *pass;
  zerr *e;
  int failed;
  int *any_failed; /* shared by the sub-batches running at once */
  int by_other;    /* this one stopped because another failed */
} cutctx;

static void cut_fail(cutctx *c) {
  c->failed = 1;
  __atomic_store_n(c->any_failed, 1, __ATOMIC_RELEASE);
}

static int deliver(cutctx *c, size_t req, zbuf *body) {
  if (c->sink(c->ctx, req, body, 0)) {
    if (c->e->kind == ZE_OK) zerr_set(c->e, ZE_STORE, "reading references stopped");
    cut_fail(c);
    return 1;
  }
  return 0;
}

static int missing_target(const refstore *rs, int32_t t, const char *key, zerr *e) {
  if (rs->t_own != NULL && rs->t_own[t])
    return zerr_set(e, ZE_ICECHUNK, "the chunk object '%.300s' that key '%.200s' refers to is missing from the repository",
                    rs->t_key[t], key);
  return zerr_set(e, ZE_STORE, "the file '/%.300s' that key '%.200s' refers to does not exist", rs->t_key[t], key);
}

/* An ETag without its weak marker and quotes: servers and writers differ in
 * which they keep. Points into `t`; *n its length. */
static const char *etag_core(const char *t, size_t *n) {
  if (strncmp(t, "W/", 2) == 0) t += 2;
  size_t k = strlen(t);
  if (k >= 2 && t[0] == '"' && t[k - 1] == '"') {
    t++;
    k -= 2;
  }
  *n = k;
  return t;
}

static int stale(const refstore *rs, int32_t t, const char *key, const char *how, zerr *e) {
  return zerr_set(e, ZE_ICECHUNK_STALE, "virtual chunk of key '%.200s' is stale: '/%.300s' %s", key, rs->t_key[t], how);
}

/* A condition (a modification time, or an ETag) on a target: once, before
 * the first read that needs it, ask the target's store when it was last
 * modified and for its ETag. A store that cannot tell (files have no ETag)
 * passes. */
static int check_cond(refstore *rs, int32_t c, const char *key, zerr *e) {
  if (__atomic_load_n(&rs->c_ok[c], __ATOMIC_ACQUIRE)) return 0;
  int32_t t = rs->c_target[c];
  const char *want = rs->c_etag[c];
  zstore *sub = rs->stores[rs->t_store[t]];
  if (sub->ops->stat != NULL) {
    double mtime = -1;
    char etag[ZSTAT_ETAG_MAX];
    int missing = 0;
    etag[0] = '\0';
    if (sub->ops->stat(sub, rs->t_key[t], &mtime, etag, &missing, e)) return -1;
    if (missing) return missing_target(rs, t, key, e);
    if (want != NULL && etag[0] != '\0') {
      size_t a, b;
      const char *x = etag_core(want, &a), *y = etag_core(etag, &b);
      if (a != b || memcmp(x, y, a) != 0) {
        char how[400];
        snprintf(how, sizeof how, "has ETag %.150s, its reference recorded %.150s", etag, want);
        return stale(rs, t, key, how, e);
      }
    } else if (want == NULL && mtime > rs->c_since[c]) {
      char was[32], now[32], how[200];
      time_t a = (time_t)rs->c_since[c], b = (time_t)mtime;
      struct tm ta, tb;
      strftime(was, sizeof was, "%Y-%m-%d %H:%M:%S", gmtime_r(&a, &ta));
      strftime(now, sizeof now, "%Y-%m-%d %H:%M:%S", gmtime_r(&b, &tb));
      snprintf(how, sizeof how, "was modified at %s UTC, after its reference was recorded (%s UTC)", now, was);
      return stale(rs, t, key, how, e);
    }
  }
  __atomic_store_n(&rs->c_ok[c], 1, __ATOMIC_RELEASE);
  return 0;
}

static int cut_sink(void *ctx, size_t j, zbuf *body, int missing) {
  cutctx *c = ctx;
  refstore *rs = c->rs;
  if (c->failed) return 1;
  if (__atomic_load_n(c->any_failed, __ATOMIC_ACQUIRE)) { /* another sub-batch failed */
    if (c->e->kind == ZE_OK) zerr_set(c->e, ZE_STORE, "reading references stopped");
    c->failed = 1;
    c->by_other = 1;
    return 1;
  }
  if (j < c->nspan_sub) {
    const zref_span *sp = &c->spans[c->sub_idx[j]];
    const zref_piece *first = &c->pieces[sp->first];
    const char *file = rs->t_key[sp->target];
    if (missing) {
      missing_target(rs, sp->target, c->r[first->req].key, c->e);
      cut_fail(c);
      return 1;
    }
    if ((int64_t)body->size < sp->len) {
      zerr_set(c->e, ZE_STORE,
               "key '%.200s' refers to bytes %lld-%lld of '%.300s', which has only %lld bytes there",
               c->r[first->req].key, (long long)sp->start, (long long)(sp->start + sp->len - 1), file,
               (long long)(sp->start + (int64_t)body->size));
      cut_fail(c);
      return 1;
    }
    if (sp->count == 1 && first->start == sp->start && first->len == sp->len)
      return deliver(c, first->req, body); /* the sink may take the bytes over */
    for (size_t k = 0; k < sp->count; k++) {
      const zref_piece *p = &c->pieces[sp->first + k];
      zbuf part = {NULL, 0, 0};
      if (p->len > 0) {
        if (zbuf_reserve(&part, (size_t)p->len, c->e)) {
          cut_fail(c);
          return 1;
        }
        memcpy(part.data, body->data + (p->start - sp->start), (size_t)p->len);
        part.size = (size_t)p->len;
      }
      int stop = deliver(c, p->req, &part);
      zbuf_free(&part);
      if (stop) return 1;
    }
    return 0;
  }
  const passreq *q = &c->pass[c->sub_idx[j]];
  if (missing) {
    missing_target(rs, q->target, c->r[q->req].key, c->e);
    cut_fail(c);
    return 1;
  }
  return deliver(c, q->req, body);
}

/* One sub-store's share of the batch. */
static int run_sub(cutctx *c, zstore *sub, const zrange *rr, size_t m, const volatile int *stop) {
  if (m == 0) return 0;
  if (sub->ops->get_many != NULL) {
    if (sub->ops->get_many(sub, rr, m, cut_sink, c, stop, c->e)) {
      if (c->e->kind == ZE_OK) zerr_set(c->e, ZE_STORE, "reading references failed");
      return -1;
    }
    return c->failed ? -1 : 0;
  }
  zbuf buf = {NULL, 0, 0};
  for (size_t j = 0; j < m; j++) {
    if (stop != NULL && __atomic_load_n(stop, __ATOMIC_RELAXED)) {
      zbuf_free(&buf);
      if (c->e->kind == ZE_OK) zerr_set(c->e, ZE_INTERRUPT, "reading references interrupted");
      return -1;
    }
    int missing = 0;
    if (sub->ops->get(sub, &rr[j], &buf, &missing, c->e)) {
      zbuf_free(&buf);
      return -1;
    }
    if (cut_sink(c, j, &buf, missing)) {
      zbuf_free(&buf);
      return -1;
    }
  }
  zbuf_free(&buf);
  return 0;
}

/* A sub-batch on a thread of its own (when several sub-stores have work). */
typedef struct {
  cutctx c;
  zerr e;
  zstore *sub;
  const zrange *rr;
  size_t m;
  const volatile int *stop;
  int rc;
} subjob;

static void *subjob_main(void *p) {
  subjob *j = p;
  j->rc = run_sub(&j->c, j->sub, j->rr, j->m, j->stop);
  if (j->rc) __atomic_store_n(j->c.any_failed, 1, __ATOMIC_RELEASE);
  return NULL;
}

static int ref_get_many(zstore *s, const zrange *r, size_t n, zsink_fn sink, void *ctx,
                        const volatile int *stop, zerr *e) {
  refstore *rs = s->impl;
  cutctx c;
  memset(&c, 0, sizeof c);
  int any_failed = 0;
  subjob *jobs = NULL;
  pthread_t *tids = NULL;
  c.any_failed = &any_failed;
  c.rs = rs;
  c.sink = sink;
  c.ctx = ctx;
  c.r = r;
  c.e = e;
  int rc = -1;
  size_t np = 0, nq = 0, nspans = 0;
  zrange *rr = NULL;
  c.pieces = malloc((n ? n : 1) * sizeof *c.pieces);
  c.pass = malloc((n ? n : 1) * sizeof *c.pass);
  if (c.pieces == NULL || c.pass == NULL) {
    zerr_set(e, ZE_NOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    int64_t at = ref_find(rs, r[i].key);
    zbuf body = {NULL, 0, 0};
    if (at < 0) {
      for (size_t k = 0; k < rs->nbad; k++)
        if (strncmp(r[i].key, rs->bad_prefix[k], strlen(rs->bad_prefix[k])) == 0) {
          zerr_set(e, ZE_ICECHUNK, "%.300s (key '%.200s')", rs->bad_msg[k], r[i].key);
          goto out;
        }
      if (sink(ctx, i, &body, 1)) goto stopped;
      continue;
    }
    int kind = rs->kind[at];
    if (kind == REF_INLINE) {
      int64_t a = 0, k = 0;
      ref_translate(rs->off[at], rs->len[at], r[i].off, r[i].len, &a, &k);
      if (k > 0) {
        if (zbuf_reserve(&body, (size_t)k, e)) goto out;
        memcpy(body.data, rs->inl + a, (size_t)k);
        body.size = (size_t)k;
      }
      int stopit = sink(ctx, i, &body, 0);
      zbuf_free(&body);
      if (stopit) goto stopped;
      continue;
    }
    int32_t t = rs->target[at];
    if (rs->t_store[t] < 0) {
      zerr_set(e, ZE_STORE, "%.300s (key '%.200s')", rs->t_err[t], r[i].key);
      goto out;
    }
    if (rs->e_cond != NULL && rs->e_cond[at] >= 0 && check_cond(rs, rs->e_cond[at], r[i].key, e)) goto out;
    if (kind == REF_WHOLE) {
      c.pass[nq].req = i;
      c.pass[nq].target = t;
      c.pass[nq].off = r[i].off;
      c.pass[nq].len = r[i].len;
      nq++;
      continue;
    }
    int64_t a, k;
    if (ref_translate(rs->off[at], rs->len[at], r[i].off, r[i].len, &a, &k)) {
      zerr_set(e, ZE_STORE, "invalid reference for key '%.200s'", r[i].key);
      goto out;
    }
    if (k == 0) {
      if (sink(ctx, i, &body, 0)) goto stopped;
      continue;
    }
    c.pieces[np].req = i;
    c.pieces[np].target = t;
    c.pieces[np].start = a;
    c.pieces[np].len = k;
    np++;
  }
  /* merge ranges only for stores that fetch in batches (HTTP): a local file
   * is read with one positioned read per piece, cheaper than reading a
   * merged span and copying the pieces out of it */
  size_t nm = 0;
  for (size_t k = 0; k < np; k++) {
    int32_t st = rs->t_store[c.pieces[k].target];
    if (rs->stores[st]->ops->get_many != NULL) {
      zref_piece tmp = c.pieces[nm];
      c.pieces[nm++] = c.pieces[k];
      c.pieces[k] = tmp;
    }
  }
  zref_span *s1 = NULL, *s2 = NULL;
  size_t n1 = 0, n2 = 0;
  if (ref_plan(c.pieces, nm, rs->gap, rs->max, &s1, &n1, e)) goto out;
  if (ref_plan(c.pieces + nm, np - nm, 0, 1, &s2, &n2, e)) {
    free(s1);
    goto out;
  }
  nspans = n1 + n2;
  c.spans = malloc((nspans ? nspans : 1) * sizeof *c.spans);
  if (c.spans == NULL) {
    free(s1);
    free(s2);
    zerr_set(e, ZE_NOMEM, "out of memory");
    goto out;
  }
  if (n1) memcpy(c.spans, s1, n1 * sizeof *s1);
  for (size_t k = 0; k < n2; k++) {
    c.spans[n1 + k] = s2[k];
    c.spans[n1 + k].first += nm;
  }
  free(s1);
  free(s2);
  rr = malloc((nspans + nq + 1) * sizeof *rr);
  c.sub_idx = malloc((nspans + nq + 1) * sizeof *c.sub_idx);
  if (rr == NULL || c.sub_idx == NULL) {
    zerr_set(e, ZE_NOMEM, "out of memory");
    goto out;
  }
  /* one sub-batch per sub-store: its spans, then its whole-file requests,
   * each sub-batch on a thread of its own when several have work */
  jobs = calloc(rs->nstores ? rs->nstores : 1, sizeof *jobs);
  tids = calloc(rs->nstores ? rs->nstores : 1, sizeof *tids);
  if (jobs == NULL || tids == NULL) {
    zerr_set(e, ZE_NOMEM, "out of memory");
    goto out;
  }
  size_t m = 0, njobs = 0;
  for (size_t st = 0; st < rs->nstores; st++) {
    size_t first = m;
    for (size_t k = 0; k < nspans; k++) {
      int32_t t = c.spans[k].target;
      if ((size_t)rs->t_store[t] != st) continue;
      rr[m].key = rs->t_key[t];
      rr[m].off = c.spans[k].start;
      rr[m].len = c.spans[k].len;
      c.sub_idx[m++] = k;
    }
    size_t nsp = m - first;
    for (size_t q = 0; q < nq; q++) {
      int32_t t = c.pass[q].target;
      if ((size_t)rs->t_store[t] != st) continue;
      rr[m].key = rs->t_key[t];
      rr[m].off = c.pass[q].off;
      rr[m].len = c.pass[q].len;
      c.sub_idx[m++] = q;
    }
    if (m == first) continue;
    subjob *j = &jobs[njobs++];
    j->c = c;
    j->c.sub_idx = c.sub_idx + first;
    j->c.nspan_sub = nsp;
    j->e.kind = ZE_OK;
    j->e.msg[0] = '\0';
    j->c.e = &j->e;
    j->sub = rs->stores[st];
    j->rr = rr + first;
    j->m = m - first;
    j->stop = stop;
  }
  size_t started = 0;
  for (size_t k = 1; k < njobs; k++) {
    if (pthread_create(&tids[k], NULL, subjob_main, &jobs[k]) != 0) break;
    started = k;
  }
  for (size_t k = started + 1; k < njobs; k++) subjob_main(&jobs[k]); /* threads refused */
  if (njobs > 0) subjob_main(&jobs[0]);
  for (size_t k = 1; k <= started; k++) pthread_join(tids[k], NULL);
  for (size_t k = 0; k < njobs; k++) /* a failure of its own, before one caused by another */
    if (jobs[k].rc && !jobs[k].c.by_other) {
      *e = jobs[k].e;
      goto out;
    }
  for (size_t k = 0; k < njobs; k++)
    if (jobs[k].rc) {
      *e = jobs[k].e;
      goto out;
    }
  rc = 0;
  goto out;
stopped:
  zerr_set(e, ZE_STORE, "reading references stopped");
out:
  free(jobs);
  free(tids);
  free(rr);
  free(c.sub_idx);
  free(c.spans);
  free(c.pieces);
  free(c.pass);
  return rc;
}

static const zstore_ops ref_ops = {
    "reference", NULL, ref_get_many, NULL, NULL, ref_destroy, 0, NULL, 0, NULL, NULL, NULL,
};

/* ---- construction from R ------------------------------------------------------- */

static char *dup_utf8(SEXP s) {
  const char *p = translateCharUTF8(s);
  return strdup(p);
}

static void check_len(SEXP x, R_xlen_t n, const char *what) {
  if (XLENGTH(x) != n) zarr_raise(ZE_STORE, NULL, NULL, what);
}

/* keys: character; kind: integer (0 inline, 1 range, 2 whole file);
 * target: integer (0-based, NA for inline); off, len: double (range);
 * data: list of raw (inline) or NULL; t_store: integer (0-based index into
 * stores, or -1); t_key, t_err: character; stores: list of store handles;
 * opts: c(gap, max); t_check: NULL, or (Icechunk: see refstore)
 * list(own = logical per target, bad_prefix, bad_msg = character,
 * cond = integer per entry (0-based, -1: none), and per condition
 * c_target = integer (0-based), c_since = double (NA: none),
 * c_etag = character (NA: none)). */
SEXP ffi_store_ref(SEXP keys, SEXP kind, SEXP target, SEXP off, SEXP len, SEXP data, SEXP t_store,
                   SEXP t_key, SEXP t_err, SEXP stores, SEXP opts, SEXP t_check) {
  if (TYPEOF(keys) != STRSXP || TYPEOF(kind) != INTSXP || TYPEOF(target) != INTSXP ||
      TYPEOF(off) != REALSXP || TYPEOF(len) != REALSXP || TYPEOF(data) != VECSXP ||
      TYPEOF(t_store) != INTSXP || TYPEOF(t_key) != STRSXP || TYPEOF(t_err) != STRSXP ||
      TYPEOF(stores) != VECSXP || TYPEOF(opts) != REALSXP || XLENGTH(opts) != 2)
    zarr_raise(ZE_STORE, NULL, NULL, "internal: bad arguments to ffi_store_ref");
  R_xlen_t n = XLENGTH(keys), nt = XLENGTH(t_store), ns = XLENGTH(stores);
  check_len(kind, n, "internal: kind");
  check_len(target, n, "internal: target");
  check_len(off, n, "internal: off");
  check_len(len, n, "internal: len");
  check_len(data, n, "internal: data");
  check_len(t_key, nt, "internal: t_key");
  check_len(t_err, nt, "internal: t_err");
  SEXP own = R_NilValue, bad_prefix = R_NilValue, bad_msg = R_NilValue;
  SEXP cond = R_NilValue, c_target = R_NilValue, c_since = R_NilValue, c_etag = R_NilValue;
  R_xlen_t nc = 0;
  if (t_check != R_NilValue) {
    if (TYPEOF(t_check) != VECSXP || XLENGTH(t_check) != 7) zarr_raise(ZE_STORE, NULL, NULL, "internal: t_check");
    own = VECTOR_ELT(t_check, 0);
    bad_prefix = VECTOR_ELT(t_check, 1);
    bad_msg = VECTOR_ELT(t_check, 2);
    cond = VECTOR_ELT(t_check, 3);
    c_target = VECTOR_ELT(t_check, 4);
    c_since = VECTOR_ELT(t_check, 5);
    c_etag = VECTOR_ELT(t_check, 6);
    if (TYPEOF(own) != LGLSXP || TYPEOF(bad_prefix) != STRSXP || TYPEOF(bad_msg) != STRSXP ||
        XLENGTH(bad_msg) != XLENGTH(bad_prefix) || TYPEOF(cond) != INTSXP || TYPEOF(c_target) != INTSXP ||
        TYPEOF(c_since) != REALSXP || TYPEOF(c_etag) != STRSXP)
      zarr_raise(ZE_STORE, NULL, NULL, "internal: t_check");
    check_len(own, nt, "internal: own");
    check_len(cond, n, "internal: cond");
    nc = XLENGTH(c_target);
    check_len(c_since, nc, "internal: c_since");
    check_len(c_etag, nc, "internal: c_etag");
    for (R_xlen_t c = 0; c < nc; c++)
      if (INTEGER(c_target)[c] == NA_INTEGER || INTEGER(c_target)[c] < 0 || INTEGER(c_target)[c] >= nt)
        zarr_raise(ZE_STORE, NULL, NULL, "internal: condition target out of range");
    for (R_xlen_t i = 0; i < n; i++) {
      int c = INTEGER(cond)[i];
      if (c != -1 && (c < 0 || c >= nc || INTEGER(kind)[i] == REF_INLINE ||
                      INTEGER(c_target)[c] != INTEGER(target)[i]))
        zarr_raise(ZE_STORE, NULL, NULL, "internal: entry condition out of range");
    }
  }
  /* validate everything before allocating C memory */
  size_t inl_total = 0;
  for (R_xlen_t i = 0; i < n; i++) {
    int k = INTEGER(kind)[i];
    if (STRING_ELT(keys, i) == NA_STRING) zarr_raise(ZE_KEY, NULL, NULL, "a reference key is NA");
    if (k == REF_INLINE) {
      SEXP d = VECTOR_ELT(data, i);
      if (TYPEOF(d) != RAWSXP) zarr_raise(ZE_STORE, NULL, NULL, "internal: inline data is not raw");
      inl_total += (size_t)XLENGTH(d);
    } else if (k == REF_RANGE || k == REF_WHOLE) {
      int t = INTEGER(target)[i];
      if (t == NA_INTEGER || t < 0 || t >= nt)
        zarr_raise(ZE_STORE, NULL, NULL, "internal: reference target out of range");
      if (k == REF_RANGE) {
        double o = REAL(off)[i], l = REAL(len)[i];
        if (!(o >= 0 && l >= 0 && o + l <= 9007199254740992.0))
          zarr_raise(ZE_METADATA, NULL, translateCharUTF8(STRING_ELT(keys, i)),
                     "the reference has an invalid offset or length");
      }
    } else {
      zarr_raise(ZE_STORE, NULL, NULL, "internal: unknown reference kind");
    }
  }
  for (R_xlen_t t = 0; t < nt; t++) {
    int st = INTEGER(t_store)[t];
    if (st != -1 && (st < 0 || st >= ns)) zarr_raise(ZE_STORE, NULL, NULL, "internal: sub-store out of range");
  }
  for (R_xlen_t k = 0; k < ns; k++) store_from(VECTOR_ELT(stores, k));

  refstore *rs = calloc(1, sizeof *rs);
  if (rs == NULL) goto nomem;
  rs->gap = (int64_t)REAL(opts)[0];
  rs->max = (int64_t)REAL(opts)[1];
  size_t nn = (size_t)n;
  rs->keys = calloc(nn ? nn : 1, sizeof *rs->keys);
  rs->kind = malloc(nn ? nn : 1);
  rs->target = malloc((nn ? nn : 1) * sizeof *rs->target);
  rs->off = malloc((nn ? nn : 1) * sizeof *rs->off);
  rs->len = malloc((nn ? nn : 1) * sizeof *rs->len);
  rs->inl = malloc(inl_total ? inl_total : 1);
  if (!rs->keys || !rs->kind || !rs->target || !rs->off || !rs->len || !rs->inl) goto nomem;
  size_t cap = 16;
  while (cap < 2 * nn + 2) cap *= 2;
  rs->cap = cap;
  rs->slot = malloc(cap * sizeof *rs->slot);
  if (rs->slot == NULL) goto nomem;
  for (size_t j = 0; j < cap; j++) rs->slot[j] = -1;
  size_t used = 0;
  for (size_t i = 0; i < nn; i++) {
    rs->keys[i] = dup_utf8(STRING_ELT(keys, (R_xlen_t)i));
    rs->n = i + 1;
    if (rs->keys[i] == NULL) goto nomem;
    int k = INTEGER(kind)[i];
    rs->kind[i] = (uint8_t)k;
    rs->target[i] = k == REF_INLINE ? -1 : INTEGER(target)[i];
    if (k == REF_INLINE) {
      SEXP d = VECTOR_ELT(data, (R_xlen_t)i);
      size_t m = (size_t)XLENGTH(d);
      if (m) memcpy(rs->inl + used, RAW(d), m);
      rs->off[i] = (int64_t)used;
      rs->len[i] = (int64_t)m;
      used += m;
    } else if (k == REF_RANGE) {
      rs->off[i] = (int64_t)REAL(off)[i];
      rs->len[i] = (int64_t)REAL(len)[i];
    } else {
      rs->off[i] = 0;
      rs->len[i] = -1;
    }
    /* insert; a repeated key keeps its last entry */
    size_t mask = cap - 1;
    for (size_t j = (size_t)hash_key(rs->keys[i]) & mask;; j = (j + 1) & mask) {
      int64_t at = rs->slot[j];
      if (at < 0) {
        rs->slot[j] = (int64_t)i;
        break;
      }
      if (strcmp(rs->keys[at], rs->keys[i]) == 0) {
        rs->slot[j] = (int64_t)i;
        break;
      }
    }
  }
  rs->ntargets = (size_t)nt;
  rs->t_store = malloc((nt ? (size_t)nt : 1) * sizeof *rs->t_store);
  rs->t_key = calloc(nt ? (size_t)nt : 1, sizeof *rs->t_key);
  rs->t_err = calloc(nt ? (size_t)nt : 1, sizeof *rs->t_err);
  if (!rs->t_store || !rs->t_key || !rs->t_err) goto nomem;
  if (t_check != R_NilValue) {
    rs->t_own = calloc(nt ? (size_t)nt : 1, 1);
    rs->e_cond = malloc((nn ? nn : 1) * sizeof *rs->e_cond);
    rs->c_target = malloc((nc ? (size_t)nc : 1) * sizeof *rs->c_target);
    rs->c_since = malloc((nc ? (size_t)nc : 1) * sizeof *rs->c_since);
    rs->c_etag = calloc(nc ? (size_t)nc : 1, sizeof *rs->c_etag);
    rs->c_ok = calloc(nc ? (size_t)nc : 1, sizeof *rs->c_ok);
    if (!rs->t_own || !rs->e_cond || !rs->c_target || !rs->c_since || !rs->c_etag || !rs->c_ok) goto nomem;
    rs->nconds = (size_t)nc;
    for (R_xlen_t t = 0; t < nt; t++) rs->t_own[t] = LOGICAL(own)[t] == TRUE;
    for (size_t i = 0; i < nn; i++) rs->e_cond[i] = INTEGER(cond)[i];
    for (R_xlen_t c = 0; c < nc; c++) {
      double v = REAL(c_since)[c];
      rs->c_target[c] = INTEGER(c_target)[c];
      rs->c_since[c] = ISNAN(v) ? NAN : v;
      if (STRING_ELT(c_etag, c) != NA_STRING && (rs->c_etag[c] = dup_utf8(STRING_ELT(c_etag, c))) == NULL) goto nomem;
    }
    size_t nb = (size_t)XLENGTH(bad_prefix);
    rs->bad_prefix = calloc(nb ? nb : 1, sizeof *rs->bad_prefix);
    rs->bad_msg = calloc(nb ? nb : 1, sizeof *rs->bad_msg);
    if (!rs->bad_prefix || !rs->bad_msg) goto nomem;
    rs->nbad = nb;
    for (size_t k = 0; k < nb; k++) {
      rs->bad_prefix[k] = dup_utf8(STRING_ELT(bad_prefix, (R_xlen_t)k));
      rs->bad_msg[k] = dup_utf8(STRING_ELT(bad_msg, (R_xlen_t)k));
      if (!rs->bad_prefix[k] || !rs->bad_msg[k]) goto nomem;
    }
  }
  for (R_xlen_t t = 0; t < nt; t++) {
    rs->t_store[t] = INTEGER(t_store)[t];
    rs->t_key[t] = dup_utf8(STRING_ELT(t_key, t));
    rs->t_err[t] = dup_utf8(STRING_ELT(t_err, t));
    if (rs->t_key[t] == NULL || rs->t_err[t] == NULL) goto nomem;
  }
  rs->nstores = (size_t)ns;
  rs->stores = malloc((ns ? (size_t)ns : 1) * sizeof *rs->stores);
  if (rs->stores == NULL) goto nomem;
  for (R_xlen_t k = 0; k < ns; k++) rs->stores[k] = R_ExternalPtrAddr(VECTOR_ELT(stores, k));
  zstore *s = store_alloc(&ref_ops, rs, "reference store");
  if (s == NULL) goto nomem;
  return store_wrap(s, stores); /* the sub-stores live as long as this one */
nomem:
  refstore_free(rs);
  zarr_raise(ZE_NOMEM, NULL, NULL, "out of memory building a reference store");
}

/* Merging options, taken over at each use (between batches). */
SEXP ffi_store_ref_options(SEXP ptr, SEXP opts) {
  zstore *s = store_from(ptr);
  if (s->ops != &ref_ops) zarr_raise(ZE_STORE, NULL, NULL, "internal: not a reference store");
  refstore *rs = s->impl;
  rs->gap = (int64_t)REAL(opts)[0];
  rs->max = (int64_t)REAL(opts)[1];
  return R_NilValue;
}
