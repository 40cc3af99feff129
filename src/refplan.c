/* Reference stores (store_ref.c): the R-free part, fuzzed on its own.
 *
 * ref_translate() turns a request for a key (a whole value, a range or a
 * suffix) into bytes of the referenced file, clipped to the reference.
 * ref_plan() sorts the pieces wanted from the files and merges those of one
 * file that are adjacent, overlapping or closer than `gap` into spans of at
 * most `max` bytes (a single piece larger than `max` is a span of its own).
 */
#include <stdlib.h>
#include <string.h>
#include "refplan.h"

int ref_translate(int64_t ref_off, int64_t ref_len, int64_t off, int64_t len, int64_t *start,
                  int64_t *n) {
  if (ref_off < 0 || ref_len < 0) return -1;
  int64_t a, k;
  if (off < 0) { /* the last -off bytes */
    int64_t want = off == INT64_MIN ? INT64_MAX : -off;
    a = ref_len > want ? ref_len - want : 0;
    k = ref_len - a;
  } else {
    a = off < ref_len ? off : ref_len;
    k = (len < 0 || len > ref_len - a) ? ref_len - a : len;
  }
  if (ref_off > INT64_MAX - a) return -1;
  *start = ref_off + a;
  if (k > INT64_MAX - *start) k = INT64_MAX - *start;
  *n = k;
  return 0;
}

static int piece_cmp(const void *x, const void *y) {
  const zref_piece *a = x, *b = y;
  if (a->target != b->target) return a->target < b->target ? -1 : 1;
  if (a->start != b->start) return a->start < b->start ? -1 : 1;
  if (a->len != b->len) return a->len < b->len ? -1 : 1;
  return a->req < b->req ? -1 : (a->req > b->req);
}

int ref_plan(zref_piece *p, size_t n, int64_t gap, int64_t max, zref_span **spans, size_t *nspans,
             zerr *e) {
  *spans = NULL;
  *nspans = 0;
  if (n == 0) return 0;
  if (gap < 0) gap = 0;
  if (max < 1) max = 1;
  for (size_t i = 0; i < n; i++)
    if (p[i].start < 0 || p[i].len < 0 || p[i].len > INT64_MAX - p[i].start)
      return zerr_set(e, ZE_STORE, "internal: invalid byte range in a reference");
  qsort(p, n, sizeof *p, piece_cmp);
  zref_span *s = malloc(n * sizeof *s);
  if (s == NULL) return zerr_set(e, ZE_NOMEM, "out of memory planning reference reads");
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t a = p[i].start, b = p[i].start + p[i].len;
    if (k > 0) {
      zref_span *c = &s[k - 1];
      int64_t end = c->start + c->len;
      int64_t new_end = b > end ? b : end;
      if (c->target == p[i].target && (a <= end || a - end <= gap) && new_end - c->start <= max) {
        c->len = new_end - c->start;
        c->count++;
        continue;
      }
    }
    s[k].target = p[i].target;
    s[k].start = a;
    s[k].len = b - a;
    s[k].first = i;
    s[k].count = 1;
    k++;
  }
  *spans = s;
  *nspans = k;
  return 0;
}
