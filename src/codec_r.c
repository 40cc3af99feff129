/* Codecs written in R (register_zarr_codec()): one row of the codec table,
 * "r_codec", whose configuration carries the R functions. The engine runs a
 * chain holding it on the R thread only (chain_main_thread()); each call
 * runs at top level, so an R error or an interrupt comes back as a classed
 * error of the chunk instead of jumping over the engine's C frames. */
#include <pthread.h>
#include <string.h>
#include "zarr.h"

static pthread_t r_thread;

typedef struct {
  SEXP encode, decode, config; /* kept alive by the flat description */
  char name[64];
} rcodec_cfg;
ZCODEC_CFG_FITS(rcodec_cfg);

typedef struct {
  SEXP fn, config;
  const uint8_t *src;
  size_t n, limit;
  zbuf *out;
  int status; /* 0 ok, 1 R error, 2 not raw, 3 too large, 4 no memory */
  char msg[256];
} rcall;

static SEXP on_error(SEXP cond, void *data) {
  rcall *c = data;
  c->status = 1;
  SEXP call = PROTECT(lang2(install("conditionMessage"), cond));
  SEXP m = PROTECT(R_tryEvalSilent(call, R_BaseEnv, NULL));
  const char *s = TYPEOF(m) == STRSXP && XLENGTH(m) > 0 ? CHAR(STRING_ELT(m, 0)) : "an error";
  snprintf(c->msg, sizeof c->msg, "%s", s);
  UNPROTECT(2);
  return R_NilValue;
}

static SEXP body(void *data) {
  rcall *c = data;
  SEXP raw = PROTECT(allocVector(RAWSXP, (R_xlen_t)c->n));
  if (c->n) memcpy(RAW(raw), c->src, c->n);
  SEXP call = PROTECT(lang3(c->fn, raw, c->config));
  SEXP res = PROTECT(eval(call, R_GlobalEnv));
  if (TYPEOF(res) != RAWSXP) {
    c->status = 2;
  } else if (c->limit && (size_t)XLENGTH(res) > c->limit) {
    c->status = 3;
  } else {
    zerr e = {ZE_OK, ""};
    size_t k = (size_t)XLENGTH(res);
    if (zbuf_reserve(c->out, k + 1, &e)) {
      c->status = 4;
    } else {
      if (k) memcpy(c->out->data, RAW(res), k);
      c->out->size = k;
    }
  }
  UNPROTECT(3);
  return R_NilValue;
}

static void top(void *data) { R_tryCatchError(body, data, on_error, data); }

static int run(const zcodec *cd, int enc, const uint8_t *src, size_t n, zbuf *out, size_t limit,
               zerr *e) {
  const rcodec_cfg *k = ZCODEC_CFG(cd, const rcodec_cfg);
  if (!pthread_equal(pthread_self(), r_thread))
    return zerr_set(e, ZE_CODEC, "R codec '%s' called off the R thread", k->name);
  rcall c = {enc ? k->encode : k->decode, k->config, src, n, limit, out, 0, ""};
  if (!R_ToplevelExec(top, &c))
    return zerr_set(e, ZE_INTERRUPT, "R codec '%s' was interrupted", k->name);
  switch (c.status) {
  case 0: return 0;
  case 1: return zerr_set(e, enc ? ZE_CODEC : ZE_CORRUPT, "R codec '%s' failed to %s: %s",
                          k->name, enc ? "encode" : "decode", c.msg);
  case 2: return zerr_set(e, ZE_CODEC, "R codec '%s' returned something other than a raw vector",
                          k->name);
  case 3: return zerr_set(e, ZE_CORRUPT, "R codec '%s' decoded more than the expected %.0f bytes",
                          k->name, (double)limit);
  default: return zerr_set(e, ZE_NOMEM, "out of memory");
  }
}

static int r_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  rcodec_cfg *k = ZCODEC_CFG(c, rcodec_cfg);
  const char *name;
  if (cfg_str(cfg, "r_codec", "codec", &name, e)) return -1;
  snprintf(k->name, sizeof k->name, "%s", name);
  k->encode = cfg->obj ? cfg->obj(cfg, "encode") : NULL;
  k->decode = cfg->obj ? cfg->obj(cfg, "decode") : NULL;
  k->config = cfg->obj ? cfg->obj(cfg, "configuration") : NULL;
  if (k->encode == NULL || k->decode == NULL || !isFunction(k->encode) || !isFunction(k->decode))
    return zerr_set(e, ZE_CODEC, "R codec '%s' lacks its encode and decode functions", k->name);
  if (k->config == NULL) k->config = R_NilValue;
  return 0;
}

static int r_encode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  return run(c, 1, src, n, out, 0, e);
}

static int r_decode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, size_t limit,
                    zerr *e) {
  return run(c, 0, src, n, out, limit, e);
}

static const zcodec_vt zc_r_codec = {.name = "r_codec", .parse = r_parse, .decode = r_decode,
                                     .encode = r_encode, .overhead = -1, .bounded = 1,
                                     .main_thread = 1};

void codec_r_init(void) {
  r_thread = pthread_self();
  zcodec_table_add(&zc_r_codec);
}
