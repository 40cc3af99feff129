/* libFuzzer target: the XML answers of S3 services and Azure Blob storage
 * (src/xml.c, libxml2); xml_azure_list() is checked as xml_s3_list().
 * xml_s3_list() either fails with an error message or gives a page whose
 * every key and prefix is a NUL-terminated string and whose sizes are -1
 * (not given) or non-negative; xml_first_text() never writes past its buffer
 * and never leaves half a UTF-8 character at the end. */
#include <stdlib.h>
#include <string.h>
#include "zarr_core.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  xml_init();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  zs3list l;
  zerr e = {ZE_OK, ""};
  if (xml_s3_list(data, size, &l, &e)) {
    if (e.kind == ZE_OK || e.msg[0] == '\0') abort();
  } else {
    for (size_t i = 0; i < l.n_keys; i++) {
      if (l.keys[i] == NULL) abort();
      (void)strlen(l.keys[i]);
      if (l.sizes[i] != -1 && !(l.sizes[i] >= 0)) abort();
    }
    for (size_t i = 0; i < l.n_prefixes; i++)
      if (l.prefixes[i] == NULL) abort();
    if (l.token != NULL) (void)strlen(l.token);
    xml_s3_list_free(&l);
  }
  /* the same for an Azure List Blobs page (names possibly percent-encoded);
   * a page that says it is truncated has its marker */
  e.kind = ZE_OK;
  e.msg[0] = '\0';
  if (xml_azure_list(data, size, &l, &e)) {
    if (e.kind == ZE_OK || e.msg[0] == '\0') abort();
  } else {
    for (size_t i = 0; i < l.n_keys; i++) {
      if (l.keys[i] == NULL) abort();
      (void)strlen(l.keys[i]);
      if (l.sizes[i] != -1 && !(l.sizes[i] >= 0)) abort();
    }
    for (size_t i = 0; i < l.n_prefixes; i++)
      if (l.prefixes[i] == NULL) abort();
    if (l.truncated != (l.token != NULL)) abort();
    xml_s3_list_free(&l);
  }
  /* a small buffer, so that truncation is exercised */
  char out[17];
  memset(out, 0x7f, sizeof out);
  if (xml_first_text(data, size, "Code", out, 16) == 0) {
    size_t n = strlen(out);
    if (n > 15 || out[16] != 0x7f) abort();
    if (n > 0 && ((unsigned char)out[n - 1] & 0xC0) == 0xC0) abort(); /* a lead byte without its tail */
    for (size_t i = 0; i < n; i++)
      if ((unsigned char)out[i] < 32) abort();
  }
  return 0;
}
