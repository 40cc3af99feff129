/* libFuzzer target: a zip archive as a zip store opens it. The input is
 * written to a file, opened with zip_open() (end of central directory,
 * zip64 records, the central directory), and every member it lists is read
 * with zip_fetch(), whole (inflated, CRC checked); the members that are not
 * keys are located as a rewrite copies them. store_zip.c is included
 * so that the target can walk its private member index; its R entry points
 * are compiled but never called (r_stubs.c stands in for the R library). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "../../src/store_zip.c"

static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (path[0] == '\0') snprintf(path, sizeof path, "/tmp/zarr-fuzz-zip-%ld.zip", (long)getpid());
  FILE *f = fopen(path, "wb");
  if (f == NULL) abort();
  if (size && fwrite(data, 1, size, f) != size) abort();
  fclose(f);
  zipidx *z = NULL;
  zerr e = {ZE_OK, ""};
  /* a small budget, so that the fuzzer reaches the limit */
  if (zip_open(path, (uint64_t)1 << 20, &z, &e) != 0) {
    if (e.kind == ZE_OK) abort();
    return 0;
  }
  zbuf out = {0}, scratch = {0};
  for (int64_t i = 0; i < z->n && i < 64; i++) {
    const uint8_t *p;
    size_t n;
    int missing = 0;
    zerr e2 = {ZE_OK, ""};
    int rc = zip_fetch(z, z->ent[i].name, &out, &scratch, &p, &n, &missing, &e2);
    if (rc != 0 && e2.kind == ZE_OK) abort();
    if (rc == 0 && !missing) {
      if (n != z->ent[i].usize) abort();
      volatile uint8_t sink = 0;
      for (size_t k = 0; k < n; k++) sink ^= p[k];
      (void)sink;
    }
  }
  for (int64_t i = 0; i < zip_odd_count(z) && i < 64; i++) {
    zip_odd_member o;
    zerr e2 = {ZE_OK, ""};
    if (zip_odd_locate(z, i, &o, &e2) != 0) {
      if (e2.kind == ZE_OK) abort();
      continue;
    }
    if (o.name_len != z->odd[i].name_len || o.data_off < z->odd[i].offset) abort();
  }
  zbuf_free(&out);
  zbuf_free(&scratch);
  zip_close(z);
  return 0;
}
