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

#endif
