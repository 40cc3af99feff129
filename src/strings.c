/* String elements. Workers cannot create R strings, so every string flavour
 * (vlen-utf8, vlen-bytes, fixed-length UTF-32, fixed-length bytes) is decoded
 * into handles {pointer, length} that point into UTF-8 (or raw) pools owned by
 * the job; the slab copy moves handles, and the main thread makes the R
 * character vector (or list of raw vectors) at the end. */
#include <stdlib.h>
#include <string.h>
#include "zarr_core.h"

zpool *pool_new(size_t n, zpool *next) {
  zpool *p = malloc(sizeof(zpool) + (n ? n : 1));
  if (p != NULL) {
    p->next = next;
    p->size = n;
  }
  return p;
}

void pool_free(zpool *p) {
  while (p != NULL) {
    zpool *n = p->next;
    free(p);
    p = n;
  }
}

static uint32_t rd32(const uint8_t *p, int big) {
  return big ? ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]
             : (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static void wr32(uint8_t *p, uint32_t v, int big) {
  for (int i = 0; i < 4; i++) p[big ? 3 - i : i] = (uint8_t)(v >> (8 * i));
}

static size_t utf8_put(uint8_t *o, uint32_t c) {
  if (c < 0x80) { o[0] = (uint8_t)c; return 1; }
  if (c < 0x800) { o[0] = (uint8_t)(0xC0 | (c >> 6)); o[1] = (uint8_t)(0x80 | (c & 0x3F)); return 2; }
  if (c < 0x10000) {
    o[0] = (uint8_t)(0xE0 | (c >> 12)); o[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
    o[2] = (uint8_t)(0x80 | (c & 0x3F)); return 3;
  }
  o[0] = (uint8_t)(0xF0 | (c >> 18)); o[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
  o[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3F)); o[3] = (uint8_t)(0x80 | (c & 0x3F));
  return 4;
}

/* Length of the valid UTF-8 sequence at p (1 to 4 bytes), or 0 when the bytes
 * there are not valid UTF-8: a stray continuation byte, a truncated sequence,
 * an overlong form, a surrogate (U+D800 to U+DFFF) or a code point beyond
 * U+10FFFF. */
static size_t utf8_seq(const uint8_t *p, const uint8_t *end) {
  uint8_t c = p[0];
  if (c < 0x80) return 1;
  size_t k;
  uint32_t v, min;
  if (c >= 0xC2 && c <= 0xDF) { k = 2; v = c & 0x1F; min = 0x80; }
  else if (c >= 0xE0 && c <= 0xEF) { k = 3; v = c & 0x0F; min = 0x800; }
  else if (c >= 0xF0 && c <= 0xF4) { k = 4; v = c & 0x07; min = 0x10000; }
  else return 0;
  if ((size_t)(end - p) < k) return 0;
  for (size_t i = 1; i < k; i++) {
    if ((p[i] & 0xC0) != 0x80) return 0;
    v = (v << 6) | (p[i] & 0x3F);
  }
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  return k;
}

/* Can `n` bytes at p become an R string? Returns 0, or 1 for a NUL byte (R
 * strings end at NUL), 2 for bytes that are not valid UTF-8 (R would carry
 * them marked as UTF-8 all the same). */
int utf8_check(const uint8_t *p, size_t n) {
  const uint8_t *end = p + n;
  while (p < end) {
    if (*p == 0) return 1;
    if (*p < 0x80) { p++; continue; }
    size_t k = utf8_seq(p, end);
    if (k == 0) return 2;
    p += k;
  }
  return 0;
}

/* Check decoded element i before any R string is made of it, so that making
 * R strings later (on the main thread) cannot fail half way. */
static int check_element(const zarray *a, const uint8_t *p, size_t n, int64_t i, zerr *e) {
  if (a->rtype != RT_CHARACTER) return 0; /* raw vectors hold any bytes */
  if (n > 2147483647u)
    return zerr_set(e, ZE_VALUE, "element %.0f of the chunk has %.0f bytes, more than an R string holds",
                    (double)i, (double)n);
  int bad = utf8_check(p, n);
  if (bad == 1)
    return zerr_set(e, ZE_VALUE, "element %.0f of the chunk holds a NUL character, which R strings cannot hold",
                    (double)i);
  if (bad == 2)
    return zerr_set(e, a->strkind == SK_VLEN_UTF8 ? ZE_CORRUPT : ZE_VALUE,
                    "element %.0f of the chunk is not valid UTF-8", (double)i);
  return 0;
}

/* Next code point of UTF-8 text (already checked with utf8_check); any
 * invalid byte is taken as Latin-1. */
static uint32_t utf8_get(const uint8_t **pp, const uint8_t *end) {
  const uint8_t *p = *pp;
  uint32_t c = *p++;
  int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
  if (extra && end - p >= extra) {
    uint32_t v = c & (0x3F >> extra);
    int ok = 1;
    for (int i = 0; i < extra; i++) {
      if ((p[i] & 0xC0) != 0x80) { ok = 0; break; }
      v = (v << 6) | (p[i] & 0x3F);
    }
    if (ok) { c = v; p += extra; }
  }
  *pp = p;
  return c;
}

/* Decoded chunk bytes -> one handle per element, in `handles` (nelem * 16
 * bytes). Text is copied into a new pool pushed on *pools. */
int strings_decode(const zarray *a, const uint8_t *src, size_t n, int64_t nelem, int big,
                   uint8_t *handles, zpool **pools, zerr *e) {
  zstr *h = (zstr *)handles;
  if (a->strkind == SK_VLEN_UTF8 || a->strkind == SK_VLEN_BYTES) {
    if (n < 4) return zerr_set(e, ZE_CORRUPT, "variable-length chunk is truncated");
    uint32_t count = rd32(src, 0);
    if ((int64_t)count != nelem)
      return zerr_set(e, ZE_CORRUPT, "variable-length chunk holds %u items, expected %.0f", count,
                      (double)nelem);
    zpool *p = pool_new(n, *pools);
    if (p == NULL) return zerr_set(e, ZE_NOMEM, "out of memory");
    *pools = p;
    memcpy(p->data, src, n);
    size_t pos = 4;
    for (int64_t i = 0; i < nelem; i++) {
      if (n - pos < 4) return zerr_set(e, ZE_CORRUPT, "variable-length chunk is truncated");
      uint32_t len = rd32(p->data + pos, 0);
      pos += 4;
      if (len > n - pos) return zerr_set(e, ZE_CORRUPT, "variable-length chunk is truncated");
      if (check_element(a, p->data + pos, len, i, e)) return -1;
      h[i].ptr = (const char *)p->data + pos;
      h[i].len = len;
      pos += len;
    }
    if (pos != n)
      return zerr_set(e, ZE_CORRUPT, "variable-length chunk has %.0f bytes after its last item",
                      (double)(n - pos));
    return 0;
  }
  size_t es = a->stored_size;
  if (n != (size_t)nelem * es)
    return zerr_set(e, ZE_CORRUPT, "chunk decodes to %.0f bytes, expected %.0f", (double)n,
                    (double)nelem * (double)es);
  if (a->strkind == SK_FIXED_BYTES || a->strkind == SK_RECORD) {
    zpool *p = pool_new(n, *pools);
    if (p == NULL) return zerr_set(e, ZE_NOMEM, "out of memory");
    *pools = p;
    memcpy(p->data, src, n);
    for (int64_t i = 0; i < nelem; i++) {
      const uint8_t *s = p->data + i * (int64_t)es;
      size_t len = es;
      if (a->strkind == SK_FIXED_BYTES)
        while (len > 0 && s[len - 1] == 0) len--; /* numpy pads with NUL */
      if (check_element(a, s, len, i, e)) return -1;
      h[i].ptr = (const char *)s;
      h[i].len = (int64_t)len;
    }
    return 0;
  }
  /* fixed-length UTF-32: at most 4 UTF-8 bytes per code point */
  size_t ncp = es / 4;
  zpool *p = pool_new((size_t)nelem * ncp * 4, *pools);
  if (p == NULL) return zerr_set(e, ZE_NOMEM, "out of memory");
  *pools = p;
  uint8_t *o = p->data;
  for (int64_t i = 0; i < nelem; i++) {
    const uint8_t *s = src + i * (int64_t)es;
    size_t k = ncp;
    while (k > 0 && rd32(s + 4 * (k - 1), big) == 0) k--;
    h[i].ptr = (const char *)o;
    for (size_t j = 0; j < k; j++) {
      uint32_t c = rd32(s + 4 * j, big);
      if (c == 0)
        return zerr_set(e, ZE_VALUE,
                        "element %.0f of the chunk holds a NUL character, which R strings cannot hold",
                        (double)i);
      if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return zerr_set(e, ZE_CORRUPT, "element %.0f of the chunk holds U+%X, which is not a character",
                        (double)i, c);
      o += utf8_put(o, c);
    }
    h[i].len = (const char *)o - h[i].ptr;
  }
  return 0;
}

/* Handles -> encoded chunk bytes (before the bytes -> bytes codecs). */
int strings_encode(const zarray *a, const uint8_t *handles, int64_t nelem, int big, zbuf *out,
                   zerr *e) {
  const zstr *h = (const zstr *)handles;
  if (a->strkind == SK_VLEN_UTF8 || a->strkind == SK_UTF32)
    for (int64_t i = 0; i < nelem; i++)
      if (h[i].ptr != NULL && utf8_check((const uint8_t *)h[i].ptr, (size_t)h[i].len) != 0)
        return zerr_set(e, ZE_VALUE, "element %.0f is not valid UTF-8 text", (double)i + 1);
  if (a->strkind == SK_VLEN_UTF8 || a->strkind == SK_VLEN_BYTES) {
    size_t total = 4;
    for (int64_t i = 0; i < nelem; i++) {
      if (h[i].ptr && (uint64_t)h[i].len > 0xFFFFFFFFu)
        return zerr_set(e, ZE_VALUE, "element %.0f has more than 2^32 - 1 bytes", (double)i + 1);
      total += 4 + (size_t)(h[i].ptr ? h[i].len : 0);
    }
    if (zbuf_reserve(out, total, e)) return -1;
    uint8_t *o = out->data;
    wr32(o, (uint32_t)nelem, 0);
    o += 4;
    for (int64_t i = 0; i < nelem; i++) {
      uint32_t len = h[i].ptr ? (uint32_t)h[i].len : 0;
      wr32(o, len, 0);
      o += 4;
      if (len) memcpy(o, h[i].ptr, len);
      o += len;
    }
    out->size = total;
    return 0;
  }
  size_t es = a->stored_size;
  if (zbuf_reserve(out, (size_t)nelem * es + 1, e)) return -1;
  memset(out->data, 0, (size_t)nelem * es);
  for (int64_t i = 0; i < nelem; i++) {
    uint8_t *o = out->data + i * (int64_t)es;
    if (h[i].ptr == NULL) continue;
    if (a->strkind == SK_RECORD && (size_t)h[i].len != es)
      return zerr_set(e, ZE_VALUE, "a record of %.0f bytes is not one of %.0f bytes", (double)h[i].len,
                      (double)es);
    if (a->strkind == SK_FIXED_BYTES || a->strkind == SK_RECORD) {
      if ((size_t)h[i].len > es)
        return zerr_set(e, ZE_VALUE, "a string of %.0f bytes does not fit in %.0f bytes",
                        (double)h[i].len, (double)es);
      memcpy(o, h[i].ptr, (size_t)h[i].len);
      continue;
    }
    const uint8_t *s = (const uint8_t *)h[i].ptr, *end = s + h[i].len;
    size_t k = 0;
    while (s < end) {
      if (k == es / 4)
        return zerr_set(e, ZE_VALUE, "a string is longer than %.0f characters", (double)(es / 4));
      wr32(o + 4 * k++, utf8_get(&s, end), big);
    }
  }
  out->size = (size_t)nelem * es;
  return 0;
}
