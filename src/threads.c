/* A minimal parallel-for over pthreads. The calling thread takes part as
 * thread 0; tasks are handed out through atomic counters so uneven chunk
 * costs balance themselves. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include "zarr_core.h" /* no R: the fuzz targets link it too */

/* Each thread starts on its own contiguous share of the tasks: tasks next to
 * each other usually write next to each other in the result (chunks along
 * R's first dimension share its columns, and so its pages), so two threads
 * taking turns through one sequence would fault in and write the same pages
 * at the same time. A thread that finishes its share takes tasks from the
 * shares of the others, so uneven costs still balance. */
#define MAX_SHARES 64

_Thread_local const volatile int *zarr_cancel_flag;

typedef struct {
  size_t next; /* claimed through an atomic add; >= end: this share is done */
  size_t end;
  char pad[64 - 2 * sizeof(size_t)]; /* one cache line per share */
} share;

typedef struct {
  size_t n;
  int nshares;
  share sh[MAX_SHARES];
  int stop;
  ztask_fn fn;
  void *ctx;
  zpoll_fn poll;
  int watch; /* 1: thread 0 only polls; workers 1..n run the tasks as threads 0..n-1 */
} pool_state;

typedef struct {
  pool_state *st;
  int id;
} worker_arg;

static void run_tasks(pool_state *st, int id) {
  int tid = id - st->watch;
  for (int k = 0; k < st->nshares; k++) {
    share *sh = &st->sh[(tid + k) % st->nshares];
    while (!__atomic_load_n(&st->stop, __ATOMIC_RELAXED)) {
      if (__atomic_load_n(&sh->next, __ATOMIC_RELAXED) >= sh->end) break;
      size_t i = __atomic_fetch_add(&sh->next, 1, __ATOMIC_RELAXED);
      if (i >= sh->end) break;
      st->fn(st->ctx, i, tid);
      if (id == 0 && st->poll != NULL && st->poll(st->ctx)) {
        __atomic_store_n(&st->stop, 1, __ATOMIC_RELAXED); /* hand out no more tasks */
        return;
      }
    }
  }
}

/* Workers live from their first use until the package is unloaded, so that
 * each keeps its malloc arena (blosc's and the engine's scratch buffers)
 * warm between reads instead of faulting it in again in a new thread on
 * every call. One job runs at a time; a call made while a job runs (from
 * another thread) starts threads of its own, as does a forked child. */
#define MAX_WORKERS (MAX_SHARES - 1)

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_go = PTHREAD_COND_INITIALIZER, pool_done = PTHREAD_COND_INITIALIZER;
static struct {
  pthread_t tids[MAX_WORKERS];
  unsigned long born[MAX_WORKERS]; /* the job number when each was started */
  int nworkers;        /* persistent workers started: ids 1..nworkers */
  unsigned long gen;   /* job number, bumped for each job */
  pool_state *job;
  int want;            /* workers taking part in the current job: ids 1..want */
  int remaining;       /* of those, the ones still working */
  int busy;
  int shutdown;
} P;

static void *persistent_main(void *p) {
  int id = (int)(intptr_t)p;
  unsigned long seen = 0;
  pthread_mutex_lock(&pool_mu);
  seen = P.born[id - 1]; /* the job it was started for is one after this */
  for (;;) {
    while (!P.shutdown && (P.gen == seen || id > P.want)) {
      if (P.gen != seen) seen = P.gen; /* a job without this worker */
      pthread_cond_wait(&pool_go, &pool_mu);
    }
    if (P.shutdown) break;
    seen = P.gen;
    pool_state *st = P.job;
    pthread_mutex_unlock(&pool_mu);
    run_tasks(st, id);
    pthread_mutex_lock(&pool_mu);
    if (--P.remaining == 0) pthread_cond_signal(&pool_done);
  }
  pthread_mutex_unlock(&pool_mu);
  return NULL;
}

/* In a forked child the workers do not exist: start afresh. (Windows has
 * no fork().) */
#ifdef _WIN32
static void pool_register_atfork(void) {}
#else
static void pool_after_fork_child(void) {
  pthread_mutex_init(&pool_mu, NULL);
  pthread_cond_init(&pool_go, NULL);
  pthread_cond_init(&pool_done, NULL);
  P.nworkers = 0;
  P.busy = 0;
  P.job = NULL;
  P.want = P.remaining = 0;
}

static void pool_register_atfork(void) { pthread_atfork(NULL, NULL, pool_after_fork_child); }
#endif

/* Watched jobs: this thread waits for the workers, polling every 20 ms;
 * once the poll says stop, no more tasks are handed out and the workers end
 * with the task each is running. */
