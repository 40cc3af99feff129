/* Memory for read results that stays warm between reads.
 *
 * A loop of reads (one call per chunk: a DelayedArray block loop, a tile
 * server) makes one result after another, each dropped before the next.
 * R frees them only when it collects, many at once; the allocator then
 * hands the freed top of its heap back to the system (or, for the largest,
 * unmaps them), and the next result is fresh memory again: one page fault
 * and a page cleared by the kernel per 4 KiB, a third of the time of
 * reading a 64^3 uint16 chunk. So results between RESULT_POOL_MIN and
 * RESULT_POOL_MAX bytes are R vectors allocated through R's custom
 * allocator interface (allocVector3(): R collects them as any other
 * vector, see result_alloc() for when) from a few blocks kept here: a
 * block R frees is kept for the next result of about its size, up to
 * RESULT_POOL_KEEP bytes (less when zarr.scratch_bytes, what reads keep
 * between them, is less; 0 frees every block as R frees it). A few blocks are enough: what costs is the
 * allocator giving its freed top back, and a loop of 64^3 chunk reads
 * gains as much with 8 MiB kept as with 256. Smaller results gain
 * nothing: the allocator keeps reusing its memory for them.
 *
 * Everything here runs on R's thread: R calls result_block_free() while it
 * collects, where nothing may touch the R API. Each such vector points at
 * result_block_free(), in this library, as an ALTREP result points at its
 * class's methods here: this library must stay loaded while they live.
 */
#include <stdlib.h>
#include <string.h>
#include "zarr.h"
#include <R_ext/Rallocators.h>

/* Under AddressSanitizer a block is exactly what R asked for and is only
 * reused for that size, so that writing past a result is still caught. */
#if defined(__SANITIZE_ADDRESS__)
#define POOL_EXACT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POOL_EXACT 1
#endif
#endif
#ifndef POOL_EXACT
#define POOL_EXACT 0
#endif

#define POOL_SLOTS 16
#define POOL_HEAD 32 /* the block's capacity, before what R gets (keeps 16-byte alignment) */

typedef struct {
  void *base;
  size_t cap; /* bytes usable after the head */
} pool_block;

static pool_block pool[POOL_SLOTS];
static int pool_n;
static size_t pool_bytes;
static size_t pool_limit = RESULT_POOL_KEEP;
static double pool_live; /* bytes of blocks R holds (for tests) */

static void *block_data(void *base) { return (uint8_t *)base + POOL_HEAD; }
static void *block_base(void *data) { return (uint8_t *)data - POOL_HEAD; }
static size_t block_cap(void *base) {
  size_t cap;
  memcpy(&cap, base, sizeof cap);
  return cap;
}

static void pool_drop_oldest(void) {
  free(pool[0].base);
  pool_bytes -= pool[0].cap;
  memmove(pool, pool + 1, (size_t)(pool_n - 1) * sizeof pool[0]);
  pool_n--;
}

/* The kept block that fits `size` best without wasting more than a quarter
 * of itself, or -1. */
static int pool_find(size_t size) {
  int best = -1;
  for (int i = 0; i < pool_n; i++)
    if (POOL_EXACT ? pool[i].cap == size
                   : pool[i].cap >= size && pool[i].cap - size <= pool[i].cap / 4 &&
                     (best < 0 || pool[i].cap < pool[best].cap))
      best = i;
  return best;
}

static void *result_block_alloc(R_allocator_t *allocator, size_t size) {
  (void)allocator;
  int i = pool_find(size);
  if (i >= 0) {
    void *base = pool[i].base;
    pool_bytes -= pool[i].cap;
    pool[i] = pool[--pool_n];
    pool_live += (double)block_cap(base);
    return block_data(base);
  }
  size_t cap = POOL_EXACT ? size : (size + 4095) & ~(size_t)4095;
  void *base = malloc(cap + POOL_HEAD);
  if (base == NULL) return NULL;
  memcpy(base, &cap, sizeof cap);
  pool_live += (double)cap;
  return block_data(base);
}

static void result_block_free(R_allocator_t *allocator, void *data) {
  (void)allocator;
  void *base = block_base(data);
  size_t cap = block_cap(base);
  pool_live -= (double)cap;
  if (cap > pool_limit) {
    free(base);
    return;
  }
  /* the oldest blocks go first: the newest are the likeliest to fit */
  while (pool_n > 0 && (pool_n == POOL_SLOTS || pool_bytes + cap > pool_limit)) pool_drop_oldest();
  pool[pool_n].base = base;
  pool[pool_n].cap = cap;
  pool_n++;
  pool_bytes += cap;
}

static R_allocator_t pool_allocator = {result_block_alloc, result_block_free, NULL, NULL};

SEXP result_alloc(SEXPTYPE type, R_xlen_t n, size_t nbytes) {
  if (nbytes < RESULT_POOL_MIN || nbytes > RESULT_POOL_MAX || pool_limit == 0) return allocVector(type, n);
  /* R leaves memory from a custom allocator out of what makes it collect:
   * a raw vector of the same size, dropped at once and never written
   * (its pages are never faulted in), is counted in its place until the
   * next collection, so that R collects as often as it would have */
  (void)allocVector(RAWSXP, (R_xlen_t)nbytes);
  return allocVector3(type, n, &pool_allocator);
}

void result_pool_release(void) { result_pool_limit(0); }

void result_pool_limit(double bytes) {
  if (ISNAN(bytes) || bytes < 0) bytes = 0;
  pool_limit = bytes < (double)RESULT_POOL_KEEP ? (size_t)bytes : RESULT_POOL_KEEP;
  while (pool_n > 0 && pool_bytes > pool_limit) pool_drop_oldest();
}

/* For tests: the blocks kept, their bytes and the bytes of blocks R holds,
 * after setting the bound (NULL: unchanged; the next read sets it from its
 * options). */
SEXP ffi_result_pool(SEXP limit) {
  if (limit != R_NilValue) result_pool_limit(asReal(limit));
  SEXP out = allocVector(REALSXP, 3);
  REAL(out)[0] = pool_n;
  REAL(out)[1] = (double)pool_bytes;
  REAL(out)[2] = pool_live;
  return out;
}
