/* The R-free part of the zarr C core: types and functions that use no R API
 * (codecs, strings, shards, slab copies, keys, local and zip files,
 * threads). zarr.h adds the R-facing rest. Anything declared here builds
 * without R, as the fuzz targets in tools/fuzz/ do. */
#ifndef ZARR_CORE_H
#define ZARR_CORE_H

#include <stddef.h>
#include <stdint.h>
#include "compat.h"

#define ZARR_MAX_DIMS 32
#define ZARR_MAX_CODECS 16
#define ZARR_MSG_LEN 512

/* ---- errors ----------------------------------------------------------- */

/* Error kinds map to R condition classes zarr_error_<kind> (see errors.c). */
typedef enum {
  ZE_OK = 0,
  ZE_CORRUPT,   /* chunk bytes cannot be decoded */
  ZE_CHECKSUM,  /* crc32c (or other) checksum mismatch */
  ZE_IO,        /* file system failure */
  ZE_NOMEM,     /* allocation failure */
  ZE_CODEC,     /* unsupported codec or configuration */
  ZE_VALUE,     /* data cannot be represented in the array's data type */
  ZE_KEY,       /* invalid or unsafe store key */
  ZE_STORE,     /* store refused the operation */
  ZE_INTERRUPT, /* the user interrupted a long call */
  ZE_HTTP,      /* an HTTP request failed (after its retries) */
  ZE_READ_ONLY, /* the store cannot be written to */
  ZE_METADATA,  /* array metadata is invalid or beyond the engine's limits */
  ZE_S3,        /* an S3 request failed with an S3 error document (a kind of ZE_HTTP) */
  ZE_AZURE,     /* an Azure Blob request failed with an error document (a kind of ZE_HTTP) */
  ZE_ICECHUNK,  /* an Icechunk repository object is malformed or missing */
  ZE_ICECHUNK_STALE, /* a virtual chunk's file changed since it was referenced */
  ZE_ZV,        /* a Zarr Vectors blob breaks its byte layout (src/zv_layout.c) */
  ZE_UNSUPPORTED, /* this build lacks what is needed (a codec's optional library) */
  ZE_MISSING_CHUNK /* a chunk is absent and zarr.missing_chunks is "error" */
} zerr_kind;

typedef struct {
  zerr_kind kind;
  char msg[ZARR_MSG_LEN];
} zerr;

/* Record an error (printf-style); returns -1 so callers can `return zerr_set(...)`. */
int zerr_set(zerr *e, zerr_kind kind, const char *fmt, ...) ZARR_PRINTF(3, 4);

/* zlib and libbz2 count bytes in 32-bit unsigned ints: buffers are handed to
 * them in pieces of at most this many bytes (1 GiB; tests lower it with
 * ffi_codec_piece() to run the piecewise paths on small chunks). */
extern size_t zarr_codec_piece;

/* ---- growable byte buffer ------------------------------------------------ */

typedef struct {
  uint8_t *data;
  size_t size;
  size_t cap;
} zbuf;

int zbuf_reserve(zbuf *b, size_t cap, zerr *e);
void zbuf_free(zbuf *b);

/* A zstd frame into `out` (codec_zstd.c); `limit` (0: none) bounds the output. */
int zstd_decode(const uint8_t *src, size_t n, zbuf *out, size_t limit, zerr *e);

/* ---- data types ------------------------------------------------------------ */

/* The engine's data types: each is one row of the table in dtype.c (size,
 * byte-swap unit, kind, conversion kernels); this enum only names the rows. */
