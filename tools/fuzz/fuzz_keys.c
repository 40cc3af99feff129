/* libFuzzer target: store key checks and chunk key building. A key that
 * key_is_safe() accepts must stay below the store root; chunk_key() must
 * never write past its buffer. */
#include <stdlib.h>
#include <string.h>
#include "zarr_core.h"

static int bad_segment(const char *s, size_t len) {
  return len == 0 || (len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *key = malloc(size + 1);
  memcpy(key, data, size);
  key[size] = '\0';
  if (key_is_safe(key)) {
    if (key[0] == '/' || key[0] == '\0') abort();
    const char *seg = key;
    for (const char *p = key;; p++) {
      if (*p == '\\' || ((unsigned char)*p < 0x20 && *p != '\0')) abort();
      if (*p == '/' || *p == '\0') {
        if (bad_segment(seg, (size_t)(p - seg))) abort();
        if (*p == '\0') break;
        seg = p + 1;
      }
    }
  }
  /* chunk keys: prefix from the input, coordinates from its bytes */
  if (size >= 2) {
    zarray a;
    memset(&a, 0, sizeof a);
    a.ndim = data[0] % (ZARR_MAX_DIMS + 1);
    a.key_v2 = data[1] & 1;
    a.key_sep = (data[1] & 2) ? '/' : '.';
    size_t plen = (size - 2) / 2;
    char *prefix = malloc(plen + 1);
    memcpy(prefix, data + 2, plen);
    prefix[plen] = '\0';
    a.key_prefix = prefix;
    int64_t coords[ZARR_MAX_DIMS];
    for (int d = 0; d < ZARR_MAX_DIMS; d++) {
      uint64_t v = 0;
      for (int k = 0; k < 8; k++) {
        size_t at = 2 + plen + (size_t)d * 8 + (size_t)k;
        v = (v << 8) | (at < size ? data[at] : 0);
      }
      coords[d] = (int64_t)(v >> 1);
    }
    size_t cap = 1 + data[1] % 200;
    char *buf = malloc(cap);
    if (chunk_key(&a, coords, buf, cap) == 0 && strlen(buf) >= cap) abort();
    free(buf);
    free(prefix);
  }
  free(key);
  return 0;
}
