/* numcodecs' lzma codec (system liblzma): the .xz, .lzma ("alone") and raw
 * formats, with a preset or a chain of filters as Python's lzma module
 * takes them. R flattens the filter list to text (lzma_filters_text() in
 * R/codecs_numcodecs.R): filters separated by ';', each its numeric id then
 * ",key=value" pairs, e.g. "3,dist=4;33,preset=1". */
#ifdef HAVE_LZMA /* configure found liblzma; else the row below the #else */
#include <lzma.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "zarr_core.h"

#define FORMAT_XZ 1
#define FORMAT_ALONE 2
#define FORMAT_RAW 3
#define LZMA_MAX_FILTERS 4 /* as liblzma's LZMA_FILTERS_MAX */

/* A filter's options as given; `set` has bit i when option i was given.
 * The first N_WIDE take 32 bits, the others (at most 255) 8, to keep four
 * filters within a codec's configuration bytes; dist and start_offset
 * belong to different filters and share a slot. */
enum { O_PRESET, O_DICT, O_NICE, O_DEPTH, O_DIST, O_LC, O_LP, O_PB, O_MODE, O_MF, O_START, N_OPT };
#define N_WIDE 5
static const char *const opt_names[N_OPT] = {"preset", "dict_size", "nice_len", "depth", "dist", "lc",
                                             "lp",     "pb",        "mode",     "mf",    "start_offset"};

typedef struct {
  uint32_t wide[N_WIDE];
  uint8_t narrow[N_OPT - N_WIDE - 1];
  uint8_t kind; /* index into filter_ids */
  uint16_t set;
} lzma_fspec;

static uint32_t opt_get(const lzma_fspec *f, int o) {
  if (o == O_START) o = O_DIST;
  return o < N_WIDE ? f->wide[o] : f->narrow[o - N_WIDE];
}

/* the filters this codec takes: liblzma ids, names for messages, the options each may have */
#define OPTS_LZMA ((1u << O_PRESET) | (1u << O_DICT) | (1u << O_LC) | (1u << O_LP) | (1u << O_PB) | \
                   (1u << O_MODE) | (1u << O_NICE) | (1u << O_MF) | (1u << O_DEPTH))
static const struct {
  lzma_vli id;
  const char *name;
  unsigned opts;
} filter_ids[] = {
    {LZMA_FILTER_LZMA1, "LZMA1", OPTS_LZMA},         {LZMA_FILTER_LZMA2, "LZMA2", OPTS_LZMA},
    {LZMA_FILTER_DELTA, "DELTA", 1u << O_DIST},      {LZMA_FILTER_X86, "X86", 1u << O_START},
    {LZMA_FILTER_POWERPC, "POWERPC", 1u << O_START}, {LZMA_FILTER_IA64, "IA64", 1u << O_START},
    {LZMA_FILTER_ARM, "ARM", 1u << O_START},         {LZMA_FILTER_ARMTHUMB, "ARMTHUMB", 1u << O_START},
    {LZMA_FILTER_SPARC, "SPARC", 1u << O_START},
};
#define N_KINDS (sizeof filter_ids / sizeof filter_ids[0])

typedef struct {
  int format, check;
  int64_t preset; /* -1: none given */
  int n_filters;
  lzma_fspec f[LZMA_MAX_FILTERS];
} lzma_cfg;
ZCODEC_CFG_FITS(lzma_cfg);

