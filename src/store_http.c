/* HTTP store: read-only access to a store served over HTTP(S), through
 * libcurl's multi interface. The S3 store (at the end of this file) is the
 * same machinery with signed requests, writes (PUT, multipart) and DELETE:
 * an hreq attached to a request gives its method, query, body and headers.
 *
 * A batch (get_many) keeps up to `concurrency` requests in flight on one
 * multi handle; a single get() runs a batch of one. Multi handles (each with
 * its own connection cache, so connections and HTTP/2 streams are reused from
 * one call to the next) live in a small pool in the store: every call takes
 * one for itself and gives it back afterwards, so calls from several threads
 * never share a multi handle. DNS answers and TLS sessions are shared between
 * all handles of the store through a share handle guarded by mutexes.
 *
 * Failed requests (connection errors, timeouts, 408/429/5xx, short bodies, a
 * Content-Range that does not match) are retried after an exponential,
 * jittered delay; a waiting request does not hold a transfer slot, so the
 * others go on meanwhile. 404 and 410 mean the key does not exist.
 *
 * Nothing here touches the R API: all of it may run on worker threads.
 *
 * Options (zhttp_opts; a negative or zero value where none makes sense
 * takes the default in brackets):
 *   concurrency      requests in flight in one get_many [16, at most 1024]; also
 *                    the number of idle connections each multi handle keeps
 *   retries          further attempts after the first [5]; 0 never retries
 *   backoff          first retry delay in seconds [0.5], doubled per attempt;
 *                    the delay is drawn from [d/2, d] (jitter)
 *   backoff_max      cap on one delay, Retry-After included [30]
 *   connect_timeout  seconds to connect, TLS included [30]; 0 = libcurl's default
 *   low_speed_time   abort an attempt below 1 byte/s for this long [30]; 0 = never
 *   max_body         largest body whose length the request does not bound [2 GiB]
 *   user_agent       User-Agent header ["zarr (R package)"]
 * TLS peers are always verified; libcurl's proxy environment variables
 * (http_proxy, https_proxy, no_proxy, ...) apply.
 *
 * Trust: signed requests (S3 with credentials) never follow a redirect (it
 * would carry the signature and the session token header to wherever the
 * server points): a 3xx answer is an error. Unsigned requests follow up to
 * 10 redirects, only to http or https and never from https to http;
 * libcurl sends the user-info of the URL to the first host only
 * (CURLOPT_UNRESTRICTED_AUTH stays off) and plain HTTP requests carry no
 * other credentials. Bodies are taken as the server sends them (no
 * Accept-Encoding is sent and Content-Encoding is never decoded) and are
 * bounded: a range request keeps at most the bytes asked for (a server that
 * ignores Range sends the whole value: the bytes outside the range are
 * dropped as they arrive), any other body at most max_body bytes (a larger
 * Content-Length fails at once), an error page at most HTTP_ERRBODY_MAX.
 *
 * Errors (kind ZE_HTTP unless noted) read "<what> for <url> after N
 * attempts", where <what> is "HTTP 503 Service Unavailable", a libcurl
 * message with its error number, or a failed response check, and <url>
 * leaves out the query and passes through redact_text() (user-info). A
 * stopped batch fails with ZE_INTERRUPT (*stop) or ZE_STORE (the sink said
 * stop), unless the zerr already holds an error. Messages name the store by
 * hs->shown, never by the URL requests use.
 *
 * Exported besides http_store_new() (declared in store.h):
 *   void http_global_init(void);
 * which calls curl_global_init() once. http_store_new() calls it too, so an
 * explicit call (e.g. from R_init_zarr) is optional; it only moves libcurl's
 * (and its TLS library's) start-up to package load time.
 */
#include <curl/curl.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "store.h"

void http_global_init(void);

/* ---- defaults and limits -------------------------------------------------- */

#define HTTP_MAX_CONCURRENCY 1024
#define HTTP_POOL_MAX 16                 /* idle multi handles kept per store */
#define HTTP_POLL_MS 100                 /* longest wait between checks of *stop */
#define HTTP_PRESIZE_MAX ((size_t)1 << 28) /* largest buffer reserved up front */
#define HTTP_URL_SHOWN 240               /* longest URL quoted in a message */
#define HTTP_ERRBODY_MAX ((int64_t)65536) /* bytes kept of an error page */

/* ---- libcurl start-up ---------------------------------------------------------- */

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_FAILED_INIT;

static void global_init_once(void) { global_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

void http_global_init(void) { pthread_once(&global_once, global_init_once); }

/* ---- small pure helpers --------------------------------------------------------- */

static int is_unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         c == '-' || c == '.' || c == '_' || c == '~';
}

static char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c; }

/* The request URL for `key`: base + "/" + key with every byte other than an
 * unreserved character or '/' percent-encoded, then "?" + query when the
 * query is not empty. *path_len (when not NULL) receives the length without
 * the query, which is what messages show (a signed query holds credentials).
 * NULL when out of memory. The caller frees the result. */
static char *url_build(const char *base, const char *key, const char *query, size_t *path_len) {
  static const char hex[] = "0123456789ABCDEF";
  size_t nb = strlen(base), nq = query ? strlen(query) : 0, nk = 0;
  for (const unsigned char *p = (const unsigned char *)key; *p; p++)
    nk += (is_unreserved(*p) || *p == '/') ? 1 : 3;
  char *u = malloc(nb + 1 + nk + 1 + nq + 1);
  if (u == NULL) return NULL;
  char *w = u;
  memcpy(w, base, nb);
  w += nb;
  if (*key) *w++ = '/';
  for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
    if (is_unreserved(*p) || *p == '/') {
      *w++ = (char)*p;
    } else {
      *w++ = '%';
      *w++ = hex[*p >> 4];
      *w++ = hex[*p & 15];
    }
  }
  if (path_len) *path_len = (size_t)(w - u);
  if (nq) {
    *w++ = '?';
    memcpy(w, query, nq);
    w += nq;
  }
  *w = '\0';
  return u;
}

/* The Range header value (without "bytes=") for a request; "" for a whole
 * value. */
static void range_spec(const zrange *r, char *buf, size_t cap) {
  if (r->off < 0)
    snprintf(buf, cap, "-%lld", (long long)(r->off == INT64_MIN ? INT64_MAX : -r->off));
  else if (r->len < 0 && r->off == 0)
    buf[0] = '\0';
  else if (r->len < 0)
    snprintf(buf, cap, "%lld-", (long long)r->off);
  else
    snprintf(buf, cap, "%lld-%lld", (long long)r->off, (long long)(r->off + r->len - 1));
}

/* Decimal digits at p (before end) into *v; NULL when none or on overflow. */
static const char *parse_i64(const char *p, const char *end, int64_t *v) {
  if (p >= end || *p < '0' || *p > '9') return NULL;
  int64_t x = 0;
  while (p < end && *p >= '0' && *p <= '9') {
    if (x > (INT64_MAX - 9) / 10) return NULL;
    x = x * 10 + (*p - '0');
    p++;
  }
  *v = x;
  return p;
}

static const char *skip_space(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  return p;
}

/* A parsed Content-Range: form 1 "bytes a-b/t", form 2 "bytes * /t" (416);
 * total -1 for "*". Returns 0 on success. */
typedef struct {
  int form;
  int64_t first, last, total;
} zcrange;

static int parse_content_range(const char *p, const char *end, zcrange *cr) {
  static const char unit[] = "bytes";
  cr->form = 0;
  cr->first = cr->last = cr->total = -1;
  p = skip_space(p, end);
  for (size_t k = 0; k < 5; k++, p++)
    if (p >= end || ascii_lower(*p) != unit[k]) return -1;
  if (p >= end || (*p != ' ' && *p != '\t')) return -1;
  p = skip_space(p, end);
  int form;
  if (p < end && *p == '*') {
    p++;
    form = 2;
  } else {
    if ((p = parse_i64(p, end, &cr->first)) == NULL || p >= end || *p != '-') return -1;
    if ((p = parse_i64(p + 1, end, &cr->last)) == NULL) return -1;
    if (cr->last < cr->first) return -1;
    form = 1;
  }
  if (p >= end || *p != '/') return -1;
  p++;
  if (p < end && *p == '*') {
    if (form == 2) return -1;
    p++;
  } else if ((p = parse_i64(p, end, &cr->total)) == NULL) {
    return -1;
  }
  if (skip_space(p, end) != end) return -1;
  if (form == 1 && cr->total >= 0 && cr->last >= cr->total) return -1;
  cr->form = form;
  return 0;
}

/* Check a 206 response against the request: 0 when it is the range asked
 * for (a range that runs past the end may stop at the last byte). */
static int content_range_matches(const zrange *r, const zcrange *cr) {
  if (cr->form != 1) return 0;
  int64_t a = cr->first, b = cr->last, t = cr->total;
  if (r->off < 0) {
    int64_t want = r->off == INT64_MIN ? INT64_MAX : -r->off;
    return b - a + 1 <= want && (t < 0 || (b == t - 1 && (t <= want ? a == 0 : b - a + 1 == want)));
  }
  if (a != r->off) return 0;
  if (r->len < 0) return t < 0 || b == t - 1;
  int64_t last = r->off + r->len - 1;
  return b == last || (t >= 0 && b == t - 1 && b < last);
}

static const char *status_text(long status) {
  switch (status) {
  case 200: return "OK";
  case 206: return "Partial Content";
  case 301: return "Moved Permanently";
  case 302: return "Found";
  case 304: return "Not Modified";
  case 400: return "Bad Request";
  case 401: return "Unauthorized";
  case 403: return "Forbidden";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 406: return "Not Acceptable";
  case 407: return "Proxy Authentication Required";
  case 408: return "Request Timeout";
  case 410: return "Gone";
  case 416: return "Range Not Satisfiable";
  case 429: return "Too Many Requests";
  case 500: return "Internal Server Error";
  case 501: return "Not Implemented";
  case 502: return "Bad Gateway";
  case 503: return "Service Unavailable";
  case 504: return "Gateway Timeout";
  default: return NULL;
  }
}

static int status_retryable(long status) {
  return status == 408 || status == 429 || status == 500 || status == 502 || status == 503 ||
         status == 504;
}

/* A name that does not resolve is almost always a mistyped URL: not retried. */
static int curl_retryable(CURLcode rc) {
  switch (rc) {
  case CURLE_COULDNT_CONNECT:
  case CURLE_OPERATION_TIMEDOUT:
  case CURLE_PARTIAL_FILE:
  case CURLE_GOT_NOTHING:
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM:
    return 1;
  default:
    return 0;
  }
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the store ---------------------------------------------------------------------- */

typedef struct {
  char *base;
  char *shown;            /* base as messages show it (redact_text) */
  char *query;
  char *user_agent;
  zhttp_opts o;
  int https;
  CURLSH *share;
  pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];
  pthread_mutex_t pool_mu;
  CURLM *idle[HTTP_POOL_MAX];
  int n_idle;
  /* S3 (store_s3 in this file): NULL/0 for plain HTTP */
  int s3;
  int read_only;
  char *bucket_base;      /* URL of the bucket (base is the store root in it) */
  char *sigv4;            /* "aws:amz:REGION:s3", NULL when anonymous */
  char *userpwd;          /* "KEY:SECRET" */
  char *token_hdr;        /* "x-amz-security-token: ...", or NULL */
  double multipart_size;  /* values above this many bytes go up in parts */
  /* Azure Blob (the Azure section at the end of this file): 0/NULL otherwise */
  int azure;
  char *az_account;       /* the account name Shared Key signs for */
  unsigned char az_key[96]; /* the decoded account key; az_key_n 0: no Shared Key */
  int az_key_n;
  char *az_sas;           /* a SAS token every request carries in its query, or NULL */
} hstore;

