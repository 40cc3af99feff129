/* A minimal parallel-for over pthreads. The calling thread takes part as
 * thread 0; tasks are handed out through an atomic counter so uneven chunk
 * costs balance themselves. */
#include <pthread.h>
#include <stdlib.h>
#include "zarr.h"

typedef struct {
  size_t n;
  size_t next;
  ztask_fn fn;
  void *ctx;
  zpoll_fn poll;
} pool_state;

typedef struct {
  pool_state *st;
  int id;
} worker_arg;

static void run_tasks(pool_state *st, int id) {
  while (1) {
    size_t i = __atomic_fetch_add(&st->next, 1, __ATOMIC_RELAXED);
    if (i >= st->n) return;
    st->fn(st->ctx, i, id);
    if (id == 0 && st->poll != NULL && st->poll(st->ctx)) {
      __atomic_store_n(&st->next, st->n, __ATOMIC_RELAXED); /* hand out no more tasks */
      return;
    }
  }
}


static void *worker_main(void *p) {
  worker_arg *a = p;
  run_tasks(a->st, a->id);
  return NULL;
}

void parallel_for(size_t n, int nthreads, ztask_fn fn, void *ctx, zpoll_fn poll) {
  pool_state st = {n, 0, fn, ctx, poll};
  if (nthreads > (int)n) nthreads = (int)n;
  if (nthreads < 1) nthreads = 1;
  pthread_t *tids = NULL;
  worker_arg *args = NULL;
  int started = 0;
  if (nthreads > 1) {
    tids = malloc(sizeof(pthread_t) * (size_t)nthreads);
    args = malloc(sizeof(worker_arg) * (size_t)nthreads);
    if (tids != NULL && args != NULL) {
      for (int t = 1; t < nthreads; t++) {
        args[t].st = &st;
        args[t].id = t;
        if (pthread_create(&tids[t], NULL, worker_main, &args[t]) != 0) break;
        started++;
      }
    }
  }
  run_tasks(&st, 0); /* if thread creation failed, we simply do all the work */
  for (int t = 1; t <= started; t++) pthread_join(tids[t], NULL);
  free(tids);
  free(args);
}