typedef enum {
  DT_BOOL, DT_INT8, DT_INT16, DT_INT32, DT_INT64,
  DT_UINT8, DT_UINT16, DT_UINT32, DT_UINT64,
  DT_FLOAT16, DT_FLOAT32, DT_FLOAT64,
  DT_COMPLEX64, DT_COMPLEX128,
  DT_STRING, /* in memory: a zstr handle; see strings.c */
  DT_BFLOAT16, DT_FLOAT8_E4M3, DT_FLOAT8_E5M2, DT_INT4, DT_UINT4,
  DT_INT2, DT_UINT2,
  /* the registry's other small floating point formats (dtype.c, `minifloats`) */
  DT_FLOAT8_E3M4, DT_FLOAT8_E4M3FNUZ, DT_FLOAT8_E4M3B11FNUZ, DT_FLOAT8_E5M2FNUZ,
  DT_FLOAT8_E8M0FNU, DT_FLOAT6_E2M3FN, DT_FLOAT6_E3M2FN, DT_FLOAT4_E2M1FN,
  /* complex numbers of two such components, real part first */
  DT_COMPLEX_FLOAT16, DT_COMPLEX_BFLOAT16, DT_COMPLEX_FLOAT8_E3M4, DT_COMPLEX_FLOAT8_E4M3,
  DT_COMPLEX_FLOAT8_E4M3B11FNUZ, DT_COMPLEX_FLOAT8_E4M3FNUZ, DT_COMPLEX_FLOAT8_E5M2,
  DT_COMPLEX_FLOAT8_E5M2FNUZ, DT_COMPLEX_FLOAT8_E8M0FNU, DT_COMPLEX_FLOAT6_E2M3FN,
  DT_COMPLEX_FLOAT6_E3M2FN, DT_COMPLEX_FLOAT4_E2M1FN,
  /* raw bits of 1 to 16 bytes, read to and written from R raw vectors: the
   * carriers of data types implemented in R (R/data_type.R) */
  DT_R8, DT_R16, DT_R32, DT_R64, DT_R128,
  DT_COUNT
} zdtype;

/* How elements look on the R side. RT_INT64 is bit64::integer64: an R double
 * vector whose 8 bytes hold an int64_t. RT_RAW: the element's bytes as they
 * are, in a raw vector (as many bytes per element as the data type has). */
typedef enum { RT_LOGICAL, RT_INTEGER, RT_DOUBLE, RT_INT64, RT_COMPLEX, RT_CHARACTER, RT_RAWLIST,
               RT_RAW, RT_COUNT } zrtype;

/* A string element while it travels through the engine: UTF-8 text (or raw
 * bytes) that lives in a job's pool; ptr == NULL is a missing value. */
typedef struct {
  const char *ptr;
  int64_t len;
} zstr;

/* SK_RECORD: fixed-size records (the struct data type) moved as their bytes,
 * untrimmed, to and from R raw vectors; R splits them into fields */
typedef enum { SK_NONE, SK_VLEN_UTF8, SK_VLEN_BYTES, SK_UTF32, SK_FIXED_BYTES, SK_RECORD } zstrkind;

typedef struct zpool {
  struct zpool *next;
  size_t size;
  uint8_t data[];
} zpool;

zpool *pool_new(size_t n, zpool *next);
void pool_free(zpool *p);

int dtype_from_name(const char *name);        /* -1 when unknown */
size_t dtype_size(zdtype t);
int rtype_from_name(const char *name);         /* -1 when unknown */
size_t rtype_size(zrtype t);
/* Bytes per element on the R side of a conversion (RT_RAW: the data type's size). */
size_t elem_rsize(zdtype dt, zrtype rt);

/* Bit pattern R uses for NA in a float32 store: a quiet NaN whose payload is
 * R's NA payload (1954), so NA and NaN stay distinct through float32. */
#define ZARR_NA_FLOAT32_BITS 0x7FC007A2u

/* ---- codecs (codec_table.c lists them) ------------------------------------- */

/* A numeric element type as the element filters see it: 'i', 'u' or 'f',
 * its size in bytes and its byte order. */
typedef struct {
  char kind;
  int size;
  int big;
} znum;

/* A codec's configuration as the codec's parse() reads it, without R: the
 * flat description R builds (R fills every default; C has none). */
typedef struct zcfg zcfg;
typedef struct zchain zchain;
struct zcfg {
  const void *ctx;
  int (*num)(const zcfg *c, const char *key, double *out); /* 1: found, a number */
  const char *(*str)(const zcfg *c, const char *key);      /* NULL: absent */
  void *(*obj)(const zcfg *c, const char *key);            /* an R object (R codecs) */
  /* array codecs only (NULL elsewhere): whole numbers (their count, at most
   * max), and a nested chain (sharding: its inner chunks, or its index) */
  int (*dims)(const zcfg *c, const char *key, int64_t *out, int max, zerr *e);
  zchain *(*sub_chain)(const zcfg *c, const char *key, int ndim, const int64_t *shape,
                       int is_index, zerr *e);
};