/* What a request does besides a GET of r->key (NULL for a plain GET). */
typedef struct {
  const char *method;       /* "GET", "PUT", "POST", "DELETE" */
  const char *query;        /* instead of the store's; already canonical */
  const uint8_t *body;      /* sent as it is (PUT/POST) */
  size_t body_n;
  const char *content_type;
  const char *condition;    /* a conditional write's header ("If-None-Match: *"), or NULL */
  int raw;                  /* any final status is the answer (status, body) */
  int at_bucket;            /* the key is below the bucket, not the store root */
  long status;              /* out: the final HTTP status */
  char etag[160];           /* out: the ETag header of the response */
  double last_modified;     /* out: its Last-Modified (seconds since 1970), -1 if none */
} hreq;

static void share_lock(CURL *h, curl_lock_data d, curl_lock_access a, void *p) {
  (void)h;
  (void)a;
  hstore *hs = p;
  if ((int)d >= 0 && (int)d < (int)CURL_LOCK_DATA_LAST) pthread_mutex_lock(&hs->share_mu[d]);
}

static void share_unlock(CURL *h, curl_lock_data d, void *p) {
  (void)h;
  hstore *hs = p;
  if ((int)d >= 0 && (int)d < (int)CURL_LOCK_DATA_LAST) pthread_mutex_unlock(&hs->share_mu[d]);
}

static CURLM *pool_take(hstore *hs) {
  CURLM *m = NULL;
  pthread_mutex_lock(&hs->pool_mu);
  if (hs->n_idle > 0) m = hs->idle[--hs->n_idle];
  pthread_mutex_unlock(&hs->pool_mu);
  if (m != NULL) return m;
  m = curl_multi_init();
  if (m == NULL) return NULL;
  curl_multi_setopt(m, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
  /* keep every connection of a full batch for the next call (by default the
   * cache shrinks with the number of handles still attached) */
  curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, (long)hs->o.concurrency);
  return m;
}

static void pool_give(hstore *hs, CURLM *m) {
  pthread_mutex_lock(&hs->pool_mu);
  if (hs->n_idle < HTTP_POOL_MAX) {
    hs->idle[hs->n_idle++] = m;
    m = NULL;
  }
  pthread_mutex_unlock(&hs->pool_mu);
  if (m != NULL) curl_multi_cleanup(m);
}

/* ---- one request and its attempts ------------------------------------------------- */

typedef struct xfer {
  struct xfer *prev, *next; /* the batch's live list */
  size_t i;                 /* index into the batch */
  const zrange *r;
  CURL *easy;
  char *url;
  size_t path_len;          /* URL length without the query */
  char range[48];           /* Range value without "bytes="; "" for none */
  int attempts;             /* started so far */
  int in_multi;
  int waiting;              /* for `due` before its next attempt */
  double due;
  zbuf body;
  size_t presize;
  int nomem;
  /* from the headers of the latest response */
  int hstatus;              /* from the status line */
  char reason[48];
  zcrange cr;
  int64_t clen;             /* Content-Length, -1 when absent */
  int az_probe;             /* Azure suffix: this attempt asks for byte 0 to learn the length */
  double retry_after;       /* seconds, -1 when absent */
  /* what is kept of the body of the latest response (body_window) */
  int win_set;              /* worked out (at its first byte) */
  int keep_mode;            /* KEEP_* */
  int windowed;             /* a 200 to a range request, cut as it arrived */
  int enough;               /* stopped on purpose: what is kept is the answer */
  int over;                 /* OVER_*: stopped because the body is too long */
  int refuse;               /* the OVER_* of a body longer than `keep` */
  int64_t skip;             /* bytes still to drop before keeping */
  int64_t keep;             /* most bytes kept */
  int64_t seen;             /* bytes received, dropped ones included */
  char errbuf[CURL_ERROR_SIZE];
  char last[320];           /* what went wrong with the latest attempt */
  hreq *rq;                 /* NULL: a GET */
  hstore *hs;
  struct curl_slist *hdrs;
  char etag[160];
  double last_modified;
  zerr_kind fail_kind;      /* the kind a failed response gives (ZE_HTTP, ZE_S3, ZE_AZURE) */
} xfer;

typedef struct {
  hstore *hs;
  CURLM *m;
  xfer *live;
  int active;
  uint64_t rng;
  zerr *e;
} batch;

static double rand01(batch *b) {
  /* xorshift64*: jitter only, so any decent spread will do */
  b->rng ^= b->rng >> 12;
  b->rng ^= b->rng << 25;
  b->rng ^= b->rng >> 27;
  return (double)((b->rng * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

/* What happens to bytes beyond `keep`: the answer is complete (a range cut
 * out of a whole value), the rest is dropped (an error page), or the body is
 * refused (over->OVER_*). */
enum { KEEP_FAIL, KEEP_ENOUGH, KEEP_TRUNCATE };
enum { OVER_NONE, OVER_LIMIT, OVER_RANGE };

static int64_t range_asked(const zrange *r) {
  if (r->off < 0) return r->off == INT64_MIN ? INT64_MAX : -r->off;
  return r->len; /* -1: open at its end */
}

/* At the first byte of a response's body: how much of it to keep. Returns
 * nonzero when the announced length is refused already. */
static int body_window(xfer *x) {
  const zrange *r = x->r;
  int64_t max_body = (int64_t)x->hs->o.max_body, asked = x->range[0] ? range_asked(r) : -1;
  x->win_set = 1;
  x->skip = 0;
  x->windowed = 0;
  x->keep_mode = KEEP_FAIL;
  x->keep = max_body;
  x->refuse = OVER_LIMIT;
  if (x->hstatus < 200 || x->hstatus >= 300) {
    x->keep_mode = KEEP_TRUNCATE;
    x->keep = HTTP_ERRBODY_MAX;
  } else if (x->hstatus == 206 && asked >= 0) {
    x->keep = asked;
    x->refuse = OVER_RANGE;
  } else if (x->hstatus == 200 && x->range[0]) {
    /* the server ignored Range: keep only the range of the whole value */
    if (r->off >= 0) {
      x->skip = r->off;
      x->windowed = 1;
      if (asked >= 0) {
        x->keep_mode = KEEP_ENOUGH;
        x->keep = asked;
      }
    } else if (x->clen >= 0) {
      x->skip = x->clen > asked ? x->clen - asked : 0;
      x->windowed = 1;
      x->keep_mode = KEEP_ENOUGH;
      x->keep = asked;
    } /* a suffix of a value of unknown length: cut in judge() */
  }
  if (x->keep_mode == KEEP_FAIL && x->clen >= 0 && x->clen - x->skip > x->keep) {
    x->over = x->refuse;
    return -1;
  }
  int64_t want = x->keep;
  if (x->clen >= 0 && x->clen - x->skip < want) want = x->clen - x->skip;
  if (want > (int64_t)HTTP_PRESIZE_MAX) want = (int64_t)HTTP_PRESIZE_MAX;
  if (want > 0 && (size_t)want > x->presize) x->presize = (size_t)want;
  return 0;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *ud) {
  xfer *x = ud;
  size_t n = size * nmemb;
  if (n == 0) return 0;
  if (!x->win_set && body_window(x)) return 0; /* the transfer ends with CURLE_WRITE_ERROR */
  x->seen += (int64_t)n;
  size_t total = n;
  if (x->skip > 0) {
    if ((int64_t)n <= x->skip) {
      x->skip -= (int64_t)n;
      return total;
    }
    p += x->skip;
    n -= (size_t)x->skip;
    x->skip = 0;
  }
  int64_t room = x->keep - (int64_t)x->body.size;
  int stop = 0;
  if ((int64_t)n > room) {
    if (x->keep_mode == KEEP_FAIL) {
      x->over = x->refuse;
      return 0;
    }
    n = room > 0 ? (size_t)room : 0;
    stop = 1;
  }
  if (n > 0 && x->body.size + n > x->body.cap) {
    size_t want = x->body.size + n;
    if (want < x->presize) want = x->presize;
    zerr tmp;
    tmp.kind = ZE_OK;
    if (zbuf_reserve(&x->body, want, &tmp)) {
      x->nomem = 1;
      return 0; /* the transfer ends with CURLE_WRITE_ERROR */
    }
  }
  if (n > 0) memcpy(x->body.data + x->body.size, p, n);
  x->body.size += n;
  if (stop) {
    x->enough = 1; /* what is kept is the answer: end the transfer here */
    return 0;
  }
  return total;
}

/* The value of header `name` (lower case, without ':') in the line, trimmed;
 * NULL when the line is another header. */
static const char *header_value(const char *line, size_t n, const char *name, const char **vend) {
  size_t k = strlen(name);
  if (n <= k || line[k] != ':') return NULL;
  for (size_t j = 0; j < k; j++)
    if (ascii_lower(line[j]) != name[j]) return NULL;
  const char *end = line + n;
  while (end > line + k + 1 && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' ||
                                 end[-1] == '\t'))
    end--;
  *vend = end;
  return skip_space(line + k + 1, end);
}

static size_t on_header(char *line, size_t size, size_t nmemb, void *ud) {
  xfer *x = ud;
  size_t n = size * nmemb;
  const char *v, *vend;
  if (n >= 5 && memcmp(line, "HTTP/", 5) == 0) {
    /* a new response (after a redirect, a proxy CONNECT, ...): forget the last */
    x->body.size = 0;
    x->cr.form = 0;
    x->clen = -1;
    x->win_set = x->windowed = x->enough = 0;
    x->over = OVER_NONE;
    x->skip = x->seen = 0;
    x->retry_after = -1;
    x->reason[0] = '\0';
    x->etag[0] = '\0';
    x->last_modified = -1;
    x->hstatus = 0;
    const char *p = memchr(line, ' ', n), *end = line + n;
    if (p != NULL) {
      p = skip_space(p, end);
      while (p < end && *p >= '0' && *p <= '9' && x->hstatus < 1000)
        x->hstatus = x->hstatus * 10 + (*p++ - '0');
      p = skip_space(p, end);
      size_t k = 0;
      while (p < end && *p != '\r' && *p != '\n' && k + 1 < sizeof x->reason) {
        char c = *p++;
        x->reason[k++] = (c >= 32 && c < 127) ? c : '?';
      }
      while (k > 0 && x->reason[k - 1] == ' ') k--;
      x->reason[k] = '\0';
    }
  } else if ((v = header_value(line, n, "content-range", &vend)) != NULL) {
    parse_content_range(v, vend, &x->cr);
  } else if ((v = header_value(line, n, "content-length", &vend)) != NULL) {
    int64_t len;
    const char *p = parse_i64(v, vend, &len);
    if (p != NULL && p == vend) x->clen = len; /* body_window() presizes from it */
  } else if ((v = header_value(line, n, "etag", &vend)) != NULL) {
    size_t k = (size_t)(vend - v) < sizeof x->etag - 1 ? (size_t)(vend - v) : sizeof x->etag - 1;
    memcpy(x->etag, v, k);
    x->etag[k] = '\0';
  } else if ((v = header_value(line, n, "last-modified", &vend)) != NULL) {
    if (vend - v < 64) {
      char date[64];
      memcpy(date, v, (size_t)(vend - v));
      date[vend - v] = '\0';
      time_t t = curl_getdate(date, NULL);
      x->last_modified = t == (time_t)-1 ? -1 : (double)t;
    }
  } else if ((v = header_value(line, n, "retry-after", &vend)) != NULL) {
    int64_t secs;
    const char *p = parse_i64(v, vend, &secs);
    if (p != NULL && p == vend) {
      x->retry_after = (double)secs;
    } else if (vend - v < 64) { /* an HTTP-date */
      char date[64];
      memcpy(date, v, (size_t)(vend - v));
      date[vend - v] = '\0';
      time_t t = curl_getdate(date, NULL);
      if (t != (time_t)-1) {
        double d = difftime(t, time(NULL));
        x->retry_after = d > 0 ? d : 0;
      }
    }
  }
  return n;
}

static void xfer_free(batch *b, xfer *x) {
  if (x->prev) x->prev->next = x->next;
  else b->live = x->next;
  if (x->next) x->next->prev = x->prev;
  if (x->easy) {
    if (x->in_multi) {
      curl_multi_remove_handle(b->m, x->easy);
      b->active--;
    }
    curl_easy_cleanup(x->easy);
  }
  free(x->url);
  curl_slist_free_all(x->hdrs);
  zbuf_free(&x->body);
  free(x);
}

/* The lower-case hex SHA-256 of n bytes (65 bytes with the NUL); 0 on success. */
static int sha256_hex(const uint8_t *p, size_t n, char *hex) {
  static const char digits[] = "0123456789abcdef";
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(n ? p : (const uint8_t *)"", n, md, &len, EVP_sha256(), NULL) != 1 || len != 32)
    return -1;
  for (unsigned int k = 0; k < 32; k++) {
    hex[2 * k] = digits[md[k] >> 4];
    hex[2 * k + 1] = digits[md[k] & 15];
  }
  hex[64] = '\0';
  return 0;
}

static int add_header(struct curl_slist **l, const char *h) {
  struct curl_slist *n = curl_slist_append(*l, h);
  if (n == NULL) return -1;
  *l = n;
  return 0;
}

/* S3: the method, body, signature and headers of a request. */
static int s3_setup(hstore *hs, xfer *x) {
  CURL *h = x->easy;
  const hreq *rq = x->rq;
  const char *method = rq && rq->method ? rq->method : "GET";
  char hdr[128];
  memcpy(hdr, "x-amz-content-sha256: ", 22);
  if (sha256_hex(rq ? rq->body : NULL, rq ? rq->body_n : 0, hdr + 22)) return -1;
  if (add_header(&x->hdrs, hdr)) return -1;
  if (hs->token_hdr && add_header(&x->hdrs, hs->token_hdr)) return -1;
  if (rq && rq->condition && add_header(&x->hdrs, rq->condition)) return -1;
  if (strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0) {
    char ct[96];
    snprintf(ct, sizeof ct, "Content-Type: %s",
             rq->content_type ? rq->content_type : "application/octet-stream");
    if (add_header(&x->hdrs, ct) || add_header(&x->hdrs, "Expect:")) return -1;
    /* the body as POST fields: libcurl sends it again on a retry, and (before
     * 8.x) hashes exactly these bytes for the signature */
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_n);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, rq->body_n ? (const char *)rq->body : "");
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  } else if (strcmp(method, "GET") != 0) {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, x->hdrs);
  if (hs->sigv4) {
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, hs->sigv4);
    curl_easy_setopt(h, CURLOPT_USERPWD, hs->userpwd);
  }
  return 0;
}

