/* FlatBuffers reader: see flatbuf.h. Positions are checked with 64-bit
 * arithmetic, so no sum of offsets can wrap around. */
#include <string.h>
#include "flatbuf.h"

static int bad(zerr *e, const char *what, uint64_t at) {
  return zerr_set(e, ZE_CORRUPT, "malformed flatbuffer: %s at byte %llu is out of bounds", what,
                  (unsigned long long)at);
}

static int table_at(const fb_buf *b, uint64_t pos, fb_table *t, zerr *e) {
  if (pos + 4 > b->n) return bad(e, "table", pos);
  int64_t vt = (int64_t)pos - (int64_t)(int32_t)fb_rd32(b->p + pos);
  if (vt < 0 || (uint64_t)vt + 4 > b->n) return bad(e, "vtable", (uint64_t)(vt < 0 ? 0 : vt));
  uint16_t vlen = fb_rd16(b->p + vt), tlen = fb_rd16(b->p + vt + 2);
  if (vlen < 4 || (vlen & 1) || (uint64_t)vt + vlen > b->n) return bad(e, "vtable", (uint64_t)vt);
  if (tlen < 4 || pos + tlen > b->n) return bad(e, "table", pos);
  t->b = b;
  t->pos = (size_t)pos;
  t->vt = (size_t)vt;
  t->nfields = (uint16_t)((vlen - 4) / 2);
  t->size = tlen;
  return 0;
}

int fb_root(const fb_buf *b, fb_table *t, zerr *e) {
  if (b->n < 8) return zerr_set(e, ZE_CORRUPT, "malformed flatbuffer: %zu bytes are too few", b->n);
  return table_at(b, fb_rd32(b->p), t, e);
}

/* Where field `id` of `size` inline bytes is: 1 (at *at), 0 absent, -1 bad. */
static int field(const fb_table *t, int id, size_t size, uint64_t *at, zerr *e) {
  *at = 0; /* set on every path: callers read it only when 1 is returned */
  if (id < 0 || id >= t->nfields) return 0;
  uint16_t off = fb_rd16(t->b->p + t->vt + 4 + 2 * (size_t)id);
  if (off == 0) return 0;
  if ((uint64_t)off + size > t->size) return bad(e, "field", (uint64_t)t->pos + off);
  *at = (uint64_t)t->pos + off;
  return 1;
}

/* Follow the 4-byte offset at `at` to a position with at least 4 bytes. */
static int follow(const fb_buf *b, uint64_t at, uint64_t *to, zerr *e) {
  if (at + 4 > b->n) return bad(e, "offset", at);
  uint64_t dst = at + fb_rd32(b->p + at);
  if (dst + 4 > b->n) return bad(e, "offset target", dst);
  *to = dst;
  return 0;
}

#define SCALAR(name, type, size, read)                                          \
  int name(const fb_table *t, int id, type def, type *out, zerr *e) {          \
    uint64_t at;                                                               \
    int r = field(t, id, size, &at, e);                                        \
    *out = r == 1 ? (type)read(t->b->p + at) : def;                            \
    return r;                                                                  \
  }
static inline uint8_t rd8(const uint8_t *p) { return p[0]; }
SCALAR(fb_u8, uint8_t, 1, rd8)
SCALAR(fb_u32, uint32_t, 4, fb_rd32)
SCALAR(fb_i32, int32_t, 4, fb_rd32)
SCALAR(fb_u64, uint64_t, 8, fb_rd64)

int fb_struct(const fb_table *t, int id, size_t size, const uint8_t **out, zerr *e) {
  uint64_t at;
  int r = field(t, id, size, &at, e);
  *out = r == 1 ? t->b->p + at : NULL;
  return r;
}

int fb_table_at(const fb_table *t, int id, fb_table *out, zerr *e) {
  uint64_t at, to;
  int r = field(t, id, 4, &at, e);
  if (r != 1) return r;
  if (follow(t->b, at, &to, e) || table_at(t->b, to, out, e)) return -1;
  return 1;
}

static int string_at(const fb_buf *b, uint64_t to, const char **s, size_t *n, zerr *e) {
  uint64_t len = fb_rd32(b->p + to);
  if (to + 4 + len > b->n) return bad(e, "string", to);
  *s = (const char *)b->p + to + 4;
  *n = (size_t)len;
  /* the strings of these schemas are names, paths, messages and URLs */
  if (memchr(*s, 0, *n) != NULL) return zerr_set(e, ZE_CORRUPT, "malformed flatbuffer: string at byte %llu holds a NUL",
                                                 (unsigned long long)to);
  return 0;
}

