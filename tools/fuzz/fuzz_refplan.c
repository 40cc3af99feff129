/* libFuzzer target: the read planning of reference stores (src/refplan.c).
 *
 * Input: 2 bytes gap (x 16) and 2 bytes max (x 16), then records of 13
 * bytes: target (1 byte, mod 4), reference offset (4), reference length (2),
 * request offset (4, signed: a suffix when negative), request length (2,
 * 0xFFFF = to the end). Checks: each translated piece lies inside its
 * reference; every piece lies inside the span it was merged into; spans of
 * one target are in order of their start (they overlap only where merging
 * would have passed max); a span longer than max holds a
 * single piece; the spans hold every piece exactly once. */
#include <stdlib.h>
#include <string.h>
#include "refplan.h"

static uint32_t rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4) return 0;
  int64_t gap = (int64_t)rd16(data) * 16, max = (int64_t)rd16(data + 2) * 16;
  data += 4;
  size -= 4;
  size_t n = size / 13;
  zref_piece *p = calloc(n ? n : 1, sizeof *p);
  int64_t *lo = calloc(n ? n : 1, sizeof *lo), *hi = calloc(n ? n : 1, sizeof *hi);
  size_t np = 0;
  for (size_t i = 0; i < n; i++) {
    const uint8_t *r = data + 13 * i;
    int32_t target = r[0] % 4;
    int64_t ref_off = rd32(r + 1), ref_len = rd16(r + 5);
    int64_t off = (int32_t)rd32(r + 7);
    uint16_t l = rd16(r + 11);
    int64_t len = l == 0xFFFF ? -1 : l;
    int64_t start, k;
    if (ref_translate(ref_off, ref_len, off, len, &start, &k)) abort();
    if (start < ref_off || k < 0 || start + k > ref_off + ref_len) abort();
    if (off >= 0 && len >= 0 && k > len) abort();
    if (k == 0) continue;
    p[np].req = i;
    p[np].target = target;
    p[np].start = start;
    p[np].len = k;
    lo[i] = start;
    hi[i] = start + k;
    np++;
  }
  zref_span *s = NULL;
  size_t ns = 0;
  zerr e = {ZE_OK, ""};
  if (ref_plan(p, np, gap, max, &s, &ns, &e)) abort();
  size_t seen = 0;
  for (size_t j = 0; j < ns; j++) {
    if (s[j].count == 0 || s[j].first != seen) abort();
    if (s[j].len > (max < 1 ? 1 : max) && s[j].count != 1) abort();
    if (j > 0 && s[j - 1].target == s[j].target && s[j - 1].start > s[j].start) abort();
    if (j > 0 && s[j - 1].target > s[j].target) abort();
    for (size_t k = 0; k < s[j].count; k++) {
      const zref_piece *q = &p[s[j].first + k];
      if (q->target != s[j].target || q->start < s[j].start ||
          q->start + q->len > s[j].start + s[j].len)
        abort();
      if (q->start != lo[q->req] || q->start + q->len != hi[q->req]) abort();
    }
    seen += s[j].count;
  }
  if (seen != np) abort();
  free(s);
  free(p);
  free(lo);
  free(hi);
  return 0;
}
