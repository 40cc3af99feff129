/* The members of one JSON object in a document, by byte position: what
 * rewriting one entry of a consolidated metadata document needs to keep
 * every other entry's bytes as another tool wrote them. Strings and the
 * structural characters are the only tokens; the nesting depth is counted
 * over them. Store content: everything is bounded by the document's size. */
#include <stdlib.h>
#include <string.h>
#include "zarr_core.h"

typedef struct {
  size_t pos, len; /* a string token: from its opening quote, quotes included */
  char ch;         /* '"' or one of []{},: */
  int64_t before, after;
} jtok;

static int is_struct(uint8_t c) {
  return c == '[' || c == ']' || c == '{' || c == '}' || c == ',' || c == ':';
}

/* Tokens of p (NULL with *nt = 0 when there are none); -1: a string is
 * not closed, -2: out of memory. */
static int tokenize(const uint8_t *p, size_t n, jtok **out, size_t *nt) {
  size_t count = 0;
  *out = NULL;
  for (int pass = 0; pass < 2; pass++) {
    size_t k = 0;
    int64_t depth = 0;
    for (size_t i = 0; i < n; i++) {
      if (p[i] == '"') {
        size_t j = i + 1;
        while (j < n && p[j] != '"') j += p[j] == '\\' ? 2 : 1;
        if (j >= n) { /* (not in the second pass: the first found them all closed) */
          free(*out);
          *out = NULL;
          return -1;
        }
        if (pass) (*out)[k] = (jtok){i, j - i + 1, '"', depth, depth};
        k++;
        i = j;
      } else if (is_struct(p[i])) {
        int64_t d = (p[i] == '{' || p[i] == '[') - (p[i] == '}' || p[i] == ']');
        if (pass) (*out)[k] = (jtok){i, 1, (char)p[i], depth, depth + d};
        depth += d;
        k++;
      }
    }
    if (pass == 0) {
      count = k;
      *nt = count;
      *out = NULL;
      if (count == 0) return 0;
      *out = malloc(count * sizeof(jtok));
      if (*out == NULL) return -2;
    }
  }
  return 0;
}

/* The first token after o that closes it, or nt. */
static size_t close_of(const jtok *t, size_t nt, size_t o) {
  for (size_t k = o + 1; k < nt; k++)
    if (t[k].after == t[o].before) return k;
  return nt;
}

static int name_plain(const uint8_t *p, const jtok *t) {
  for (size_t i = t->pos + 1; i + 1 < t->pos + t->len; i++)
    if (p[i] == '\\' || p[i] == 0) return 0;
  return 1;
}

int json_object_members(const uint8_t *p, size_t n, const char *const *path, int npath,
                        zjson_member **out, size_t *nout) {
  *out = NULL;
  *nout = 0;
  jtok *t = NULL;
  size_t nt = 0;
  int rc = tokenize(p, n, &t, &nt);
  if (rc == -1) return JSON_NO_OBJECT;
  if (rc == -2) return JSON_NOMEM;
  rc = JSON_NO_OBJECT;
  size_t o = 0;
  if (nt == 0 || t[0].ch != '{') goto done;
  for (int q = 0; q < npath; q++) {
    size_t end = close_of(t, nt, o), hit = nt, klen = strlen(path[q]);
    if (end == nt) goto done;
    for (size_t k = o + 1; k + 2 < end; k++) {
      if (t[k].ch != '"' || t[k].before != t[o].after || t[k + 1].ch != ':' || t[k + 2].ch != '{') continue;
      if (!name_plain(p, &t[k])) {
        rc = JSON_ESCAPED;
        goto done;
      }
      if (t[k].len - 2 != klen || memcmp(p + t[k].pos + 1, path[q], klen) != 0) continue;
      if (hit != nt) goto done; /* twice */
      hit = k;
    }
    if (hit == nt) goto done;
    o = hit + 2;
  }
  size_t end = close_of(t, nt, o);
  if (end == nt) goto done;
  rc = JSON_OK;
  if (end == o + 1) goto done; /* {} */
  size_t cap = 0;
  for (size_t k = o; k < end; k++) cap += k == o || (t[k].ch == ',' && t[k].before == t[o].after);
  *out = malloc(cap * sizeof(zjson_member));
  if (*out == NULL) {
    rc = JSON_NOMEM;
    goto done;
  }
  size_t sep = o;
  for (size_t k = o + 1; k <= end; k++) {
    if (k != end && !(t[k].ch == ',' && t[k].before == t[o].after)) continue;
    size_t nm = sep + 1;
    if (nm >= k || t[nm].ch != '"') {
      rc = JSON_NO_OBJECT;
      goto done;
    }
    if (!name_plain(p, &t[nm])) {
      rc = JSON_ESCAPED;
      goto done;
    }
    size_t from = t[sep].pos + 1, to = t[k].pos; /* [from, to) */
    while (to > from && (p[to - 1] == ' ' || p[to - 1] == '\t' || p[to - 1] == '\n' || p[to - 1] == '\r')) to--;
    (*out)[*nout] = (zjson_member){t[nm].pos + 1, t[nm].len - 2, from, to};
    (*nout)++;
    sep = k;
  }
done:
  free(t);
  if (rc != JSON_OK) {
    free(*out);
    *out = NULL;
    *nout = 0;
  }
  return rc;
}