static int azure_setup(hstore *hs, xfer *x);
static int azure_resign(hstore *hs, xfer *x);
static char *azure_query(const hstore *hs, const char *q);

/* Requests that carry credentials (signed, or a SAS token in the query). */
static int hs_signed(const hstore *hs) { return hs->sigv4 != NULL || hs->az_key_n > 0 || hs->az_sas != NULL; }

static xfer *xfer_new(batch *b, const zrange *r, size_t i, hreq *rq) {
  hstore *hs = b->hs;
  xfer *x = calloc(1, sizeof *x);
  if (x == NULL) return NULL;
  x->i = i;
  x->r = r;
  x->clen = -1;
  x->retry_after = -1;
  x->next = b->live;
  if (b->live) b->live->prev = x;
  b->live = x;
  x->rq = rq;
  x->hs = hs;
  const char *q = rq && rq->query ? rq->query : hs->query;
  char *qa = hs->azure ? azure_query(hs, q) : NULL; /* a request's query and the SAS token */
  if (qa != NULL) q = qa;
  x->url = url_build(rq && rq->at_bucket ? hs->bucket_base : hs->base, r->key, q, &x->path_len);
  x->easy = curl_easy_init();
  int qfail = hs->azure && qa == NULL;
  free(qa);
  if (x->url == NULL || x->easy == NULL || qfail) {
    xfer_free(b, x);
    return NULL;
  }
  range_spec(r, x->range, sizeof x->range);
  if (hs->azure && r->off < 0) {
    /* Azure serves no suffix ranges: learn the length from byte 0 first */
    snprintf(x->range, sizeof x->range, "0-0");
    x->az_probe = 1;
  }
  if (r->off < 0)
    x->presize = (uint64_t)(r->off == INT64_MIN ? INT64_MAX : -r->off) > HTTP_PRESIZE_MAX
                     ? HTTP_PRESIZE_MAX : (size_t)-r->off;
  else if (r->len > 0)
    x->presize = (uint64_t)r->len > HTTP_PRESIZE_MAX ? HTTP_PRESIZE_MAX : (size_t)r->len;
  CURL *h = x->easy;
  curl_easy_setopt(h, CURLOPT_URL, x->url);
  curl_easy_setopt(h, CURLOPT_PRIVATE, (void *)x);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, (void *)x);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, (void *)x);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, x->errbuf);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_SHARE, hs->share);
  curl_easy_setopt(h, CURLOPT_USERAGENT, hs->user_agent);
  /* the bytes as the server sends them: no Accept-Encoding header, and a
   * Content-Encoding is never decoded (a small gzip body may inflate to
   * gigabytes; chunks are compressed by their codecs already) */
  curl_easy_setopt(h, CURLOPT_HTTP_CONTENT_DECODING, 0L);
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
  /* wait for a connection that may multiplex rather than open another;
   * plain http never does, so there it would only delay the first batch */
  if (hs->https) curl_easy_setopt(h, CURLOPT_PIPEWAIT, 1L);
  /* redirects: never for signed requests, never from https to http, and
   * credentials of the URL go to its own host only */
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, hs_signed(hs) ? 0L : 1L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(h, CURLOPT_UNRESTRICTED_AUTH, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500 /* 7.85.0 */
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, hs->https ? "https" : "http,https");
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, hs->https ? "https" : "http,https");
#else
  curl_easy_setopt(h, CURLOPT_PROTOCOLS, hs->https ? (long)CURLPROTO_HTTPS : (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS, hs->https ? (long)CURLPROTO_HTTPS : (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  if (hs->o.connect_timeout > 0)
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(hs->o.connect_timeout * 1000 + 0.5));
  if (hs->o.low_speed_time > 0) {
    long t = (long)(hs->o.low_speed_time + 0.5);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, t < 1 ? 1L : t);
  }
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  if (x->range[0]) curl_easy_setopt(h, CURLOPT_RANGE, x->range);
  if ((hs->s3 && s3_setup(hs, x)) || (hs->azure && azure_setup(hs, x))) {
    xfer_free(b, x);
    return NULL;
  }
  return x;
}

/* Start (or restart) an attempt. */
static int xfer_start(batch *b, xfer *x) {
  x->waiting = 0;
  x->body.size = 0;
  x->nomem = 0;
  x->cr.form = 0;
  x->clen = -1;
  x->win_set = x->windowed = x->enough = 0;
  x->over = OVER_NONE;
  x->skip = x->seen = 0;
  x->retry_after = -1;
  x->reason[0] = '\0';
  x->hstatus = 0;
  x->errbuf[0] = '\0';
  x->last[0] = '\0';
  x->etag[0] = '\0';
  x->last_modified = -1;
  x->fail_kind = ZE_HTTP;
  if (x->presize && zbuf_reserve(&x->body, x->presize, b->e)) return -1;
  CURLMcode mc = curl_multi_add_handle(b->m, x->easy);
  if (mc != CURLM_OK)
    return zerr_set(b->e, ZE_HTTP, "libcurl cannot start a request: %s", curl_multi_strerror(mc));
  x->in_multi = 1;
  x->attempts++;
  b->active++;
  return 0;
}

/* "the URL" for messages: without the query, long ones shortened in the middle */
static void url_shown(const xfer *x, char *buf, size_t cap) {
  /* redacted before it is shortened, so no part of a secret survives */
  size_t n = redact_text(x->url, x->path_len, NULL, 0);
  char *u = malloc(n + 1);
  if (u == NULL) {
    snprintf(buf, cap, "%s/...", x->hs->shown);
    return;
  }
  redact_text(x->url, x->path_len, u, n + 1);
  if (n < cap && n <= HTTP_URL_SHOWN) {
    memcpy(buf, u, n + 1);
    free(u);
    return;
  }
  size_t keep = (HTTP_URL_SHOWN < cap ? HTTP_URL_SHOWN : cap - 1) - 3;
  size_t head = keep / 2, tail = keep - head;
  /* cut between UTF-8 characters (a base URL may hold some unencoded) */
  while (head > 0 && ((unsigned char)u[head] & 0xC0) == 0x80) head--;
  while (tail > 0 && ((unsigned char)u[n - tail] & 0xC0) == 0x80) tail--;
  memcpy(buf, u, head);
  memcpy(buf + head, "...", 3);
  memcpy(buf + head + 3, u + n - tail, tail);
  buf[head + 3 + tail] = '\0';
  free(u);
}

static void describe_status(xfer *x, long status, const char *extra) {
  const char *txt = status_text(status);
  if (txt == NULL) txt = x->reason;
  if (x->range[0])
    snprintf(x->last, sizeof x->last, "HTTP %ld%s%s%s (range bytes=%s)", status, *txt ? " " : "",
             txt, extra, x->range);
  else
    snprintf(x->last, sizeof x->last, "HTTP %ld%s%s%s", status, *txt ? " " : "", txt, extra);
}

enum { V_OK, V_MISSING, V_RETRY, V_FAIL, V_AGAIN }; /* V_AGAIN: at once, not counted */

/* Judge a finished attempt. V_OK leaves the value in x->body; V_RETRY and
 * V_FAIL describe the failure in x->last; *kind is the error kind to fail with. */
/* The text of the first <tag> of an XML body (libxml2, xml.c), control
 * characters as spaces; 0 when found. */
static int xml_text(const zbuf *b, const char *tag, char *out, size_t cap) {
  return xml_first_text(b->data, b->size, tag, out, cap);
}

/* A failed S3 (Azure) response: "S3 error <Code>: <Message> (HTTP ...)" when
 * the body is an error document (then the kind is ZE_S3, or ZE_AZURE with
 * "Azure error ..."). */
static void describe_failure(xfer *x, long status) {
  char code[64], msg[160];
  x->fail_kind = ZE_HTTP;
  if (xml_text(&x->body, "Code", code, sizeof code) == 0) {
    if (xml_text(&x->body, "Message", msg, sizeof msg)) msg[0] = '\0';
    const char *txt = status_text(status);
    snprintf(x->last, sizeof x->last, "%s error %.63s: %.159s (HTTP %ld%s%.40s)",
             x->hs->azure ? "Azure" : "S3", code, msg, status, txt ? " " : "", txt ? txt : "");
    x->fail_kind = x->hs->azure ? ZE_AZURE : ZE_S3;
    return;
  }
  describe_status(x, status, "");
}

