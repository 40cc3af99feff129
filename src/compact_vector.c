/* Results that keep the stored width (ALTREP).
 *
 * R has no 8-, 16- or 32-bit float vectors: a uint16 array reads as R
 * integers (4 bytes per element), a float32 array as doubles (8). Widening
 * every element during the read writes twice (or four times) the bytes the
 * peers write, and faults in that much fresh memory. A large result of such
 * a type is read instead into a raw vector holding the elements as stored
 * (native byte order) and given to R as an integer, double or logical
 * vector that converts them when they are used: element by element and
 * region by region (what sum(), subsetting, serialize() and most of base R
 * use), or all at once, into an ordinary vector kept from then on, when C
 * code asks for the data pointer. The conversion is the data type's own
 * kernel (dtype.c), the one an eager read uses, fill values that mark
 * missing ones included, so both give the same values.
 *
 * data1: the stored elements (a payload: see below), R_NilValue once
 *        converted.
 * data2: a list of the description (RAWSXP holding a compact_info) and the
 *        converted vector (R_NilValue until then).
 *
 * The stored elements of a small result are a raw vector (RAWSXP). Those of
 * a large one (PAYLOAD_OWN_MIN) are memory of their own, held by an external
 * pointer whose finalizer frees it: allocating a vector larger than the free
 * room of R's heap makes R collect, and when a minor collection cannot make
 * the room (right after gc(), in a new session: what a large read usually
 * meets) it collects all generations, which walks every R object of the
 * session: for a 512 MB result, a quarter of the read's time. So large
 * payloads are counted here instead, and a full collection is asked for
 * (R_gc()) only when payloads not yet freed would pass a bound; after it,
 * the bound is what survived plus half as much again (at least
 * PAYLOAD_ROOM) plus the new payload, so that a loop of large reads
 * collects about as often as R would. Smaller results stay in R's heap,
 * whose minor collections free the young garbage of a loop of reads more
 * cheaply than full ones would.
 */
#include <stdlib.h>
#include <string.h>
#include "zarr.h"
#include <R_ext/Altrep.h>

typedef struct {
  int dtype;  /* zdtype of the stored elements */
  int rtype;  /* zrtype of the R vector: RT_INTEGER, RT_DOUBLE or RT_LOGICAL */
  int na;     /* the fill value marks missing elements (read as NA) */
  uint8_t fill[16];
  int64_t n;  /* elements */
} compact_info;

#define PAYLOAD_OWN_MIN ((size_t)64 << 20)
#define PAYLOAD_ROOM ((size_t)256 << 20)
static size_t payload_live;               /* bytes of payloads not yet freed */
static size_t payload_bound = PAYLOAD_ROOM; /* collect before passing this */

static void payload_free(SEXP ext) {
  void *p = R_ExternalPtrAddr(ext);
  if (p == NULL) return;
  size_t n = (size_t)REAL(R_ExternalPtrTag(ext))[0];
  payload_live -= n < payload_live ? n : payload_live;
  free(p);
  R_ClearExternalPtr(ext);
}

SEXP compact_payload(size_t nbytes, uint8_t **data) {
  if (nbytes < PAYLOAD_OWN_MIN) {
    SEXP r = result_alloc(RAWSXP, (R_xlen_t)nbytes, nbytes);
    *data = RAW(r);
    return r;
  }
  if (payload_live > 0 && payload_live + nbytes > payload_bound) {
    R_gc(); /* finalizes the payloads of results no longer referenced */
    size_t grow = payload_live / 2 > PAYLOAD_ROOM ? payload_live / 2 : PAYLOAD_ROOM;
    payload_bound = payload_live + grow + nbytes;
  }
  SEXP tag = PROTECT(ScalarReal((double)nbytes));
  SEXP ext = PROTECT(R_MakeExternalPtr(NULL, tag, R_NilValue));
  R_RegisterCFinalizerEx(ext, payload_free, TRUE);
  void *p = malloc(nbytes ? nbytes : 1); /* after this nothing fails: the pointer owns it */
  if (p == NULL) {
    UNPROTECT(2);
    return R_NilValue;
  }
  R_SetExternalPtrAddr(ext, p);
  payload_live += nbytes;
  *data = p;
  UNPROTECT(2);
  return ext;
}

