/* Slab stitching: the one strided copy between a decoded chunk (stored data
 * type, native byte order, any dimension order) and the R array (column-major,
 * R storage type). The copy folds in the transpose, the type conversion and the
 * fill-value <-> NA mapping, so no other pass over the data is needed.
 *
 * A copy walks every dimension but the first with an odometer and hands runs
 * along the first (R's fastest) dimension to a type-specialised kernel. */
#include <math.h>
#include <string.h>
#include <limits.h>
#include "zarr_core.h"

static const uint64_t R_NA_BITS = 0x7FF00000000007A2ULL;

static inline double na_real(void) {
  double d;
  memcpy(&d, &R_NA_BITS, 8);
  return d;
}

static inline int is_r_na(double x) {
  uint64_t b;
  memcpy(&b, &x, 8);
  /* R's NA: a NaN whose low word is 1954 (sign and quiet bit may vary) */
  return isnan(x) && (uint32_t)b == 1954u;
}

/* IEEE half precision <-> double */
static double half_to_double(uint16_t h) {
  int s = h >> 15, ex = (h >> 10) & 0x1F, m = h & 0x3FF;
  double v;
  if (ex == 0) v = ldexp((double)m, -24);
  else if (ex == 31) v = m ? NAN : INFINITY;
  else v = ldexp((double)(m | 0x400), ex - 25);
  return s ? -v : v;
}

static uint16_t double_to_half(double d) {
  float f = (float)d;
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  uint32_t ex = (x >> 23) & 0xFF, m = x & 0x7FFFFF;
  if (ex == 0xFF) return sign | 0x7C00 | (m ? 0x200 : 0);
  int e = (int)ex - 127 + 15;
  if (e >= 31) return sign | 0x7C00;
  if (e <= 0) {
    if (e < -10) return sign;
    m |= 0x800000;
    int shift = 14 - e;
    uint32_t hm = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (hm & 1))) hm++;
    return sign | (uint16_t)hm;
  }
  uint32_t hm = m >> 13, rem = m & 0x1FFF;
  uint16_t r = sign | (uint16_t)(e << 10) | (uint16_t)hm;
  if (rem > 0x1000 || (rem == 0x1000 && (hm & 1))) r++; /* may carry into exponent */
  return r;
}

typedef void (*kern_fn)(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,
                        zconv *cv);

/* ---- decode kernels: stored element -> R element ---------------------------- */

#define DEC_TO_INT(NAME, T)                                                          \
  static void NAME(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,  \
                   zconv *cv) {                                                      \
    T f;                                                                             \
    memcpy(&f, cv->fill, sizeof(T));                                                 \
    const int na = cv->na;                                                           \
    for (int64_t i = 0; i < n; i++, d += ds, s += ss) {                              \
      T v;                                                                           \
      memcpy(&v, s, sizeof(T));                                                      \
      int r = (na && v == f) ? INT_MIN : (int)v;                                     \
      memcpy(d, &r, sizeof r);                                                       \
    }                                                                                \
  }
DEC_TO_INT(dec_i8_int, int8_t)
DEC_TO_INT(dec_i16_int, int16_t)
DEC_TO_INT(dec_i32_int_slow, int32_t)

static void dec_i32_int(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,
                        zconv *cv) {
  if (!cv->na && ds == 4 && ss == 4) memcpy(d, s, (size_t)n * 4);
  else dec_i32_int_slow(d, ds, s, ss, n, cv);
}
DEC_TO_INT(dec_u8_int, uint8_t)
DEC_TO_INT(dec_u16_int, uint16_t)

static void dec_bool_lgl(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,
                         zconv *cv) {
  (void)cv;
  for (int64_t i = 0; i < n; i++, d += ds, s += ss) {
    int r = *s ? 1 : 0;
    memcpy(d, &r, sizeof r);
  }
}

