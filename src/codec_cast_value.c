/* cast_value (a registered Zarr v3 extension), an array -> array codec that
 * converts each element's value to another numeric type when encoding and
 * back when decoding. In order: a value listed in the scalar map becomes its
 * mapped value; else a value the target holds exactly is kept; else it is
 * rounded ("rounding") and, beyond the target's range, clamped or wrapped
 * ("out_of_range"), or the cast fails. NaN and infinities go to an integer
 * type only through the scalar map.
 *
 * R's flat description: "dtype" (the array's type) and "astype" (the stored
 * one), in the byte order of the elements; "rounding" (nearest-even,
 * towards-zero, towards-positive, towards-negative, nearest-away);
 * "out_of_range" (none, clamp, wrap); "enc_from"/"enc_to" and
 * "dec_from"/"dec_to": up to CAST_MAP pairs each, as numbers
 * (enc_n/dec_n of them). Integers travel through doubles, exactly up to 2^53. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "codec_elements.h"

#define CAST_MAP 3

typedef struct {
  znum from, to;
  int rounding, oor; /* oor: 0 none, 1 clamp, 2 wrap */
  int n_enc, n_dec;
  double enc[CAST_MAP][2], dec[CAST_MAP][2];
} cast_cfg;
ZCODEC_CFG_FITS(cast_cfg);

static const char *roundings[] = {"nearest-even", "towards-zero", "towards-positive",
                                  "towards-negative", "nearest-away"};

static int read_map(const zcfg *cfg, const char *pre, double (*m)[2], int *n, zerr *e) {
  char key[32];
  snprintf(key, sizeof key, "%s_n", pre);
  if (cfg_int(cfg, "cast_value", key, 0, CAST_MAP, n, e)) return -1;
  for (int i = 0; i < *n; i++) {
    for (int j = 0; j < 2; j++) {
      snprintf(key, sizeof key, "%s_%s%d", pre, j ? "to" : "from", i + 1);
      if (cfg_dbl(cfg, "cast_value", key, &m[i][j], e)) return -1;
    }
  }
  return 0;
}

static int cast_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  cast_cfg *k = ZCODEC_CFG(c, cast_cfg);
  const char *r, *o;
  if (cfg_num_type(cfg, "cast_value", "dtype", &k->from, e) ||
      cfg_num_type(cfg, "cast_value", "astype", &k->to, e) ||
      cfg_str(cfg, "cast_value", "rounding", &r, e) ||
      cfg_str(cfg, "cast_value", "out_of_range", &o, e) ||
      read_map(cfg, "enc", k->enc, &k->n_enc, e) || read_map(cfg, "dec", k->dec, &k->n_dec, e))
    return -1;
  k->rounding = -1;
  for (int i = 0; i < 5; i++)
    if (strcmp(r, roundings[i]) == 0) k->rounding = i;
  if (k->rounding < 0) return zerr_set(e, ZE_CODEC, "cast_value: unknown rounding '%.30s'", r);
  k->oor = strcmp(o, "none") == 0 ? 0 : strcmp(o, "clamp") == 0 ? 1 : strcmp(o, "wrap") == 0 ? 2 : -1;
  if (k->oor < 0) return zerr_set(e, ZE_CODEC, "cast_value: unknown out_of_range '%.30s'", o);
  return 0;
}

static double round_mode(double x, int mode) {
  switch (mode) {
  case 1: return trunc(x);
  case 2: return ceil(x);
  case 3: return floor(x);
  case 4: return round(x);
  default: return nearbyint(x); /* the default rounding mode: ties to even */
  }
}

/* float64 -> float32 under a rounding mode */
static float to_f32(double x, int mode) {
  float f = (float)x; /* nearest-even */
  if (isnan(x) || isinf(x) || (double)f == x || mode == 0) return f;
  if (mode == 1 && fabs((double)f) > fabs(x)) f = nextafterf(f, 0);
  if (mode == 2 && (double)f < x) f = nextafterf(f, INFINITY);
  if (mode == 3 && (double)f > x) f = nextafterf(f, -INFINITY);
  if (mode == 4) { /* ties away from zero */
    float other = (double)f > x ? nextafterf(f, -INFINITY) : nextafterf(f, INFINITY);
    if (fabs((double)other - x) == fabs((double)f - x) && fabs((double)other) > fabs((double)f)) f = other;
  }
  return f;
}