static int judge(xfer *x, CURLcode rc, zerr_kind *kind) {
  const zrange *r = x->r;
  hstore *hs = x->hs;
  *kind = ZE_HTTP;
  if (rc == CURLE_WRITE_ERROR && x->enough) rc = CURLE_OK; /* stopped on purpose */
  if (rc != CURLE_OK) {
    if (x->over == OVER_LIMIT) {
      /* no retry: the same server sends the same body again */
      snprintf(x->last, sizeof x->last,
               "HTTP %d body of more than %.0f bytes (option zarr.max_body_bytes)%s%s", x->hstatus,
               hs->o.max_body, x->range[0] ? " for range bytes=" : "", x->range);
      return V_FAIL;
    }
    if (x->over == OVER_RANGE) {
      snprintf(x->last, sizeof x->last, "HTTP 206 body longer than the %lld bytes asked for (range bytes=%s)",
               (long long)range_asked(r), x->range);
      return V_RETRY;
    }
    if (x->nomem) {
      *kind = ZE_NOMEM;
      snprintf(x->last, sizeof x->last, "out of memory while receiving %.0f bytes",
               (double)x->body.size);
      return V_FAIL;
    }
    const char *why = x->errbuf[0] ? x->errbuf : curl_easy_strerror(rc);
    /* Nothing listening (ECONNREFUSED) is not transient, unlike a connect
     * that timed out (libcurl gives CURLE_COULDNT_CONNECT for both). */
    long os_errno = 0;
    if (rc == CURLE_COULDNT_CONNECT && curl_easy_getinfo(x->easy, CURLINFO_OS_ERRNO, &os_errno) == CURLE_OK &&
        os_errno == ECONNREFUSED) {
      snprintf(x->last, sizeof x->last, "connection refused: nothing listens there (%.160s, curl error %d)", why,
               (int)rc);
      return V_FAIL;
    }
    snprintf(x->last, sizeof x->last, "%.190s (curl error %d)", why, (int)rc);
    return curl_retryable(rc) ? V_RETRY : V_FAIL;
  }
  long status = 0;
  curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
  if (x->az_probe && status == 206 && x->cr.form == 1 && x->cr.total >= 0) {
    /* the suffix as a range of the value whose length the probe gave */
    int64_t want = range_asked(r), t = x->cr.total;
    snprintf(x->range, sizeof x->range, "%lld-%lld", (long long)(t > want ? t - want : 0), (long long)(t - 1));
    x->az_probe = 0;
    if (azure_resign(hs, x)) {
      *kind = ZE_NOMEM;
      snprintf(x->last, sizeof x->last, "out of memory signing a request");
      return V_FAIL;
    }
    return V_AGAIN;
  }
  if (x->az_probe && (status == 416 || (status == 206 && x->cr.form != 1 && x->body.size == 0))) {
    /* byte 0 is not there: the value is empty (Azurite answers 206 without a Content-Range) */
    x->body.size = 0;
    return V_OK;
  }
  if (status >= 300 && status < 400 && hs_signed(hs)) {
    /* following would send the signature and session token elsewhere */
    describe_status(x, status, " (a signed request does not follow redirects)");
    return V_FAIL;
  }
  if (x->rq != NULL) {
    x->rq->status = status;
    memcpy(x->rq->etag, x->etag, sizeof x->etag);
    x->rq->last_modified = x->last_modified;
  }
  if (x->rq != NULL && x->rq->method != NULL && strcmp(x->rq->method, "GET") != 0) {
    /* writes and deletes (and raw requests): the body is the answer */
    if (status >= 200 && status < 300) return V_OK;
    if (status_retryable(status)) {
      if (hs->s3 || hs->azure) describe_failure(x, status);
      else describe_status(x, status, "");
      return V_RETRY;
    }
    if (x->rq->raw) return V_OK;
    if (hs->s3 || hs->azure) {
      describe_failure(x, status);
      *kind = x->fail_kind;
    } else {
      describe_status(x, status, "");
    }
    return V_FAIL;
  }
  if (x->rq != NULL && x->rq->raw && !status_retryable(status) && status != 200 && status != 206)
    return V_OK;
  if (status == 404 && (hs->s3 || hs->azure)) {
    /* a key that is not there, unless the bucket (container) is not there */
    char code[64];
    if (xml_text(&x->body, "Code", code, sizeof code) == 0 &&
        (strcmp(code, "NoSuchBucket") == 0 || strcmp(code, "ContainerNotFound") == 0)) {
      describe_failure(x, status);
      *kind = x->fail_kind;
      return V_FAIL;
    }
  }
  if (status == 404 || status == 410) return V_MISSING;
  /* an anonymous read of a bucket that does not say what it holds */
  if (status == 403 && (hs->s3 || hs->azure) && !hs_signed(hs)) return V_MISSING;
  if (status == 416) {
    /* a suffix of an empty value: the server says "bytes * /0" */
    if (r->off < 0 && x->cr.form == 2 && x->cr.total == 0) {
      x->body.size = 0;
      return V_OK;
    }
    if (hs->s3 || hs->azure) {
      describe_failure(x, status);
      *kind = x->fail_kind;
    } else {
      describe_status(x, status, "");
    }
    return V_FAIL;
  }
  if (status != 200 && status != 206) {
    if (hs->s3 || hs->azure) {
      describe_failure(x, status);
      *kind = x->fail_kind;
    } else {
      describe_status(x, status, "");
    }
    return status_retryable(status) ? V_RETRY : V_FAIL;
  }
  int64_t got = (int64_t)x->body.size;
  if (status == 206) {
    if (!content_range_matches(r, &x->cr)) {
      if (x->cr.form == 1)
        snprintf(x->last, sizeof x->last,
                 "HTTP 206 with Content-Range bytes %lld-%lld/%lld, not the range asked for "
                 "(bytes=%s)",
                 (long long)x->cr.first, (long long)x->cr.last, (long long)x->cr.total,
                 x->range[0] ? x->range : "0-");
      else
        describe_status(x, status, " without a valid Content-Range");
      return V_RETRY;
    }
    int64_t want = x->cr.last - x->cr.first + 1;
    if (got != want) {
      snprintf(x->last, sizeof x->last,
               "HTTP 206 body of %lld bytes where Content-Range promised %lld (range bytes=%s)",
               (long long)got, (long long)want, x->range[0] ? x->range : "0-");
      return V_RETRY;
    }
    return V_OK;
  }
  /* 200: the whole value (a range of it when windowed) */
  if (x->clen >= 0 && !x->enough && x->seen != x->clen) {
    snprintf(x->last, sizeof x->last, "HTTP 200 body of %lld bytes where Content-Length promised %lld",
             (long long)x->seen, (long long)x->clen);
    return V_RETRY;
  }
  if (x->range[0] && !x->windowed) { /* a suffix of a value of unknown length */
    int64_t from, to;
    if (r->off < 0) {
      int64_t want = r->off == INT64_MIN ? INT64_MAX : -r->off;
      from = got > want ? got - want : 0;
      to = got;
    } else {
      from = r->off < got ? r->off : got;
      to = (r->len < 0 || r->len > got - from) ? got : from + r->len;
    }
    if (from > 0 && to > from) memmove(x->body.data, x->body.data + from, (size_t)(to - from));
    x->body.size = (size_t)(to - from);
  }
  return V_OK;
}

static double retry_delay(batch *b, const xfer *x) {
  const zhttp_opts *o = &b->hs->o;
  if (x->retry_after >= 0) return x->retry_after < o->backoff_max ? x->retry_after : o->backoff_max;
  double d = o->backoff;
  for (int k = 1; k < x->attempts && d < o->backoff_max; k++) d *= 2;
  if (d > o->backoff_max) d = o->backoff_max;
  return d / 2 + rand01(b) * d / 2;
}

static int fail_request(batch *b, const xfer *x, zerr_kind kind) {
  char u[HTTP_URL_SHOWN + 1];
  url_shown(x, u, sizeof u);
  return zerr_set(b->e, kind, "%s for %s after %d attempt%s", x->last, u, x->attempts,
                  x->attempts == 1 ? "" : "s");
}

static void wait_for(CURLM *m, int ms) {
#if LIBCURL_VERSION_NUM >= 0x074200 /* 7.66.0: curl_multi_poll waits even with nothing to do */
  curl_multi_poll(m, NULL, 0, ms, NULL);
#else
  int nfds = 0;
  curl_multi_wait(m, NULL, 0, ms, &nfds);
  if (nfds == 0 && ms > 0) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
#endif
}

static const volatile int never_stop = 0;

/* Run n requests, at most `concurrency` at once, calling sink for each as it
 * completes. */
static int run_batch(hstore *hs, const zrange *r, hreq *rq, size_t n, zsink_fn sink,
                     void *ctx, const volatile int *stop, zerr *e) {
  if (n == 0) return 0;
  if (stop == NULL) stop = &never_stop;
  batch b;
  memset(&b, 0, sizeof b);
  b.hs = hs;
  b.e = e;
  b.rng = (uint64_t)(now_s() * 1e9) ^ ((uint64_t)(uintptr_t)&b << 16) ^ 0x9E3779B97F4A7C15ULL;
  if (b.rng == 0) b.rng = 1;
  b.m = pool_take(hs);
  if (b.m == NULL) return zerr_set(e, ZE_NOMEM, "cannot create a libcurl multi handle");
  size_t next = 0, done = 0;
  int rc = 0, conc = hs->o.concurrency;
  while (done < n) {
    if (__atomic_load_n(stop, __ATOMIC_RELAXED)) {
      rc = zerr_set(e, ZE_INTERRUPT, "reading from %s interrupted", hs->shown);
      goto out;
    }
    /* retries that are due first, then new requests */
    double now = now_s();
    for (xfer *x = b.live; x != NULL && b.active < conc; x = x->next)
      if (x->waiting && x->due <= now && xfer_start(&b, x)) {
        rc = -1;
        goto out;
      }
    while (next < n && b.active < conc) {
      size_t i = next++;
      const zrange *q = &r[i];
      if (q->off >= 0 && q->len == 0) { /* nothing to ask for */
        zbuf none = {NULL, 0, 0};
        int s = sink(ctx, i, &none, 0);
        zbuf_free(&none);
        done++;
        if (s) {
          rc = zerr_set(e, ZE_STORE, "reading from %s stopped", hs->shown);
          goto out;
        }
        continue;
      }
      xfer *x = xfer_new(&b, q, i, rq ? &rq[i] : NULL);
      if (x == NULL) {
        rc = zerr_set(e, ZE_NOMEM, "out of memory starting a request to %s", hs->shown);
        goto out;
      }
      if (xfer_start(&b, x)) {
        rc = -1;
        goto out;
      }
    }
    if (done >= n) break;
    int running = 0;
    CURLMcode mc = curl_multi_perform(b.m, &running);
    if (mc != CURLM_OK) {
      rc = zerr_set(e, ZE_HTTP, "libcurl failed: %s", curl_multi_strerror(mc));
      goto out;
    }
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(b.m, &left)) != NULL) {
      if (msg->msg != CURLMSG_DONE) continue;
      CURL *h = msg->easy_handle;
      CURLcode res = msg->data.result; /* msg dies with remove_handle below */
      char *priv = NULL;
      curl_easy_getinfo(h, CURLINFO_PRIVATE, &priv);
      xfer *x = (xfer *)priv;
      curl_multi_remove_handle(b.m, h);
      x->in_multi = 0;
      b.active--;
      zerr_kind kind;
      int v = judge(x, res, &kind);
      if (v == V_AGAIN) {
        x->attempts--;
        x->waiting = 1;
        x->due = now_s();
        continue;
      }
      if (v == V_RETRY && x->attempts <= hs->o.retries) {
        x->waiting = 1;
        x->due = now_s() + retry_delay(&b, x);
        continue;
      }
      if (v == V_RETRY && (x->fail_kind == ZE_S3 || x->fail_kind == ZE_AZURE)) kind = x->fail_kind;
      if (v == V_RETRY || v == V_FAIL) {
        rc = fail_request(&b, x, kind);
        goto out;
      }
      if (v == V_MISSING) x->body.size = 0;
      int s = sink(ctx, x->i, &x->body, v == V_MISSING);
      xfer_free(&b, x);
      done++;
      if (s) {
        rc = zerr_set(e, ZE_STORE, "reading from %s stopped", hs->shown);
        goto out;
      }
    }
    if (done >= n) break;
    /* sleep until there is news, a retry falls due, or it is time to look at *stop */
    now = now_s();
    double wake = now + HTTP_POLL_MS / 1000.0;
    int ready = 0;
    for (xfer *x = b.live; x != NULL; x = x->next)
      if (x->waiting) {
        if (x->due <= now && b.active < conc) ready = 1;
        if (x->due < wake) wake = x->due;
      }
    if (next < n && b.active < conc) ready = 1;
    int ms = ready ? 0 : (int)((wake - now) * 1000 + 0.999);
    if (ms < 0) ms = 0;
    if (ms > HTTP_POLL_MS) ms = HTTP_POLL_MS;
    if (ms > 0 || b.active > 0) wait_for(b.m, ms);
  }