#define DEC_TO_DBL(NAME, T, CHECK_LOST)                                              \
  static void NAME(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,  \
                   zconv *cv) {                                                      \
    T f;                                                                             \
    memcpy(&f, cv->fill, sizeof(T));                                                 \
    const int na = cv->na;                                                           \
    const double nar = na_real();                                                    \
    for (int64_t i = 0; i < n; i++, d += ds, s += ss) {                              \
      T v;                                                                           \
      memcpy(&v, s, sizeof(T));                                                      \
      double r = (na && v == f) ? nar : (double)v;                                   \
      if (CHECK_LOST && !(na && v == f) && (r > 9007199254740992.0 || r < -9007199254740992.0)) \
        cv->lost++;                                                                  \
      memcpy(d, &r, sizeof r);                                                       \
    }                                                                                \
  }
DEC_TO_DBL(dec_i8_dbl, int8_t, 0)
DEC_TO_DBL(dec_i16_dbl, int16_t, 0)
DEC_TO_DBL(dec_i32_dbl, int32_t, 0)
DEC_TO_DBL(dec_u8_dbl, uint8_t, 0)
DEC_TO_DBL(dec_u16_dbl, uint16_t, 0)
DEC_TO_DBL(dec_u32_dbl, uint32_t, 0)
DEC_TO_DBL(dec_i64_dbl, int64_t, 1)
DEC_TO_DBL(dec_u64_dbl, uint64_t, 1)

static void dec_f64_dbl(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,
                        zconv *cv) {
  uint64_t f;
  memcpy(&f, cv->fill, 8);
  if (!cv->na && ds == 8 && ss == 8) {
    memcpy(d, s, (size_t)n * 8);
    return;
  }
  const double nar = na_real();
  const int na = cv->na;
  for (int64_t i = 0; i < n; i++, d += ds, s += ss) {
    uint64_t b;
    memcpy(&b, s, 8);
    if (na && b == f) memcpy(d, &nar, 8);
    else memcpy(d, &b, 8);
  }
}

static void dec_f32_dbl(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,
                        zconv *cv) {
  uint32_t f;
  memcpy(&f, cv->fill, 4);
  const double nar = na_real();
  const int na = cv->na;
  for (int64_t i = 0; i < n; i++, d += ds, s += ss) {
    uint32_t b;
    memcpy(&b, s, 4);
    double r;
    if (b == ZARR_NA_FLOAT32_BITS || (na && b == f)) r = nar;
    else {
      float x;
      memcpy(&x, &b, 4);
      r = (double)x;
    }
    memcpy(d, &r, 8);
  }
}

static void dec_f16_dbl(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,
                        zconv *cv) {
  uint16_t f;
  memcpy(&f, cv->fill, 2);
  const double nar = na_real();
  for (int64_t i = 0; i < n; i++, d += ds, s += ss) {
    uint16_t b;
    memcpy(&b, s, 2);
    double r = (cv->na && b == f) ? nar : half_to_double(b);
    memcpy(d, &r, 8);
  }
}

static void dec_i64_i64(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,
                        zconv *cv) {
  int64_t f;
  memcpy(&f, cv->fill, 8);
  for (int64_t i = 0; i < n; i++, d += ds, s += ss) {
    int64_t v;
    memcpy(&v, s, 8);
    if (cv->na && v == f) v = INT64_MIN;
    memcpy(d, &v, 8);
  }
}

static void dec_u64_i64(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,
                        zconv *cv) {
  uint64_t f;
  memcpy(&f, cv->fill, 8);
  for (int64_t i = 0; i < n; i++, d += ds, s += ss) {
    uint64_t v;
    memcpy(&v, s, 8);
    int64_t r;
    if (cv->na && v == f) r = INT64_MIN;
    else if (v > (uint64_t)INT64_MAX) { r = INT64_MIN; cv->lost++; }
    else r = (int64_t)v;
    memcpy(d, &r, 8);
  }
}

#define DEC_TO_CPLX(NAME, T)                                                         \
  static void NAME(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,  \
                   zconv *cv) {                                                      \
    const double nar = na_real();                                                    \
    for (int64_t i = 0; i < n; i++, d += ds, s += ss) {                              \
      T v[2];                                                                        \
      memcpy(v, s, sizeof v);                                                        \
      double r[2] = {(double)v[0], (double)v[1]};                                    \
      if (cv->na && memcmp(s, cv->fill, sizeof v) == 0) r[0] = r[1] = nar;           \
      memcpy(d, r, sizeof r);                                                        \
    }                                                                                \
  }
