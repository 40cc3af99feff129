/* A minimal parallel-for over pthreads. The calling thread takes part as
 * thread 0; tasks are handed out through atomic counters so uneven chunk
 * costs balance themselves. */
#include <pthread.h>
#include <stdlib.h>
#include "zarr.h"

/* Each thread starts on its own contiguous share of the tasks: tasks next to
 * each other usually write next to each other in the result (chunks along
 * R's first dimension share its columns, and so its pages), so two threads
 * taking turns through one sequence would fault in and write the same pages
 * at the same time. A thread that finishes its share takes tasks from the
 * shares of the others, so uneven costs still balance. */
#define MAX_SHARES 64

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
} pool_state;

typedef struct {
  pool_state *st;
  int id;
} worker_arg;

static void run_tasks(pool_state *st, int id) {
  for (int k = 0; k < st->nshares; k++) {
    share *sh = &st->sh[(id + k) % st->nshares];
    while (!__atomic_load_n(&st->stop, __ATOMIC_RELAXED)) {
      if (__atomic_load_n(&sh->next, __ATOMIC_RELAXED) >= sh->end) break;
      size_t i = __atomic_fetch_add(&sh->next, 1, __ATOMIC_RELAXED);
      if (i >= sh->end) break;
      st->fn(st->ctx, i, id);
      if (id == 0 && st->poll != NULL && st->poll(st->ctx)) {
        __atomic_store_n(&st->stop, 1, __ATOMIC_RELAXED); /* hand out no more tasks */
        return;
      }
    }
  }
}

static void *worker_main(void *p) {
  worker_arg *a = p;
  run_tasks(a->st, a->id);
  return NULL;
}

void parallel_for(size_t n, int nthreads, ztask_fn fn, void *ctx, zpoll_fn poll) {
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
  stp->nshares = nthreads;
  for (int t = 0; t < nthreads; t++) {
    stp->sh[t].next = n * (size_t)t / (size_t)nthreads;
    stp->sh[t].end = n * (size_t)(t + 1) / (size_t)nthreads;
  }
  pool_state *st = stp;
  pthread_t *tids = NULL;
  worker_arg *args = NULL;
  int started = 0;
  if (nthreads > 1) {
    tids = malloc(sizeof(pthread_t) * (size_t)nthreads);
    args = malloc(sizeof(worker_arg) * (size_t)nthreads);
    if (tids != NULL && args != NULL) {
      for (int t = 1; t < nthreads; t++) {
        args[t].st = st;
        args[t].id = t;
        if (pthread_create(&tids[t], NULL, worker_main, &args[t]) != 0) break;
        started++;
      }
    }
  }
  run_tasks(st, 0); /* if thread creation failed, thread 0 takes every share */
  for (int t = 1; t <= started; t++) pthread_join(tids[t], NULL);
  free(tids);
  free(args);
  free(stp);
}
