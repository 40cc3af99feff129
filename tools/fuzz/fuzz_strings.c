/* libFuzzer target: decoding string chunks (vlen-utf8, vlen-bytes,
 * fixed-length UTF-32, null-terminated bytes, struct records) into handles. Input: a byte
 * choosing the string kind and R type, a byte of element size, a byte of
 * element count, then the decoded chunk bytes. Whatever decodes must be text
 * an R string can hold (for R strings), inside the pool it points into. */
#include <stdlib.h>
#include <string.h>
#include "zarr_core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3) return 0;
  zarray a;
  memset(&a, 0, sizeof a);
  a.name = "/fuzz";
  a.dtype = DT_STRING;
  a.elsize = sizeof(zstr);
  static const zstrkind kinds[] = {SK_VLEN_UTF8, SK_VLEN_BYTES, SK_UTF32, SK_FIXED_BYTES};
  a.strkind = kinds[data[0] & 3];
  a.rtype = (data[0] & 4) ? RT_RAWLIST : RT_CHARACTER;
  int big = (data[0] & 8) != 0;
  a.stored_size = a.strkind == SK_UTF32 ? (size_t)(data[1] % 16) * 4 : (size_t)(data[1] % 64);
  if (data[0] & 16) { /* records of a struct: raw vectors of exactly stored_size bytes */
    a.strkind = SK_RECORD;
    a.rtype = RT_RAWLIST;
    a.stored_size = (size_t)(data[1] % 64) + 1;
  }
  int64_t nelem = data[2];
  size_t n = size - 3;
  uint8_t *src = malloc(n ? n : 1);
  memcpy(src, data + 3, n);
  zstr *h = calloc((size_t)nelem + 1, sizeof(zstr));
  zpool *pools = NULL;
  zerr e = {ZE_OK, ""};
  int rc = strings_decode(&a, src, n, nelem, big, (uint8_t *)h, &pools, &e);
  if (rc == 0) {
    for (int64_t i = 0; i < nelem; i++) {
      if (h[i].ptr == NULL) continue;
      if (h[i].len < 0) abort();
      /* every byte of every element is readable */
      volatile uint8_t sink = 0;
      for (int64_t k = 0; k < h[i].len; k++) sink ^= (uint8_t)h[i].ptr[k];
      (void)sink;
      if (a.rtype == RT_CHARACTER && utf8_check((const uint8_t *)h[i].ptr, (size_t)h[i].len) != 0)
        abort(); /* would become an invalid or truncated R string */
    }
    /* and it encodes back without complaint when it is text */
    if (a.rtype == RT_CHARACTER && a.strkind != SK_VLEN_BYTES) {
      zbuf out = {0};
      zerr e2 = {ZE_OK, ""};
      if (strings_encode(&a, (const uint8_t *)h, nelem, big, &out, &e2) != 0 &&
          !(a.strkind == SK_UTF32 || a.strkind == SK_FIXED_BYTES))
        abort();
      zbuf_free(&out);
    }
    if (a.strkind == SK_RECORD) { /* records encode back to the same bytes */
      zbuf out = {0};
      zerr e2 = {ZE_OK, ""};
      if (strings_encode(&a, (const uint8_t *)h, nelem, big, &out, &e2) != 0 || out.size != n ||
          (n && memcmp(out.data, src, n) != 0))
        abort();
      zbuf_free(&out);
    }
  } else if (e.kind == ZE_OK) {
    abort();
  }
  pool_free(pools);
  free(h);
  free(src);
  return 0;
}
