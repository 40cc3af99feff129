/* The data type table: one row per data type the engine reads and writes,
 * with its size, byte-swap unit, kind and the kernels that convert between
 * its stored elements and each R type it maps to (see zdtype_def in
 * zarr_core.h). Adding a data type is one enum value, its kernels here and
 * one row in `dtypes` (plus one row in R's dtype_table, R/data_type.R, for
 * its metadata name, R type and v2 spelling). */
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

/* R's NA in the small float formats, as ZARR_NA_FLOAT32_BITS in float32: a
 * quiet NaN with a payload that the format's usual NaN (and numpy's,
 * ml_dtypes') has not, so that NA and NaN stay apart. float16 keeps the low
 * bits of R's payload (1954); the others have fewer bits: any other payload. */
#define NA_F16_BITS 0x7FA2u
#define NA_BF16_BITS 0x7FE2u
#define NA_E4M3_BITS 0x7Eu /* the format's NaN: 0x7C */
#define NA_E5M2_BITS 0x7Fu /* the format's NaN: 0x7E */

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


/* ---- decode kernels: stored element -> R element ---------------------------- */

/* Each kernel has a loop over contiguous elements (constant strides, which
 * the compiler vectorises) beside the strided one. */
#define DEC_TO_INT_LOOP(T, DS, SS)                                                   \
  for (int64_t i = 0; i < n; i++) {                                                  \
    T v;                                                                             \
    memcpy(&v, s + i * (SS), sizeof(T));                                             \
    int r = (na && v == f) ? INT_MIN : (int)v;                                       \
    memcpy(d + i * (DS), &r, sizeof r);                                              \
  }
/* blocks of 8 through local arrays (no aliasing, no alignment assumed),
 * which gcc -O2 vectorises */
#define DEC_TO_INT_BLOCK8(T)                                                         \
  for (; n >= 8; n -= 8, d += 32, s += 8 * sizeof(T)) {                              \
    T sv[8];                                                                         \
    int dv[8];                                                                       \
    memcpy(sv, s, sizeof sv);                                                        \
    for (int u = 0; u < 8; u++) dv[u] = (na && sv[u] == f) ? INT_MIN : (int)sv[u];   \
    memcpy(d, dv, sizeof dv);                                                        \
  }