#define ZCODEC_CFG_BYTES 160

typedef struct zcodec_vt zcodec_vt;

/* One configured codec of a chain: its row of the table and its parsed
 * configuration, which only the codec's own file interprets. */
typedef struct {
  const zcodec_vt *vt;
  union {
    double d;
    int64_t i;
    void *p;
    uint8_t b[ZCODEC_CFG_BYTES];
  } cfg;
} zcodec;

#define ZCODEC_CFG(c, type) ((type *)(void *)(c)->cfg.b)
/* in a codec's file, after its configuration struct */
#define ZCODEC_CFG_FITS(type) \
  _Static_assert(sizeof(type) <= ZCODEC_CFG_BYTES, #type " exceeds ZCODEC_CFG_BYTES")

/* A row of the codec table: one per codec, filled in the codec's file.
 * `limit` bounds the decoded size (0: no bound): a decoder stops as soon as
 * its output would exceed it and reports corrupt data. Output goes to `out`
 * (resized as needed). Optional entries are NULL. */
/* What a row is. Array codecs (transpose, bytes, the string codecs,
 * sharding) configure the chain's layout (configure()); the engine lays the
 * elements out, and an array -> bytes codec that does more (sharding) gives
 * the engine its hooks (`engine`, see engine.h). Bytes codecs, and element filters R places after the bytes codec,
 * transform bytes (decode(), encode()). */
typedef enum { ZC_BYTES_BYTES = 0, ZC_ARRAY_ARRAY, ZC_ARRAY_BYTES } zcodec_kind;

struct zcodec_vt {
  const char *name; /* as in R's flat description */
  zcodec_kind kind;
  int (*configure)(zchain *c, const zcfg *cfg, zerr *e); /* array codecs */
  int (*parse)(zcodec *c, const zcfg *cfg, zerr *e);
  int (*decode)(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, size_t limit, zerr *e);
  int (*encode)(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e);
  /* optional: decode straight into dst (exactly dst_n bytes expected) */
  int (*decode_to)(const zcodec *c, const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n,
                   size_t *got, zerr *e);
  /* optional (checksums): verify; the payload is src[*off, *off + *len), no copy */
  int (*strip)(const zcodec *c, const uint8_t *src, size_t n, size_t *off, size_t *len, zerr *e);
  /* optional: encode in place, growing the buffer that holds the n input bytes */
  int (*encode_inplace)(const zcodec *c, zbuf *buf, size_t n, zerr *e);
  /* optional, array -> bytes codecs: what the engine calls to decode a
   * stored value whole or in parts and to encode it (engine.h) */
  const struct zab_engine *engine;
  int overhead;    /* bytes encoding always adds (checksums); -1: varies */
  int bounded;     /* decode() honours `limit` */
  int main_thread; /* calls into R: only on the R thread */
  /* set only in the row of a codec whose library this build lacks (see
   * ZCODEC_MISSING): the library's name; the row's parse() always fails */
  const char *missing_lib;
};

/* The row of a codec whose optional library configure did not find: using
 * it fails with ZE_UNSUPPORTED naming the codec and the library.
 * In the codec's file: #ifdef HAVE_X ... #else ZCODEC_MISSING(x, "lib") #endif */
int zcodec_missing(const zcodec_vt *vt, zerr *e);
#define ZCODEC_MISSING(x, lib)                                          \
  static int x##_missing(zcodec *c, const zcfg *cfg, zerr *e) {         \
    (void)cfg;                                                          \
    return zcodec_missing(c->vt, e);                                    \
  }                                                                     \
  const zcodec_vt zc_##x = {.name = #x, .parse = x##_missing, .overhead = -1, .missing_lib = lib}

/* The table: a built-in row per codec file, plus rows added at load time
 * (codecs written in R, codec_r.c). NULL when the name is unknown. */