DEC_TO_CPLX(dec_c64_cplx, float)
DEC_TO_CPLX(dec_c128_cplx, double)

/* ---- encode kernels: R element -> stored element ---------------------------- */

/* from R integer / logical (int, NA = INT_MIN) */
#define ENC_INT_TO(NAME, T, LO, HI)                                                  \
  static void NAME(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,  \
                   zconv *cv) {                                                      \
    for (int64_t i = 0; i < n; i++, d += ds, s += ss) {                              \
      int v;                                                                         \
      memcpy(&v, s, sizeof v);                                                       \
      if (v == INT_MIN) memcpy(d, cv->fill, sizeof(T));                              \
      else if ((double)v < (double)(LO) || (double)v > (double)(HI)) {               \
        cv->bad++;                                                                   \
        memcpy(d, cv->fill, sizeof(T));                                              \
      } else {                                                                       \
        T t = (T)v;                                                                  \
        memcpy(d, &t, sizeof(T));                                                    \
      }                                                                              \
    }                                                                                \
  }
ENC_INT_TO(enc_int_i8, int8_t, -128, 127)
ENC_INT_TO(enc_int_i16, int16_t, -32768, 32767)
ENC_INT_TO(enc_int_i32, int32_t, INT_MIN, INT_MAX)
ENC_INT_TO(enc_int_i64, int64_t, INT_MIN, INT_MAX)
ENC_INT_TO(enc_int_u8, uint8_t, 0, 255)
ENC_INT_TO(enc_int_u16, uint16_t, 0, 65535)
ENC_INT_TO(enc_int_u32, uint32_t, 0, INT_MAX)
ENC_INT_TO(enc_int_u64, uint64_t, 0, INT_MAX)
ENC_INT_TO(enc_int_f64, double, INT_MIN, INT_MAX)

static void enc_int_f32(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,
                        zconv *cv) {
  for (int64_t i = 0; i < n; i++, d += ds, s += ss) {
    int v;
    memcpy(&v, s, sizeof v);
    if (v == INT_MIN) memcpy(d, cv->fill, 4);
    else {
      float t = (float)v;
      memcpy(d, &t, 4);
    }
  }
}

static void enc_int_f16(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,
                        zconv *cv) {
  for (int64_t i = 0; i < n; i++, d += ds, s += ss) {
    int v;
    memcpy(&v, s, sizeof v);
    if (v == INT_MIN) memcpy(d, cv->fill, 2);
    else {
      uint16_t t = double_to_half((double)v);
      memcpy(d, &t, 2);
    }
  }
}

static void enc_lgl_bool(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,
                         zconv *cv) {
  for (int64_t i = 0; i < n; i++, d += ds, s += ss) {
    int v;
    memcpy(&v, s, sizeof v);
    *d = v == INT_MIN ? cv->fill[0] : (uint8_t)(v != 0);
  }
}

/* from R double. Integer targets accept only whole numbers in range. */
#define ENC_DBL_TO_INT(NAME, T, LO, HI_EXCL)                                         \
  static void NAME(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,  \
                   zconv *cv) {                                                      \
    for (int64_t i = 0; i < n; i++, d += ds, s += ss) {                              \
      double v;                                                                      \
      memcpy(&v, s, 8);                                                              \
      if (isnan(v)) {                                                                \
        if (!is_r_na(v)) cv->bad++;                                                  \
        memcpy(d, cv->fill, sizeof(T));                                              \
      } else if (v < (LO) || v >= (HI_EXCL) || v != floor(v)) {                      \
        cv->bad++;                                                                   \
        memcpy(d, cv->fill, sizeof(T));                                              \
      } else {                                                                       \
        T t = (T)v;                                                                  \
        memcpy(d, &t, sizeof(T));                                                    \
      }                                                                              \
    }                                                                                \
  }