out:
  while (b.live != NULL) xfer_free(&b, b.live);
  pool_give(hs, b.m);
  return rc;
}

/* ---- the zstore_ops table ------------------------------------------------------------- */

static int http_get_many(zstore *s, const zrange *r, size_t n, zsink_fn sink, void *ctx,
                         const volatile int *stop, zerr *e) {
  return run_batch(s->impl, r, NULL, n, sink, ctx, stop, e);
}

typedef struct {
  zbuf *out;
  int *missing;
} one_ctx;

static int one_sink(void *ctx, size_t i, zbuf *body, int missing) {
  one_ctx *c = ctx;
  (void)i;
  *c->missing = missing;
  if (body->data != NULL) { /* take the bytes over instead of copying them */
    zbuf_free(c->out);
    *c->out = *body;
    body->data = NULL;
    body->size = body->cap = 0;
  } else {
    c->out->size = 0;
  }
  return 0;
}

static int http_get(zstore *s, const zrange *r, zbuf *out, int *missing, zerr *e) {
  one_ctx c = {out, missing};
  *missing = 0;
  out->size = 0;
  return run_batch(s->impl, r, NULL, 1, one_sink, &c, NULL, e);
}

/* The first bytes (a GET, which every server and signature scheme serves
 * like any other read) for the Last-Modified and ETag of its answer. Two
 * bytes, not one: some S3 servers (s3rver) read "bytes=0-0" as "bytes=0-". */
static int http_stat(zstore *s, const char *key, double *mtime, char *etag, int *missing, zerr *e) {
  zrange r = {key, 0, 2};
  hreq rq;
  memset(&rq, 0, sizeof rq);
  rq.method = "GET";
  rq.last_modified = -1;
  zbuf out = {NULL, 0, 0};
  one_ctx c = {&out, missing};
  *missing = 0;
  int rc = run_batch(s->impl, &r, &rq, 1, one_sink, &c, NULL, e);
  zbuf_free(&out);
  *mtime = rq.last_modified;
  snprintf(etag, ZSTAT_ETAG_MAX, "%s", rq.etag);
  return rc;
}

static void hstore_free(hstore *hs) {
  if (hs == NULL) return;
  for (int k = 0; k < hs->n_idle; k++) curl_multi_cleanup(hs->idle[k]);
  if (hs->share) {
    curl_share_cleanup(hs->share);
    for (int k = 0; k < (int)CURL_LOCK_DATA_LAST; k++) pthread_mutex_destroy(&hs->share_mu[k]);
    pthread_mutex_destroy(&hs->pool_mu);
  }
  free(hs->base);
  free(hs->shown);
  free(hs->query);
  free(hs->user_agent);
  free(hs->bucket_base);
  free(hs->sigv4);
  free(hs->userpwd);
  free(hs->token_hdr);
  free(hs->az_account);
  if (hs->az_sas) OPENSSL_cleanse(hs->az_sas, strlen(hs->az_sas));
  free(hs->az_sas);
  OPENSSL_cleanse(hs->az_key, sizeof hs->az_key);
  free(hs);
}

/* The store itself and its `where` are freed by store.c. */
static void http_destroy(zstore *s) {
  if (s != NULL) hstore_free(s->impl);
}

static const zstore_ops http_ops = {
  "http", http_get, http_get_many, NULL, NULL, http_destroy, 0, NULL, 1, http_stat, NULL, NULL,
};

static char *dup_str(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d == NULL) return NULL;
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

static int has_scheme(const char *url, const char *scheme) {
  size_t k = strlen(scheme);
  for (size_t j = 0; j < k; j++)
    if (url[j] == '\0' || ascii_lower(url[j]) != scheme[j]) return 0;
  return 1;
}