const zcodec_vt *zcodec_find(const char *name);
/* The i-th built-in row (0, 1, ...); NULL past the last. */
const zcodec_vt *zcodec_builtin(size_t i);
int zcodec_table_add(const zcodec_vt *vt);
/* Look up `name` and parse its configuration into `c`. */
int zcodec_init(zcodec *c, const char *name, const zcfg *cfg, zerr *e);

/* Configuration readers for parse(): every key is required (R fills the
 * defaults), a missing or out-of-range one is a ZE_CODEC error naming it. */
int cfg_int(const zcfg *cfg, const char *codec, const char *key, int lo, int hi, int *out,
            zerr *e);
int cfg_dbl(const zcfg *cfg, const char *codec, const char *key, double *out, zerr *e);
int cfg_str(const zcfg *cfg, const char *codec, const char *key, const char **out, zerr *e);
/* a numeric element type written as numpy does: "<f8", ">i2", "|u1" */
int cfg_num_type(const zcfg *cfg, const char *codec, const char *key, znum *out, zerr *e);

/* A configuration from key/value pairs (fuzz targets, tests): a NULL key ends
 * the list; str == NULL makes the pair a number. */
typedef struct {
  const char *key;
  const char *str;
  double num;
} zkv;
zcfg zcfg_kv(const zkv *kv);

typedef enum { AB_BYTES, AB_SHARDING, AB_VLEN } zab_kind;

struct zchain {
  int ndim;
  int64_t chunk_shape[ZARR_MAX_DIMS];  /* logical (Zarr order) chunk shape */
  int order[ZARR_MAX_DIMS];            /* stored dim k holds logical dim order[k] */
  zab_kind ab;
  const zcodec_vt *ab_vt;              /* the array -> bytes codec's row (NULL: bytes) */
  int big_endian;                      /* bytes codec */
  /* sharding_indexed: the chunk is a shard of inner chunks */
  zchain *inner;
  zchain *index;
  int index_at_end;
  int n_bb;
  zcodec bb[ZARR_MAX_CODECS];
};

/* Everything the engine needs to know about one array. */
typedef struct {
  const char *name;         /* array path, for messages */
  int ndim;
  int64_t shape[ZARR_MAX_DIMS];
  zdtype dtype;
  size_t elsize;
  uint8_t fill[16];         /* fill value, native byte order */
  int fill_marks_missing;   /* the fill value stands for NA (R's fill_is_missing_marker()) */
  zchain chain;
  /* chunk key encoding */
  const char *key_prefix;   /* e.g. "group/array/" or "" */
  char key_sep;             /* '/' or '.' */
  int key_v2;               /* v2 keys: "0.0" instead of "c/0/0" */
  zrtype rtype;
  /* strings */
  zstrkind strkind;
  size_t stored_size;       /* fixed-length strings: bytes per element */
  char fill_text[1024];       /* the fill value as UTF-8 (a zstr in `fill` points here) */
  /* sharding keeps its nested chains here so they live as long as the spec */
  zchain pool[8];
  int pool_used;
  /* a rectilinear chunk grid: chunk k of dimension d holds the elements
   * [edges[d][k], edges[d][k + 1]), and chain.chunk_shape is the largest
   * chunk; NULL for a regular grid (chunk k starts at k * chunk_shape[d]) */
  const int64_t *edges[ZARR_MAX_DIMS];
  int64_t nchunks[ZARR_MAX_DIMS];
  int rectilinear;
} zarray;

/* ---- chunk grids (keys.c) ------------------------------------------------------ */

/* First element and extent of chunk c along dimension d. */
static inline int64_t grid_start(const zarray *a, int d, int64_t c) {
  return a->edges[d] ? a->edges[d][c] : c * a->chain.chunk_shape[d];
}
static inline int64_t grid_len(const zarray *a, int d, int64_t c) {
  return a->edges[d] ? a->edges[d][c + 1] - a->edges[d][c] : a->chain.chunk_shape[d];
}
/* The chunk (0 <= k < n) whose edges [edges[k], edges[k + 1]) hold element i. */
int64_t grid_find(const int64_t *edges, int64_t n, int64_t i);
/* Chunk edges of one dimension from n chunk lengths (doubles, as R gives
 * them): edges[0] = 0 and edges[k + 1] = edges[k] + len[k], up to the first
 * chunk that reaches `extent` (*used chunks; later ones hold no element).
 * Lengths must be whole numbers >= 1 (and at most max_len when > 0) that
 * cover the extent. `edges` has room for n + 1 values. */