ENC_DBL_TO_INT(enc_dbl_i8, int8_t, -128.0, 128.0)
ENC_DBL_TO_INT(enc_dbl_i16, int16_t, -32768.0, 32768.0)
ENC_DBL_TO_INT(enc_dbl_i32, int32_t, -2147483648.0, 2147483648.0)
ENC_DBL_TO_INT(enc_dbl_i64, int64_t, -9223372036854775808.0, 9223372036854775808.0)
ENC_DBL_TO_INT(enc_dbl_u8, uint8_t, 0.0, 256.0)
ENC_DBL_TO_INT(enc_dbl_u16, uint16_t, 0.0, 65536.0)
ENC_DBL_TO_INT(enc_dbl_u32, uint32_t, 0.0, 4294967296.0)
ENC_DBL_TO_INT(enc_dbl_u64, uint64_t, 0.0, 18446744073709551616.0)

static void enc_dbl_bool(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,
                         zconv *cv) {
  for (int64_t i = 0; i < n; i++, d += ds, s += ss) {
    double v;
    memcpy(&v, s, 8);
    *d = isnan(v) ? cv->fill[0] : (uint8_t)(v != 0);
  }
}

static void enc_int_i32_fast(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,
                             zconv *cv) {
  /* R's NA is INT_MIN: with that fill value every int is stored as it is */
  int32_t f;
  memcpy(&f, cv->fill, 4);
  if (f == INT_MIN && ds == 4 && ss == 4) memcpy(d, s, (size_t)n * 4);
  else enc_int_i32(d, ds, s, ss, n, cv);
}

static void enc_dbl_f64(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,
                        zconv *cv) {
  /* A NaN fill keeps R's NA bits as they are (other readers see a NaN); any
   * other fill value stands in for NA. */
  if (cv->na == 0 && ds == 8 && ss == 8) {
    memcpy(d, s, (size_t)n * 8);
    return;
  }
  for (int64_t i = 0; i < n; i++, d += ds, s += ss) {
    double v;
    memcpy(&v, s, 8);
    if (cv->na && is_r_na(v)) memcpy(d, cv->fill, 8);
    else memcpy(d, &v, 8);
  }
}

static void enc_dbl_f32(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,
                        zconv *cv) {
  const uint32_t nabits = ZARR_NA_FLOAT32_BITS;
  for (int64_t i = 0; i < n; i++, d += ds, s += ss) {
    double v;
    memcpy(&v, s, 8);
    if (is_r_na(v)) memcpy(d, cv->na ? cv->fill : (const uint8_t *)&nabits, 4);
    else {
      float t = (float)v;
      memcpy(d, &t, 4);
    }
  }
}

static void enc_dbl_f16(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,
                        zconv *cv) {
  for (int64_t i = 0; i < n; i++, d += ds, s += ss) {
    double v;
    memcpy(&v, s, 8);
    if (is_r_na(v)) memcpy(d, cv->fill, 2);
    else {
      uint16_t t = double_to_half(v);
      memcpy(d, &t, 2);
    }
  }
}

/* from bit64::integer64 (int64 bits, NA = INT64_MIN) */
#define ENC_I64_TO(NAME, T, LO, HI)                                                  \
  static void NAME(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,  \
                   zconv *cv) {                                                      \
    for (int64_t i = 0; i < n; i++, d += ds, s += ss) {                              \
      int64_t v;                                                                     \
      memcpy(&v, s, 8);                                                              \
      if (v == INT64_MIN) memcpy(d, cv->fill, sizeof(T));                            \
      else if (v < (int64_t)(LO) || v > (int64_t)(HI)) {                             \
        cv->bad++;                                                                   \
        memcpy(d, cv->fill, sizeof(T));                                              \
      } else {                                                                       \
        T t = (T)v;                                                                  \
        memcpy(d, &t, sizeof(T));                                                    \
      }                                                                              \
    }                                                                                \
  }