zstore *http_store_new(const char *base, const char *query, const zhttp_opts *o, zerr *e) {
  http_global_init();
  if (global_rc != CURLE_OK) {
    zerr_set(e, ZE_HTTP, "libcurl could not be initialised: %s", curl_easy_strerror(global_rc));
    return NULL;
  }
  if (base == NULL || !(has_scheme(base, "http://") || has_scheme(base, "https://"))) {
    zerr_set(e, ZE_STORE, "the URL of an HTTP store must start with http:// or https://");
    return NULL;
  }
  size_t nb = strlen(base), scheme = has_scheme(base, "https://") ? 8 : 7;
  while (nb > scheme && base[nb - 1] == '/') nb--;
  if (query == NULL) query = "";
  if (*query == '?') query++;
  hstore *hs = calloc(1, sizeof *hs);
  zstore *s = calloc(1, sizeof *s);
  if (hs == NULL || s == NULL) goto nomem;
  hs->https = scheme == 8;
  hs->base = dup_str(base, nb);
  hs->query = dup_str(query, strlen(query));
  size_t ns = redact_text(base, nb, NULL, 0);
  hs->shown = malloc(ns + 1);
  if (hs->shown) redact_text(base, nb, hs->shown, ns + 1);
  const char *ua = (o && o->user_agent && *o->user_agent) ? o->user_agent : "zarr (R package)";
  hs->user_agent = dup_str(ua, strlen(ua));
  s->where = hs->shown ? dup_str(hs->shown, strlen(hs->shown)) : NULL;
  if (hs->base == NULL || hs->shown == NULL || hs->query == NULL || hs->user_agent == NULL ||
      s->where == NULL)
    goto nomem;
  /* options, with the defaults for anything unset or out of range */
  hs->o.concurrency = (o && o->concurrency > 0) ? o->concurrency : 16;
  if (hs->o.concurrency > HTTP_MAX_CONCURRENCY) hs->o.concurrency = HTTP_MAX_CONCURRENCY;
  hs->o.retries = (o && o->retries >= 0) ? o->retries : 5;
  hs->o.backoff = (o && o->backoff >= 0) ? o->backoff : 0.5;
  hs->o.backoff_max = (o && o->backoff_max >= 0) ? o->backoff_max : 30;
  hs->o.connect_timeout = (o && o->connect_timeout >= 0) ? o->connect_timeout : 30;
  hs->o.low_speed_time = (o && o->low_speed_time >= 0) ? o->low_speed_time : 30;
  hs->o.max_body = (o && o->max_body >= 1) ? o->max_body : 2147483648.0;
  if (hs->o.max_body > 9e18) hs->o.max_body = 9e18;
  hs->o.user_agent = hs->user_agent;
  hs->share = curl_share_init();
  if (hs->share == NULL) goto nomem;
  for (int k = 0; k < (int)CURL_LOCK_DATA_LAST; k++) pthread_mutex_init(&hs->share_mu[k], NULL);
  pthread_mutex_init(&hs->pool_mu, NULL);
  curl_share_setopt(hs->share, CURLSHOPT_LOCKFUNC, share_lock);
  curl_share_setopt(hs->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
  curl_share_setopt(hs->share, CURLSHOPT_USERDATA, (void *)hs);
  curl_share_setopt(hs->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  curl_share_setopt(hs->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  s->ops = &http_ops;
  s->impl = hs;
  return s;
nomem:
  hstore_free(hs);
  if (s) free(s->where);
  free(s);
  zerr_set(e, ZE_NOMEM, "out of memory creating an HTTP store");
  return NULL;
}

/* ---- R entry points (the R thread) ------------------------------------------- */

static void opts_from_r(SEXP opts, zhttp_opts *o) {
  o->concurrency = asInteger(list_get(opts, "concurrency"));
  o->retries = asInteger(list_get(opts, "retries"));
  o->backoff = asReal(list_get(opts, "backoff"));
  o->backoff_max = asReal(list_get(opts, "backoff_max"));
  o->connect_timeout = asReal(list_get(opts, "connect_timeout"));
  o->low_speed_time = asReal(list_get(opts, "low_speed_time"));
  o->max_body = asReal(list_get(opts, "max_body"));
  o->user_agent = list_str(opts, "user_agent", "");
}

/* The store's name in the decoded-chunk cache: its URL without user-info,
 * ending in "/", so that entries are named by URL whichever folder the
 * store was opened at, and a write through any store of the URL (plain
 * HTTP, S3, Azure) drops them; and its salt, a digest of what else decides
 * the bytes a request gets (the URL's user-info and query, every
 * credential), so that entries are shared only by stores that send the
 * same. Set once the store is made (S3 and Azure add their credentials
 * after http_store_new()); raises when out of memory. */
static void http_set_ident(zstore *s) {
  hstore *hs = s->impl;
  const char *b = hs->base, *auth = strstr(b, "://");
  auth = auth ? auth + 3 : b;
  size_t alen = strcspn(auth, "/?#");
  const char *at = memchr(auth, '@', alen);
  const char *host = at ? at + 1 : auth;
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdn = 0;
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  int ok = c != NULL && EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1;
  const char *parts[] = {hs->query, hs->userpwd, hs->token_hdr, hs->sigv4, hs->az_account, hs->az_sas};
  if (ok && at) ok = EVP_DigestUpdate(c, auth, (size_t)(at - auth)) == 1;
  for (size_t i = 0; ok && i < sizeof parts / sizeof *parts; i++)
    ok = EVP_DigestUpdate(c, parts[i] ? parts[i] : "", parts[i] ? strlen(parts[i]) + 1 : 0) == 1 &&
         EVP_DigestUpdate(c, parts[i] ? "\1" : "\2", 1) == 1;
  if (ok && hs->az_key_n > 0) ok = EVP_DigestUpdate(c, hs->az_key, (size_t)hs->az_key_n) == 1;
  if (ok) ok = EVP_DigestFinal_ex(c, md, &mdn) == 1 && mdn >= 8;
  EVP_MD_CTX_free(c);
  size_t n = (size_t)(auth - b) + strlen(host) + 6;
  char *id = ok ? malloc(n) : NULL;
  if (id != NULL) {
    snprintf(id, n, "url:%.*s%s/", (int)(auth - b), b, host);
    memcpy(&s->cache_salt, md, sizeof s->cache_salt);
  }
  OPENSSL_cleanse(md, sizeof md);
  free(s->ident);
  s->ident = id;
  if (id == NULL) zarr_raise(ZE_NOMEM, NULL, NULL, "out of memory naming an HTTP store");
}

/* base: the store's URL without query; query: "" or "a=b&c=d"; opts: see
 * http_options() in R/store_http.R. */
SEXP ffi_store_http(SEXP base, SEXP query, SEXP opts) {
  zhttp_opts o;
  opts_from_r(opts, &o);
  zerr e = {ZE_OK, ""};
  zstore *s = http_store_new(translateCharUTF8(STRING_ELT(base, 0)),
                             translateCharUTF8(STRING_ELT(query, 0)), &o, &e);
  if (s == NULL) zarr_raise_err(&e, NULL, NULL);
  SEXP ptr = PROTECT(store_wrap(s, R_NilValue));
  http_set_ident(s);
  UNPROTECT(1);
  return ptr;
}

/* The options are read in R each time a store is used: take them over
 * (between batches, so no transfer sees them change). */
static SEXP http_apply_options(hstore *hs, SEXP opts) {
  zhttp_opts o;
  opts_from_r(opts, &o);
  if (o.concurrency > 0) hs->o.concurrency = o.concurrency < HTTP_MAX_CONCURRENCY ? o.concurrency : HTTP_MAX_CONCURRENCY;
  if (o.retries != NA_INTEGER && o.retries >= 0) hs->o.retries = o.retries;
  if (o.backoff >= 0) hs->o.backoff = o.backoff;
  if (o.backoff_max >= 0) hs->o.backoff_max = o.backoff_max;
  if (o.connect_timeout >= 0) hs->o.connect_timeout = o.connect_timeout;
  if (o.low_speed_time >= 0) hs->o.low_speed_time = o.low_speed_time;
  if (o.max_body >= 1) hs->o.max_body = o.max_body < 9e18 ? o.max_body : 9e18;
  return R_NilValue;
}

SEXP ffi_store_http_options(SEXP ptr, SEXP opts) {
  zstore *s = store_from(ptr);
  if (s->ops != &http_ops) zarr_raise(ZE_STORE, NULL, NULL, "internal: not an HTTP store");
  return http_apply_options(s->impl, opts);
}

/* ---- S3 ------------------------------------------------------------------------------
 *
 * An S3 store is an HTTP store whose requests are signed with AWS Signature
 * Version 4 by libcurl (CURLOPT_AWS_SIGV4, "aws:amz:REGION:s3"; the
 * x-amz-content-sha256 header is the SHA-256 of the body, from libcrypto),
 * plus writes: PUT of a value (in parts above multipart_size: initiate, the
 * parts concurrently through run_batch, complete; aborted on failure) and
 * DELETE. Failed responses with an S3 error document fail with ZE_S3, whose
 * message starts "S3 error <Code>: <Message>". Anonymous stores send no
 * signature, and read a 403 as a missing key (buckets that hide what they
 * hold). Listing is done in R through ffi_store_s3_request(). */

#define S3_PART_MAX 10000

static int s3_one(hstore *hs, const char *key, hreq *rq, zbuf *out, zerr *e) {
  zrange r = {key, 0, -1};
  int missing = 0;
  one_ctx c = {out, &missing};
  out->size = 0;
  return run_batch(hs, &r, rq, 1, one_sink, &c, NULL, e);
}

static void query_escape(const char *s, char *out, size_t cap) {
  static const char hex[] = "0123456789ABCDEF";
  size_t k = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p && k + 4 < cap; p++) {
    if (is_unreserved(*p)) {
      out[k++] = (char)*p;
    } else {
      out[k++] = '%';
      out[k++] = hex[*p >> 4];
      out[k++] = hex[*p & 15];
    }
  }
  out[k] = '\0';
}

static int drop_sink(void *ctx, size_t i, zbuf *body, int missing) {
  (void)ctx;
  (void)i;
  (void)body;
  (void)missing;
  return 0;
}

static int s3_multipart(hstore *hs, const char *key, const uint8_t *p, size_t n, zerr *e) {
#ifndef HAVE_LIBXML2 /* the UploadId comes back in an XML document */
  (void)p, (void)n;
  return zerr_set(e, ZE_UNSUPPORTED, "writing %s/%s in parts (above multipart_size) needs libxml2, which "
                  "this build of zarr lacks", hs->shown, key);
#endif
  size_t part = (size_t)hs->multipart_size;
  if (part < 5u << 20) part = 5u << 20; /* S3's smallest part */
  size_t nparts = (n + part - 1) / part;
  if (nparts > S3_PART_MAX) {
    part = (n + S3_PART_MAX - 1) / S3_PART_MAX;
    nparts = (n + part - 1) / part;
  }
  zbuf out = {NULL, 0, 0};
  hreq init;
  memset(&init, 0, sizeof init);
  init.method = "POST";
  init.query = "uploads=";
  int rc = s3_one(hs, key, &init, &out, e);
  char id[512], idq[1600];
  if (rc == 0 && xml_text(&out, "UploadId", id, sizeof id)) {
    zbuf_free(&out);
    return zerr_set(e, ZE_S3, "S3 error: no UploadId in the answer to a multipart upload of %s/%s",
                    hs->shown, key);
  }
  zbuf_free(&out);
  if (rc) return rc;
  query_escape(id, idq, sizeof idq);
  hreq *rq = calloc(nparts, sizeof *rq);
  zrange *r = calloc(nparts, sizeof *r);
  char **qs = calloc(nparts, sizeof *qs);
  char *xml = NULL;
  if (rq == NULL || r == NULL || qs == NULL) {
    rc = zerr_set(e, ZE_NOMEM, "out of memory uploading %s", key);
    goto abort;
  }
  for (size_t k = 0; k < nparts; k++) {
    size_t off = k * part, len = n - off < part ? n - off : part;
    size_t qn = strlen(idq) + 48;
    qs[k] = malloc(qn);
    if (qs[k] == NULL) {
      rc = zerr_set(e, ZE_NOMEM, "out of memory uploading %s", key);
      goto abort;
    }
    snprintf(qs[k], qn, "partNumber=%zu&uploadId=%s", k + 1, idq);
    r[k].key = key;
    r[k].off = 0;
    r[k].len = -1;
    rq[k].method = "PUT";
    rq[k].query = qs[k];
    rq[k].body = p + off;
    rq[k].body_n = len;
  }
  rc = run_batch(hs, r, rq, nparts, drop_sink, NULL, NULL, e);
  if (rc) goto abort;
  size_t cap = 128 + nparts * (64 + sizeof rq[0].etag);
  xml = malloc(cap);
  if (xml == NULL) {
    rc = zerr_set(e, ZE_NOMEM, "out of memory uploading %s", key);
    goto abort;
  }
  size_t w = (size_t)snprintf(xml, cap, "<CompleteMultipartUpload>");
  for (size_t k = 0; k < nparts; k++) {
    if (rq[k].etag[0] == '\0') {
      rc = zerr_set(e, ZE_S3, "S3 error: part %zu of %s/%s came back without an ETag", k + 1,
                    hs->shown, key);
      goto abort;
    }
    w += (size_t)snprintf(xml + w, cap - w, "<Part><PartNumber>%zu</PartNumber><ETag>%s</ETag></Part>",
                          k + 1, rq[k].etag);
  }
  w += (size_t)snprintf(xml + w, cap - w, "</CompleteMultipartUpload>");
  {
    char q[1700];
    snprintf(q, sizeof q, "uploadId=%s", idq);
    hreq done;
    memset(&done, 0, sizeof done);
    done.method = "POST";
    done.query = q;
    done.body = (const uint8_t *)xml;
    done.body_n = w;
    done.content_type = "application/xml";
    rc = s3_one(hs, key, &done, &out, e);
    /* S3 may answer 200 and still fail, with an error document */
    char code[64], msg[160];
    if (rc == 0 && xml_text(&out, "Code", code, sizeof code) == 0 &&
        xml_text(&out, "UploadId", msg, sizeof msg) != 0 && xml_text(&out, "ETag", msg, sizeof msg) != 0) {
      if (xml_text(&out, "Message", msg, sizeof msg)) msg[0] = '\0';
      rc = zerr_set(e, ZE_S3, "S3 error %s: %s (completing the upload of %s/%s)", code, msg, hs->shown, key);
    }
    zbuf_free(&out);
  }
  if (rc == 0) goto out;
abort: {
    /* give the parts back; a failure here changes nothing about the error */
    char q[1700];
    snprintf(q, sizeof q, "uploadId=%s", idq);
    hreq del;
    memset(&del, 0, sizeof del);
    del.method = "DELETE";
    del.query = q;
    del.raw = 1;
    zerr ignore = {ZE_OK, ""};
    s3_one(hs, key, &del, &out, &ignore);
    zbuf_free(&out);
  }
out:
  if (qs)
    for (size_t k = 0; k < nparts; k++) free(qs[k]);
  free(qs);
  free(rq);
  free(r);
  free(xml);
  return rc;
}

/* A value written in one PUT request (S3 and Azure, below their multipart
 * size). */
static int put_whole(hstore *hs, const char *key, const uint8_t *p, size_t n, zerr *e) {
  hreq rq;
  memset(&rq, 0, sizeof rq);
  rq.method = "PUT";
  rq.body = p;
  rq.body_n = n;
  zbuf out = {NULL, 0, 0};
  int rc = s3_one(hs, key, &rq, &out, e);
  zbuf_free(&out);
  return rc;
}

static int s3_set(zstore *s, const char *key, const uint8_t *p, size_t n, zerr *e) {
  hstore *hs = s->impl;
  if (hs->read_only) return zerr_set(e, ZE_READ_ONLY, "the S3 store %s is read-only", hs->shown);
  if (hs->multipart_size > 0 && (double)n > hs->multipart_size) return s3_multipart(hs, key, p, n, e);
  return put_whole(hs, key, p, n, e);
}

/* Delete Object (S3) or Delete Blob (Azure). */
static int s3_erase(zstore *s, const char *key, zerr *e) {
  hstore *hs = s->impl;
  const char *svc = hs->azure ? "Azure" : "S3";
  if (hs->read_only) return zerr_set(e, ZE_READ_ONLY, "the %s store %s is read-only", svc, hs->shown);
  hreq rq;
  memset(&rq, 0, sizeof rq);
  rq.method = "DELETE";
  rq.raw = 1;
  zbuf out = {NULL, 0, 0};
  int rc = s3_one(hs, key, &rq, &out, e);
  if (rc == 0 && rq.status != 404 && (rq.status < 200 || rq.status >= 300)) {
    /* describe it as any failed request is described */
    char code[64], msg[160];
    if (xml_text(&out, "Code", code, sizeof code) == 0) {
      if (xml_text(&out, "Message", msg, sizeof msg)) msg[0] = '\0';
      rc = zerr_set(e, hs->azure ? ZE_AZURE : ZE_S3, "%s error %s: %s (HTTP %ld) deleting %s/%s", svc, code,
                    msg, rq.status, hs->shown, key);
    } else {
      rc = zerr_set(e, ZE_HTTP, "HTTP %ld deleting %s/%s", rq.status, hs->shown, key);
    }
  }
  zbuf_free(&out);
  return rc;
}

static const zstore_ops az_ops; /* the Azure section, at the end */

static const zstore_ops s3_ops = {
  "s3", http_get, http_get_many, s3_set, s3_erase, http_destroy, 0, NULL, 1, http_stat, NULL, NULL,
};

/* bucket_base: the bucket's URL; base: the store root's URL in it; region
 * NULL for anonymous requests. */
static zstore *s3_store_new(const char *bucket_base, const char *base, const char *region,
                            const char *key, const char *secret, const char *token,
                            const zhttp_opts *o, int read_only, double multipart_size, zerr *e) {
  zstore *s = http_store_new(base, "", o, e);
  if (s == NULL) return NULL;
  hstore *hs = s->impl;
  s->ops = &s3_ops;
  hs->s3 = 1;
  hs->read_only = read_only;
  hs->multipart_size = multipart_size;
  size_t nb = strlen(bucket_base);
  while (nb > 0 && bucket_base[nb - 1] == '/') nb--;
  hs->bucket_base = dup_str(bucket_base, nb);
  int bad = hs->bucket_base == NULL;
  if (region != NULL) {
    size_t k = strlen(region) + 16;
    hs->sigv4 = malloc(k);
    if (hs->sigv4) snprintf(hs->sigv4, k, "aws:amz:%s:s3", region);
    k = strlen(key) + strlen(secret) + 2;
    hs->userpwd = malloc(k);
    if (hs->userpwd) snprintf(hs->userpwd, k, "%s:%s", key, secret);
    bad = bad || hs->sigv4 == NULL || hs->userpwd == NULL;
    if (token != NULL && *token) {
      k = strlen(token) + 32;
      hs->token_hdr = malloc(k);
      if (hs->token_hdr) snprintf(hs->token_hdr, k, "x-amz-security-token: %s", token);
      bad = bad || hs->token_hdr == NULL;
    }
  }
  if (bad) {
    http_destroy(s);
    free(s->where);
    free(s);
    zerr_set(e, ZE_NOMEM, "out of memory creating an S3 store");
    return NULL;
  }
  return s;
}

static const char *opt_str(SEXP x) {
  return (isString(x) && XLENGTH(x) == 1 && STRING_ELT(x, 0) != NA_STRING)
             ? translateCharUTF8(STRING_ELT(x, 0)) : NULL;
}

/* cfg: list(bucket_url, url, region (NULL: anonymous), access_key,
 * secret_key, session_token, read_only, multipart_size); opts as for HTTP. */
SEXP ffi_store_s3(SEXP cfg, SEXP opts) {
  zhttp_opts o;
  opts_from_r(opts, &o);
  zerr e = {ZE_OK, ""};
  const char *region = opt_str(list_get(cfg, "region"));
  const char *key = opt_str(list_get(cfg, "access_key"));
  const char *secret = opt_str(list_get(cfg, "secret_key"));
  if (region && (key == NULL || secret == NULL))
    zarr_raise(ZE_STORE, NULL, NULL, "internal: signed S3 store without a key and secret");
  zstore *s = s3_store_new(opt_str(list_get(cfg, "bucket_url")), opt_str(list_get(cfg, "url")),
                           region, key, secret, opt_str(list_get(cfg, "session_token")), &o,
                           asLogical(list_get(cfg, "read_only")) == TRUE,
                           asReal(list_get(cfg, "multipart_size")), &e);
  if (s == NULL) zarr_raise_err(&e, NULL, NULL);
  SEXP ptr = PROTECT(store_wrap(s, R_NilValue));
  http_set_ident(s);
  UNPROTECT(1);
  return ptr;
}

static SEXP alloc_body(void *data) { return allocVector(RAWSXP, (R_xlen_t)((zbuf *)data)->size); }
static SEXP alloc_body_failed(SEXP cond, void *data) {
  (void)cond;
  (void)data;
  return R_NilValue;
}

/* One request, answered whatever its status (after retries of 5xx and the
 * like): list(status, body, etag). key is below the store root, or below the
 * bucket with at_bucket; query is sent as it is (canonical: sorted and
 * encoded by the caller). condition: NULL, or a header line of a
 * conditional write (If-Match, If-None-Match), whose body is then an object
 * (application/octet-stream) rather than an XML document. */
SEXP ffi_store_s3_request(SEXP ptr, SEXP method, SEXP key, SEXP query, SEXP body, SEXP at_bucket,
                          SEXP condition) {
  zstore *s = store_from(ptr);
  if (s->ops != &s3_ops && s->ops != &az_ops) zarr_raise(ZE_STORE, NULL, NULL, "internal: not an S3 or Azure store");
  hstore *hs = s->impl;
  hreq rq;
  memset(&rq, 0, sizeof rq);
  rq.method = translateChar(STRING_ELT(method, 0));
  rq.query = translateCharUTF8(STRING_ELT(query, 0));
  if (!isNull(body)) {
    rq.body = RAW(body);
    rq.body_n = (size_t)XLENGTH(body);
    rq.content_type = isNull(condition) ? "application/xml" : NULL;
  }
  if (!isNull(condition)) {
    if (TYPEOF(condition) != STRSXP || XLENGTH(condition) != 1)
      zarr_raise(ZE_STORE, NULL, NULL, "internal: a condition is one header line");
    rq.condition = translateChar(STRING_ELT(condition, 0));
  }
  rq.raw = 1;
  rq.at_bucket = asLogical(at_bucket) == TRUE;
  const char *k = translateCharUTF8(STRING_ELT(key, 0));
  zbuf out = {NULL, 0, 0};
  zerr e = {ZE_OK, ""};
  if (s3_one(hs, k, &rq, &out, &e)) {
    zbuf_free(&out);
    zarr_raise_err(&e, NULL, k);
  }
  /* the body into an R vector; an allocation failure must not leak it */
  SEXP b = R_tryCatchError(alloc_body, &out, alloc_body_failed, NULL);
  if (b == R_NilValue) {
    zbuf_free(&out);
    zarr_raise(ZE_NOMEM, NULL, k, "cannot allocate an R vector for an S3 answer");
  }
  PROTECT(b);
  if (out.size) memcpy(RAW(b), out.data, out.size);
  zbuf_free(&out);
  SEXP res = PROTECT(allocVector(VECSXP, 3));
  SEXP nm = PROTECT(allocVector(STRSXP, 3));
  SET_STRING_ELT(nm, 0, mkChar("status"));
  SET_STRING_ELT(nm, 1, mkChar("body"));
  SET_STRING_ELT(nm, 2, mkChar("etag"));
  setAttrib(res, R_NamesSymbol, nm);
  SET_VECTOR_ELT(res, 0, ScalarInteger((int)rq.status));
  SET_VECTOR_ELT(res, 1, b);
  SET_VECTOR_ELT(res, 2, mkString(rq.etag));
  UNPROTECT(3);
  return res;
}

SEXP ffi_store_s3_options(SEXP ptr, SEXP opts) {
  zstore *s = store_from(ptr);
  if (s->ops != &s3_ops && s->ops != &az_ops) zarr_raise(ZE_STORE, NULL, NULL, "internal: not an S3 or Azure store");
  hstore *hs = s->impl;
  double mp = asReal(list_get(opts, "multipart_size"));
  if (!ISNAN(mp) && mp > 0) hs->multipart_size = mp;
  return http_apply_options(hs, opts);
}

/* ---- Azure Blob --------------------------------------------------------------------
 *
 * An Azure store is an HTTP store at a container's URL (bucket_base) whose
 * requests are authorised in one of three ways: Shared Key (an HMAC-SHA256,
 * keyed with the decoded account key, of the request's string to sign, sent
 * as "Authorization: SharedKey ACCOUNT:SIGNATURE"), a SAS token added to the
 * query of every request, or nothing (containers with public access). Every
 * request carries x-ms-date and x-ms-version. Writes: Put Blob
 * (x-ms-blob-type: BlockBlob); values above multipart_size go up as blocks
 * (Put Block, concurrently through run_batch) committed by Put Block List
 * (uncommitted blocks are dropped by the service itself, so a failure leaves
 * nothing to clean up). Delete Blob through s3_erase(). A failed response
 * with an error document fails with ZE_AZURE, "Azure error <Code>: <Message>
 * (HTTP ...)"; the account key and the SAS token never appear in a message
 * (the key is never in a URL; the SAS is in the query, which messages leave
 * out, and redact_text() hides its sig= anyway). Listing (List Blobs) is done
 * in R through ffi_store_s3_request() and ffi_azure_parse_list(). */

#define AZ_VERSION "2021-08-06"
#define AZ_BLOCK_MAX 50000

/* The query q (may be "") with the store's SAS token appended; NULL when out
 * of memory. The caller frees it. */
static char *azure_query(const hstore *hs, const char *q) {
  const char *sas = hs->az_sas ? hs->az_sas : "";
  if (q == NULL) q = "";
  size_t nq = strlen(q), ns = strlen(sas), k = nq;
  char *out = malloc(nq + ns + 2);
  if (out == NULL) return NULL;
  memcpy(out, q, nq);
  if (nq && ns) out[k++] = '&';
  memcpy(out + k, sas, ns);
  out[k + ns] = '\0';
  return out;
}

/* An RFC 1123 date in GMT, in English whatever the locale. */
static void az_date(char *buf, size_t cap) {
  static const char *const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  snprintf(buf, cap, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday % 7], tm.tm_mday,
           months[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = ascii_lower(c);
  return (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
}

/* Percent-decode p[0, n) into out (room for n + 1 bytes); returns the length. */
static size_t pct_decode(const char *p, size_t n, char *out) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    int hi, lo;
    if (p[i] == '%' && i + 2 < n && (hi = hex_value(p[i + 1])) >= 0 && (lo = hex_value(p[i + 2])) >= 0) {
      out[k++] = (char)(hi * 16 + lo);
      i += 2;
    } else {
      out[k++] = p[i];
    }
  }
  out[k] = '\0';
  return k;
}

typedef struct {
  char *name, *value;
} az_param;

static int param_cmp(const void *a, const void *b) {
  return strcmp(((const az_param *)a)->name, ((const az_param *)b)->name);
}

/* The canonicalized resource of a request URL: "/ACCOUNT" + the URL's path
 * as sent + "\nname:value" for each query parameter (names in lower case,
 * sorted; values decoded). NULL when out of memory. */
static char *az_resource(const hstore *hs, const char *url) {
  const char *p = strstr(url, "://");
  p = p ? p + 3 : url;
  while (*p && *p != '/' && *p != '?') p++;
  const char *q = strchr(p, '?');
  size_t np = q ? (size_t)(q - p) : strlen(p), nq = q ? strlen(q + 1) : 0;
  size_t na = strlen(hs->az_account), cap = 2 + na + np + 2 * nq + 8;
  size_t nparams = 0;
  for (size_t i = 0; q && i <= nq; i++)
    if (i == nq || q[1 + i] == '&') nparams++;
  char *out = malloc(cap);
  az_param *ps = calloc(nparams ? nparams : 1, sizeof *ps);
  char *buf = malloc(2 * nq + 2 * nparams + 2);
  if (out == NULL || ps == NULL || buf == NULL) {
    free(out);
    free(ps);
    free(buf);
    return NULL;
  }
  size_t w = (size_t)snprintf(out, cap, "/%s", hs->az_account);
  memcpy(out + w, np ? p : "/", np ? np : 1);
  w += np ? np : 1;
  /* the parameters, decoded into buf */
  size_t used = 0, n = 0;
  const char *s = q ? q + 1 : "";
  while (q && *s) {
    const char *amp = strchr(s, '&'), *end = amp ? amp : s + strlen(s);
    const char *eq = memchr(s, '=', (size_t)(end - s));
    const char *ne = eq ? eq : end;
    if (ne > s) {
      ps[n].name = buf + used;
      used += pct_decode(s, (size_t)(ne - s), buf + used) + 1;
      for (char *c = ps[n].name; *c; c++) *c = ascii_lower(*c);
      ps[n].value = buf + used;
      used += (eq ? pct_decode(eq + 1, (size_t)(end - eq - 1), buf + used) : (buf[used] = '\0', 0)) + 1;
      n++;
    }
    if (amp == NULL) break;
    s = amp + 1;
  }
  qsort(ps, n, sizeof *ps, param_cmp);
  for (size_t i = 0; i < n; i++) {
    /* a name given twice: its values joined by commas */
    if (i > 0 && strcmp(ps[i].name, ps[i - 1].name) == 0) {
      w += (size_t)snprintf(out + w, cap - w, ",%s", ps[i].value);
      continue;
    }
    w += (size_t)snprintf(out + w, cap - w, "\n%s:%s", ps[i].name, ps[i].value);
  }
  out[w < cap ? w : cap - 1] = '\0';
  free(ps);
  free(buf);
  return out;
}

/* "Authorization: SharedKey ACCOUNT:<base64 HMAC-SHA256 of sts>" into *hdr. */
static int az_authorization(const hstore *hs, const char *sts, char **hdr) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdn = 0;
  if (HMAC(EVP_sha256(), hs->az_key, hs->az_key_n, (const unsigned char *)sts, strlen(sts), md, &mdn) == NULL)
    return -1;
  char sig[4 * ((EVP_MAX_MD_SIZE + 2) / 3) + 1];
  EVP_EncodeBlock((unsigned char *)sig, md, (int)mdn);
  OPENSSL_cleanse(md, sizeof md);
  size_t k = strlen(hs->az_account) + strlen(sig) + 40;
  *hdr = malloc(k);
  if (*hdr == NULL) return -1;
  snprintf(*hdr, k, "Authorization: SharedKey %s:%s", hs->az_account, sig);
  return 0;
}

/* Azure: the method, body, version, date and authorisation of a request. */
static int azure_setup(hstore *hs, xfer *x) {
  CURL *h = x->easy;
  const hreq *rq = x->rq;
  const char *method = rq && rq->method ? rq->method : "GET";
  int put = strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0;
  char date[48], hdr[96], ctype[96] = "", clen[32] = "";
  az_date(date, sizeof date);
  snprintf(hdr, sizeof hdr, "x-ms-date: %s", date);
  /* Put Blob (a PUT without a query) creates a block blob; Put Block and
   * Put Block List (comp=...) take no blob type */
  int put_blob = put && !(rq->query && *rq->query);
  if (add_header(&x->hdrs, hdr) || add_header(&x->hdrs, "x-ms-version: " AZ_VERSION) ||
      (put_blob && add_header(&x->hdrs, "x-ms-blob-type: BlockBlob")))
    return -1;
  if (put) {
    snprintf(ctype, sizeof ctype, "%s", rq->content_type ? rq->content_type : "application/octet-stream");
    char ct[128];
    snprintf(ct, sizeof ct, "Content-Type: %s", ctype);
    if (add_header(&x->hdrs, ct) || add_header(&x->hdrs, "Expect:")) return -1;
    if (rq->body_n) snprintf(clen, sizeof clen, "%zu", rq->body_n); /* 0 is signed as "" */
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_n);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, rq->body_n ? (const char *)rq->body : "");
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  } else if (strcmp(method, "GET") != 0) {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  }
  if (hs->az_key_n > 0) {
    char *res = az_resource(hs, x->url);
    if (res == NULL) return -1;
    /* VERB, Content-Encoding, -Language, -Length, -MD5, -Type, Date,
     * If-Modified-Since, If-Match, If-None-Match, If-Unmodified-Since, Range,
     * the x-ms-* headers (sorted), the resource */
    size_t k = strlen(res) + strlen(date) + 256;
    char *sts = malloc(k);
    if (sts == NULL) {
      free(res);
      return -1;
    }
    snprintf(sts, k, "%s\n\n\n%s\n\n%s\n\n\n\n\n\n%s%s\n%sx-ms-date:%s\nx-ms-version:%s\n%s", method, clen,
             ctype, x->range[0] ? "bytes=" : "", x->range, put_blob ? "x-ms-blob-type:BlockBlob\n" : "",
             date, AZ_VERSION, res);
    char *auth = NULL;
    int rc = az_authorization(hs, sts, &auth);
    free(sts);
    free(res);
    if (rc == 0) rc = add_header(&x->hdrs, auth);
    if (auth) OPENSSL_cleanse(auth, strlen(auth));
    free(auth);
    if (rc) return -1;
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, x->hdrs);
  return 0;
}

