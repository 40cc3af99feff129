/* The array -> bytes codecs of string arrays: vlen-utf8, vlen-bytes,
 * numcodecs' vlen-array (vlen-bytes' layout; R converts the items) and the
 * numcodecs codecs whose chunks R decodes (json2, categorize). strings.c
 * does the work. */
#include "zarr_core.h"

static int vlen_configure(zchain *c, const zcfg *cfg, zerr *e) {
  (void)cfg;
  (void)e;
  c->ab = AB_VLEN;
  return 0;
}

const zcodec_vt zc_vlen_utf8 = {.name = "vlen-utf8", .kind = ZC_ARRAY_BYTES, .configure = vlen_configure};
const zcodec_vt zc_vlen_bytes = {.name = "vlen-bytes", .kind = ZC_ARRAY_BYTES, .configure = vlen_configure};
const zcodec_vt zc_json2 = {.name = "json2", .kind = ZC_ARRAY_BYTES, .configure = vlen_configure};
const zcodec_vt zc_vlen_array = {.name = "vlen-array", .kind = ZC_ARRAY_BYTES, .configure = vlen_configure};
const zcodec_vt zc_categorize = {.name = "categorize", .kind = ZC_ARRAY_BYTES, .configure = vlen_configure};