ENC_I64_TO(enc_i64_i8, int8_t, -128, 127)
ENC_I64_TO(enc_i64_i16, int16_t, -32768, 32767)
ENC_I64_TO(enc_i64_i32, int32_t, INT_MIN, INT_MAX)
ENC_I64_TO(enc_i64_i64, int64_t, INT64_MIN + 1, INT64_MAX)
ENC_I64_TO(enc_i64_u8, uint8_t, 0, 255)
ENC_I64_TO(enc_i64_u16, uint16_t, 0, 65535)
ENC_I64_TO(enc_i64_u32, uint32_t, 0, 4294967295LL)
ENC_I64_TO(enc_i64_u64, uint64_t, 0, INT64_MAX)
ENC_I64_TO(enc_i64_f64, double, INT64_MIN + 1, INT64_MAX)
ENC_I64_TO(enc_i64_f32, float, INT64_MIN + 1, INT64_MAX)

#define ENC_CPLX_TO(NAME, T)                                                         \
  static void NAME(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,  \
                   zconv *cv) {                                                      \
    for (int64_t i = 0; i < n; i++, d += ds, s += ss) {                              \
      double v[2];                                                                   \
      memcpy(v, s, sizeof v);                                                        \
      if (cv->na && (is_r_na(v[0]) || is_r_na(v[1]))) memcpy(d, cv->fill, 2 * sizeof(T)); \
      else {                                                                         \
        T t[2] = {(T)v[0], (T)v[1]};                                                 \
        memcpy(d, t, sizeof t);                                                      \
      }                                                                              \
    }                                                                                \
  }
ENC_CPLX_TO(enc_cplx_c64, float)
ENC_CPLX_TO(enc_cplx_c128, double)

/* string handles move as they are */
static void copy_str(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n, zconv *cv) {
  (void)cv;
  for (int64_t i = 0; i < n; i++, d += ds, s += ss) memcpy(d, s, sizeof(zstr));
}

static kern_fn dec_table[DT_COUNT][RT_COUNT];
static kern_fn enc_table[DT_COUNT][RT_COUNT];