static void watch_tasks(pool_state *st) {
  if (st->poll(st->ctx)) __atomic_store_n(&st->stop, 1, __ATOMIC_RELAXED); /* as thread 0 would after a task */
  pthread_mutex_lock(&pool_mu);
  while (P.remaining > 0) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 20000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&pool_done, &pool_mu, &ts);
    if (P.remaining == 0 || __atomic_load_n(&st->stop, __ATOMIC_RELAXED)) continue;
    pthread_mutex_unlock(&pool_mu); /* the poll may call R (a progress bar) */
    if (st->poll(st->ctx)) __atomic_store_n(&st->stop, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&pool_mu);
  }
  pthread_mutex_unlock(&pool_mu);
}

/* Runs `st` on this thread and up to nthreads - 1 persistent workers (a
 * watched job: on nthreads workers, this thread polling); returns 0 when
 * the pool is taken (the caller then starts threads). */
static int pool_run(pool_state *st, int nthreads) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, pool_register_atfork);
  pthread_mutex_lock(&pool_mu);
  if (P.busy || P.shutdown) {
    pthread_mutex_unlock(&pool_mu);
    return 0;
  }
  P.busy = 1;
  int nw = nthreads - 1 + st->watch;
  while (P.nworkers < nw && P.nworkers < MAX_WORKERS) {
    P.born[P.nworkers] = P.gen;
    if (pthread_create(&P.tids[P.nworkers], NULL, persistent_main, (void *)(intptr_t)(P.nworkers + 1)) != 0) break;
    P.nworkers++;
  }
  P.want = nw < P.nworkers ? nw : P.nworkers;
  if (P.want == 0) st->watch = 0; /* no worker started: this thread runs the tasks */
  P.remaining = P.want;
  P.job = st;
  P.gen++;
  pthread_cond_broadcast(&pool_go);
  pthread_mutex_unlock(&pool_mu);
  if (st->watch) watch_tasks(st);
  else run_tasks(st, 0); /* thread 0 also takes the shares of workers that could not start */
  pthread_mutex_lock(&pool_mu);
  while (P.remaining > 0) pthread_cond_wait(&pool_done, &pool_mu);
  P.job = NULL;
  P.busy = 0;
  pthread_mutex_unlock(&pool_mu);
  return 1;
}

/* Called when the package is unloaded: the workers' code is about to go. */
void threads_shutdown(void) {
  pthread_mutex_lock(&pool_mu);
  P.shutdown = 1;
  pthread_cond_broadcast(&pool_go);
  int n = P.nworkers;
  P.nworkers = 0;
  pthread_mutex_unlock(&pool_mu);
  for (int t = 0; t < n; t++) pthread_join(P.tids[t], NULL);
}

static void *worker_main(void *p) {
  worker_arg *a = p;
  run_tasks(a->st, a->id);
  return NULL;
}

static void run_for(size_t n, int nthreads, ztask_fn fn, void *ctx, zpoll_fn poll, int watch) {
  if (nthreads > (int)n) nthreads = (int)n;
  if (nthreads > MAX_SHARES) nthreads = MAX_SHARES;
  if (nthreads < 1) nthreads = 1;
  pool_state *stp = calloc(1, sizeof *stp);
  if (stp == NULL) { /* run everything on this thread */
    for (size_t i = 0; i < n; i++) {
      fn(ctx, i, 0);
      if (poll != NULL && poll(ctx)) return;
    }
    return;
  }
  stp->n = n;
  stp->fn = fn;
  stp->ctx = ctx;
  stp->poll = poll;
  stp->watch = watch && poll != NULL;
  stp->nshares = nthreads;
  for (int t = 0; t < nthreads; t++) {
    stp->sh[t].next = n * (size_t)t / (size_t)nthreads;
    stp->sh[t].end = n * (size_t)(t + 1) / (size_t)nthreads;
  }
  pool_state *st = stp;
  if (nthreads == 1 && !st->watch) {
    run_tasks(st, 0);
    free(stp);
    return;
  }
  if (pool_run(st, nthreads)) {
    free(stp);
    return;
  }
  /* the pool is busy: threads of this call's own, thread 0 among them */
  st->watch = 0;
  pthread_t *tids = malloc(sizeof(pthread_t) * (size_t)nthreads);
  worker_arg *args = malloc(sizeof(worker_arg) * (size_t)nthreads);
  int started = 0;
  if (tids != NULL && args != NULL) {
    for (int t = 1; t < nthreads; t++) {
      args[t].st = st;
      args[t].id = t;
      if (pthread_create(&tids[t], NULL, worker_main, &args[t]) != 0) break;
      started++;
    }
  }
  run_tasks(st, 0); /* if thread creation failed, thread 0 takes every share */
  for (int t = 1; t <= started; t++) pthread_join(tids[t], NULL);
  free(tids);
  free(args);
  free(stp);
}

void parallel_for(size_t n, int nthreads, ztask_fn fn, void *ctx, zpoll_fn poll) {
  run_for(n, nthreads, fn, ctx, poll, 0);
}

void parallel_for_watched(size_t n, int nthreads, ztask_fn fn, void *ctx, zpoll_fn poll) {
  run_for(n, nthreads, fn, ctx, poll, 1);
}
