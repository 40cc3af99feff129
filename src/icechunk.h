/* Icechunk repository objects (spec 1 and 2), R-free: the binary header,
 * the zstd-compressed flatbuffer payload, and what a reader needs of the
 * repo info, snapshot and manifest tables. Strings (ic_str) point into the
 * object's payload (or into memory the object owns) and live as long as it. */
#ifndef ZARR_ICECHUNK_H
#define ZARR_ICECHUNK_H

#include "flatbuf.h"

enum { IC_SNAPSHOT = 1, IC_MANIFEST = 2, IC_TXLOG = 4, IC_REPO = 6 };
enum { IC_INLINE = 0, IC_NATIVE = 1, IC_VIRTUAL = 2 };

/* Every object starts with these 12 bytes; the header is 39 bytes (magic,
 * 24 of implementation name, spec version, object type, compression). */
extern const uint8_t IC_MAGIC[12];
#define IC_HEADER_LEN 39

typedef struct {
  const char *s;
  size_t n;
} ic_str;

typedef struct {
  char impl[25]; /* implementation name, trailing spaces removed */
  uint8_t spec, type, comp;
} ic_header;

/* Check the header of an object of `want` type and decompress its payload
 * into `out`, of at most `limit` bytes. Errors are ZE_ICECHUNK. */
int ic_payload(const uint8_t *p, size_t n, int want, size_t limit, ic_header *h, zbuf *out, zerr *e);

/* ---- repo info (spec 2) ---- */
typedef struct {
  ic_str name;
  uint32_t snap; /* index into snaps */
} ic_ref;
typedef struct {
  uint8_t id[12];
  int32_t parent; /* index into snaps, -1 for none */
  uint64_t flushed_at; /* microseconds since 1970 */
  ic_str message;
} ic_snapinfo;
typedef struct {
  ic_header h;
  zbuf payload;
  uint8_t spec;
  size_t nbranches, ntags, nsnaps;
  ic_ref *branches, *tags;
  ic_snapinfo *snaps;
} ic_repo;

/* ---- snapshot ---- */
typedef struct {
  uint8_t id[12];
  int ndim;
  uint32_t from[ZARR_MAX_DIMS], to[ZARR_MAX_DIMS]; /* chunk index ranges, `to` exclusive */
} ic_mref;
typedef struct {
  uint8_t id[8];
  ic_str path;
  ic_str user_data; /* the node's zarr.json */
  int is_array;
  size_t nman;
  ic_mref *man;
} ic_node;
typedef struct {
  uint8_t id[12];
  uint64_t size;
  uint32_t nrefs;
} ic_mfile;
typedef struct {
  ic_header h;
  zbuf payload;
  uint8_t id[12];
  int has_parent;
  uint8_t parent[12];
  uint64_t flushed_at;
  ic_str message;
  size_t nnodes;
  ic_node *nodes;
  size_t nmfiles; /* spec 2: the manifests it points to (for a writer) */
  ic_mfile *mfiles;
} ic_snapshot;

/* ---- manifest ---- */
typedef struct {
  uint8_t node[8];
  size_t first, count; /* its refs */
  int ndim;
} ic_array_refs;
typedef struct {
  ic_header h;
  zbuf payload;
  size_t narrays, nrefs;
  ic_array_refs *arrays;
  uint32_t *coords; /* ref i: coords[cpos[i] .. + ndim) */
  size_t *cpos;
  uint8_t *kind;
  uint64_t *off, *len;
  uint8_t *chunk_id; /* 12 bytes per ref */
  ic_str *inl, *loc, *etag;
  uint32_t *mtime; /* 0: none */
  char **owned; /* decompressed locations */
  size_t nowned;
} ic_manifest;

/* Parse an object. `limit` (zarr.max_decoded_bytes) bounds its payload and
 * the memory of what is made of it, here and in R (estimated before it is
 * allocated); its vectors may list no more tables than its payload holds
 * without sharing them. Either is a ZE_ICECHUNK error. */
int ic_repo_parse(const uint8_t *p, size_t n, size_t limit, ic_repo *r, zerr *e);
void ic_repo_free(ic_repo *r);
int ic_snapshot_parse(const uint8_t *p, size_t n, size_t limit, ic_snapshot *s, zerr *e);
void ic_snapshot_free(ic_snapshot *s);
int ic_manifest_parse(const uint8_t *p, size_t n, size_t limit, ic_manifest *m, zerr *e);
void ic_manifest_free(ic_manifest *m);

/* Crockford base 32 of an object id (uppercase, no padding): 20 characters
 * for 12 bytes, 13 for 8. `out` holds at least 8 * n / 5 + 2 bytes. */
void ic_base32(const uint8_t *id, size_t n, char *out);

#endif
