/* Many small arrays read in one call.
 *
 * A data model that stores one small array per item (a blob per spatial
 * chunk, a column per field) pays, read one array at a time, the opening of
 * each array and a decode of one chunk after the other. Here arrays that
 * share their data type and codecs and each hold a single chunk (their
 * metadata differs only in their shapes) are read together: one batch of
 * requests through the store (store_fetch: get_many where the store has it),
 * each chunk decoded on a worker thread as it arrives, into a vector of its
 * own (the array's elements in C order).
 */
#include <stdlib.h>
#include <string.h>
#include "progress.h"
#include "store.h"

#define KEY_CAP 4096

typedef struct {
  const zarray *arr;
  SEXP keys;              /* read on the R thread only (req() runs there or before) */
  const char **ckeys;     /* the keys, as C strings for the workers */
  const double *shape, *chunk; /* n x ndim, column-major (R matrices) */
  size_t n;
  uint8_t **out;          /* each array's result data */
  int na;
  zbuf *a, *b, *swap;     /* per thread scratch */
  int64_t lost;
  volatile int stop;
  int failed_at;          /* the first array whose chunk failed (-1: none) */
} many;

static int many_req(void *ctx, size_t i, zrange *r, char *keybuf, size_t cap, zerr *e) {
  many *m = ctx;
  (void)e;
  snprintf(keybuf, cap, "%s", m->ckeys[i]);
  r->key = keybuf;
  r->off = 0;
  r->len = -1;
  return 0;
}

