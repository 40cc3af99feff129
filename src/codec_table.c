/* The codec table: every codec the C core knows, one row each. A row is a
 * zcodec_vt filled in the codec's own file (codec_<name>.c); adding a codec
 * is that file plus one line in codec_list.h. The chain (codec_chain.c), the engine and
 * spec.c only ever call through these rows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "codec_elements.h"

#define ZCODEC(x) extern const zcodec_vt zc_##x;
#include "codec_list.h"
#undef ZCODEC

static const zcodec_vt *const builtin[] = {
#define ZCODEC(x) &zc_##x,
#include "codec_list.h"
#undef ZCODEC
};

/* rows added when the package loads (before any worker thread runs) */
#define MAX_ADDED 8
static const zcodec_vt *added[MAX_ADDED];
static int n_added = 0;

int zcodec_table_add(const zcodec_vt *vt) {
  if (zcodec_find(vt->name) != NULL) return 0;
  if (n_added >= MAX_ADDED) return -1;
  added[n_added++] = vt;
  return 0;
}

const zcodec_vt *zcodec_find(const char *name) {
  for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++)
    if (strcmp(builtin[i]->name, name) == 0) return builtin[i];
  for (int i = 0; i < n_added; i++)
    if (strcmp(added[i]->name, name) == 0) return added[i];
  return NULL;
}

const zcodec_vt *zcodec_builtin(size_t i) {
  return i < sizeof builtin / sizeof builtin[0] ? builtin[i] : NULL;
}

int zcodec_missing(const zcodec_vt *vt, zerr *e) {
  return zerr_set(e, ZE_UNSUPPORTED,
                  "codec '%s' is not available: this build of zarr was installed without %s "
                  "(install %s's development files and reinstall zarr; zarr_capabilities() lists what "
                  "this build has)",
                  vt->name, vt->missing_lib, vt->missing_lib);
}

int zcodec_init(zcodec *c, const char *name, const zcfg *cfg, zerr *e) {
  memset(c, 0, sizeof *c);
  const zcodec_vt *vt = zcodec_find(name);
  if (vt == NULL) return zerr_set(e, ZE_CODEC, "codec '%s' has no C implementation", name);
  c->vt = vt;
  return vt->parse ? vt->parse(c, cfg, e) : 0;
}

/* ---- configuration readers ---- */

static int missing(const char *codec, const char *key, zerr *e) {
  return zerr_set(e, ZE_CODEC, "codec '%s': the configuration lacks '%s'", codec, key);
}

int cfg_dbl(const zcfg *cfg, const char *codec, const char *key, double *out, zerr *e) {
  if (cfg == NULL || cfg->num == NULL || !cfg->num(cfg, key, out)) return missing(codec, key, e);
  return 0;
}

int cfg_int(const zcfg *cfg, const char *codec, const char *key, int lo, int hi, int *out,
            zerr *e) {
  double x;
  if (cfg_dbl(cfg, codec, key, &x, e)) return -1;
  if (!(x >= lo && x <= hi) || x != (double)(int)x)
    return zerr_set(e, ZE_CODEC, "codec '%s': '%s' must be a whole number from %d to %d", codec,
                    key, lo, hi);
  *out = (int)x;
  return 0;
}

int cfg_str(const zcfg *cfg, const char *codec, const char *key, const char **out, zerr *e) {
  const char *s = cfg && cfg->str ? cfg->str(cfg, key) : NULL;
  if (s == NULL) return missing(codec, key, e);
  *out = s;
  return 0;
}

int cfg_num_type(const zcfg *cfg, const char *codec, const char *key, znum *out, zerr *e) {
  const char *s = NULL;
  if (cfg_str(cfg, codec, key, &s, e)) return -1;
  znum t = {0, 0, 0};
  if (strlen(s) == 3 && (s[0] == '<' || s[0] == '>' || s[0] == '|')) {
    t.big = s[0] == '>';
    t.kind = s[1];
    t.size = s[2] - '0';
  }
  if (!znum_valid(t))
    return zerr_set(e, ZE_CODEC, "codec '%s': unsupported element type '%.20s'", codec, s);
  *out = t;
  return 0;
}

/* ---- key/value configurations ---- */

static const zkv *kv_get(const zcfg *c, const char *key) {
  for (const zkv *kv = c->ctx; kv != NULL && kv->key != NULL; kv++)
    if (strcmp(kv->key, key) == 0) return kv;
  return NULL;
}

static int kv_num(const zcfg *c, const char *key, double *out) {
  const zkv *kv = kv_get(c, key);
  if (kv == NULL || kv->str != NULL) return 0;
  *out = kv->num;
  return 1;
}

static const char *kv_str(const zcfg *c, const char *key) {
  const zkv *kv = kv_get(c, key);
  return kv ? kv->str : NULL;
}

zcfg zcfg_kv(const zkv *kv) {
  zcfg c = {kv, kv_num, kv_str, NULL, NULL, NULL};
  return c;
}
