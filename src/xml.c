/* XML answers of S3-compatible services, parsed with libxml2: ListObjectsV2
 * pages and error documents. Whitespace between elements (MinIO, moto and
 * LocalStack indent their answers), namespaces, CDATA and character
 * references all read as S3 means them. Hostile input is refused, never
 * expanded: a document with a DOCTYPE stops at it (no entity declarations,
 * no DTD or network access), and bodies above XML_MAX_BODY bytes are not
 * parsed. R-free (declared in zarr_core.h), so tools/fuzz/fuzz_xml.c
 * drives it directly. */
#include <stdlib.h>
#include <string.h>
#include "zarr_core.h"

void xml_s3_list_free(zs3list *l) {
  for (size_t i = 0; i < l->n_keys; i++) free(l->keys[i]);
  for (size_t i = 0; i < l->n_prefixes; i++) free(l->prefixes[i]);
  free(l->keys);
  free(l->sizes);
  free(l->prefixes);
  free(l->token);
  memset(l, 0, sizeof *l);
}

#ifndef HAVE_LIBXML2
/* Built without libxml2 (configure did not find it): listings of S3 and
 * Azure containers cannot be read; error documents are reported without
 * their code. Reading and writing keys need no XML. */
void xml_init(void) {}

static int no_xml(const char *what, zerr *e) {
  return zerr_set(e, ZE_UNSUPPORTED,
                  "listing %s needs libxml2, which this build of zarr lacks (install libxml2's "
                  "development files and reinstall zarr)", what);
}

int xml_s3_list(const uint8_t *p, size_t n, zs3list *out, zerr *e) {
  (void)p, (void)n;
  memset(out, 0, sizeof *out);
  return no_xml("an S3 bucket", e);
}

int xml_azure_list(const uint8_t *p, size_t n, zs3list *out, zerr *e) {
  (void)p, (void)n;
  memset(out, 0, sizeof *out);
  return no_xml("an Azure container", e);
}

int xml_first_text(const uint8_t *p, size_t n, const char *tag, char *out, size_t cap) {
  (void)p, (void)n, (void)tag;
  if (cap) out[0] = '\0';
  return -1;
}

#else
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/tree.h>

/* A ListObjectsV2 page holds at most 1000 keys of at most 1024 bytes: a
 * few MB. Anything far beyond is not an answer to parse. */
#define XML_MAX_BODY ((size_t)64 << 20)

void xml_init(void) { xmlInitParser(); }

/* SAX hook: a DOCTYPE ends the parse, before any entity is declared. */
static void refuse_doctype(void *ctx, const xmlChar *name, const xmlChar *ext, const xmlChar *sys) {
  (void)name, (void)ext, (void)sys;
  xmlParserCtxtPtr c = ctx;
  c->_private = (void *)1;
  xmlStopParser(c);
}

/* The document in p[0, n), or NULL with `why` saying what is wrong. */
static xmlDocPtr xml_read(const uint8_t *p, size_t n, const char **why) {
  *why = "it is empty";
  if (p == NULL || n == 0) return NULL;
  *why = "it is larger than 64 MiB";
  if (n > XML_MAX_BODY) return NULL;
  *why = "out of memory";
  xmlParserCtxtPtr c = xmlCreateMemoryParserCtxt((const char *)p, (int)n);
  if (c == NULL) return NULL;
  c->sax->internalSubset = refuse_doctype;
  c->sax->externalSubset = refuse_doctype;
  /* no XML_PARSE_NOENT / DTDLOAD / DTDATTR / XINCLUDE / HUGE: nothing is
   * substituted or fetched, and libxml2's default depth and size limits hold */
  xmlCtxtUseOptions(c, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOCDATA);
  xmlParseDocument(c);
  xmlDocPtr doc = c->myDoc;
  int ok = c->wellFormed && c->_private == NULL && doc != NULL && xmlDocGetRootElement(doc) != NULL;
  if (!ok) {
    *why = c->_private != NULL ? "it has a DOCTYPE" : "it is not well-formed XML";
    if (doc != NULL) xmlFreeDoc(doc);
    doc = NULL;
  }
  c->myDoc = NULL;
  xmlFreeParserCtxt(c);
  return doc;
}

static int is_elem(xmlNodePtr x, const char *name) {
  return x->type == XML_ELEMENT_NODE && strcmp((const char *)x->name, name) == 0;
}

/* The first child element of `parent` with this name, or NULL. */
static xmlNodePtr child(xmlNodePtr parent, const char *name) {
  for (xmlNodePtr x = parent->children; x != NULL; x = x->next)
    if (is_elem(x, name)) return x;
  return NULL;
}

/* The text of an element (a malloc'ed UTF-8 string), or NULL when out of
 * memory. */