int fb_string(const fb_table *t, int id, const char **s, size_t *n, zerr *e) {
  uint64_t at, to;
  *s = "";
  *n = 0;
  int r = field(t, id, 4, &at, e);
  if (r != 1) return r;
  if (follow(t->b, at, &to, e) || string_at(t->b, to, s, n, e)) return -1;
  return 1;
}

int fb_vector(const fb_table *t, int id, size_t elem, fb_vec *v, zerr *e) {
  uint64_t at, to;
  v->b = t->b;
  v->pos = 0;
  v->count = 0;
  v->elem = elem;
  int r = field(t, id, 4, &at, e);
  if (r != 1) return r;
  if (follow(t->b, at, &to, e)) return -1;
  uint64_t count = fb_rd32(t->b->p + to);
  if (count * elem > t->b->n - to - 4) return bad(e, "vector", to);
  v->pos = (size_t)(to + 4);
  v->count = (size_t)count;
  return 1;
}

int fb_vec_table(const fb_vec *v, size_t i, fb_table *out, zerr *e) {
  uint64_t to;
  if (i >= v->count || v->elem != 4) return bad(e, "vector element", v->pos);
  if (follow(v->b, (uint64_t)v->pos + 4 * (uint64_t)i, &to, e)) return -1;
  return table_at(v->b, to, out, e);
}

int fb_vec_string(const fb_vec *v, size_t i, const char **s, size_t *n, zerr *e) {
  uint64_t to;
  if (i >= v->count || v->elem != 4) return bad(e, "vector element", v->pos);
  if (follow(v->b, (uint64_t)v->pos + 4 * (uint64_t)i, &to, e)) return -1;
  return string_at(v->b, to, s, n, e);
}

/* ---- writer (see flatbuf.h) ------------------------------------------------ */

#include <stdlib.h>

/* Past this a buffer is refused: offsets are 32-bit. */
#define FBW_MAX ((size_t)0x7fffffff)

static int wfail(fbw *b, const char *what) {
  if (!b->failed) zerr_set(b->e, ZE_NOMEM, "cannot build a flatbuffer: %s", what);
  b->failed = 1;
  return -1;
}

void fbw_init(fbw *b, zerr *e) {
  memset(b, 0, sizeof *b);
  b->e = e;
  b->minalign = 1;
}

void fbw_free(fbw *b) {
  free(b->buf);
  b->buf = NULL;
  b->cap = b->len = 0;
}

/* Room for `n` more bytes in front of what is there. */
static int room(fbw *b, size_t n) {
  if (b->failed) return -1;
  if (n > FBW_MAX - b->len) return wfail(b, "over 2 GiB");
  if (b->len + n <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + n) cap *= 2;
  uint8_t *nb = malloc(cap);
  if (nb == NULL) return wfail(b, "out of memory");
  if (b->len) memcpy(nb + cap - b->len, b->buf + b->cap - b->len, b->len);
  free(b->buf);
  b->buf = nb;
  b->cap = cap;
  return 0;
}

static void put(fbw *b, const void *p, size_t n) {
  if (room(b, n)) return;
  b->len += n;
  if (n) memcpy(b->buf + b->cap - b->len, p, n);
}

static void zeros(fbw *b, size_t n) {
  if (n == 0 || room(b, n)) return;
  b->len += n;
  memset(b->buf + b->cap - b->len, 0, n);
}

/* Pad so that `extra` bytes pushed next end aligned to `align` (a power of 2). */
static void prep(fbw *b, size_t align, size_t extra) {
  if (align > b->minalign) b->minalign = align;
  zeros(b, (~(b->len + extra) + 1) & (align - 1));
}

static void put32(fbw *b, uint32_t v) {
  uint8_t t[4];
  fb_wr32(t, v);
  put(b, t, 4);
}

fb_ref fbw_string(fbw *b, const char *s, size_t n) {
  if (b->open) wfail(b, "a string inside an open table");
  if (n > FBW_MAX) wfail(b, "over 2 GiB");
  prep(b, 4, n + 1);
  zeros(b, 1);
  put(b, s, n);
  put32(b, (uint32_t)n);
  return b->failed ? 0 : (fb_ref)b->len;
}

fb_ref fbw_vector(fbw *b, const void *data, size_t count, size_t elem, size_t align) {
  if (b->open) wfail(b, "a vector inside an open table");
  if (elem && count > FBW_MAX / elem) wfail(b, "over 2 GiB");
  if (b->failed) return 0;
  prep(b, 4, count * elem);
  prep(b, align, count * elem);
  put(b, data, count * elem);
  put32(b, (uint32_t)count);
  return b->failed ? 0 : (fb_ref)b->len;
}

