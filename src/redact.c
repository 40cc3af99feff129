/* Redaction: the one place that decides which parts of a text are secrets.
 * Every URL, message, field and label the package shows passes through it
 * (R: redact() in R/errors.R calls ffi_redact; C: the HTTP and S3 stores
 * keep a redacted copy of their URL for messages). Requests use the real
 * URL, which is never shown.
 *
 * What is replaced by "***", anywhere in the text:
 *   - the user-info of a URL (what comes before the '@' of its authority,
 *     "user:password"), whether or not it has a password (a token is often
 *     the user name);
 *   - the value of each query parameter whose name carries credentials
 *     ("?X-Amz-Signature=abc&x=1" -> "?X-Amz-Signature=***&x=1"): names
 *     that contain, ignoring case, "sig" (Signature, X-Amz-Signature,
 *     X-Goog-Signature, the sig of Azure SAS tokens), "token" (access_token,
 *     X-Amz-Security-Token), "credential", "secret", "passw", "pwd", "key"
 *     (key, apikey, AWSAccessKeyId) or "auth". Other parameters (versionId,
 *     the se/sv/sp fields of a SAS token) stay, as they help to tell URLs
 *     apart and hold nothing secret.
 * No R API here: worker threads may call it, and the fuzz target does. */
#include <string.h>
#include "zarr_core.h"

static char lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c; }

static int is_alnum(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* Where a URL's authority (user-info and host) ends. */
static int authority_end(unsigned char c) {
  return c <= ' ' || c == '/' || c == '?' || c == '#' || c == '"' || c == '\'' || c == '`' ||
         c == '<' || c == '>' || c == '\\' || c == 127;
}

/* Where a query value ends. */
static int value_end(unsigned char c) {
  return c <= ' ' || c == '&' || c == '#' || c == '"' || c == '\'' || c == '`' || c == '<' ||
         c == '>' || c == 127;
}

static int name_char(unsigned char c) {
  return is_alnum(c) || c == '-' || c == '_' || c == '.' || c == '%' || c == '[' || c == ']' ||
         c == '$' || c == '~';
}

static int contains_ci(const char *s, size_t n, const char *word) {
  size_t k = strlen(word);
  for (size_t i = 0; i + k <= n; i++) {
    size_t j = 0;
    while (j < k && lower(s[i + j]) == word[j]) j++;
    if (j == k) return 1;
  }
  return 0;
}

int redact_secret_name(const char *name, size_t n) {
  static const char *const words[] = {"sig", "token", "credential", "secret", "passw", "pwd", "key", "auth"};
  for (size_t w = 0; w < sizeof words / sizeof words[0]; w++)
    if (contains_ci(name, n, words[w])) return 1;
  return 0;
}

typedef struct {
  char *out;
  size_t cap, k;
} emitter;

static void put(emitter *w, const char *p, size_t n) {
  for (size_t j = 0; j < n; j++, w->k++)
    if (w->cap > 0 && w->k < w->cap - 1) w->out[w->k] = p[j];
}

size_t redact_text(const char *in, size_t n, char *out, size_t cap) {
  emitter w = {out, cap, 0};
  size_t i = 0, auth_end = 0; /* the end of the last URL authority seen */
  while (i < n) {
    unsigned char c = (unsigned char)in[i];
    if (c == ':' && i > 0 && i + 2 < n && in[i + 1] == '/' && in[i + 2] == '/' &&
        is_alnum((unsigned char)in[i - 1])) {
      /* "scheme://": user-info is what comes before the last '@' of the authority */
      put(&w, "://", 3);
      i += 3;
      size_t e = i, at = n;
      while (e < n && !authority_end((unsigned char)in[e])) {
        if (in[e] == '@') at = e;
        e++;
      }
      auth_end = e;
      if (at < n) {
        put(&w, "***@", 4);
        i = at + 1;
      }
      continue;
    }
    if (c == '?' || c == '&') {
      /* a parameter that starts in an authority ends with it: replacing its
       * value must not take away the character that ended the authority, or
       * a second redaction would read another one */
      size_t lim = i < auth_end ? auth_end : n, j = i + 1;
      while (j < n && name_char((unsigned char)in[j])) j++;
      if (j > i + 1 && j < n && in[j] == '=' && redact_secret_name(in + i + 1, j - i - 1)) {
        put(&w, in + i, j + 1 - i);
        i = j + 1;
        size_t v = i;
        while (i < lim && !value_end((unsigned char)in[i])) i++;
        if (i > v) put(&w, "***", 3);
        continue;
      }
    }
    put(&w, in + i, 1);
    i++;
  }
  if (cap > 0) out[w.k < cap ? w.k : cap - 1] = '\0';
  return w.k;
}
