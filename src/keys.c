/* Chunk key encoding (v3 "default" and "v2"), key safety checks, and where
 * the chunks of a rectilinear grid lie. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "zarr_core.h"

/* Appends n bytes of s to buf (cap bytes, used so far: *used), keeping it
 * NUL-terminated; -1 when they do not fit. (Chunk keys are made for every
 * chunk of every read: without snprintf(), whose format parsing was a
 * tenth of a small read's C time.) */
static int key_put(char *buf, size_t cap, size_t *used, const char *s, size_t n) {
  if (*used >= cap || n >= cap - *used) return -1;
  memcpy(buf + *used, s, n);
  *used += n;
  buf[*used] = '\0';
  return 0;
}

static int key_put_int(char *buf, size_t cap, size_t *used, int64_t v) {
  char tmp[24];
  size_t k = sizeof tmp;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do {
    tmp[--k] = (char)('0' + u % 10);
    u /= 10;
  } while (u != 0);
  if (v < 0) tmp[--k] = '-';
  return key_put(buf, cap, used, tmp + k, sizeof tmp - k);
}

int chunk_key(const zarray *a, const int64_t *coords, char *buf, size_t cap) {
  size_t used = 0;
  if (cap == 0) return -1;
  buf[0] = '\0';
  if (key_put(buf, cap, &used, a->key_prefix, strlen(a->key_prefix))) return -1;
  const char sep = a->key_sep;
  if (a->key_v2) {
    if (a->ndim == 0) return key_put(buf, cap, &used, "0", 1);
    for (int d = 0; d < a->ndim; d++)
      if ((d > 0 && key_put(buf, cap, &used, &sep, 1)) || key_put_int(buf, cap, &used, coords[d])) return -1;
    return 0;
  }
  if (key_put(buf, cap, &used, "c", 1)) return -1;
  for (int d = 0; d < a->ndim; d++)
    if (key_put(buf, cap, &used, &sep, 1) || key_put_int(buf, cap, &used, coords[d])) return -1;
  return 0;
}

/* A key must stay inside the store: relative, no empty, "." or ".." segments,
 * no backslashes or control characters. */
int key_is_safe(const char *key) {
  if (key == NULL || *key == '\0' || *key == '/') return 0;
  const char *seg = key;
  for (const char *p = key;; p++) {
    if (*p == '/' || *p == '\0') {
      size_t len = (size_t)(p - seg);
      if (len == 0) return 0;
      if (len == 1 && seg[0] == '.') return 0;
      if (len == 2 && seg[0] == '.' && seg[1] == '.') return 0;
      if (*p == '\0') break;
      seg = p + 1;
    } else if (*p == '\\' || (unsigned char)*p < 0x20) {
      return 0;
    }
  }
  return 1;
}

/* ---- rectilinear chunk grids ---- */

int64_t grid_find(const int64_t *edges, int64_t n, int64_t i) {
  int64_t lo = 0, hi = n - 1; /* the last k with edges[k] <= i */
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (edges[mid] <= i) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

int grid_edges_build(const double *len, int64_t n, int64_t extent, int64_t max_len,
                     int64_t *edges, int64_t *used, zerr *e) {
  edges[0] = 0;
  *used = 0;
  int64_t k = 0;
  while (edges[k] < extent) {
    if (k >= n)
      return zerr_set(e, ZE_METADATA, "the chunk edges cover %.0f of %.0f elements", (double)edges[k],
                      (double)extent);
    double x = len[k];
    /* 2^53: exact as a double, and no sum of them overflows before the extent */
    if (!(x >= 1 && x <= 9007199254740992.0) || x != (double)(int64_t)x)
      return zerr_set(e, ZE_METADATA, "chunk edge length %g is not a whole number >= 1", x);
    if (max_len > 0 && (int64_t)x > max_len)
      return zerr_set(e, ZE_METADATA, "chunk edge length %.0f exceeds the largest chunk (%.0f)", x,
                      (double)max_len);
    edges[k + 1] = edges[k] + (int64_t)x;
    k++;
  }
  *used = k;
  return 0;
}
