/* libFuzzer target: the Zarr Vectors blob parsers (src/zv_layout.c). The
 * first byte picks the parser and its parameters, the rest is the blob:
 * - a fragment index (zv_frag_parse) with or without a row bound: accepted
 *   indexes expand to rows inside the bound, and encode again to an index
 *   that parses to the same rows;
 * - an object manifest (zv_manifest_scan, 1-4 dimensions): the counting pass
 *   and the filling pass agree, and every block has a mode 0-2 whose
 *   fragments are non-negative;
 * - rows of a type (zv_rows_decode): accepted only for whole rows.
 * Every refusal is a ZE_ZV error. */
#include <stdlib.h>
#include <string.h>
#include "zv.h"

static void check_frag(const uint8_t *p, size_t n, int64_t nrows) {
  zerr e = {ZE_OK, ""};
  zv_frag f;
  if (zv_frag_parse(p, n, nrows, &f, &e)) {
    if (e.kind != ZE_ZV) abort();
    return;
  }
  uint64_t total = zv_frag_total(&f);
  if (total > ((uint64_t)1 << 24)) return; /* huge ranges: valid, too big to expand here */
  int64_t *off = malloc(((size_t)f.F + 1) * sizeof(int64_t));
  int64_t *rows = malloc((total ? total : 1) * sizeof(int64_t));
  zv_frag_expand(&f, off, rows);
  if (off[0] != 0 || (uint64_t)off[f.F] != total) abort();
  for (uint64_t i = 0; i < total; i++)
    if (rows[i] < 0 || (nrows >= 0 && rows[i] >= nrows)) abort();
  /* encode again (canonical padding) and compare the rows */
  int *isr = malloc(((size_t)f.F + 1) * sizeof(int));
  int64_t *st = malloc(((size_t)f.R + 1) * sizeof(int64_t)), *ct = malloc(((size_t)f.R + 1) * sizeof(int64_t));
  uint32_t *eo = malloc(((size_t)f.E + 1) * sizeof(uint32_t));
  int64_t *ei = malloc((f.T ? f.T : 1) * sizeof(int64_t));
  uint32_t r = 0, x = 0;
  eo[0] = 0;
  for (uint32_t i = 0; i < f.F; i++) {
    isr[i] = zv_frag_is_range(&f, i);
    if (isr[i]) {
      st[r] = zv_frag_range_start(&f, r);
      ct[r] = off[i + 1] - off[i];
      r++;
    } else {
      for (int64_t k = off[i]; k < off[i + 1]; k++) ei[eo[x] + (k - off[i])] = rows[k];
      eo[x + 1] = eo[x] + (uint32_t)(off[i + 1] - off[i]);
      x++;
    }
  }
  size_t m = zv_frag_size(f.F, f.R, f.T);
  uint8_t *b = malloc(m);
  zv_frag_encode(b, f.F, isr, st, ct, f.E, eo, ei);
  zv_frag g;
  zerr e2 = {ZE_OK, ""};
  if (zv_frag_parse(b, m, nrows, &g, &e2) || g.F != f.F || zv_frag_total(&g) != total) abort();
  int64_t *off2 = malloc(((size_t)g.F + 1) * sizeof(int64_t)), *rows2 = malloc((total ? total : 1) * sizeof(int64_t));
  zv_frag_expand(&g, off2, rows2);
  if (memcmp(off, off2, ((size_t)f.F + 1) * sizeof(int64_t)) || (total && memcmp(rows, rows2, total * sizeof(int64_t)))) abort();
  free(off2);
  free(rows2);
  free(b);
  free(ei);
  free(eo);
  free(ct);
  free(st);
  free(isr);
  free(rows);
  free(off);
}

static void check_manifest(const uint8_t *p, size_t n, int ndim) {
  zerr e = {ZE_OK, ""};
  int64_t nb = 0, nx = 0;
  if (zv_manifest_scan(p, n, ndim, 7, NULL, NULL, NULL, &nb, &nx, &e)) {
    if (e.kind != ZE_ZV) abort();
    return;
  }
  zv_block *bl = malloc(((size_t)nb + 1) * sizeof(zv_block));
  int64_t *co = malloc(((size_t)nb * (size_t)ndim + 1) * sizeof(int64_t));
  int64_t *ex = malloc(((size_t)nx + 1) * sizeof(int64_t));
  int64_t nb2 = 0, nx2 = 0;
  zerr e2 = {ZE_OK, ""};
  if (zv_manifest_scan(p, n, ndim, 7, bl, co, ex, &nb2, &nx2, &e2) || nb2 != nb || nx2 != nx) abort();
  for (int64_t i = 0; i < nb; i++) {
    if (bl[i].object != 7 || bl[i].mode < 0 || bl[i].mode > 2 || bl[i].first < 0 || bl[i].count < 0) abort();
    if (bl[i].mode == 2 && bl[i].first + bl[i].count > nx) abort();
  }
  for (int64_t i = 0; i < nx; i++)
    if (ex[i] < 0) abort();
  free(ex);
  free(co);
  free(bl);
}

static void check_rows(const uint8_t *p, size_t n, int sel) {
  zv_type t = (zv_type)(sel % ZV_NTYPES);
  int ncol = 1 + (sel / 10) % 4;
  size_t rs = zv_type_size(t) * (size_t)ncol;
  int64_t m = (int64_t)(n / rs);
  double *out = malloc(((size_t)m * (size_t)ncol + 1) * sizeof(double));
  double *cols[4];
  for (int c = 0; c < ncol; c++) cols[c] = out + (size_t)c * (size_t)m;
  zerr e = {ZE_OK, ""};
  int rc = zv_rows_decode(p, n, t, ncol, cols, 0, m, &e);
  if ((rc == 0) != (n % rs == 0)) abort();
  if (rc && e.kind != ZE_ZV) abort();
  free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t sel = data[0];
  const uint8_t *p = data + 1;
  size_t n = size - 1;
  switch (sel % 3) {
  case 0: check_frag(p, n, (sel & 4) ? -1 : (int64_t)(sel >> 3) * 3); break;
  case 1: check_manifest(p, n, 1 + (sel >> 2) % 4); break;
  default: check_rows(p, n, sel >> 2); break;
  }
  return 0;
}
