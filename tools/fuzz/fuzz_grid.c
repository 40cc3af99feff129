/* libFuzzer target: the chunk edges of a rectilinear grid. From arbitrary
 * lengths (any doubles: NaN, negative, huge) and an extent, grid_edges_build()
 * either refuses them or yields strictly increasing edges from 0 that reach
 * the extent, each chunk within max_len; grid_find() then puts every element
 * into the chunk whose edges hold it. */
#include <stdlib.h>
#include <string.h>
#include "zarr_core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 16) return 0;
  int64_t extent, max_len;
  memcpy(&extent, data, 8);
  memcpy(&max_len, data + 8, 8);
  extent = (int64_t)((uint64_t)extent % 100000);
  max_len = (int64_t)((uint64_t)max_len % 1000);
  size_t n = (size - 16) / 8;
  double *len = malloc((n ? n : 1) * sizeof(double));
  int64_t *edges = malloc((n + 1) * sizeof(int64_t));
  for (size_t k = 0; k < n; k++) {
    memcpy(&len[k], data + 16 + 8 * k, 8);
    /* small whole numbers often, so that valid grids are common */
    if (data[16 + 8 * k] & 1) len[k] = (double)(data[17 + 8 * k] % 16);
  }
  zerr e = {ZE_OK, ""};
  int64_t used = 0;
  if (grid_edges_build(len, (int64_t)n, extent, max_len, edges, &used, &e) == 0) {
    if (edges[0] != 0 || used > (int64_t)n) abort();
    if (extent > 0 && (used < 1 || edges[used] < extent || edges[used - 1] >= extent)) abort();
    for (int64_t k = 0; k < used; k++) {
      if (edges[k + 1] <= edges[k]) abort();
      if (max_len > 0 && edges[k + 1] - edges[k] > max_len) abort();
    }
    for (int64_t i = 0; i < extent; i += 1 + extent / 64) {
      int64_t c = grid_find(edges, used, i);
      if (c < 0 || c >= used || edges[c] > i || edges[c + 1] <= i) abort();
    }
  } else if (e.kind != ZE_METADATA) {
    abort();
  }
  free(len);
  free(edges);
  return 0;
}