static void tables_init(void) {
  static int done = 0;
  if (done) return;
  dec_table[DT_BOOL][RT_LOGICAL] = dec_bool_lgl;
  dec_table[DT_INT8][RT_INTEGER] = dec_i8_int;
  dec_table[DT_INT16][RT_INTEGER] = dec_i16_int;
  dec_table[DT_INT32][RT_INTEGER] = dec_i32_int;
  dec_table[DT_UINT8][RT_INTEGER] = dec_u8_int;
  dec_table[DT_UINT16][RT_INTEGER] = dec_u16_int;
  dec_table[DT_INT8][RT_DOUBLE] = dec_i8_dbl;
  dec_table[DT_INT16][RT_DOUBLE] = dec_i16_dbl;
  dec_table[DT_INT32][RT_DOUBLE] = dec_i32_dbl;
  dec_table[DT_UINT8][RT_DOUBLE] = dec_u8_dbl;
  dec_table[DT_UINT16][RT_DOUBLE] = dec_u16_dbl;
  dec_table[DT_UINT32][RT_DOUBLE] = dec_u32_dbl;
  dec_table[DT_INT64][RT_DOUBLE] = dec_i64_dbl;
  dec_table[DT_UINT64][RT_DOUBLE] = dec_u64_dbl;
  dec_table[DT_FLOAT16][RT_DOUBLE] = dec_f16_dbl;
  dec_table[DT_FLOAT32][RT_DOUBLE] = dec_f32_dbl;
  dec_table[DT_FLOAT64][RT_DOUBLE] = dec_f64_dbl;
  dec_table[DT_INT64][RT_INT64] = dec_i64_i64;
  dec_table[DT_UINT64][RT_INT64] = dec_u64_i64;
  dec_table[DT_COMPLEX64][RT_COMPLEX] = dec_c64_cplx;
  dec_table[DT_COMPLEX128][RT_COMPLEX] = dec_c128_cplx;

  zrtype ints[2] = {RT_INTEGER, RT_LOGICAL};
  for (int k = 0; k < 2; k++) {
    zrtype r = ints[k];
    enc_table[DT_BOOL][r] = enc_lgl_bool;
    enc_table[DT_INT8][r] = enc_int_i8;
    enc_table[DT_INT16][r] = enc_int_i16;
    enc_table[DT_INT32][r] = r == RT_INTEGER ? enc_int_i32_fast : enc_int_i32;
    enc_table[DT_INT64][r] = enc_int_i64;
    enc_table[DT_UINT8][r] = enc_int_u8;
    enc_table[DT_UINT16][r] = enc_int_u16;
    enc_table[DT_UINT32][r] = enc_int_u32;
    enc_table[DT_UINT64][r] = enc_int_u64;
    enc_table[DT_FLOAT16][r] = enc_int_f16;
    enc_table[DT_FLOAT32][r] = enc_int_f32;
    enc_table[DT_FLOAT64][r] = enc_int_f64;
  }
  enc_table[DT_BOOL][RT_DOUBLE] = enc_dbl_bool;
  enc_table[DT_INT8][RT_DOUBLE] = enc_dbl_i8;
  enc_table[DT_INT16][RT_DOUBLE] = enc_dbl_i16;
  enc_table[DT_INT32][RT_DOUBLE] = enc_dbl_i32;
  enc_table[DT_INT64][RT_DOUBLE] = enc_dbl_i64;
  enc_table[DT_UINT8][RT_DOUBLE] = enc_dbl_u8;
  enc_table[DT_UINT16][RT_DOUBLE] = enc_dbl_u16;
  enc_table[DT_UINT32][RT_DOUBLE] = enc_dbl_u32;
  enc_table[DT_UINT64][RT_DOUBLE] = enc_dbl_u64;
  enc_table[DT_FLOAT16][RT_DOUBLE] = enc_dbl_f16;
  enc_table[DT_FLOAT32][RT_DOUBLE] = enc_dbl_f32;
  enc_table[DT_FLOAT64][RT_DOUBLE] = enc_dbl_f64;
  enc_table[DT_INT8][RT_INT64] = enc_i64_i8;
  enc_table[DT_INT16][RT_INT64] = enc_i64_i16;
  enc_table[DT_INT32][RT_INT64] = enc_i64_i32;
  enc_table[DT_INT64][RT_INT64] = enc_i64_i64;
  enc_table[DT_UINT8][RT_INT64] = enc_i64_u8;
  enc_table[DT_UINT16][RT_INT64] = enc_i64_u16;
  enc_table[DT_UINT32][RT_INT64] = enc_i64_u32;
  enc_table[DT_UINT64][RT_INT64] = enc_i64_u64;
  enc_table[DT_FLOAT32][RT_INT64] = enc_i64_f32;
  enc_table[DT_FLOAT64][RT_INT64] = enc_i64_f64;
  enc_table[DT_COMPLEX64][RT_COMPLEX] = enc_cplx_c64;
  enc_table[DT_COMPLEX128][RT_COMPLEX] = enc_cplx_c128;
  dec_table[DT_STRING][RT_STRING] = enc_table[DT_STRING][RT_STRING] = copy_str;
  dec_table[DT_STRING][RT_RAWLIST] = enc_table[DT_STRING][RT_RAWLIST] = copy_str;
  done = 1;
}

void slab_init(void) { tables_init(); }

int kernel_supported(zdtype dt, zrtype rt, int encode) {
  tables_init();
  return encode ? enc_table[dt][rt] != NULL : dec_table[dt][rt] != NULL;
}

/* ---- the strided walk ---------------------------------------------------- */

static int is_unit_run(const zdimmap *m) {
  if (m->local == NULL) return 1;
  for (int64_t k = 1; k < m->cnt; k++)
    if (m->local[k] != m->local[k - 1] + 1 || m->outpos[k] != m->outpos[k - 1] + 1) return 0;
  return 1;
}