fb_ref fbw_vec_u32(fbw *b, const uint32_t *v, size_t count) {
  if (b->open) wfail(b, "a vector inside an open table");
  if (count > FBW_MAX / 4) wfail(b, "over 2 GiB");
  if (b->failed) return 0;
  prep(b, 4, count * 4);
  for (size_t i = count; i-- > 0;) put32(b, v[i]);
  put32(b, (uint32_t)count);
  return b->failed ? 0 : (fb_ref)b->len;
}

fb_ref fbw_vec_refs(fbw *b, const fb_ref *refs, size_t count) {
  if (b->open) wfail(b, "a vector inside an open table");
  if (count > FBW_MAX / 4) wfail(b, "over 2 GiB");
  if (b->failed) return 0;
  prep(b, 4, count * 4);
  for (size_t i = count; i-- > 0;) {
    if (refs[i] == 0 || refs[i] > b->len) {
      wfail(b, "a reference to nothing");
      return 0;
    }
    put32(b, (uint32_t)(b->len + 4 - refs[i]));
  }
  put32(b, (uint32_t)count);
  return b->failed ? 0 : (fb_ref)b->len;
}

void fbw_start(fbw *b) {
  if (b->open) wfail(b, "a table inside an open table");
  b->open = 1;
  b->start = b->len;
  memset(b->at, 0, sizeof b->at);
}

/* Push a field's `size` bytes aligned to `align`, remembering where. */
static void field_put(fbw *b, int id, const void *p, size_t size, size_t align) {
  if (!b->open || id < 0 || id >= FBW_MAX_FIELDS) wfail(b, "a field outside a table");
  if (b->failed) return;
  prep(b, align, size);
  put(b, p, size);
  b->at[id] = b->len;
}

void fbw_u8(fbw *b, int id, uint8_t v) { field_put(b, id, &v, 1, 1); }
void fbw_u32(fbw *b, int id, uint32_t v) {
  uint8_t t[4];
  fb_wr32(t, v);
  field_put(b, id, t, 4, 4);
}
void fbw_i32(fbw *b, int id, int32_t v) { fbw_u32(b, id, (uint32_t)v); }
void fbw_u64(fbw *b, int id, uint64_t v) {
  uint8_t t[8];
  fb_wr64(t, v);
  field_put(b, id, t, 8, 8);
}
void fbw_struct(fbw *b, int id, const void *data, size_t size, size_t align) { field_put(b, id, data, size, align); }

void fbw_ref(fbw *b, int id, fb_ref r) {
  if (b->failed) return;
  if (r == 0 || r > b->len) {
    wfail(b, "a reference to nothing");
    return;
  }
  prep(b, 4, 4);
  uint8_t t[4];
  fb_wr32(t, (uint32_t)(b->len + 4 - r));
  field_put(b, id, t, 4, 4);
}

fb_ref fbw_end(fbw *b) {
  if (!b->open) wfail(b, "no open table");
  b->open = 0;
  if (b->failed) return 0;
  prep(b, 4, 4);
  zeros(b, 4); /* the vtable's offset, filled in below */
  size_t tpos = b->len;
  int nf = 0;
  for (int i = 0; i < FBW_MAX_FIELDS; i++)
    if (b->at[i]) nf = i + 1;
  if (tpos - b->start > 0xffff) {
    wfail(b, "a table over 64 kB");
    return 0;
  }
  uint8_t t[2];
  for (int i = nf; i-- > 0;) {
    size_t off = b->at[i] ? tpos - b->at[i] : 0;
    t[0] = (uint8_t)off;
    t[1] = (uint8_t)(off >> 8);
    put(b, t, 2);
  }
  size_t tsize = tpos - b->start, vsize = 4 + 2 * (size_t)nf;
  t[0] = (uint8_t)tsize;
  t[1] = (uint8_t)(tsize >> 8);
  put(b, t, 2);
  t[0] = (uint8_t)vsize;
  t[1] = (uint8_t)(vsize >> 8);
  put(b, t, 2);
  if (b->failed) return 0;
  fb_wr32(b->buf + b->cap - tpos, (uint32_t)(b->len - tpos));
  return (fb_ref)tpos;
}

const uint8_t *fbw_finish(fbw *b, fb_ref root, size_t *n) {
  if (b->open) wfail(b, "a table left open");
  if (root == 0 || root > b->len) wfail(b, "no root table");
  if (b->failed) return NULL;
  prep(b, b->minalign < 4 ? 4 : b->minalign, 4);
  put32(b, (uint32_t)(b->len + 4 - root));
  if (b->failed) return NULL;
  *n = b->len;
  return b->buf + b->cap - b->len;
}
