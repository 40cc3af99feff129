/* What this build has: the libraries it was linked with (configure leaves
 * the optional ones out when it does not find them) and the codecs that
 * cannot be used for want of one. For zarr_capabilities() (R/capabilities.R). */
#include <curl/curl.h>
#include <openssl/opensslv.h>
#include <zlib.h>
#include <zstd.h>
#ifdef HAVE_BLOSC
#include <blosc.h>
#endif
#ifdef HAVE_LZ4
#include <lz4.h>
#endif
#ifdef HAVE_BZ2
#include <bzlib.h>
#endif
#ifdef HAVE_LZMA
#include <lzma.h>
#endif
#ifdef HAVE_ZFP
#include <zfp.h>
#endif
#ifdef HAVE_LIBXML2
#include <libxml/xmlversion.h>
#endif
#include "zarr.h"

static SEXP str_or_na(const char *s) { return s ? mkChar(s) : NA_STRING; }

/* list(versions = c(<library> = version or NA), missing = c(<codec> = library)) */
SEXP ffi_capabilities(void) {
  const char *libs[] = {"zstd", "zlib", "c-blosc", "liblz4", "libbz2", "liblzma", "libzfp", "libcurl",
                        "libcrypto", "libxml2"};
  const char *vers[] = {
      ZSTD_versionString(),
      zlibVersion(),
#ifdef HAVE_BLOSC
      blosc_get_version_string(),
#else
      NULL,
#endif
#ifdef HAVE_LZ4
      LZ4_versionString(),
#else
      NULL,
#endif
#ifdef HAVE_BZ2
      BZ2_bzlibVersion(),
#else
      NULL,
#endif
#ifdef HAVE_LZMA
      lzma_version_string(),
#else
      NULL,
#endif
#ifdef HAVE_ZFP
      ZFP_VERSION_STRING,
#else
      NULL,
#endif
      curl_version_info(CURLVERSION_NOW)->version,
      OPENSSL_VERSION_TEXT,
#ifdef HAVE_LIBXML2
      LIBXML_DOTTED_VERSION,
#else
      NULL,
#endif
  };
  const int nl = (int)(sizeof libs / sizeof libs[0]);
  const char *names[] = {"versions", "missing", ""};
  SEXP out = PROTECT(mkNamed(VECSXP, names));
  SEXP v = PROTECT(allocVector(STRSXP, nl)), vn = PROTECT(allocVector(STRSXP, nl));
  for (int i = 0; i < nl; i++) {
    SET_STRING_ELT(v, i, str_or_na(vers[i]));
    SET_STRING_ELT(vn, i, mkChar(libs[i]));
  }
  setAttrib(v, R_NamesSymbol, vn);
  SET_VECTOR_ELT(out, 0, v);
  int nm = 0;
  for (size_t i = 0; zcodec_builtin(i) != NULL; i++) nm += zcodec_builtin(i)->missing_lib != NULL;
  SEXP m = PROTECT(allocVector(STRSXP, nm)), mn = PROTECT(allocVector(STRSXP, nm));
  int k = 0;
  for (size_t i = 0; zcodec_builtin(i) != NULL; i++) {
    const zcodec_vt *vt = zcodec_builtin(i);
    if (vt->missing_lib == NULL) continue;
    SET_STRING_ELT(m, k, mkChar(vt->missing_lib));
    SET_STRING_ELT(mn, k++, mkChar(vt->name));
  }
  setAttrib(m, R_NamesSymbol, mn);
  SET_VECTOR_ELT(out, 1, m);
  UNPROTECT(5);
  return out;
}