static int parse_filters(const char *s, lzma_cfg *c, zerr *e) {
  c->n_filters = 0;
  while (*s) {
    if (c->n_filters == LZMA_MAX_FILTERS)
      return zerr_set(e, ZE_CODEC, "codec 'lzma': at most %d filters", LZMA_MAX_FILTERS);
    lzma_fspec *f = &c->f[c->n_filters++];
    memset(f, 0, sizeof *f);
    char *end;
    unsigned long long id = strtoull(s, &end, 10);
    if (end == s) return zerr_set(e, ZE_CODEC, "codec 'lzma': a filter without a numeric id");
    size_t k = 0;
    while (k < N_KINDS && filter_ids[k].id != id) k++;
    if (k == N_KINDS)
      return zerr_set(e, ZE_CODEC,
                      "codec 'lzma': filter id %llu is not supported (supported: LZMA1, LZMA2, DELTA and the BCJ "
                      "filters X86, POWERPC, IA64, ARM, ARMTHUMB, SPARC)",
                      id);
    f->kind = (uint8_t)k;
    s = end;
    while (*s == ',') {
      s++;
      const char *eq = strchr(s, '=');
      if (eq == NULL) return zerr_set(e, ZE_CODEC, "codec 'lzma': bad filter option");
      int o = 0;
      while (o < N_OPT && !(strlen(opt_names[o]) == (size_t)(eq - s) && memcmp(opt_names[o], s, (size_t)(eq - s)) == 0)) o++;
      if (o == N_OPT || !(filter_ids[k].opts & (1u << o)))
        return zerr_set(e, ZE_CODEC, "codec 'lzma': filter %s has no option '%.*s'", filter_ids[k].name,
                        (int)(eq - s > 40 ? 40 : eq - s), s);
      unsigned long long v = strtoull(eq + 1, &end, 10);
      int slot = o == O_START ? O_DIST : o;
      if (end == eq + 1 || v > (slot < N_WIDE ? UINT32_MAX : 255u))
        return zerr_set(e, ZE_CODEC, "codec 'lzma': option '%s' must be a whole number from 0 to %lu", opt_names[o],
                        slot < N_WIDE ? (unsigned long)UINT32_MAX : 255ul);
      if (slot < N_WIDE) f->wide[slot] = (uint32_t)v;
      else f->narrow[slot - N_WIDE] = (uint8_t)v;
      f->set |= (uint16_t)(1u << o);
      s = end;
    }
    if (*s == ';') s++;
    else if (*s) return zerr_set(e, ZE_CODEC, "codec 'lzma': bad filter list");
  }
  return 0;
}

static int lzma_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  lzma_cfg *k = ZCODEC_CFG(c, lzma_cfg);
  memset(k, 0, sizeof *k);
  double preset;
  const char *filters;
  if (cfg_int(cfg, "lzma", "format", 1, 3, &k->format, e) || cfg_int(cfg, "lzma", "check", -1, 15, &k->check, e) ||
      cfg_dbl(cfg, "lzma", "preset", &preset, e) || cfg_str(cfg, "lzma", "filters", &filters, e) ||
      parse_filters(filters, k, e))
    return -1;
  if (!(preset == -1 || (preset >= 0 && preset == (double)(int64_t)preset &&
                         ((int64_t)preset & ~(int64_t)LZMA_PRESET_EXTREME) <= 9)))
    return zerr_set(e, ZE_CODEC, "codec 'lzma': preset must be 0 to 9, optionally | PRESET_EXTREME (2^31)");
  k->preset = (int64_t)preset;
  if (k->check != -1 && k->check != 0 && k->check != 1 && k->check != 4 && k->check != 10)
    return zerr_set(e, ZE_CODEC, "codec 'lzma': check must be -1, 0 (none), 1 (CRC32), 4 (CRC64) or 10 (SHA256)");
  if (k->format != FORMAT_XZ && k->check > 0)
    return zerr_set(e, ZE_CODEC, "codec 'lzma': an integrity check needs format 1 (xz)");
  if (k->preset != -1 && k->n_filters)
    return zerr_set(e, ZE_CODEC, "codec 'lzma': give a preset or filters, not both");
  if (k->format == FORMAT_RAW && k->n_filters == 0)
    return zerr_set(e, ZE_CODEC, "codec 'lzma': format 3 (raw) needs filters");
  if (k->format == FORMAT_ALONE && k->n_filters &&
      (k->n_filters != 1 || filter_ids[k->f[0].kind].id != LZMA_FILTER_LZMA1))
    return zerr_set(e, ZE_CODEC, "codec 'lzma': format 2 (alone) takes a single LZMA1 filter");
  return 0;
}

/* liblzma's filter chain for a parsed configuration; `opts` holds the options */
typedef union {
  lzma_options_lzma lz;
  lzma_options_delta delta;
  lzma_options_bcj bcj;
} lzma_opts;

