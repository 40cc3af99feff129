/* bytes (array -> bytes): fixed-size elements in C order, little or big
 * endian. The engine reads and writes them in place (byte-swapping big
 * endian ones), so the row only records the byte order. */
#include <string.h>
#include "zarr_core.h"

static int bytes_configure(zchain *c, const zcfg *cfg, zerr *e) {
  const char *endian;
  if (cfg_str(cfg, "bytes", "endian", &endian, e)) return -1;
  if (strcmp(endian, "little") != 0 && strcmp(endian, "big") != 0)
    return zerr_set(e, ZE_CODEC, "codec 'bytes': endian must be \"little\" or \"big\"");
  c->ab = AB_BYTES;
  c->big_endian = strcmp(endian, "big") == 0;
  return 0;
}

const zcodec_vt zc_bytes = {.name = "bytes", .kind = ZC_ARRAY_BYTES, .configure = bytes_configure};
