/* Zarr Vectors (ZV) byte layouts: the R-free parsers and encoders of the
 * blobs that ZV stores keep in 1-D uint8 arrays (the fragment index, the
 * object manifests, link and cross-chunk link records, vertex and attribute
 * rows). Everything is little-endian. Parsers check every count against the
 * bytes that hold it before using it, so a hostile blob is an error (kind
 * ZE_ZV), never a read past its end. */
#ifndef ZARR_ZV_H
#define ZARR_ZV_H

#include "zarr_core.h"

#define ZV_FRAG_MAGIC 0x5A564647u /* 'ZVFG' read as a little-endian uint32 */
#define ZV_FRAG_VERSION 1u
#define ZV_FRAG_HEADER 16u

/* A parsed fragment index: pointers into the blob it came from. */
typedef struct {
  uint32_t F, R, E;       /* fragments, range fragments, explicit fragments */
  uint64_t T;             /* explicit row indices */
  const uint8_t *bitmap;  /* ceil(F/8) bytes */
  const uint8_t *ranges;  /* R x (int64 start, int64 count) */
  const uint8_t *offsets; /* E + 1 uint32 */
  const uint8_t *indices; /* T int64 */
} zv_frag;

/* Parse and check a fragment index: magic, version, flags 0, R equal to the
 * bitmap's popcount, every section inside the blob and the blob ending where
 * the last section does, explicit offsets starting at 0 and not decreasing,
 * ranges and indices non-negative and, when nrows >= 0, below nrows. */
int zv_frag_parse(const uint8_t *p, size_t n, int64_t nrows, zv_frag *f, zerr *e);
/* Rows of fragment i (start and count for a range, else the explicit list). */
int zv_frag_is_range(const zv_frag *f, uint32_t i);
int64_t zv_frag_range_start(const zv_frag *f, uint32_t r); /* r-th range fragment */
/* Total rows over all fragments (with repeats; UINT64_MAX when the sum
 * does not fit), and the rows themselves: frag_off gets F + 1 running
 * offsets into rows. */
uint64_t zv_frag_total(const zv_frag *f);
void zv_frag_expand(const zv_frag *f, int64_t *frag_off, int64_t *rows);
/* Size and bytes of a fragment index: is_range[F]; start/count of the range
 * fragments in fragment order (R of them); the explicit CSR (E + 1 offsets,
 * T indices). */
size_t zv_frag_size(uint32_t F, uint32_t R, uint64_t T);
void zv_frag_encode(uint8_t *out, uint32_t F, const int *is_range, const int64_t *start,
                    const int64_t *count, uint32_t E, const uint32_t *offsets,
                    const int64_t *indices);

/* One block of an object manifest. mode 0: one fragment (first); 1: count
 * fragments from first; 2: count fragments listed at explicit[first ...]. */
typedef struct {
  int64_t object;
  int mode;
  int64_t first, count;
} zv_block;

/* Scan the manifest of one object, bytes [p, p + n): uint32 block count,
 * then per block ndim int64 chunk coordinates, a uint8 mode and its payload.
 * With blocks == NULL only counts (*nb blocks, *nx explicit references);
 * otherwise fills blocks[*nb...], coords[(*nb) * ndim ...] and
 * explicit[*nx ...] and advances both counts. */
int zv_manifest_scan(const uint8_t *p, size_t n, int ndim, int64_t object, zv_block *blocks,
                     int64_t *coords, int64_t *explicit_refs, int64_t *nb, int64_t *nx, zerr *e);

/* Element types of vertex, attribute and link rows. */
/* bool: one byte, 0 or 1 (numpy's bool, which other ZV writers use for
 * logical attributes); a byte other than 0 reads as 1. */
typedef enum { ZV_F32, ZV_F64, ZV_I8, ZV_I16, ZV_I32, ZV_I64, ZV_U8, ZV_U16, ZV_U32, ZV_U64, ZV_BOOL } zv_type;
#define ZV_NTYPES 11
int zv_type_parse(const char *name, zv_type *t);
size_t zv_type_size(zv_type t);
/* Rows of ncol elements (row-major bytes) to doubles: column c of the
 * blob's rows goes to cols[c][at ...]; room bounds the rows. */
int zv_rows_decode(const uint8_t *p, size_t n, zv_type t, int ncol, double **cols, int64_t at,
                   int64_t room, zerr *e);
/* The reverse: rows [at, at + m) of a column-major double matrix with ldx rows. */
int zv_rows_encode(const double *x, int64_t ldx, int64_t at, int64_t m, int ncol, zv_type t,
                   uint8_t *out, zerr *e);

#endif