static char *text_of(xmlNodePtr x) {
  xmlChar *t = xmlNodeGetContent(x);
  if (t == NULL) return strdup("");
  char *out = strdup((const char *)t);
  xmlFree(t);
  return out;
}

/* Depth-first: the first element named `name` anywhere below (and at) x. */
static xmlNodePtr find_elem(xmlNodePtr x, const char *name, int depth) {
  for (; x != NULL; x = x->next) {
    if (is_elem(x, name)) return x;
    if (depth < 64 && x->children != NULL) {
      xmlNodePtr y = find_elem(x->children, name, depth + 1);
      if (y != NULL) return y;
    }
  }
  return NULL;
}

int xml_first_text(const uint8_t *p, size_t n, const char *tag, char *out, size_t cap) {
  const char *why;
  if (cap == 0) return -1;
  xmlDocPtr doc = xml_read(p, n, &why);
  if (doc == NULL) return -1;
  xmlNodePtr x = find_elem(xmlDocGetRootElement(doc), tag, 0);
  int rc = -1;
  if (x != NULL) {
    char *t = text_of(x);
    if (t != NULL) {
      /* control characters (line breaks of indented documents) as spaces */
      size_t k = 0;
      const char *s = t;
      for (; *s && k + 1 < cap; s++) out[k++] = (unsigned char)*s < 32 ? ' ' : *s;
      /* cut at a character boundary, never inside a UTF-8 sequence */
      while (k > 0 && ((unsigned char)*s & 0xC0) == 0x80) k--, s--;
      out[k] = '\0';
      free(t);
      rc = 0;
    }
  }
  xmlFreeDoc(doc);
  return rc;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* An S3 object size: decimal digits only (no sign, exponent or hex). */
static int parse_size(const char *t, double *out) {
  while (is_space(*t)) t++;
  double v = 0;
  int digits = 0;
  for (; *t >= '0' && *t <= '9'; t++, digits++) v = v * 10 + (*t - '0');
  while (is_space(*t)) t++;
  if (*t != '\0' || digits == 0 || digits > 19) return -1;
  *out = v;
  return 0;
}

/* Add a listed key (taken over by the listing) with the byte count of its
 * size element, -1 when there is none; `kind` (ZE_S3, ZE_AZURE) for a size
 * that is not a byte count. */
static int list_add_key(zs3list *l, char *key, xmlNodePtr size, zerr_kind kind, zerr *e) {
  l->keys[l->n_keys] = key;
  l->sizes[l->n_keys++] = -1;
  if (size == NULL) return 0;
  char *t = text_of(size);
  if (t == NULL) return zerr_set(e, ZE_NOMEM, "out of memory");
  int bad = parse_size(t, &l->sizes[l->n_keys - 1]);
  free(t);
  if (bad)
    return zerr_set(e, kind, "the listing gives '%.200s' a <%s> that is not a byte count", key, (const char *)size->name);
  return 0;
}


int xml_s3_list(const uint8_t *p, size_t n, zs3list *l, zerr *e) {
  memset(l, 0, sizeof *l);
  const char *why;
  xmlDocPtr doc = xml_read(p, n, &why);
  if (doc == NULL) return zerr_set(e, ZE_S3, "the listing cannot be read: %s", why);
  xmlNodePtr root = xmlDocGetRootElement(doc);
  int rc = 0;
  size_t nk = 0, np = 0;
  if (!is_elem(root, "ListBucketResult")) {
    rc = zerr_set(e, ZE_S3, "the listing is a <%.40s> document, not a ListBucketResult", (const char *)root->name);
    goto done;
  }
  for (xmlNodePtr x = root->children; x != NULL; x = x->next) {
    if (is_elem(x, "Contents")) nk++;
    else if (is_elem(x, "CommonPrefixes")) np++;
  }
  l->keys = calloc(nk ? nk : 1, sizeof *l->keys);
  l->sizes = calloc(nk ? nk : 1, sizeof *l->sizes);
  l->prefixes = calloc(np ? np : 1, sizeof *l->prefixes);
  if (l->keys == NULL || l->sizes == NULL || l->prefixes == NULL) goto nomem;
  for (xmlNodePtr x = root->children; x != NULL; x = x->next) {
    if (is_elem(x, "Contents")) {
      xmlNodePtr k = child(x, "Key"), s = child(x, "Size");
      if (k == NULL) {
        rc = zerr_set(e, ZE_S3, "the listing has an object without a <Key>");
        goto done;
      }
      char *key = text_of(k);
      if (key == NULL) goto nomem;
      if ((rc = list_add_key(l, key, s, ZE_S3, e))) goto done;
    } else if (is_elem(x, "CommonPrefixes")) {
      xmlNodePtr k = child(x, "Prefix");
      if (k == NULL) continue; /* nothing to name */
      char *pre = text_of(k);
      if (pre == NULL) goto nomem;
      l->prefixes[l->n_prefixes++] = pre;
    } else if (is_elem(x, "IsTruncated")) {
      char *t = text_of(x);
      if (t == NULL) goto nomem;
      const char *s = t;
      while (is_space(*s)) s++;
      l->truncated = strncmp(s, "true", 4) == 0;
      free(t);
    } else if (is_elem(x, "NextContinuationToken") && l->token == NULL) {
      l->token = text_of(x);
      if (l->token == NULL) goto nomem;
    }
  }
  goto done;
nomem:
  rc = zerr_set(e, ZE_NOMEM, "out of memory reading a listing");
done:
  xmlFreeDoc(doc);
  if (rc) xml_s3_list_free(l);
  return rc;
}

/* ---- Azure Blob: List Blobs ----
 * <EnumerationResults><Blobs><Blob><Name/><Properties><Content-Length/>
 * </Properties></Blob><BlobPrefix><Name/></BlobPrefix></Blobs><NextMarker/>
 * </EnumerationResults>; a page is truncated when NextMarker is not empty. A
 * <Name Encoded="true"> is percent-encoded (names with characters XML cannot
 * hold). */

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* The text of a <Name>, decoded when it says it is encoded; NULL when out of
 * memory. */
static char *name_of(xmlNodePtr x) {
  char *t = text_of(x);
  xmlChar *enc = xmlGetProp(x, (const xmlChar *)"Encoded");
  int encoded = enc != NULL && strcmp((const char *)enc, "true") == 0;
  xmlFree(enc);
  if (t == NULL || !encoded) return t;
  size_t k = 0;
  for (size_t i = 0; t[i]; i++) {
    int hi, lo;
    if (t[i] == '%' && t[i + 1] && t[i + 2] && (hi = hexval(t[i + 1])) >= 0 && (lo = hexval(t[i + 2])) >= 0) {
      t[k++] = (char)(hi * 16 + lo);
      i += 2;
    } else {
      t[k++] = t[i];
    }
  }
  t[k] = '\0';
  return t;
}

int xml_azure_list(const uint8_t *p, size_t n, zs3list *l, zerr *e) {
  memset(l, 0, sizeof *l);
  const char *why;
  xmlDocPtr doc = xml_read(p, n, &why);
  if (doc == NULL) return zerr_set(e, ZE_AZURE, "the listing cannot be read: %s", why);
  xmlNodePtr root = xmlDocGetRootElement(doc), blobs = NULL;
  int rc = 0;
  size_t nk = 0, np = 0;
  if (!is_elem(root, "EnumerationResults")) {
    rc = zerr_set(e, ZE_AZURE, "the listing is a <%.40s> document, not an EnumerationResults",
                  (const char *)root->name);
    goto done;
  }
  blobs = child(root, "Blobs");
  for (xmlNodePtr x = blobs ? blobs->children : NULL; x != NULL; x = x->next) {
    if (is_elem(x, "Blob")) nk++;
    else if (is_elem(x, "BlobPrefix")) np++;
  }
  l->keys = calloc(nk ? nk : 1, sizeof *l->keys);
  l->sizes = calloc(nk ? nk : 1, sizeof *l->sizes);
  l->prefixes = calloc(np ? np : 1, sizeof *l->prefixes);
  if (l->keys == NULL || l->sizes == NULL || l->prefixes == NULL) goto nomem;
  for (xmlNodePtr x = blobs ? blobs->children : NULL; x != NULL; x = x->next) {
    if (is_elem(x, "Blob")) {
      xmlNodePtr k = child(x, "Name"), props = child(x, "Properties");
      xmlNodePtr s = props ? child(props, "Content-Length") : NULL;
      if (k == NULL) {
        rc = zerr_set(e, ZE_AZURE, "the listing has a blob without a <Name>");
        goto done;
      }
      char *key = name_of(k);
      if (key == NULL) goto nomem;
      if ((rc = list_add_key(l, key, s, ZE_AZURE, e))) goto done;
    } else if (is_elem(x, "BlobPrefix")) {
      xmlNodePtr k = child(x, "Name");
      if (k == NULL) continue; /* nothing to name */
      char *pre = name_of(k);
      if (pre == NULL) goto nomem;
      l->prefixes[l->n_prefixes++] = pre;
    }
  }
  xmlNodePtr next = child(root, "NextMarker");
  if (next != NULL) {
    char *t = text_of(next);
    if (t == NULL) goto nomem;
    const char *s = t;
    while (is_space(*s)) s++;
    if (*s) {
      l->truncated = 1;
      l->token = t;
    } else {
      free(t);
    }
  }
  goto done;
nomem:
  rc = zerr_set(e, ZE_NOMEM, "out of memory reading a listing");
done:
  xmlFreeDoc(doc);
  if (rc) xml_s3_list_free(l);
  return rc;
}
#endif /* HAVE_LIBXML2 */
