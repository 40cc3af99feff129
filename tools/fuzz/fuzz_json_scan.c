/* libFuzzer target: the JSON member scan of src/json_scan.c (consolidated
 * metadata documents are store content). The members it reports must lie
 * inside the document, in order, their names inside their own bytes. */
#include <stdlib.h>
#include <string.h>
#include "zarr_core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* the first byte chooses the path: none, "metadata", or two members */
  static const char *const paths[][2] = {{"metadata", NULL}, {"consolidated_metadata", "metadata"}};
  int which = size ? data[0] % 3 : 0;
  const uint8_t *doc = size ? data + 1 : data;
  size_t n = size ? size - 1 : 0;
  zjson_member *m;
  size_t nm;
  int np = which == 0 ? 0 : which == 1 ? 1 : 2;
  int rc = json_object_members(doc, n, which == 2 ? paths[1] : paths[0], np, &m, &nm);
  if (rc != JSON_OK) {
    if (m != NULL || nm != 0) abort();
    return 0;
  }
  size_t last = 0;
  for (size_t i = 0; i < nm; i++) {
    if (m[i].from > m[i].to || m[i].to > n || m[i].from < last) abort();
    if (m[i].name_off < m[i].from || m[i].name_off + m[i].name_len > m[i].to) abort();
    last = m[i].to;
  }
  free(m);
  return 0;
}
