/* A small reader of FlatBuffers (little-endian binary tables), R-free.
 *
 * Readers walk a buffer along a known schema (no reflection, no
 * recursion), so every access names the field it wants by its id. Every
 * offset, vtable, vector length and string is checked against the buffer
 * before it is read: a malformed buffer is a ZE_CORRUPT error, never a read
 * outside it. Strings are handed out as (pointer, length) into the buffer. */
#ifndef ZARR_FLATBUF_H
#define ZARR_FLATBUF_H

#include "zarr_core.h"

typedef struct {
  const uint8_t *p;
  size_t n;
} fb_buf;

/* A table: its position and its vtable's field offsets. */
typedef struct {
  const fb_buf *b;
  size_t pos;
  size_t vt;       /* position of the vtable */
  uint16_t nfields; /* fields the vtable lists */
  uint16_t size;    /* bytes of the table's inline part */
} fb_table;

/* A vector: `count` elements of `elem` bytes from `pos` (tables and strings:
 * 4-byte offsets). */
typedef struct {
  const fb_buf *b;
  size_t pos;
  size_t count;
  size_t elem;
} fb_vec;

/* The root table. */
int fb_root(const fb_buf *b, fb_table *t, zerr *e);

/* Each accessor returns 1 when the field is present, 0 when absent (then the
 * output is the default, or empty), -1 on a malformed buffer. */
int fb_u8(const fb_table *t, int id, uint8_t def, uint8_t *out, zerr *e);
int fb_u32(const fb_table *t, int id, uint32_t def, uint32_t *out, zerr *e);
int fb_i32(const fb_table *t, int id, int32_t def, int32_t *out, zerr *e);
int fb_u64(const fb_table *t, int id, uint64_t def, uint64_t *out, zerr *e);
/* A struct stored inline in the table: `size` bytes at *out. */
int fb_struct(const fb_table *t, int id, size_t size, const uint8_t **out, zerr *e);
int fb_table_at(const fb_table *t, int id, fb_table *out, zerr *e);
/* A string: bytes (not counting the terminator) and their number. */
int fb_string(const fb_table *t, int id, const char **s, size_t *n, zerr *e);
/* A vector of scalars or structs of `elem` bytes, or of offsets (elem 4). */
int fb_vector(const fb_table *t, int id, size_t elem, fb_vec *v, zerr *e);

/* Element i of a vector of tables / strings. */
int fb_vec_table(const fb_vec *v, size_t i, fb_table *out, zerr *e);
int fb_vec_string(const fb_vec *v, size_t i, const char **s, size_t *n, zerr *e);
static inline const uint8_t *fb_vec_at(const fb_vec *v, size_t i) { return v->b->p + v->pos + i * v->elem; }

static inline uint16_t fb_rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t fb_rd32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t fb_rd64(const uint8_t *p) { return (uint64_t)fb_rd32(p) | ((uint64_t)fb_rd32(p + 4) << 32); }

/* ---- writer ----------------------------------------------------------------
 * Builds a buffer back to front, as FlatBuffers are laid out: children
 * (strings, vectors, tables) first, then the tables that point at them.
 * A reference (fb_ref) is the child's distance from the buffer's end. One
 * table is open at a time. Failures (memory, a bad call) are sticky: every
 * call after one does nothing, and fbw_finish() reports it. */
typedef uint32_t fb_ref;
#define FBW_MAX_FIELDS 16
typedef struct {
  uint8_t *buf;
  size_t cap, len, minalign;
  int failed;
  zerr *e;
  int open;
  size_t start;                   /* len when the open table began */
  size_t at[FBW_MAX_FIELDS];      /* each field's distance from the end (0: absent) */
} fbw;

void fbw_init(fbw *b, zerr *e);
void fbw_free(fbw *b);
fb_ref fbw_string(fbw *b, const char *s, size_t n);
/* A vector of `count` elements of `elem` bytes, already little-endian
 * (scalars or structs of alignment `align`). */
fb_ref fbw_vector(fbw *b, const void *data, size_t count, size_t elem, size_t align);
fb_ref fbw_vec_u32(fbw *b, const uint32_t *v, size_t count);
/* A vector of references (to tables or strings). */
fb_ref fbw_vec_refs(fbw *b, const fb_ref *refs, size_t count);
void fbw_start(fbw *b);
void fbw_u8(fbw *b, int id, uint8_t v);
void fbw_u32(fbw *b, int id, uint32_t v);
void fbw_i32(fbw *b, int id, int32_t v);
void fbw_u64(fbw *b, int id, uint64_t v);
void fbw_struct(fbw *b, int id, const void *data, size_t size, size_t align);
void fbw_ref(fbw *b, int id, fb_ref r);
fb_ref fbw_end(fbw *b);
/* The finished buffer (owned by the builder) and its size; NULL on failure. */
const uint8_t *fbw_finish(fbw *b, fb_ref root, size_t *n);

static inline void fb_wr32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline void fb_wr64(uint8_t *p, uint64_t v) { fb_wr32(p, (uint32_t)v); fb_wr32(p + 4, (uint32_t)(v >> 32)); }

#endif
