/* transpose (array -> array): the chunk's dimensions are stored in another
 * order. The engine folds the order into its strided copy between chunks and
 * the R array, so the row only records it; transposes compose. */
#include "zarr_core.h"

static int transpose_configure(zchain *c, const zcfg *cfg, zerr *e) {
  int64_t ord[ZARR_MAX_DIMS];
  int n = cfg->dims(cfg, "order", ord, ZARR_MAX_DIMS, e);
  if (n < 0) return -1;
  if (n != c->ndim)
    return zerr_set(e, ZE_CODEC, "the transpose order must have %d entries", c->ndim);
  int prev[ZARR_MAX_DIMS], seen[ZARR_MAX_DIMS] = {0};
  for (int k = 0; k < n; k++) prev[k] = c->order[k];
  for (int k = 0; k < n; k++) {
    if (ord[k] >= n || seen[ord[k]]++)
      return zerr_set(e, ZE_CODEC, "the transpose order is not a permutation of 0..%d", n - 1);
    c->order[k] = prev[ord[k]];
  }
  return 0;
}

const zcodec_vt zc_transpose = {.name = "transpose", .kind = ZC_ARRAY_ARRAY,
                                .configure = transpose_configure};