static const uint8_t *payload_bytes(SEXP x) {
  SEXP p = R_altrep_data1(x);
  return TYPEOF(p) == RAWSXP ? RAW(p) : (const uint8_t *)R_ExternalPtrAddr(p);
}

static R_altrep_class_t compact_int_class, compact_dbl_class, compact_lgl_class;

static R_altrep_class_t class_of(int rtype) {
  return rtype == RT_DOUBLE ? compact_dbl_class : rtype == RT_LOGICAL ? compact_lgl_class : compact_int_class;
}

static const compact_info *info_of(SEXP x) {
  return (const compact_info *)RAW(VECTOR_ELT(R_altrep_data2(x), 0));
}
static SEXP full_of(SEXP x) { return VECTOR_ELT(R_altrep_data2(x), 1); }

static R_xlen_t compact_length(SEXP x) {
  SEXP full = full_of(x);
  if (full != R_NilValue) return XLENGTH(full);
  return (R_xlen_t)info_of(x)->n;
}

/* Elements [i, i + n) converted into dst (R's element size apart). */
static void convert(SEXP x, R_xlen_t i, R_xlen_t n, void *dst) {
  const compact_info *in = info_of(x);
  const zdtype_def *def = dtype_def((zdtype)in->dtype);
  zconv cv;
  memset(&cv, 0, sizeof cv);
  cv.na = in->na;
  memcpy(cv.fill, in->fill, sizeof cv.fill);
  size_t es = def->size;
  def->dec[in->rtype]((uint8_t *)dst, (int64_t)rtype_size((zrtype)in->rtype),
                      payload_bytes(x) + (size_t)i * es, (int64_t)es, (int64_t)n, &cv);
}

static void *compact_dataptr(SEXP x, Rboolean writeable) {
  (void)writeable;
  SEXP full = full_of(x);
  if (full == R_NilValue) {
    const compact_info *in = info_of(x);
    R_xlen_t n = compact_length(x);
    full = PROTECT(allocVector(rtype_sexp((zrtype)in->rtype), n));
    /* no interrupt check: compiled code asking for the pointer (C++ among
     * it) does not expect a long jump other than an allocation failure */
    convert(x, 0, n, DATAPTR(full));
    SET_VECTOR_ELT(R_altrep_data2(x), 1, full);
    R_set_altrep_data1(x, R_NilValue); /* the stored bytes are no longer needed */
    UNPROTECT(1);
  }
  return DATAPTR(full);
}

static const void *compact_dataptr_or_null(SEXP x) {
  SEXP full = full_of(x);
  return full == R_NilValue ? NULL : DATAPTR(full);
}

static R_xlen_t compact_region(SEXP x, R_xlen_t i, R_xlen_t n, void *buf, size_t rs) {
  R_xlen_t len = compact_length(x);
  if (i >= len || n <= 0) return 0;
  if (n > len - i) n = len - i;
  SEXP full = full_of(x);
  if (full != R_NilValue) memcpy(buf, (const uint8_t *)DATAPTR(full) + (size_t)i * rs, (size_t)n * rs);
  else convert(x, i, n, buf);
  return n;
}

static int compact_int_elt(SEXP x, R_xlen_t i) {
  int v;
  compact_region(x, i, 1, &v, sizeof v);
  return v;
}
static double compact_dbl_elt(SEXP x, R_xlen_t i) {
  double v;
  compact_region(x, i, 1, &v, sizeof v);
  return v;
}
static R_xlen_t compact_int_region(SEXP x, R_xlen_t i, R_xlen_t n, int *buf) {
  return compact_region(x, i, n, buf, sizeof *buf);
}
static R_xlen_t compact_dbl_region(SEXP x, R_xlen_t i, R_xlen_t n, double *buf) {
  return compact_region(x, i, n, buf, sizeof *buf);
}

/* Integers of 8 and 16 bits have no NA of their own: only a fill value
 * that marks missing elements makes one. */
static int compact_no_na(SEXP x) {
  const compact_info *in = info_of(x);
  return full_of(x) == R_NilValue && !in->na && in->rtype == RT_INTEGER;
}

/* A copy shares the stored bytes (never written after the read); a
 * converted vector is copied as R copies any other. */
static SEXP compact_make(R_altrep_class_t cls, SEXP payload, SEXP info);

static SEXP compact_duplicate(SEXP x, Rboolean deep) {
  (void)deep;
  if (full_of(x) != R_NilValue) return NULL;
  return compact_make(class_of(info_of(x)->rtype), R_altrep_data1(x), VECTOR_ELT(R_altrep_data2(x), 0));
}