int grid_edges_build(const double *len, int64_t n, int64_t extent, int64_t max_len,
                     int64_t *edges, int64_t *used, zerr *e);


/* One codec on its own, through its table row. */
int bb_decode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, size_t limit, zerr *e);
int bb_encode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e);
uint32_t crc32c(uint32_t crc, const uint8_t *p, size_t n);
/* Bob Jenkins' lookup3 hash (hashlittle) of prefix followed by data (codec_checksum.c) */
uint32_t jenkins_lookup3(const uint8_t *prefix, size_t np, const uint8_t *data, size_t n,
                         uint32_t initval);

/* Decode a whole encoded chunk through the bytes->bytes codecs into `out`,
 * leaving the array->bytes payload (e.g. raw elements). `scratch` is a second
 * buffer the codecs ping-pong with. */
int chain_decode_bytes(const zchain *c, const uint8_t *src, size_t n, size_t expect,
                       zbuf *out, zbuf *scratch, const uint8_t **res, size_t *res_n,
                       zerr *e);
/* Decode a whole chunk straight into `dst` (exactly dst_n bytes); 1 when the
 * chain cannot (the caller then decodes into a buffer and copies). */
int chain_decode_to(const zchain *c, const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n,
                    zbuf *a, zbuf *b, zerr *e);
/* 1 when a codec of the chain (or of a shard's chains) must run on the R thread. */
int chain_main_thread(const zchain *c);
int chain_encode_bytes(const zchain *c, const uint8_t *src, size_t n, zbuf *out,
                       zbuf *scratch, const uint8_t **res, size_t *res_n, zerr *e);

/* 0 when n bytes are UTF-8 text an R string can hold; 1: a NUL byte; 2: invalid UTF-8 */
int utf8_check(const uint8_t *p, size_t n);
int strings_decode(const zarray *a, const uint8_t *src, size_t n, int64_t nelem, int big,
                   uint8_t *handles, zpool **pools, zerr *e);
int strings_encode(const zarray *a, const uint8_t *handles, int64_t nelem, int big, zbuf *out,
                   zerr *e);

/* sharded chunks (codec_sharding.c) */
void shard_inner_copy(const zchain *shard, const int64_t *ic, uint8_t *shardbuf,
                      uint8_t *innerbuf, size_t es, int to_inner);
int shard_encode(const zarray *a, const zchain *ch, uint8_t *shardbuf, zbuf *out, zbuf *inner,
                 zbuf *t1, zbuf *t2, int *empty, zerr *e);

/* ---- slab copies (slab.c) ------------------------------------------------------ */

/* One dimension of a copy between a chunk and the R-side array: `cnt` pairs of
 * (position in the chunk, position in the R array). A contiguous range needs
 * no arrays: with local == NULL the pairs are (l0 + k, o0 + k). */
typedef struct {
  int64_t cnt;
  const int64_t *local;
  const int64_t *outpos;
  int64_t l0, o0;
} zdimmap;

static inline int64_t map_local(const zdimmap *m, int64_t k) {
  return m->local ? m->local[k] : m->l0 + k;
}
static inline int64_t map_out(const zdimmap *m, int64_t k) {
  return m->local ? m->outpos[k] : m->o0 + k;
}

typedef struct {
  int ndim;
  zdimmap dim[ZARR_MAX_DIMS];
  int64_t cstride[ZARR_MAX_DIMS];  /* chunk element strides (0: broadcast) */
  int64_t ostride[ZARR_MAX_DIMS];  /* R array element strides (0: broadcast) */
} zslab;

typedef struct {
  int na;              /* map fill <-> NA */
  uint8_t fill[16];
  int64_t lost;        /* elements that lost precision (int64 -> double) */
  int64_t bad;         /* elements not representable (write) */
  int64_t first_bad;   /* index of first bad element in the R data */
} zconv;

/* A conversion kernel: n elements from s (stride ss bytes) to d (stride ds). */
typedef void (*zkern)(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,
                      zconv *cv);