static int same(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

/* one element; 0, or -1 with `e` set */
static int cast_one(const cast_cfg *k, const uint8_t *p, znum from, uint8_t *q, znum to,
                    const double (*map)[2], int nmap, int enc, zerr *e) {
  double x = znum_get_f(p, from);
  for (int i = 0; i < nmap; i++)
    if (same(map[i][0], x)) {
      znum_put_f(q, to, map[i][1]);
      return 0;
    }
  const char *dir = enc ? "encoding" : "decoding";
  zerr_kind kind = enc ? ZE_VALUE : ZE_CORRUPT;
  if (to.kind == 'f') {
    double y = to.size == 4 ? (double)to_f32(x, k->rounding) : x;
    if (!isinf(x) && isinf(y)) {
      if (k->oor != 1)
        return zerr_set(e, kind, "cast_value: %g is out of the range of float32 (%s)", x, dir);
    }
    znum_put_f(q, to, y);
    return 0;
  }
  if (from.kind != 'f') { /* integers to integers, exactly */
    uint64_t u = znum_get_u(p, from);
    int neg = from.kind == 'i' && (int64_t)u < 0;
    int bits = to.size * 8, ok;
    if (to.kind == 'u') ok = !neg && (bits == 64 || u <= (1ULL << bits) - 1);
    else if (neg) ok = bits == 64 || (int64_t)u >= -(int64_t)(1ULL << (bits - 1));
    else ok = u <= (bits == 64 ? (uint64_t)INT64_MAX : (1ULL << (bits - 1)) - 1);
    if (!ok) {
      if (k->oor == 0)
        return zerr_set(e, kind, "cast_value: %.0f is out of the range of the %s type (%s)",
                        neg ? (double)(int64_t)u : (double)u, to.kind == 'u' ? "unsigned" : "signed", dir);
      if (k->oor == 1) {
        uint64_t lo = to.kind == 'u' ? 0 : (uint64_t)(-(int64_t)(bits == 64 ? 0 : 1ULL << (bits - 1)));
        if (to.kind == 'i' && bits == 64) lo = (uint64_t)INT64_MIN;
        uint64_t hi = to.kind == 'u' ? (bits == 64 ? UINT64_MAX : (1ULL << bits) - 1)
                                     : (bits == 64 ? (uint64_t)INT64_MAX : (1ULL << (bits - 1)) - 1);
        u = neg ? lo : hi;
      }
    }
    znum_put_u(q, to, u); /* wrap: the low bits */
    return 0;
  }
  if (isnan(x) || isinf(x))
    return zerr_set(e, kind, "cast_value: %g has no integer value (%s; map it with scalar_map)", x, dir);
  double r = round_mode(x, k->rounding);
  int bits = to.size * 8;
  double lo = to.kind == 'u' ? 0 : -ldexp(1, bits - 1), hi = to.kind == 'u' ? ldexp(1, bits) : ldexp(1, bits - 1);
  if (r < lo || r >= hi) {
    if (k->oor == 0)
      return zerr_set(e, kind, "cast_value: %g is out of the range of the integer type (%s)", x, dir);
    if (k->oor == 1) {
      if (r < lo) znum_put_f(q, to, lo);
      else if (to.kind == 'u') znum_put_u(q, to, bits == 64 ? UINT64_MAX : (1ULL << bits) - 1);
      else znum_put_u(q, to, bits == 64 ? (uint64_t)INT64_MAX : (1ULL << (bits - 1)) - 1);
      return 0;
    }
    double m = fmod(r, 18446744073709551616.0); /* wrap modulo 2^64, then keep the low bits */
    if (m < 0) m += 18446744073709551616.0;
    znum_put_u(q, to, m >= 18446744073709551616.0 ? 0 : (uint64_t)m);
    return 0;
  }
  if (to.kind == 'u') znum_put_u(q, to, (uint64_t)r);
  else znum_put_u(q, to, (uint64_t)(int64_t)r);
  return 0;
}

static int cast_run(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, int enc, zerr *e) {
  const cast_cfg *k = ZCODEC_CFG(c, const cast_cfg);
  znum from = enc ? k->from : k->to, to = enc ? k->to : k->from;
  size_t fs = (size_t)from.size, ts = (size_t)to.size, count = n / fs;
  if (n % fs) return zerr_set(e, ZE_CORRUPT, "cast_value: data is not a whole number of elements");
  if (zbuf_reserve(out, count * ts + 1, e)) return -1;
  for (size_t i = 0; i < count; i++)
    if (cast_one(k, src + i * fs, from, out->data + i * ts, to, enc ? k->enc : k->dec,
                 enc ? k->n_enc : k->n_dec, enc, e))
      return -1;
  out->size = count * ts;
  return 0;
}

static int cast_encode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  return cast_run(c, src, n, out, 1, e);
}

static int cast_decode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, size_t limit,
                       zerr *e) {
  (void)limit; /* the output is at most 8 bytes per input byte */
  return cast_run(c, src, n, out, 0, e);
}

const zcodec_vt zc_cast_value = {.name = "cast_value", .parse = cast_parse, .decode = cast_decode,
                                 .encode = cast_encode, .overhead = -1};
