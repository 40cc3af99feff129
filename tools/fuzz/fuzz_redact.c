/* libFuzzer target: redact_text() (src/redact.c), which every URL and
 * message the package shows passes through. Checks: the returned length is
 * what a large enough buffer receives; a small buffer receives a prefix of
 * it, NUL-terminated, and nothing is written past it; redacting twice
 * changes nothing more; a text with no "://", '?' or '&' is unchanged; no
 * '@' is left in the authority of a URL except the one after "***". */
#include <stdlib.h>
#include <string.h>
#include "zarr_core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  size_t cap = 1 + data[0] % 64; /* a small buffer, from the first byte */
  const char *in = (const char *)data + 1;
  size_t n = size - 1;
  size_t full = redact_text(in, n, NULL, 0);
  char *out = malloc(full + 1);
  if (redact_text(in, n, out, full + 1) != full || out[full] != '\0') abort();
  if (memchr(out, '\0', full) != NULL && memchr(in, '\0', n) == NULL) abort();
  /* a small buffer: a prefix, terminated, nothing beyond */
  char *small = malloc(cap + 8);
  memset(small, 0x5A, cap + 8);
  if (redact_text(in, n, small, cap) != full) abort();
  size_t k = full < cap - 1 ? full : cap - 1;
  if (memcmp(small, out, k) != 0 || small[k] != '\0') abort();
  for (size_t j = cap; j < cap + 8; j++)
    if (small[j] != 0x5A) abort();
  /* idempotent */
  size_t again = redact_text(out, full, NULL, 0);
  char *out2 = malloc(again + 1);
  redact_text(out, full, out2, again + 1);
  if (again != full || memcmp(out, out2, full) != 0) abort();
  /* nothing to redact: unchanged */
  int plain = 1;
  for (size_t j = 0; j < n && plain; j++)
    if (in[j] == '?' || in[j] == '&' || (in[j] == ':' && j + 2 < n && in[j + 1] == '/' && in[j + 2] == '/'))
      plain = 0;
  if (plain && (full != n || memcmp(in, out, n) != 0)) abort();
  /* every authority after "://" holds at most the '@' that follows "***" */
  for (const char *p = out; (p = strstr(p, "://")) != NULL; p += 3) {
    const char *a = p + 3;
    size_t e = 0; /* where the authority ends, as redact.c sees it */
    while (a[e] != '\0' && (unsigned char)a[e] > ' ' && a[e] != 127 && !strchr("/?#\"'`<>\\", a[e])) e++;
    const char *at = memchr(a, '@', e);
    if (at != NULL && !(at == a + 3 && memcmp(a, "***", 3) == 0 && memchr(at + 1, '@', e - 4) == NULL)) {
      /* the text after "://" may be a scheme-less run (e.g. "a://" with no
       * alphanumeric before ':' is not a URL): only judge real URLs */
      if (p > out && ((p[-1] >= 'a' && p[-1] <= 'z') || (p[-1] >= 'A' && p[-1] <= 'Z') ||
                      (p[-1] >= '0' && p[-1] <= '9')))
        abort();
    }
  }
  free(out);
  free(out2);
  free(small);
  return 0;
}
