/* The chunk grid of an array as R describes it (chunk_grid_rectilinear's
 * c_spec() in R/chunk_grid.R): per dimension, the lengths of its chunks. A
 * regular grid has none, and the engine keeps its plain arithmetic. */
#include <stdio.h>
#include "zarr.h"
#include "engine.h"

void grid_parse(SEXP spec, zarray *a) {
  SEXP ed = list_get(spec, "chunk_edges");
  if (isNull(ed)) return;
  if (TYPEOF(ed) != VECSXP || XLENGTH(ed) != a->ndim)
    zarr_raise(ZE_METADATA, a->name, NULL, "the chunk edges need one vector per dimension");
  const zchain *in = a->chain.ab == AB_SHARDING ? a->chain.inner : NULL;
  if (chain_engine(&a->chain) != NULL && in == NULL) { /* its chunks vary in shape */
    char msg[ZARR_MSG_LEN];
    snprintf(msg, sizeof msg, "codec '%s' is not supported with a rectilinear chunk grid",
             a->chain.ab_vt->name);
    zarr_raise(ZE_CODEC, a->name, NULL, msg);
  }
  for (int d = 0; d < a->ndim; d++) {
    SEXP v = VECTOR_ELT(ed, d);
    if (TYPEOF(v) != REALSXP)
      zarr_raise(ZE_METADATA, a->name, NULL, "chunk edge lengths must be numbers");
    int64_t n = XLENGTH(v), used = 0;
    int64_t *edges = (int64_t *)R_alloc((size_t)n + 1, sizeof(int64_t));
    zerr e = {ZE_OK, ""};
    if (grid_edges_build(REAL(v), n, a->shape[d], a->chain.chunk_shape[d], edges, &used, &e))
      zarr_raise_err(&e, a->name, NULL);
    a->edges[d] = edges;
    a->nchunks[d] = used;
    /* shards of every shape must hold whole inner chunks (stored dim k is
     * logical dim order[k]) */
    for (int k = 0; in != NULL && k < a->ndim; k++) {
      if (a->chain.order[k] != d) continue;
      for (int64_t c = 0; c < used; c++)
        if ((edges[c + 1] - edges[c]) % in->chunk_shape[k] != 0)
          zarr_raise(ZE_METADATA, a->name, NULL,
                     "sharding: a chunk of the rectilinear grid does not hold whole inner chunks");
    }
  }
  a->rectilinear = 1;
}