static int build_filters(const lzma_cfg *k, lzma_filter *fl, lzma_opts *opts, zerr *e) {
  for (int i = 0; i < k->n_filters; i++) {
    const lzma_fspec *f = &k->f[i];
    lzma_opts *o = &opts[i];
    memset(o, 0, sizeof *o);
    lzma_vli id = filter_ids[f->kind].id;
    fl[i].id = id;
    fl[i].options = o;
    if (id == LZMA_FILTER_LZMA1 || id == LZMA_FILTER_LZMA2) {
      uint32_t preset = f->set & (1u << O_PRESET) ? opt_get(f, O_PRESET) : LZMA_PRESET_DEFAULT;
      if (lzma_lzma_preset(&o->lz, preset)) return zerr_set(e, ZE_CODEC, "codec 'lzma': invalid filter preset %u", preset);
      if (f->set & (1u << O_DICT)) o->lz.dict_size = opt_get(f, O_DICT);
      if (f->set & (1u << O_LC)) o->lz.lc = opt_get(f, O_LC);
      if (f->set & (1u << O_LP)) o->lz.lp = opt_get(f, O_LP);
      if (f->set & (1u << O_PB)) o->lz.pb = opt_get(f, O_PB);
      if (f->set & (1u << O_MODE)) o->lz.mode = (lzma_mode)opt_get(f, O_MODE);
      if (f->set & (1u << O_NICE)) o->lz.nice_len = opt_get(f, O_NICE);
      if (f->set & (1u << O_MF)) o->lz.mf = (lzma_match_finder)opt_get(f, O_MF);
      if (f->set & (1u << O_DEPTH)) o->lz.depth = opt_get(f, O_DEPTH);
    } else if (id == LZMA_FILTER_DELTA) {
      o->delta.type = LZMA_DELTA_TYPE_BYTE;
      o->delta.dist = f->set & (1u << O_DIST) ? opt_get(f, O_DIST) : 1;
    } else {
      o->bcj.start_offset = opt_get(f, O_START);
    }
  }
  fl[k->n_filters].id = LZMA_VLI_UNKNOWN;
  fl[k->n_filters].options = NULL;
  return 0;
}

static const char *lzma_msg(lzma_ret r) {
  switch (r) {
  case LZMA_MEM_ERROR: return "out of memory";
  case LZMA_MEMLIMIT_ERROR: return "needs more memory than allowed";
  case LZMA_FORMAT_ERROR: return "not in the expected format";
  case LZMA_OPTIONS_ERROR: return "unsupported options";
  case LZMA_DATA_ERROR: return "corrupt data";
  case LZMA_BUF_ERROR: return "truncated data";
  case LZMA_UNSUPPORTED_CHECK: return "unsupported integrity check";
  default: return "failed";
  }
}

/* Runs `s` (set up) over src to the end into out; `limit` (0: none) bounds
 * the output, stopping one byte past it. */
static int run(lzma_stream *s, const uint8_t *src, size_t n, zbuf *out, size_t limit, int decoding, zerr *e) {
  size_t cap = decoding ? (n < SIZE_MAX / 8 ? n * 4 + 1024 : n) : n + n / 16 + 1024;
  if (limit && cap > limit + 1) cap = limit + 1;
  if (zbuf_reserve(out, cap, e)) return -1;
  out->size = 0;
  s->next_in = src;
  s->avail_in = n;
  lzma_ret r = LZMA_OK;
  while (r == LZMA_OK) {
    if (limit && out->size > limit)
      return zerr_set(e, ZE_CORRUPT, "lzma data decodes to more than the expected %.0f bytes", (double)limit);
    if (out->size == out->cap) {
      size_t want = out->cap + out->cap / 2 + 1024;
      if (limit && want > limit + 1) want = limit + 1;
      if (zbuf_reserve(out, want, e)) return -1;
    }
    s->next_out = out->data + out->size;
    s->avail_out = out->cap - out->size;
    r = lzma_code(s, LZMA_FINISH);
    out->size = out->cap - s->avail_out;
  }
  if (limit && out->size > limit)
    return zerr_set(e, ZE_CORRUPT, "lzma data decodes to more than the expected %.0f bytes", (double)limit);
  if (r != LZMA_STREAM_END) {
    if (decoding) return zerr_set(e, ZE_CORRUPT, "lzma data cannot be decoded: %s", lzma_msg(r));
    return zerr_set(e, r == LZMA_MEM_ERROR ? ZE_NOMEM : ZE_CODEC, "lzma compression failed: %s", lzma_msg(r));
  }
  return 0;
}

