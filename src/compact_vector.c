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
 * data1: the stored elements (RAWSXP), R_NilValue once converted.
 * data2: a list of the description (RAWSXP holding a compact_info) and the
 *        converted vector (R_NilValue until then).
 */
#include <string.h>
#include "zarr.h"
#include <R_ext/Altrep.h>

typedef struct {
  int dtype;  /* zdtype of the stored elements */
  int rtype;  /* zrtype of the R vector: RT_INTEGER, RT_DOUBLE or RT_LOGICAL */
  int na;     /* the fill value marks missing elements (read as NA) */
  uint8_t fill[16];
} compact_info;

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
  return XLENGTH(R_altrep_data1(x)) / (R_xlen_t)dtype_size((zdtype)info_of(x)->dtype);
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
                      RAW(R_altrep_data1(x)) + (size_t)i * es, (int64_t)es, (int64_t)n, &cv);
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

SEXP compact_wrap(SEXP payload, int dtype, int rtype, int na, const uint8_t *fill) {
  SEXP info = PROTECT(allocVector(RAWSXP, sizeof(compact_info)));
  compact_info in;
  memset(&in, 0, sizeof in);
  in.dtype = dtype;
  in.rtype = rtype;
  in.na = na;
  memcpy(in.fill, fill, sizeof in.fill);
  memcpy(RAW(info), &in, sizeof in);
  SEXP out = compact_make(class_of(rtype), payload, info);
  UNPROTECT(1);
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