/* A 2-d block, n0 x n1 elements, with byte strides (c0, c1) in the chunk and
 * (o0, o1) in R, copied in square tiles: when the chunk is in C order and R
 * in column-major order, a plain walk along R's columns reads the chunk at a
 * stride of a whole row, touching a new cache line (and often a new page) per
 * element. Within a tile of TILE x TILE elements, the rows of the chunk read
 * for one column are still in cache for the next. */
#define TILE 32
static void copy_tiled(kern_fn k, uint8_t *chunk, int64_t c0, int64_t c1, uint8_t *rdata,
                       int64_t o0, int64_t o1, int64_t n0, int64_t n1, int dir, zconv *cv) {
  for (int64_t j0 = 0; j0 < n1; j0 += TILE) {
    int64_t j1 = j0 + TILE < n1 ? j0 + TILE : n1;
    for (int64_t i0 = 0; i0 < n0; i0 += TILE) {
      int64_t m = i0 + TILE < n0 ? TILE : n0 - i0;
      for (int64_t j = j0; j < j1; j++) {
        uint8_t *c = chunk + i0 * c0 + j * c1;
        uint8_t *o = rdata + i0 * o0 + j * o1;
        if (dir == 0) k(o, o0, c, c0, m, cv);
        else k(c, c0, o, o0, m, cv);
      }
    }
  }
}

/* direction 0: chunk -> R, 1: R -> chunk */
static void slab_walk(const zslab *s, kern_fn k, size_t csz, size_t rsz, uint8_t *chunk,
                      uint8_t *rdata, int dir, zconv *cv) {
  const int nd = s->ndim;
  if (nd == 0) {
    if (dir == 0) k(rdata, 0, chunk, 0, 1, cv);
    else k(chunk, 0, rdata, 0, 1, cv);
    return;
  }
  for (int d = 0; d < nd; d++)
    if (s->dim[d].cnt == 0) return;
  const zdimmap *m0 = &s->dim[0];
  const int unit = is_unit_run(m0);
  const int64_t cs0 = s->cstride[0] * (int64_t)csz, os0 = s->ostride[0] * (int64_t)rsz;
  /* tiles over dims 0 and 1 when the chunk is not contiguous along dim 0
   * but is along dim 1 (a C-order chunk of a matrix): the odometer then
   * walks the dims from 2 on */
  const int tiled = nd >= 2 && unit && is_unit_run(&s->dim[1]) && s->cstride[0] > 1 &&
                    s->cstride[1] == 1 && m0->cnt >= TILE && s->dim[1].cnt >= 2;
  const int first = tiled ? 2 : 1;
  int64_t idx[ZARR_MAX_DIMS] = {0};
  int64_t coff = 0, ooff = 0; /* byte offsets of dims >= first */
  for (int d = first; d < nd; d++) {
    coff += map_local(&s->dim[d], 0) * s->cstride[d] * (int64_t)csz;
    ooff += map_out(&s->dim[d], 0) * s->ostride[d] * (int64_t)rsz;
  }
  while (1) {
    if (tiled) {
      const zdimmap *m1 = &s->dim[1];
      const int64_t cs1 = s->cstride[1] * (int64_t)csz, os1 = s->ostride[1] * (int64_t)rsz;
      uint8_t *c = chunk + coff + map_local(m0, 0) * cs0 + map_local(m1, 0) * cs1;
      uint8_t *o = rdata + ooff + map_out(m0, 0) * os0 + map_out(m1, 0) * os1;
      copy_tiled(k, c, cs0, cs1, o, os0, os1, m0->cnt, m1->cnt, dir, cv);
    } else if (unit) {
      uint8_t *c = chunk + coff + map_local(m0, 0) * cs0;
      uint8_t *o = rdata + ooff + map_out(m0, 0) * os0;
      if (dir == 0) k(o, os0, c, cs0, m0->cnt, cv);
      else k(c, cs0, o, os0, m0->cnt, cv);
    } else {
      for (int64_t j = 0; j < m0->cnt; j++) {
        uint8_t *c = chunk + coff + map_local(m0, j) * cs0;
        uint8_t *o = rdata + ooff + map_out(m0, j) * os0;
        if (dir == 0) k(o, 0, c, 0, 1, cv);
        else k(c, 0, o, 0, 1, cv);
      }
    }
    /* odometer over dims first..nd-1 */
    int d = first;
    for (; d < nd; d++) {
      const zdimmap *m = &s->dim[d];
      int64_t cst = s->cstride[d] * (int64_t)csz, ost = s->ostride[d] * (int64_t)rsz;
      coff -= map_local(m, idx[d]) * cst;
      ooff -= map_out(m, idx[d]) * ost;
      if (++idx[d] < m->cnt) {
        coff += map_local(m, idx[d]) * cst;
        ooff += map_out(m, idx[d]) * ost;
        break;
      }
      idx[d] = 0;
      coff += map_local(m, 0) * cst;
      ooff += map_out(m, 0) * ost;
    }
    if (d == nd) break;
  }
}

