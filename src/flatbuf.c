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