/* One row of the data type table (dtype.c): everything the engine knows
 * about a data type. Fill values are parsed through `enc[RT_DOUBLE]` (and the
 * 64-bit integers from their digits), so a new type needs no other code. */
typedef struct {
  const char *name;   /* as R's dtype_table names it (column `engine`) */
  size_t size;        /* bytes per element in a decoded chunk */
  size_t swap;        /* unit the bytes codec swaps for big endian (<= 1: none) */
  char kind;          /* 'b' bool, 'i' signed, 'u' unsigned integer, 'f' float,
                       * 'c' complex, 's' string, 'r' raw bits */
  int part;           /* complex: the data type of each half (else -1) */
  int direct;         /* the R type whose bytes equal the stored ones, so that
                       * whole chunks decode straight into the result (else -1) */
  zkern dec[RT_COUNT]; /* stored -> R, per R type (NULL: no such conversion) */
  zkern enc[RT_COUNT]; /* R -> stored; counts values it cannot hold in zconv.bad */
} zdtype_def;

const zdtype_def *dtype_def(zdtype t);

/* chunk (dtype, native order) -> R vector (rtype) */
int slab_decode(const zslab *s, zdtype dt, zrtype rt, const uint8_t *chunk,
                void *rdata, zconv *cv);
/* R vector (rtype) -> chunk (dtype, native order) */
int slab_encode(const zslab *s, zdtype dt, zrtype rt, const void *rdata,
                uint8_t *chunk, zconv *cv);
/* Count elements of an R vector that the data type cannot hold. */
int64_t slab_validate(zdtype dt, zrtype rt, const void *rdata, int64_t n, int64_t *first);
int kernel_supported(zdtype dt, zrtype rt, int encode);

void byteswap_inplace(uint8_t *p, size_t nelem, size_t elsize);
/* Element strides of a chunk stored in C order over the transposed dims. */
void chunk_strides(const zchain *c, int64_t *stride);

/* ---- chunk keys (keys.c) ---------------------------------------------------- */

int chunk_key(const zarray *a, const int64_t *coords, char *buf, size_t cap);
int key_is_safe(const char *key);

/* The members of the JSON object reached from the top-level object through
 * members named path[0], path[1], ... (each an object): for each, its name
 * (the bytes between its quotes) and its bytes from just after the "{" or
 * "," before it to its last non-blank byte, [from, to). json_scan.c. */
typedef struct {
  size_t name_off, name_len, from, to;
} zjson_member;
enum { JSON_OK = 0, JSON_NO_OBJECT = 1, JSON_ESCAPED = 2, JSON_NOMEM = 3 };
/* JSON_ESCAPED: a member name on the way holds an escape (or a NUL byte),
 * which this scan does not decode. *out is malloc()'d (free it). */
int json_object_members(const uint8_t *p, size_t n, const char *const *path, int npath,
                        zjson_member **out, size_t *nout);

/* ---- local files (store_local.c) ---------------------------------------------- */

/* Whole file (off = 0, len = -1) or a byte range. *missing = 1 when absent. */
int file_read(const char *path, int64_t off, int64_t len, zbuf *out, int *missing,
              zerr *e);
int64_t file_size(const char *path);
int file_write_atomic(const char *path, const uint8_t *data, size_t n, zerr *e);
int file_remove(const char *path, zerr *e);
int path_join(char *buf, size_t cap, const char *root, const char *key);

/* ---- zip files (store_zip.c) ---- */

/* A zip file's member index; read-only once opened, so worker threads share it. */
typedef struct zipidx zipidx;
/* `budget` bounds the memory the index takes (zarr.max_decoded_bytes). */
int zip_open(const char *path, uint64_t budget, zipidx **out, zerr *e);
void zip_close(zipidx *z);
/* The members whose names cannot be store keys (docs\readme.txt, ./x, ../x,
 * NUL or not UTF-8), which a rewrite of the archive keeps as they are: their
 * count, and member i's fields with where its stored bytes start. */