#define DEC_TO_INT(NAME, T)                                                          \
  static void NAME(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,  \
                   zconv *cv) {                                                      \
    T f;                                                                             \
    memcpy(&f, cv->fill, sizeof(T));                                                 \
    const int na = cv->na;                                                           \
    if (ds == 4 && ss == (int64_t)sizeof(T)) {                                       \
      DEC_TO_INT_BLOCK8(T)                                                           \
      DEC_TO_INT_LOOP(T, 4, sizeof(T))                                               \
    } else {                                                                         \
      DEC_TO_INT_LOOP(T, ds, ss)                                                     \
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

/* Whether an integer is not the double it converts to (r = (double)v). The
 * integer itself is compared: 2^53 + 1 becomes 2^53, which is in range. */
static inline int i64_inexact(int64_t v, double r) {
  return r >= 9223372036854775808.0 || (int64_t)r != v;
}
static inline int u64_inexact(uint64_t v, double r) {
  return r >= 18446744073709551616.0 || (uint64_t)r != v;
}
static inline int no_inexact(double v, double r) { (void)v; (void)r; return 0; }

#define DEC_TO_DBL_LOOP(T, INEXACT, DS, SS)                                          \
  for (int64_t i = 0; i < n; i++) {                                                  \
    T v;                                                                             \
    memcpy(&v, s + i * (SS), sizeof(T));                                             \
    double r = (na && v == f) ? nar : (double)v;                                     \
    if (!(na && v == f) && INEXACT(v, r)) cv->lost++;                                \
    memcpy(d + i * (DS), &r, sizeof r);                                              \
  }
#define DEC_TO_DBL(NAME, T, INEXACT)                                                 \
  static void NAME(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,  \
                   zconv *cv) {                                                      \
    T f;                                                                             \
    memcpy(&f, cv->fill, sizeof(T));                                                 \
    const int na = cv->na;                                                           \
    const double nar = na_real();                                                    \
    if (ds == 8 && ss == (int64_t)sizeof(T)) {                                       \
      DEC_TO_DBL_LOOP(T, INEXACT, 8, sizeof(T))                                      \
    } else {                                                                         \
      DEC_TO_DBL_LOOP(T, INEXACT, ds, ss)                                            \
    }                                                                                \
  }
DEC_TO_DBL(dec_i8_dbl, int8_t, no_inexact)
DEC_TO_DBL(dec_i16_dbl, int16_t, no_inexact)
DEC_TO_DBL(dec_i32_dbl, int32_t, no_inexact)
DEC_TO_DBL(dec_u8_dbl, uint8_t, no_inexact)
DEC_TO_DBL(dec_u16_dbl, uint16_t, no_inexact)
DEC_TO_DBL(dec_u32_dbl, uint32_t, no_inexact)
DEC_TO_DBL(dec_i64_dbl, int64_t, i64_inexact)
DEC_TO_DBL(dec_u64_dbl, uint64_t, u64_inexact)

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
    double r = (b == NA_F16_BITS || (cv->na && b == f)) ? nar : half_to_double(b);
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
/* Contiguous runs go 8 at a time while all 8 are in range and not NA (no
 * branch per element, which gcc -O2 vectorises); a block that is not goes
 * through the loop below. */
#define ENC_INT_TO(NAME, T, LO, HI)                                                  \
  static void NAME(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,  \
                   zconv *cv) {                                                      \
    if (ds == (int64_t)sizeof(T) && ss == 4)                                         \
      for (; n >= 8; n -= 8, d += 8 * sizeof(T), s += 32) {                          \
        int v[8], ok = 1;                                                            \
        T t[8];                                                                      \
        memcpy(v, s, sizeof v);                                                      \
        for (int u = 0; u < 8; u++)                                                  \
          ok &= (v[u] != INT_MIN) & ((long long)v[u] >= (long long)(LO)) &           \
                ((long long)v[u] <= (long long)(HI));                                \
        if (!ok) break;                                                              \
        for (int u = 0; u < 8; u++) t[u] = (T)v[u];                                  \
        memcpy(d, t, sizeof t);                                                      \
      }                                                                              \
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

/* NA: the fill value where it stands for NA (cv->na), else NA's own bits */
static void put_na(uint8_t *d, const zconv *cv, uint32_t bits, size_t size) {
  if (cv->na) memcpy(d, cv->fill, size);
  else if (size == 1) *d = (uint8_t)bits;
  else {
    uint16_t b = (uint16_t)bits;
    memcpy(d, &b, 2);
  }
}

static void enc_int_f16(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,
                        zconv *cv) {
  for (int64_t i = 0; i < n; i++, d += ds, s += ss) {
    int v;
    memcpy(&v, s, sizeof v);
    if (v == INT_MIN) put_na(d, cv, NA_F16_BITS, 2);
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
    if (is_r_na(v)) put_na(d, cv, NA_F16_BITS, 2);
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


/* ---- small floating point formats ---------------------------------------- */

/* A binary floating point format of `eb` exponent and `mb` mantissa bits with
 * IEEE 754 semantics (subnormals, infinities, NaN): bfloat16 and the float8
 * types. Decoding is exact; encoding rounds to nearest, ties to even, and
 * overflows to infinity. */
static double mini_to_double(uint32_t b, int eb, int mb) {
  int bias = (1 << (eb - 1)) - 1;
  uint32_t m = b & ((1u << mb) - 1), ex = (b >> mb) & ((1u << eb) - 1);
  double v;
  if (ex == 0) v = ldexp((double)m, 1 - bias - mb);
  else if (ex == (1u << eb) - 1) v = m ? NAN : INFINITY;
  else v = ldexp((double)(m | (1u << mb)), (int)ex - bias - mb);
  return (b >> (eb + mb)) & 1 ? -v : v;
}

static uint32_t double_to_mini(double x, int eb, int mb) {
  uint32_t sign = signbit(x) ? 1u << (eb + mb) : 0, emask = ((1u << eb) - 1) << mb;
  if (isnan(x)) return sign | emask | (1u << (mb - 1));
  double a = fabs(x);
  int bias = (1 << (eb - 1)) - 1, emin = 1 - bias, emax = bias;
  if (isinf(a)) return sign | emask;
  if (a == 0) return sign;
  int e;
  frexp(a, &e);
  e -= 1; /* a = 1.f * 2^e */
  if (e < emin) { /* subnormal: q quanta of 2^(emin - mb); q = 2^mb is the smallest normal */
    double q = nearbyint(ldexp(a, mb - emin));
    return sign | (uint32_t)q;
  }
  double q = nearbyint(ldexp(a, mb - e)); /* in [2^mb, 2^(mb+1)] */
  if (q >= ldexp(1, mb + 1)) {
    q = ldexp(1, mb);
    e++;
  }
  if (e > emax) return sign | emask;
  return sign | ((uint32_t)(e + bias) << mb) | ((uint32_t)q - (1u << mb));
}

static double bf16_to_double(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return (double)f;
}

/* the 256 values of each float8 format, filled at load time (dtype_init) */
static double f8_e4m3[256], f8_e5m2[256];

#define DEC_MINI_DBL(NAME, T, CONV, NABITS)                                          \
  static void NAME(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,  \
                   zconv *cv) {                                                      \
    T f;                                                                             \
    memcpy(&f, cv->fill, sizeof(T));                                                 \
    const double nar = na_real();                                                    \
    const int na = cv->na;                                                           \
    for (int64_t i = 0; i < n; i++, d += ds, s += ss) {                              \
      T b;                                                                           \
      memcpy(&b, s, sizeof(T));                                                      \
      double r = (b == (NABITS) || (na && b == f)) ? nar : CONV(b);                  \
      memcpy(d, &r, 8);                                                              \
    }                                                                                \
  }
#define F8_E4M3(b) f8_e4m3[b]
#define F8_E5M2(b) f8_e5m2[b]
DEC_MINI_DBL(dec_bf16_dbl, uint16_t, bf16_to_double, NA_BF16_BITS)
DEC_MINI_DBL(dec_e4m3_dbl, uint8_t, F8_E4M3, NA_E4M3_BITS)
DEC_MINI_DBL(dec_e5m2_dbl, uint8_t, F8_E5M2, NA_E5M2_BITS)

/* R NA as for float16 (put_na); any other double is rounded */
#define ENC_DBL_MINI(NAME, T, EB, MB, NABITS)                                        \
  static void NAME(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,  \
                   zconv *cv) {                                                      \
    for (int64_t i = 0; i < n; i++, d += ds, s += ss) {                              \
      double v;                                                                      \
      memcpy(&v, s, 8);                                                              \
      if (is_r_na(v)) put_na(d, cv, NABITS, sizeof(T));                              \
      else {                                                                         \
        T t = (T)double_to_mini(v, EB, MB);                                          \
        memcpy(d, &t, sizeof(T));                                                    \
      }                                                                              \
    }                                                                                \
  }
ENC_DBL_MINI(enc_dbl_bf16, uint16_t, 8, 7, NA_BF16_BITS)
ENC_DBL_MINI(enc_dbl_e4m3, uint8_t, 4, 3, NA_E4M3_BITS)
ENC_DBL_MINI(enc_dbl_e5m2, uint8_t, 5, 2, NA_E5M2_BITS)

/* ---- 4-bit and 2-bit integers: one per byte, in the low bits --------------- */

static inline int nib_i4(uint8_t b) { return (int)(b & 0x0F) - ((b & 0x08) ? 16 : 0); }
static inline int nib_u4(uint8_t b) { return (int)(b & 0x0F); }
static inline int nib_i2(uint8_t b) { return (int)(b & 0x03) - ((b & 0x02) ? 4 : 0); }
static inline int nib_u2(uint8_t b) { return (int)(b & 0x03); }

#define DEC_NIB(NAME, RT, CONV, NAV)                                                 \
  static void NAME(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,  \
                   zconv *cv) {                                                      \
    const int f = CONV(cv->fill[0]), na = cv->na;                                    \
    for (int64_t i = 0; i < n; i++, d += ds, s += ss) {                              \
      int v = CONV(*s);                                                              \
      RT r = (na && v == f) ? (NAV) : (RT)v;                                         \
      memcpy(d, &r, sizeof r);                                                       \
    }                                                                                \
  }
DEC_NIB(dec_i4_int, int, nib_i4, INT_MIN)
DEC_NIB(dec_u4_int, int, nib_u4, INT_MIN)
DEC_NIB(dec_i4_dbl, double, nib_i4, na_real())
DEC_NIB(dec_u4_dbl, double, nib_u4, na_real())
DEC_NIB(dec_i2_int, int, nib_i2, INT_MIN)
DEC_NIB(dec_u2_int, int, nib_u2, INT_MIN)
DEC_NIB(dec_i2_dbl, double, nib_i2, na_real())
DEC_NIB(dec_u2_dbl, double, nib_u2, na_real())

/* The upper bits are written as zero, the value in the lower ones. */
#define ENC_INT_NIB(NAME, LO, HI, MASK)                                                  \
  static void NAME(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,  \
                   zconv *cv) {                                                      \
    for (int64_t i = 0; i < n; i++, d += ds, s += ss) {                              \
      int v;                                                                         \
      memcpy(&v, s, sizeof v);                                                       \
      if (v == INT_MIN) *d = cv->fill[0];                                            \
      else if (v < (LO) || v > (HI)) {                                               \
        cv->bad++;                                                                   \
        *d = cv->fill[0];                                                            \
      } else *d = (uint8_t)(v & (MASK));                                             \
    }                                                                                \
  }
ENC_INT_NIB(enc_int_i4, -8, 7, 0x0F)
ENC_INT_NIB(enc_int_u4, 0, 15, 0x0F)
ENC_INT_NIB(enc_int_i2, -2, 1, 0x03)
ENC_INT_NIB(enc_int_u2, 0, 3, 0x03)

#define ENC_DBL_NIB(NAME, LO, HI, MASK)                                                  \
  static void NAME(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,  \
                   zconv *cv) {                                                      \
    for (int64_t i = 0; i < n; i++, d += ds, s += ss) {                              \
      double v;                                                                      \
      memcpy(&v, s, 8);                                                              \
      if (isnan(v)) {                                                                \
        if (!is_r_na(v)) cv->bad++;                                                  \
        *d = cv->fill[0];                                                            \
      } else if (v < (LO) || v > (HI) || v != floor(v)) {                            \
        cv->bad++;                                                                   \
        *d = cv->fill[0];                                                            \
      } else *d = (uint8_t)((int)v & (MASK));                                        \
    }                                                                                \
  }
ENC_DBL_NIB(enc_dbl_i4, -8.0, 7.0, 0x0F)
ENC_DBL_NIB(enc_dbl_u4, 0.0, 15.0, 0x0F)
ENC_DBL_NIB(enc_dbl_i2, -2.0, 1.0, 0x03)
ENC_DBL_NIB(enc_dbl_u2, 0.0, 3.0, 0x03)

#define ENC_I64_NIB(NAME, LO, HI, MASK)                                                  \
  static void NAME(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,  \
                   zconv *cv) {                                                      \
    for (int64_t i = 0; i < n; i++, d += ds, s += ss) {                              \
      int64_t v;                                                                     \
      memcpy(&v, s, 8);                                                              \
      if (v == INT64_MIN) *d = cv->fill[0];                                          \
      else if (v < (LO) || v > (HI)) {                                               \
        cv->bad++;                                                                   \
        *d = cv->fill[0];                                                            \
      } else *d = (uint8_t)(v & (MASK));                                             \
    }                                                                                \
  }
ENC_I64_NIB(enc_i64_i4, -8, 7, 0x0F)
ENC_I64_NIB(enc_i64_u4, 0, 15, 0x0F)
ENC_I64_NIB(enc_i64_i2, -2, 1, 0x03)
ENC_I64_NIB(enc_i64_u2, 0, 3, 0x03)

/* ---- the registry's other small floating point formats ---------------------- */

/* One byte per value (the low `nbits` bits; higher ones are ignored when
 * read and written as zero). Flavours, as the registry's names say:
 *   'i' IEEE 754 (infinities and NaNs at the top exponent): float8_e3m4
 *   'z' fnuz: no infinity, one NaN (0x80, the bits of -0), no negative zero
 *   'n' fn of 6 and 4 bits: every code is a finite number (no NaN, no infinity)
 *   'u' e8m0fnu: unsigned powers of two 2^(e - 127), NaN 0xFF, no zero
 * Decoding is a table of the 2^nbits values; encoding rounds to the nearest
 * value (ties to the even code). Beyond the largest value, numbers become
 * infinity ('i'), NaN ('z', 'u'), or are not representable ('n'). R's NA
 * is a NaN of its own ('i': `na` bits), the format's one NaN ('z', 'u'), or
 * the fill value ('n', which has no NaN). */
typedef struct {
  int eb, mb, bias;
  char flavour;
  int nbits;
  uint8_t nan, na;
  double val[256];
  int npos; /* finite values >= 0, ascending, and their codes */
  double pos[256];
  uint8_t pcode[256];
} minifloat;

static minifloat mf_e3m4 = {3, 4, 3, 'i', 8, 0x78, 0x7F, {0}, 0, {0}, {0}};
static minifloat mf_e4m3fnuz = {4, 3, 8, 'z', 8, 0x80, 0x80, {0}, 0, {0}, {0}};
static minifloat mf_e4m3b11fnuz = {4, 3, 11, 'z', 8, 0x80, 0x80, {0}, 0, {0}, {0}};
static minifloat mf_e5m2fnuz = {5, 2, 16, 'z', 8, 0x80, 0x80, {0}, 0, {0}, {0}};
static minifloat mf_e8m0fnu = {8, 0, 127, 'u', 8, 0xFF, 0xFF, {0}, 0, {0}, {0}};
static minifloat mf_f6e2m3 = {2, 3, 1, 'n', 6, 0, 0, {0}, 0, {0}, {0}};
static minifloat mf_f6e3m2 = {3, 2, 3, 'n', 6, 0, 0, {0}, 0, {0}, {0}};
static minifloat mf_f4e2m1 = {2, 1, 1, 'n', 4, 0, 0, {0}, 0, {0}, {0}};

static void mf_init(minifloat *f) {
  int ncode = 1 << f->nbits, sbit = f->flavour == 'u' ? 0 : 1 << (f->eb + f->mb);
  uint32_t emax = (1u << f->eb) - 1, mmask = (1u << f->mb) - 1;
  for (int c = 0; c < ncode; c++) {
    uint32_t ex = ((uint32_t)c >> f->mb) & emax, m = (uint32_t)c & mmask;
    double v;
    if (f->flavour == 'u') v = c == f->nan ? NAN : ldexp(1.0, (int)ex - f->bias);
    else if (f->flavour == 'z' && c == f->nan) v = NAN;
    else if (f->flavour == 'i' && ex == emax) v = m ? NAN : INFINITY;
    else if (ex == 0) v = ldexp((double)m, 1 - f->bias - f->mb);
    else v = ldexp((double)(m | (1u << f->mb)), (int)ex - f->bias - f->mb);
    if (sbit && (c & sbit) && !isnan(v)) v = -v;
    f->val[c] = v;
  }
  /* the non-negative finite values in code order are already ascending */
  f->npos = 0;
  for (int c = 0; c < (sbit ? sbit : ncode); c++)
    if (isfinite(f->val[c])) {
      f->pos[f->npos] = f->val[c];
      f->pcode[f->npos++] = (uint8_t)c;
    }
}

/* The code nearest to v; *bad when the format cannot hold it. */
static uint8_t mf_round(const minifloat *f, double v, int64_t *bad) {
  int has_nan = f->flavour != 'n';
  if (isnan(v)) {
    if (!has_nan) (*bad)++;
    return f->nan;
  }
  int neg = signbit(v) != 0;
  double a = fabs(v);
  if (f->flavour == 'u' && (neg || a == 0)) return f->nan; /* no zero, no sign */
  int top = f->npos - 1, code;
  if (a >= f->pos[top]) {
    double half = (f->pos[top] - f->pos[top - 1]) / 2;
    if (a - f->pos[top] < half || a == f->pos[top]) code = f->pcode[top];
    else if (f->flavour == 'i') code = (int)(((1u << f->eb) - 1) << f->mb); /* infinity */
    else {
      if (!has_nan) (*bad)++;
      return f->nan;
    }
  } else if (a <= f->pos[0]) {
    code = f->pcode[0];
  } else {
    int lo = 0, hi = top; /* pos[lo] < a < pos[hi] */
    while (hi - lo > 1) {
      int mid = (lo + hi) / 2;
      if (f->pos[mid] <= a) lo = mid;
      else hi = mid;
    }
    double dl = a - f->pos[lo], dh = f->pos[hi] - a;
    code = dl < dh || (dl == dh && !(f->pcode[lo] & 1)) ? f->pcode[lo] : f->pcode[hi];
  }
  if (neg && f->flavour != 'u' && !(f->flavour == 'z' && code == 0))
    code |= 1 << (f->eb + f->mb);
  return (uint8_t)code;
}

static void mf_dec(const minifloat *f, uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss,
                   int64_t n, const zconv *cv) {
  const uint8_t mask = (uint8_t)((1u << f->nbits) - 1), fill = cv->fill[0] & mask;
  const double nar = na_real();
  for (int64_t i = 0; i < n; i++, d += ds, s += ss) {
    uint8_t b = *s & mask;
    double r = ((f->flavour == 'i' && b == f->na) || (cv->na && b == fill)) ? nar : f->val[b];
    memcpy(d, &r, 8);
  }
}

static void mf_enc(const minifloat *f, uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss,
                   int64_t n, zconv *cv) {
  for (int64_t i = 0; i < n; i++, d += ds, s += ss) {
    double v;
    memcpy(&v, s, 8);
    if (is_r_na(v)) {
      if (cv->na || f->flavour == 'n') *d = cv->fill[0];
      else *d = f->na;
    } else {
      *d = mf_round(f, v, &cv->bad);
    }
  }
}

#define MINI_KERNELS(X)                                                              \
  static void dec_##X##_dbl(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss,   \
                            int64_t n, zconv *cv) {                                  \
    mf_dec(&mf_##X, d, ds, s, ss, n, cv);                                            \
  }                                                                                  \
  static void enc_dbl_##X(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss,     \
                          int64_t n, zconv *cv) {                                    \
    mf_enc(&mf_##X, d, ds, s, ss, n, cv);                                            \
  }
MINI_KERNELS(e3m4)
MINI_KERNELS(e4m3fnuz)
MINI_KERNELS(e4m3b11fnuz)
MINI_KERNELS(e5m2fnuz)
MINI_KERNELS(e8m0fnu)
MINI_KERNELS(f6e2m3)
MINI_KERNELS(f6e3m2)
MINI_KERNELS(f4e2m1)

/* ---- complex numbers of two small floating point components ---------------- */

/* Each component through its own format's kernels; an element equal to the
 * fill value (both components) is NA where the fill marks missing values. */
static void cplx_parts_dec(zkern part, size_t ps, uint8_t *d, int64_t ds, const uint8_t *s,
                           int64_t ss, int64_t n, zconv *cv) {
  zconv c2 = *cv;
  c2.na = 0;
  const double nar = na_real();
  for (int64_t i = 0; i < n; i++, d += ds, s += ss) {
    double r[2];
    part((uint8_t *)r, 8, s, (int64_t)ps, 2, &c2);
    if (cv->na && memcmp(s, cv->fill, 2 * ps) == 0) r[0] = r[1] = nar;
    memcpy(d, r, sizeof r);
  }
}

static void cplx_parts_enc(zkern part, size_t ps, uint8_t *d, int64_t ds, const uint8_t *s,
                           int64_t ss, int64_t n, zconv *cv) {
  for (int64_t i = 0; i < n; i++, d += ds, s += ss) {
    double v[2];
    memcpy(v, s, sizeof v);
    if (cv->na && (is_r_na(v[0]) || is_r_na(v[1]))) {
      memcpy(d, cv->fill, 2 * ps);
      continue;
    }
    zconv c2 = *cv;
    c2.na = 0;
    c2.bad = 0;
    part(d, (int64_t)ps, (const uint8_t *)v, 8, 2, &c2);
    cv->bad += c2.bad;
  }
}

#define CPLX_KERNELS(X, PDEC, PENC, PS)                                              \
  static void dec_c##X##_cplx(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, \
                              int64_t n, zconv *cv) {                                \
    cplx_parts_dec(PDEC, PS, d, ds, s, ss, n, cv);                                   \
  }                                                                                  \
  static void enc_cplx_c##X(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss,   \
                            int64_t n, zconv *cv) {                                  \
    cplx_parts_enc(PENC, PS, d, ds, s, ss, n, cv);                                   \
  }
CPLX_KERNELS(f16, dec_f16_dbl, enc_dbl_f16, 2)
CPLX_KERNELS(bf16, dec_bf16_dbl, enc_dbl_bf16, 2)
CPLX_KERNELS(e3m4, dec_e3m4_dbl, enc_dbl_e3m4, 1)
CPLX_KERNELS(e4m3, dec_e4m3_dbl, enc_dbl_e4m3, 1)
CPLX_KERNELS(e4m3b11fnuz, dec_e4m3b11fnuz_dbl, enc_dbl_e4m3b11fnuz, 1)
CPLX_KERNELS(e4m3fnuz, dec_e4m3fnuz_dbl, enc_dbl_e4m3fnuz, 1)
CPLX_KERNELS(e5m2, dec_e5m2_dbl, enc_dbl_e5m2, 1)
CPLX_KERNELS(e5m2fnuz, dec_e5m2fnuz_dbl, enc_dbl_e5m2fnuz, 1)
CPLX_KERNELS(e8m0fnu, dec_e8m0fnu_dbl, enc_dbl_e8m0fnu, 1)
CPLX_KERNELS(f6e2m3, dec_f6e2m3_dbl, enc_dbl_f6e2m3, 1)
CPLX_KERNELS(f6e3m2, dec_f6e3m2_dbl, enc_dbl_f6e3m2, 1)
CPLX_KERNELS(f4e2m1, dec_f4e2m1_dbl, enc_dbl_f4e2m1, 1)

/* ---- raw bits: copied as they are ------------------------------------------- */

#define COPY_BYTES(NAME, N)                                                          \
  static void NAME(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, int64_t n,  \
                   zconv *cv) {                                                      \
    (void)cv;                                                                        \
    if (ds == (N) && ss == (N)) {                                                    \
      memcpy(d, s, (size_t)n * (N));                                                 \
      return;                                                                        \
    }                                                                                \
    for (int64_t i = 0; i < n; i++, d += ds, s += ss) memcpy(d, s, (N));             \
  }
COPY_BYTES(copy_r8, 1)
COPY_BYTES(copy_r16, 2)
COPY_BYTES(copy_r32, 4)
COPY_BYTES(copy_r64, 8)
COPY_BYTES(copy_r128, 16)

/* ---- the table -------------------------------------------------------------- */

/* integer types take R integer, logical, double and integer64 values */
#define INT_ENC(T) \
  {[RT_INTEGER] = enc_int_##T, [RT_LOGICAL] = enc_int_##T, [RT_DOUBLE] = enc_dbl_##T, \
   [RT_INT64] = enc_i64_##T}
#define MINI_ROW(DT, NAME, X) \
  [DT] = {NAME, 1, 0, 'f', -1, -1, {[RT_DOUBLE] = dec_##X##_dbl}, {[RT_DOUBLE] = enc_dbl_##X}}
#define CPLX_ROW(DT, NAME, X, SIZE, SWAP, PART) \
  [DT] = {NAME, SIZE, SWAP, 'c', PART, -1, {[RT_COMPLEX] = dec_c##X##_cplx}, {[RT_COMPLEX] = enc_cplx_c##X}}
#define RAW_ROW(NAME, N, FN) \
  {NAME, N, 0, 'r', -1, RT_RAW, {[RT_RAW] = FN}, {[RT_RAW] = FN}}

static const zdtype_def dtypes[DT_COUNT] = {
    [DT_BOOL] = {"bool", 1, 0, 'b', -1, -1, {[RT_LOGICAL] = dec_bool_lgl, [RT_RAW] = copy_r8},
                 {[RT_LOGICAL] = enc_lgl_bool, [RT_INTEGER] = enc_lgl_bool, [RT_DOUBLE] = enc_dbl_bool}},
    [DT_INT8] = {"int8", 1, 0, 'i', -1, -1, {[RT_INTEGER] = dec_i8_int, [RT_DOUBLE] = dec_i8_dbl, [RT_RAW] = copy_r8},
                 INT_ENC(i8)},
    [DT_INT16] = {"int16", 2, 2, 'i', -1, -1, {[RT_INTEGER] = dec_i16_int, [RT_DOUBLE] = dec_i16_dbl, [RT_RAW] = copy_r16},
                  INT_ENC(i16)},
    [DT_INT32] = {"int32", 4, 4, 'i', -1, RT_INTEGER,
                  {[RT_INTEGER] = dec_i32_int, [RT_DOUBLE] = dec_i32_dbl},
                  {[RT_INTEGER] = enc_int_i32_fast, [RT_LOGICAL] = enc_int_i32,
                   [RT_DOUBLE] = enc_dbl_i32, [RT_INT64] = enc_i64_i32}},
    [DT_INT64] = {"int64", 8, 8, 'i', -1, RT_INT64, {[RT_DOUBLE] = dec_i64_dbl, [RT_INT64] = dec_i64_i64},
                  INT_ENC(i64)},
    [DT_UINT8] = {"uint8", 1, 0, 'u', -1, -1,
                  {[RT_INTEGER] = dec_u8_int, [RT_DOUBLE] = dec_u8_dbl, [RT_RAW] = copy_r8}, /* bytes as raw */
                  {[RT_INTEGER] = enc_int_u8, [RT_LOGICAL] = enc_int_u8, [RT_DOUBLE] = enc_dbl_u8,
                   [RT_INT64] = enc_i64_u8, [RT_RAW] = copy_r8}},
    [DT_UINT16] = {"uint16", 2, 2, 'u', -1, -1,
                   {[RT_INTEGER] = dec_u16_int, [RT_DOUBLE] = dec_u16_dbl, [RT_RAW] = copy_r16}, INT_ENC(u16)},
    [DT_UINT32] = {"uint32", 4, 4, 'u', -1, -1, {[RT_DOUBLE] = dec_u32_dbl, [RT_RAW] = copy_r32}, INT_ENC(u32)},
    [DT_UINT64] = {"uint64", 8, 8, 'u', -1, -1, {[RT_DOUBLE] = dec_u64_dbl, [RT_INT64] = dec_u64_i64},
                   INT_ENC(u64)},
    [DT_FLOAT16] = {"float16", 2, 2, 'f', -1, -1, {[RT_DOUBLE] = dec_f16_dbl, [RT_RAW] = copy_r16},
                    {[RT_INTEGER] = enc_int_f16, [RT_LOGICAL] = enc_int_f16, [RT_DOUBLE] = enc_dbl_f16}},
    [DT_FLOAT32] = {"float32", 4, 4, 'f', -1, -1, {[RT_DOUBLE] = dec_f32_dbl, [RT_RAW] = copy_r32},
                    {[RT_INTEGER] = enc_int_f32, [RT_LOGICAL] = enc_int_f32, [RT_DOUBLE] = enc_dbl_f32,
                     [RT_INT64] = enc_i64_f32}},
    [DT_FLOAT64] = {"float64", 8, 8, 'f', -1, RT_DOUBLE, {[RT_DOUBLE] = dec_f64_dbl},
                    {[RT_INTEGER] = enc_int_f64, [RT_LOGICAL] = enc_int_f64, [RT_DOUBLE] = enc_dbl_f64,
                     [RT_INT64] = enc_i64_f64}},
    [DT_COMPLEX64] = {"complex64", 8, 4, 'c', DT_FLOAT32, -1, {[RT_COMPLEX] = dec_c64_cplx},
                      {[RT_COMPLEX] = enc_cplx_c64}},
    [DT_COMPLEX128] = {"complex128", 16, 8, 'c', DT_FLOAT64, RT_COMPLEX, {[RT_COMPLEX] = dec_c128_cplx},
                       {[RT_COMPLEX] = enc_cplx_c128}},
    [DT_STRING] = {"string", sizeof(zstr), 0, 's', -1, -1,
                   {[RT_CHARACTER] = copy_str, [RT_RAWLIST] = copy_str},
                   {[RT_CHARACTER] = copy_str, [RT_RAWLIST] = copy_str}},
    [DT_BFLOAT16] = {"bfloat16", 2, 2, 'f', -1, -1, {[RT_DOUBLE] = dec_bf16_dbl, [RT_RAW] = copy_r16},
                     {[RT_DOUBLE] = enc_dbl_bf16}},
    [DT_FLOAT8_E4M3] = {"float8_e4m3", 1, 0, 'f', -1, -1, {[RT_DOUBLE] = dec_e4m3_dbl},
                        {[RT_DOUBLE] = enc_dbl_e4m3}},
    [DT_FLOAT8_E5M2] = {"float8_e5m2", 1, 0, 'f', -1, -1, {[RT_DOUBLE] = dec_e5m2_dbl},
                        {[RT_DOUBLE] = enc_dbl_e5m2}},
    [DT_INT4] = {"int4", 1, 0, 'i', -1, -1, {[RT_INTEGER] = dec_i4_int, [RT_DOUBLE] = dec_i4_dbl},
                 INT_ENC(i4)},
    [DT_UINT4] = {"uint4", 1, 0, 'u', -1, -1, {[RT_INTEGER] = dec_u4_int, [RT_DOUBLE] = dec_u4_dbl},
                  INT_ENC(u4)},
    [DT_INT2] = {"int2", 1, 0, 'i', -1, -1, {[RT_INTEGER] = dec_i2_int, [RT_DOUBLE] = dec_i2_dbl},
                 INT_ENC(i2)},
    [DT_UINT2] = {"uint2", 1, 0, 'u', -1, -1, {[RT_INTEGER] = dec_u2_int, [RT_DOUBLE] = dec_u2_dbl},
                  INT_ENC(u2)},
    MINI_ROW(DT_FLOAT8_E3M4, "float8_e3m4", e3m4),
    MINI_ROW(DT_FLOAT8_E4M3FNUZ, "float8_e4m3fnuz", e4m3fnuz),
    MINI_ROW(DT_FLOAT8_E4M3B11FNUZ, "float8_e4m3b11fnuz", e4m3b11fnuz),
    MINI_ROW(DT_FLOAT8_E5M2FNUZ, "float8_e5m2fnuz", e5m2fnuz),
    MINI_ROW(DT_FLOAT8_E8M0FNU, "float8_e8m0fnu", e8m0fnu),
    MINI_ROW(DT_FLOAT6_E2M3FN, "float6_e2m3fn", f6e2m3),
    MINI_ROW(DT_FLOAT6_E3M2FN, "float6_e3m2fn", f6e3m2),
    MINI_ROW(DT_FLOAT4_E2M1FN, "float4_e2m1fn", f4e2m1),
    CPLX_ROW(DT_COMPLEX_FLOAT16, "complex_float16", f16, 4, 2, DT_FLOAT16),
    CPLX_ROW(DT_COMPLEX_BFLOAT16, "complex_bfloat16", bf16, 4, 2, DT_BFLOAT16),
    CPLX_ROW(DT_COMPLEX_FLOAT8_E3M4, "complex_float8_e3m4", e3m4, 2, 0, DT_FLOAT8_E3M4),
    CPLX_ROW(DT_COMPLEX_FLOAT8_E4M3, "complex_float8_e4m3", e4m3, 2, 0, DT_FLOAT8_E4M3),
    CPLX_ROW(DT_COMPLEX_FLOAT8_E4M3B11FNUZ, "complex_float8_e4m3b11fnuz", e4m3b11fnuz, 2, 0,
             DT_FLOAT8_E4M3B11FNUZ),
    CPLX_ROW(DT_COMPLEX_FLOAT8_E4M3FNUZ, "complex_float8_e4m3fnuz", e4m3fnuz, 2, 0, DT_FLOAT8_E4M3FNUZ),
    CPLX_ROW(DT_COMPLEX_FLOAT8_E5M2, "complex_float8_e5m2", e5m2, 2, 0, DT_FLOAT8_E5M2),
    CPLX_ROW(DT_COMPLEX_FLOAT8_E5M2FNUZ, "complex_float8_e5m2fnuz", e5m2fnuz, 2, 0, DT_FLOAT8_E5M2FNUZ),
    CPLX_ROW(DT_COMPLEX_FLOAT8_E8M0FNU, "complex_float8_e8m0fnu", e8m0fnu, 2, 0, DT_FLOAT8_E8M0FNU),
    CPLX_ROW(DT_COMPLEX_FLOAT6_E2M3FN, "complex_float6_e2m3fn", f6e2m3, 2, 0, DT_FLOAT6_E2M3FN),
    CPLX_ROW(DT_COMPLEX_FLOAT6_E3M2FN, "complex_float6_e3m2fn", f6e3m2, 2, 0, DT_FLOAT6_E3M2FN),
    CPLX_ROW(DT_COMPLEX_FLOAT4_E2M1FN, "complex_float4_e2m1fn", f4e2m1, 2, 0, DT_FLOAT4_E2M1FN),
    [DT_R8] = RAW_ROW("r8", 1, copy_r8),
    [DT_R16] = RAW_ROW("r16", 2, copy_r16),
    [DT_R32] = RAW_ROW("r32", 4, copy_r32),
    [DT_R64] = RAW_ROW("r64", 8, copy_r64),
    [DT_R128] = RAW_ROW("r128", 16, copy_r128),
};

const zdtype_def *dtype_def(zdtype t) { return &dtypes[t]; }

int kernel_supported(zdtype dt, zrtype rt, int encode) {
  return (encode ? dtypes[dt].enc[rt] : dtypes[dt].dec[rt]) != NULL;
}

/* Tables computed once, before any thread runs (called from R_init_zarr). */
void slab_init(void) {
  for (int i = 0; i < 256; i++) {
    f8_e4m3[i] = mini_to_double((uint32_t)i, 4, 3);
    f8_e5m2[i] = mini_to_double((uint32_t)i, 5, 2);
  }
  minifloat *mf[] = {&mf_e3m4, &mf_e4m3fnuz, &mf_e4m3b11fnuz, &mf_e5m2fnuz,
                     &mf_e8m0fnu, &mf_f6e2m3, &mf_f6e3m2, &mf_f4e2m1};
  for (size_t i = 0; i < sizeof mf / sizeof mf[0]; i++) mf_init(mf[i]);
}

int dtype_from_name(const char *name) {
  for (int i = 0; i < DT_COUNT; i++)
    if (strcmp(name, dtypes[i].name) == 0) return i;
  return -1;
}

size_t dtype_size(zdtype t) { return dtypes[t].size; }

static const char *rt_names[RT_COUNT] = {"logical", "integer", "double", "integer64", "complex",
                                         "character", "list", "raw"};
static const size_t rt_sizes[RT_COUNT] = {4, 4, 8, 8, 16, sizeof(zstr), sizeof(zstr), 1};

int rtype_from_name(const char *name) {
  for (int i = 0; i < RT_COUNT; i++)
    if (strcmp(name, rt_names[i]) == 0) return i;
  return -1;
}

size_t rtype_size(zrtype t) { return rt_sizes[t]; }

size_t elem_rsize(zdtype dt, zrtype rt) { return rt == RT_RAW ? dtypes[dt].size : rt_sizes[rt]; }