/* The request again with its new range (which Shared Key signs). */
static int azure_resign(hstore *hs, xfer *x) {
  curl_slist_free_all(x->hdrs);
  x->hdrs = NULL;
  curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, NULL);
  curl_easy_setopt(x->easy, CURLOPT_RANGE, x->range);
  return azure_setup(hs, x);
}

/* Values above multipart_size: blocks, then the list that commits them. */
static int azure_blocks(hstore *hs, const char *key, const uint8_t *p, size_t n, zerr *e) {
  size_t block = (size_t)hs->multipart_size;
  if (block < 1) block = 1;
  size_t nb = (n + block - 1) / block;
  if (nb > AZ_BLOCK_MAX) {
    block = (n + AZ_BLOCK_MAX - 1) / AZ_BLOCK_MAX;
    nb = (n + block - 1) / block;
  }
  int rc = 0;
  hreq *rq = calloc(nb, sizeof *rq);
  zrange *r = calloc(nb, sizeof *r);
  char (*ids)[24] = calloc(nb, sizeof *ids);
  char (*qs)[96] = calloc(nb, sizeof *qs);
  size_t cap = 128 + nb * (sizeof ids[0] + 20);
  char *xml = malloc(cap);
  if (rq == NULL || r == NULL || ids == NULL || qs == NULL || xml == NULL) {
    rc = zerr_set(e, ZE_NOMEM, "out of memory uploading %s", key);
    goto out;
  }
  size_t w = (size_t)snprintf(xml, cap, "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>");
  for (size_t k = 0; k < nb; k++) {
    /* block ids: all of one length (12 bytes, so base64 without padding) */
    char raw[16];
    snprintf(raw, sizeof raw, "zarr%08u", (unsigned)(k % 100000000u));
    EVP_EncodeBlock((unsigned char *)ids[k], (const unsigned char *)raw, 12);
    char esc[72];
    query_escape(ids[k], esc, sizeof esc);
    snprintf(qs[k], sizeof qs[k], "blockid=%s&comp=block", esc);
    size_t off = k * block;
    r[k].key = key;
    r[k].off = 0;
    r[k].len = -1;
    rq[k].method = "PUT";
    rq[k].query = qs[k];
    rq[k].body = p + off;
    rq[k].body_n = n - off < block ? n - off : block;
    w += (size_t)snprintf(xml + w, cap - w, "<Latest>%s</Latest>", ids[k]);
  }
  w += (size_t)snprintf(xml + w, cap - w, "</BlockList>");
  rc = run_batch(hs, r, rq, nb, drop_sink, NULL, NULL, e);
  if (rc == 0) {
    hreq done;
    memset(&done, 0, sizeof done);
    done.method = "PUT";
    done.query = "comp=blocklist";
    done.body = (const uint8_t *)xml;
    done.body_n = w;
    done.content_type = "application/xml";
    zbuf ans = {NULL, 0, 0};
    rc = s3_one(hs, key, &done, &ans, e);
    zbuf_free(&ans);
  }
out:
  free(rq);
  free(r);
  free(ids);
  free(qs);
  free(xml);
  return rc;
}