typedef struct {
  const char *name; /* name_len bytes, possibly holding NUL */
  uint32_t name_len;
  uint16_t method, flags, mtime, mdate;
  uint32_t crc;
  uint64_t csize, usize, data_off;
} zip_odd_member;
int64_t zip_odd_count(const zipidx *z);
const char *zip_file_path(const zipidx *z);
int zip_odd_locate(const zipidx *z, int64_t i, zip_odd_member *out, zerr *e);
/* Whole member `name` into `out` (*data, *n point into it; CRC-32 checked);
 * `scratch` holds compressed bytes meanwhile. *missing = 1 when absent. */
int zip_fetch(const zipidx *z, const char *name, zbuf *out, zbuf *scratch, const uint8_t **data,
              size_t *n, int *missing, zerr *e);

/* ---- threads (threads.c) --------------------------------------------------------- */

typedef void (*ztask_fn)(void *ctx, size_t task, int thread);
/* Called on the calling (R) thread between its tasks; nonzero stops handing
 * out tasks. */
typedef int (*zpoll_fn)(void *ctx);
/* Run fn(ctx, i, thread) for i in [0, n) on up to `nthreads` threads (the
 * calling thread is thread 0). Workers must not call the R API. */
void parallel_for(size_t n, int nthreads, ztask_fn fn, void *ctx, zpoll_fn poll);
/* The same, but the calling thread runs no task: `nthreads` workers (one
 * when nthreads is 1) run them while it polls every 20 ms, so that a stop
 * waits for the tasks running then (one each; see zarr_cancel_flag), not
 * for a task of the calling thread's own to end. For long tasks (encoding
 * large chunks); tasks must not call the R API. */
void parallel_for_watched(size_t n, int nthreads, ztask_fn fn, void *ctx, zpoll_fn poll);
/* While a task encodes a chunk, the flag that asks it to give up (the
 * engine's stop): a codec whose one call on a large chunk takes long (gzip
 * at high levels) looks at it between pieces and fails with ZE_INTERRUPT.
 * NULL elsewhere. */
extern _Thread_local const volatile int *zarr_cancel_flag;
static inline int zarr_cancelled(void) { return zarr_cancel_flag != NULL && *zarr_cancel_flag; }
void threads_shutdown(void); /* joins the persistent workers (package unload) */
void tbufs_release(void);     /* frees the read scratch kept between reads (engine.c) */
/* ---- local files that a store names (fileio.c) ---- */

/* Open a file for reading without ever blocking: a FIFO, socket or device is
 * refused (ZE_IO naming the path), a directory or absent file gives
 * *missing = 1. Returns a blocking descriptor of a regular file, or -1. */
struct stat;
int open_regular(const char *path, struct stat *st, int *missing, zerr *e);

/* ---- XML answers of S3 services (xml.c, libxml2) ---- */

/* One ListObjectsV2 page: object keys with their sizes (-1 when not given),
 * common prefixes, and the continuation token of a truncated page. */
typedef struct {
  char **keys;
  double *sizes;
  size_t n_keys;
  char **prefixes;
  size_t n_prefixes;
  int truncated;
  char *token; /* NULL when there is none */
} zs3list;

void xml_init(void); /* once, before any thread parses */
/* Parse a ListObjectsV2 answer; a body that is not one is an error (ZE_S3). */
int xml_s3_list(const uint8_t *p, size_t n, zs3list *out, zerr *e);
void xml_s3_list_free(zs3list *l);
/* Parse an Azure List Blobs answer into the same form (the token is its
 * NextMarker); a body that is not one is an error (ZE_AZURE). */
int xml_azure_list(const uint8_t *p, size_t n, zs3list *out, zerr *e);
/* The text of the first element named `tag` in an XML document (an S3 error
 * document's Code or Message), control characters as spaces, truncated to
 * cap - 1 bytes; 0 when found, -1 otherwise. */
int xml_first_text(const uint8_t *p, size_t n, const char *tag, char *out, size_t cap);
/* ---- redaction of secrets in shown text (redact.c) ---- */

/* Copy n bytes of text to out (at most cap bytes with the NUL, like
 * snprintf) with the user-info of URLs and the values of credential-bearing
 * query parameters replaced by "***"; returns the full length. */
size_t redact_text(const char *in, size_t n, char *out, size_t cap);
/* Whether a query parameter name carries credentials. */
int redact_secret_name(const char *name, size_t n);

#endif