/* A decoder's memory limit: the dictionary a stream declares is allocated
 * before any output, so a few header bytes could ask for 4 GiB; no chunk
 * needs a dictionary much beyond its own size, and every preset's (at most
 * 64 MiB) fits the constant part. Without an expected size (0), the
 * compressed size n stands in for it. At most 1.25 GiB. */
static uint64_t mem_limit(size_t limit, size_t n) {
  uint64_t base = (uint64_t)256 << 20, cap = (uint64_t)1 << 30;
  uint64_t more = limit == 0 ? 8 * (uint64_t)n : 2 * (uint64_t)limit;
  return base + (more > cap ? cap : more);
}

static int lzma_dec(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, size_t limit, zerr *e) {
  const lzma_cfg *k = ZCODEC_CFG(c, const lzma_cfg);
  lzma_stream s = LZMA_STREAM_INIT;
  lzma_filter fl[LZMA_MAX_FILTERS + 1];
  lzma_opts opts[LZMA_MAX_FILTERS];
  lzma_ret r;
  if (k->format == FORMAT_XZ) {
    r = lzma_stream_decoder(&s, mem_limit(limit, n), LZMA_CONCATENATED);
  } else if (k->format == FORMAT_ALONE) {
    /* liblzma allocates an .lzma header's dictionary before it checks the
     * memory limit: check the header's dictionary size (bytes 1-4) first */
    if (n >= 5 && ((uint64_t)src[1] | (uint64_t)src[2] << 8 | (uint64_t)src[3] << 16 | (uint64_t)src[4] << 24) >
                      mem_limit(limit, n))
      return zerr_set(e, ZE_CORRUPT, "lzma data cannot be decoded: %s", lzma_msg(LZMA_MEMLIMIT_ERROR));
    r = lzma_alone_decoder(&s, mem_limit(limit, n));
  } else {
    if (build_filters(k, fl, opts, e)) return -1;
    if (lzma_raw_decoder_memusage(fl) > mem_limit(limit, n))
      return zerr_set(e, ZE_CODEC, "codec 'lzma': the filters need more memory than a chunk of this size may");
    r = lzma_raw_decoder(&s, fl);
  }
  if (r != LZMA_OK) {
    lzma_end(&s);
    return zerr_set(e, r == LZMA_MEM_ERROR ? ZE_NOMEM : ZE_CODEC, "cannot initialise the lzma decoder: %s",
                    lzma_msg(r));
  }
  int rc = run(&s, src, n, out, limit, 1, e);
  lzma_end(&s);
  return rc;
}

static int lzma_enc(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  const lzma_cfg *k = ZCODEC_CFG(c, const lzma_cfg);
  lzma_stream s = LZMA_STREAM_INIT;
  lzma_filter fl[LZMA_MAX_FILTERS + 1];
  lzma_opts opts[LZMA_MAX_FILTERS];
  uint32_t preset = k->preset == -1 ? LZMA_PRESET_DEFAULT : (uint32_t)k->preset;
  lzma_ret r;
  if (k->n_filters && build_filters(k, fl, opts, e)) return -1;
  if (k->format == FORMAT_XZ) {
    lzma_check check = k->check == -1 ? LZMA_CHECK_CRC64 : (lzma_check)k->check;
    r = k->n_filters ? lzma_stream_encoder(&s, fl, check) : lzma_easy_encoder(&s, preset, check);
  } else if (k->format == FORMAT_ALONE) {
    lzma_options_lzma lz;
    if (!k->n_filters && lzma_lzma_preset(&lz, preset))
      return zerr_set(e, ZE_CODEC, "codec 'lzma': invalid preset %u", preset);
    r = lzma_alone_encoder(&s, k->n_filters ? &opts[0].lz : &lz);
  } else {
    r = lzma_raw_encoder(&s, fl);
  }
  if (r != LZMA_OK) {
    lzma_end(&s);
    return zerr_set(e, r == LZMA_MEM_ERROR ? ZE_NOMEM : ZE_CODEC, "cannot initialise the lzma encoder: %s",
                    lzma_msg(r));
  }
  int rc = run(&s, src, n, out, 0, 0, e);
  lzma_end(&s);
  return rc;
}

const zcodec_vt zc_lzma = {.name = "lzma", .parse = lzma_parse, .decode = lzma_dec, .encode = lzma_enc,
                           .overhead = -1, .bounded = 1};

#else
#include "zarr_core.h"
ZCODEC_MISSING(lzma, "liblzma");
#endif
