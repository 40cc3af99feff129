/* Chunk key encoding (v3 "default" and "v2") and key safety checks. */
#include <stdio.h>
#include <string.h>
#include "zarr_core.h"

int chunk_key(const zarray *a, const int64_t *coords, char *buf, size_t cap) {
  size_t used = (size_t)snprintf(buf, cap, "%s", a->key_prefix);
  if (used >= cap) return -1;
  if (a->key_v2) {
    if (a->ndim == 0) used += (size_t)snprintf(buf + used, cap - used, "0");
    for (int d = 0; d < a->ndim && used < cap; d++) {
      if (d > 0) used += (size_t)snprintf(buf + used, cap - used, "%c", a->key_sep);
      if (used < cap)
        used += (size_t)snprintf(buf + used, cap - used, "%lld", (long long)coords[d]);
    }
  } else {
    used += (size_t)snprintf(buf + used, cap - used, "c");
    for (int d = 0; d < a->ndim && used < cap; d++)
      used += (size_t)snprintf(buf + used, cap - used, "%c%lld", a->key_sep,
                               (long long)coords[d]);
  }
  return used < cap ? 0 : -1;
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