int slab_decode(const zslab *s, zdtype dt, zrtype rt, const uint8_t *chunk, void *rdata,
                zconv *cv) {
  tables_init();
  kern_fn k = dec_table[dt][rt];
  if (k == NULL) return -1;
  slab_walk(s, k, dtype_size(dt), rtype_size(rt), (uint8_t *)chunk, rdata, 0, cv);
  return 0;
}

int slab_encode(const zslab *s, zdtype dt, zrtype rt, const void *rdata, uint8_t *chunk,
                zconv *cv) {
  tables_init();
  kern_fn k = enc_table[dt][rt];
  if (k == NULL) return -1;
  slab_walk(s, k, dtype_size(dt), rtype_size(rt), chunk, (uint8_t *)rdata, 1, cv);
  return 0;
}

int64_t slab_validate(zdtype dt, zrtype rt, const void *rdata, int64_t n, int64_t *first) {
  tables_init();
  kern_fn k = enc_table[dt][rt];
  if (k == NULL) return -1;
  /* Run the encoder into a small scratch buffer, block by block. */
  uint8_t tmp[4096 * 16];
  zconv cv;
  memset(&cv, 0, sizeof cv);
  size_t rsz = rtype_size(rt), dsz = dtype_size(dt);
  int64_t block = (int64_t)(sizeof tmp / dsz);
  int64_t bad = 0;
  *first = -1;
  for (int64_t i = 0; i < n; i += block) {
    int64_t m = n - i < block ? n - i : block;
    int64_t before = cv.bad;
    k(tmp, (int64_t)dsz, (const uint8_t *)rdata + i * (int64_t)rsz, (int64_t)rsz, m, &cv);
    if (cv.bad > before && *first < 0) {
      /* locate the first offending element */
      zconv one;
      for (int64_t j = 0; j < m; j++) {
        memset(&one, 0, sizeof one);
        k(tmp, 0, (const uint8_t *)rdata + (i + j) * (int64_t)rsz, 0, 1, &one);
        if (one.bad) { *first = i + j; break; }
      }
    }
  }
  bad = cv.bad;
  return bad;
}

#define SWAP_LOOP(T, SWAP)                       \
  for (size_t i = 0; i < nelem; i++, p += sizeof(T)) { \
    T v;                                         \
    memcpy(&v, p, sizeof(T));                    \
    v = SWAP(v);                                 \
    memcpy(p, &v, sizeof(T));                    \
  }

void byteswap_inplace(uint8_t *p, size_t nelem, size_t elsize) {
  switch (elsize) {
  case 2: SWAP_LOOP(uint16_t, __builtin_bswap16) return;
  case 4: SWAP_LOOP(uint32_t, __builtin_bswap32) return;
  case 8: SWAP_LOOP(uint64_t, __builtin_bswap64) return;
  case 16: byteswap_inplace(p, nelem * 2, 8); return; /* complex128: each half */
  default: return;
  }
}

void chunk_strides(const zchain *c, int64_t *stride) {
  int64_t acc = 1;
  for (int k = c->ndim - 1; k >= 0; k--) {
    stride[c->order[k]] = acc;
    acc *= c->chunk_shape[c->order[k]];
  }
}