static int many_handle(void *ctx, size_t i, int thread, uint8_t *p, size_t n, int missing,
                       int writable, zerr *e) {
  many *m = ctx;
  const zarray *a = m->arr;
  zchain ch = a->chain; /* this array's chunk shape */
  zslab s;
  memset(&s, 0, sizeof s);
  s.ndim = a->ndim;
  int64_t ne = 1, acc = 1;
  for (int d = a->ndim - 1; d >= 0; d--) { /* the result in C order */
    ch.chunk_shape[d] = (int64_t)m->chunk[i + (size_t)d * m->n];
    s.dim[d].cnt = (int64_t)m->shape[i + (size_t)d * m->n];
    s.ostride[d] = acc;
    acc *= s.dim[d].cnt;
    ne *= ch.chunk_shape[d];
  }
  zconv cv;
  memset(&cv, 0, sizeof cv);
  cv.na = m->na;
  memcpy(cv.fill, a->fill, sizeof cv.fill);
  int rc = 0;
  size_t expect = (size_t)ne * a->elsize;
  const uint8_t *res = a->fill;
  if (missing) {
    for (int d = 0; d < s.ndim; d++) s.cstride[d] = 0;
  } else {
    int whole = acc == ne && (a->rtype == RT_RAW || dtype_def(a->dtype)->direct == (int)a->rtype) && !m->na &&
                !ch.big_endian && ch.order[0] == 0;
    for (int d = 1; whole && d < a->ndim; d++) whole = ch.order[d] == d;
    if (whole) { /* zero-copy: the last codec writes into the result */
      rc = chain_decode_to(&ch, p, n, m->out[i], expect, &m->a[thread], &m->b[thread], e);
      if (rc <= 0) goto done;
      rc = 0;
    }
    size_t res_n;
    if (chain_decode_bytes(&ch, p, n, expect, &m->a[thread], &m->b[thread], &res, &res_n, e)) {
      rc = -1;
      goto done;
    }
    if (res_n != expect) {
      rc = zerr_set(e, ZE_CORRUPT, "chunk decodes to %.0f bytes, expected %.0f", (double)res_n,
                    (double)expect);
      goto done;
    }
    size_t unit = dtype_def(a->dtype)->swap;
    if (ch.big_endian && unit > 1) {
      if (res == p && !writable) { /* never swap in the store's (maybe R's) memory */
        if (zbuf_reserve(&m->swap[thread], res_n, e)) {
          rc = -1;
          goto done;
        }
        memcpy(m->swap[thread].data, res, res_n);
        res = m->swap[thread].data;
      }
      byteswap_inplace((uint8_t *)res, res_n / unit, unit);
    }
    chunk_strides(&ch, s.cstride);
  }
  if (slab_decode(&s, a->dtype, a->rtype, res, m->out[i], &cv))
    rc = zerr_set(e, ZE_CODEC, "no conversion from this data type to R");
done:
  progress_add(1);
  if (cv.lost) __atomic_add_fetch(&m->lost, cv.lost, __ATOMIC_RELAXED);
  if (rc) {
    int none = -1;
    __atomic_compare_exchange_n(&m->failed_at, &none, (int)i, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  }
  return rc;
}

static void many_free(many *m, int nt) {
  for (int t = 0; m->a != NULL && t < nt; t++) {
    zbuf_free(&m->a[t]);
    zbuf_free(&m->b[t]);
    zbuf_free(&m->swap[t]);
  }
  free(m->a);
  free(m->b);
  free(m->swap);
}

/* spec: the c_spec() of one of the arrays (data type, codecs, fill; its
 * shapes are not used); keys: the store key of each array's chunk;
 * shape, chunk: numeric matrices (one row per array) of the arrays' shapes
 * and chunk shapes, shape <= chunk (one chunk each). A list of vectors. */
SEXP ffi_arrays_read(SEXP spec, SEXP store, SEXP keys, SEXP shape, SEXP chunk, SEXP opts) {
  zarray a;
  spec_parse(spec, &a);
  if (a.dtype == DT_STRING || a.chain.ab != AB_BYTES || a.rectilinear)
    zarr_raise(ZE_CODEC, a.name, NULL,
               "reading many arrays at once takes fixed-size data types and plain chunk layouts");
  if (!kernel_supported(a.dtype, a.rtype, 0))
    zarr_raise(ZE_CODEC, a.name, NULL, "reading this data type is not supported");
  if (TYPEOF(keys) != STRSXP || TYPEOF(shape) != REALSXP || TYPEOF(chunk) != REALSXP)
    zarr_raise(ZE_VALUE, a.name, NULL, "keys must be character, shapes numeric matrices");
  size_t n = (size_t)XLENGTH(keys);
  if ((size_t)XLENGTH(shape) != n * (size_t)a.ndim || (size_t)XLENGTH(chunk) != n * (size_t)a.ndim)
    zarr_raise(ZE_VALUE, a.name, NULL, "one shape and one chunk shape per key");
  const double *sh = REAL(shape), *cs = REAL(chunk);
  double work = 0;
  for (size_t i = 0; i < n; i++) {
    double ne = 1;
    for (int d = 0; d < a.ndim; d++) {
      double x = sh[i + (size_t)d * n], c = cs[i + (size_t)d * n];
      if (!(x >= 0 && c >= 1 && x <= c && c <= 9.0e15) || x != (double)(int64_t)x ||
          c != (double)(int64_t)c)
        zarr_raise(ZE_VALUE, a.name, CHAR(STRING_ELT(keys, (R_xlen_t)i)),
                   "each array must hold one chunk (0 <= shape <= chunk shape, whole numbers)");
      ne *= c;
    }
    if (ne * (double)a.elsize > 9.0e15) zarr_raise(ZE_NOMEM, a.name, NULL, "a chunk is too large");
    work += ne * (double)a.elsize;
  }
  many m;
  memset(&m, 0, sizeof m);
  m.arr = &a;
  m.n = n;
  m.shape = sh;
  m.chunk = cs;
  m.failed_at = -1;
  m.na = asLogical(list_get(opts, "fill_as_na")) == TRUE && a.fill_marks_missing;
  int32_t f32;
  memcpy(&f32, a.fill, 4);
  if (a.dtype == DT_INT32 && a.rtype == RT_INTEGER && f32 == INT32_MIN) m.na = 0; /* already NA */
  SEXP out = PROTECT(allocVector(VECSXP, (R_xlen_t)n));
  m.out = (uint8_t **)R_alloc(n + 1, sizeof(uint8_t *));
  m.ckeys = (const char **)R_alloc(n + 1, sizeof(char *));
  SEXPTYPE st = rtype_sexp(a.rtype);
  if (a.rtype != RT_RAW && a.rtype != RT_INTEGER && a.rtype != RT_LOGICAL && a.rtype != RT_COMPLEX &&
      a.rtype != RT_DOUBLE)
    zarr_raise(ZE_CODEC, a.name, NULL, "reading many arrays at once returns atomic vectors only");
  for (size_t i = 0; i < n; i++) {
    R_xlen_t len = 1;
    for (int d = 0; d < a.ndim; d++) len *= (R_xlen_t)sh[i + (size_t)d * n];
    if (a.rtype == RT_RAW) len *= (R_xlen_t)a.elsize;
    SET_VECTOR_ELT(out, (R_xlen_t)i, allocVector(st, len));
    m.out[i] = (uint8_t *)DATAPTR(VECTOR_ELT(out, (R_xlen_t)i));
    m.ckeys[i] = translateCharUTF8(STRING_ELT(keys, (R_xlen_t)i));
    if (strlen(m.ckeys[i]) >= KEY_CAP) zarr_raise(ZE_KEY, a.name, NULL, "chunk key is too long");
  }
  int nt = asInteger(list_get(opts, "nthreads"));
  if (nt == NA_INTEGER || nt < 1) nt = 1;
  if (nt > 64) nt = 64;
  if (n < (size_t)nt) nt = n > 0 ? (int)n : 1;
  if (work < 1024.0 * 1024.0 || chain_main_thread(&a.chain)) nt = 1; /* threads would cost more */
  m.a = calloc((size_t)nt, sizeof(zbuf));
  m.b = calloc((size_t)nt, sizeof(zbuf));
  m.swap = calloc((size_t)nt, sizeof(zbuf));
  zstore *s = store_from(store);
  zerr e = {ZE_OK, ""};
  /* a bar around several of these calls (a Zarr Vectors box) counts their
   * arrays: each call adds its own to the total */
  progress_total((int64_t)n);
  int rc = m.a == NULL || m.b == NULL || m.swap == NULL
               ? zerr_set(&e, ZE_NOMEM, "out of memory")
               : store_fetch(s, n, many_req, many_handle, &m, nt, &m.stop, &e);
  many_free(&m, nt);
  if (rc) store_raise(s, &e, a.name, m.failed_at >= 0 ? m.ckeys[m.failed_at] : NULL);
  if (m.lost > 0) setAttrib(out, install("zarr_lost"), ScalarReal((double)m.lost));
  UNPROTECT(1);
  return out;
}