static Rboolean compact_inspect(SEXP x, int pre, int deep, int pvec,
                                void (*inspect_subtree)(SEXP, int, int, int)) {
  (void)pre, (void)deep, (void)pvec, (void)inspect_subtree;
  const compact_info *in = info_of(x);
  Rprintf(" zarr %s elements as %s (%s)\n", dtype_def((zdtype)in->dtype)->name,
          type2char(rtype_sexp((zrtype)in->rtype)), full_of(x) == R_NilValue ? "stored width" : "converted");
  return TRUE;
}

static SEXP compact_make(R_altrep_class_t cls, SEXP payload, SEXP info) {
  SEXP d2 = PROTECT(allocVector(VECSXP, 2));
  SET_VECTOR_ELT(d2, 0, info);
  SEXP out = R_new_altrep(cls, payload, d2);
  UNPROTECT(1);
  return out;
}

int compact_possible(int dtype, int rtype) {
  if (rtype != RT_INTEGER && rtype != RT_DOUBLE && rtype != RT_LOGICAL) return 0;
  const zdtype_def *def = dtype_def((zdtype)dtype);
  if (def->kind != 'b' && def->kind != 'i' && def->kind != 'u' && def->kind != 'f') return 0;
  return def->dec[rtype] != NULL && def->dec[RT_RAW] != NULL && def->size < rtype_size((zrtype)rtype);
}

SEXP compact_wrap(SEXP payload, int64_t n, int dtype, int rtype, int na, const uint8_t *fill) {
  SEXP info = PROTECT(allocVector(RAWSXP, sizeof(compact_info)));
  compact_info in;
  memset(&in, 0, sizeof in);
  in.n = n;
  in.dtype = dtype;
  in.rtype = rtype;
  in.na = na;
  memcpy(in.fill, fill, sizeof in.fill);
  memcpy(RAW(info), &in, sizeof in);
  SEXP out = compact_make(class_of(rtype), payload, info);
  UNPROTECT(1);
  return out;
}

/* Bytes of large payloads not yet freed, and the bound (for tests). */
SEXP ffi_compact_payloads(void) {
  SEXP out = allocVector(REALSXP, 2);
  REAL(out)[0] = (double)payload_live;
  REAL(out)[1] = (double)payload_bound;
  return out;
}

/* Whether x is such a vector not yet converted (for tests and print()). */
SEXP ffi_compact_state(SEXP x) {
  if (!ALTREP(x)) return mkString("plain");
  if (!(R_altrep_inherits(x, compact_int_class) || R_altrep_inherits(x, compact_dbl_class) ||
        R_altrep_inherits(x, compact_lgl_class)))
    return mkString("other");
  return mkString(full_of(x) == R_NilValue ? "stored" : "converted");
}

static void compact_common(R_altrep_class_t cls) {
  R_set_altrep_Length_method(cls, compact_length);
  R_set_altrep_Inspect_method(cls, compact_inspect);
  R_set_altrep_Duplicate_method(cls, compact_duplicate);
  R_set_altvec_Dataptr_method(cls, compact_dataptr);
  R_set_altvec_Dataptr_or_null_method(cls, compact_dataptr_or_null);
}

void compact_init(DllInfo *dll) {
  compact_int_class = R_make_altinteger_class("zarr_compact_int", "zarr", dll);
  compact_common(compact_int_class);
  R_set_altinteger_Elt_method(compact_int_class, compact_int_elt);
  R_set_altinteger_Get_region_method(compact_int_class, compact_int_region);
  R_set_altinteger_No_NA_method(compact_int_class, compact_no_na);

  compact_dbl_class = R_make_altreal_class("zarr_compact_dbl", "zarr", dll);
  compact_common(compact_dbl_class);
  R_set_altreal_Elt_method(compact_dbl_class, compact_dbl_elt);
  R_set_altreal_Get_region_method(compact_dbl_class, compact_dbl_region);

  compact_lgl_class = R_make_altlogical_class("zarr_compact_lgl", "zarr", dll);
  compact_common(compact_lgl_class);
  R_set_altlogical_Elt_method(compact_lgl_class, compact_int_elt);
  R_set_altlogical_Get_region_method(compact_lgl_class, compact_int_region);
}