static int azure_set(zstore *s, const char *key, const uint8_t *p, size_t n, zerr *e) {
  hstore *hs = s->impl;
  if (hs->read_only) return zerr_set(e, ZE_READ_ONLY, "the Azure store %s is read-only", hs->shown);
  if (hs->multipart_size > 0 && (double)n > hs->multipart_size) return azure_blocks(hs, key, p, n, e);
  return put_whole(hs, key, p, n, e);
}

static const zstore_ops az_ops = {
  "azure", http_get, http_get_many, azure_set, s3_erase, http_destroy, 0, NULL, 1, http_stat, NULL, NULL,
};

/* cfg: list(container_url, url, account, key (base64, or NULL), sas (or
 * NULL), read_only, multipart_size); opts as for HTTP. No key and no SAS:
 * anonymous. */
SEXP ffi_store_azure(SEXP cfg, SEXP opts) {
  zhttp_opts o;
  opts_from_r(opts, &o);
  zerr e = {ZE_OK, ""};
  const char *container = opt_str(list_get(cfg, "container_url"));
  const char *account = opt_str(list_get(cfg, "account"));
  const char *key = opt_str(list_get(cfg, "key"));
  const char *sas = opt_str(list_get(cfg, "sas"));
  if (container == NULL || account == NULL) zarr_raise(ZE_STORE, NULL, NULL, "internal: an Azure store without its container");
  /* the key decoded first: nothing to free when it is not base64 */
  unsigned char kbuf[4 * sizeof ((hstore *)0)->az_key];
  int kn = 0;
  if (key != NULL) {
    size_t n = strlen(key);
    int pad = (n > 0 && key[n - 1] == '=') + (n > 1 && key[n - 2] == '=');
    kn = (n == 0 || n % 4 || n > sizeof kbuf) ? -1 : EVP_DecodeBlock(kbuf, (const unsigned char *)key, (int)n);
    if (kn >= 0) kn -= pad;
    if (kn <= 0 || kn > (int)sizeof ((hstore *)0)->az_key) {
      OPENSSL_cleanse(kbuf, sizeof kbuf);
      zarr_raise(ZE_STORE, NULL, NULL, "the Azure account key is not a base64 key");
    }
  }
  zstore *s = http_store_new(opt_str(list_get(cfg, "url")), "", &o, &e);
  if (s == NULL) {
    OPENSSL_cleanse(kbuf, sizeof kbuf);
    zarr_raise_err(&e, NULL, NULL);
  }
  hstore *hs = s->impl;
  s->ops = &az_ops;
  hs->azure = 1;
  hs->read_only = asLogical(list_get(cfg, "read_only")) == TRUE;
  hs->multipart_size = asReal(list_get(cfg, "multipart_size"));
  size_t nb = strlen(container);
  while (nb > 0 && container[nb - 1] == '/') nb--;
  hs->bucket_base = dup_str(container, nb);
  hs->az_account = dup_str(account, strlen(account));
  int bad = hs->bucket_base == NULL || hs->az_account == NULL;
  if (kn > 0) {
    memcpy(hs->az_key, kbuf, (size_t)kn);
    hs->az_key_n = kn;
  } else if (sas != NULL && *sas) {
    if (*sas == '?') sas++;
    hs->az_sas = dup_str(sas, strlen(sas));
    bad = bad || hs->az_sas == NULL;
  }
  OPENSSL_cleanse(kbuf, sizeof kbuf);
  if (bad) {
    http_destroy(s);
    free(s->where);
    free(s);
    zarr_raise(ZE_NOMEM, NULL, NULL, "out of memory creating an Azure store");
  }
  SEXP ptr = PROTECT(store_wrap(s, R_NilValue));
  http_set_ident(s);
  UNPROTECT(1);
  return ptr;
}
