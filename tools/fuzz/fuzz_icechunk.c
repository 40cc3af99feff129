/* libFuzzer target: Icechunk objects (src/icechunk.c over src/flatbuf.c):
 * the binary header, the zstd payload and the repo info, snapshot and
 * manifest flatbuffers.
 *
 * Input: one mode byte, then the rest. Mode bits 0-1 pick the parser
 * (repo info, snapshot, manifest); with bit 2 set the rest is a whole object
 * (header and compressed payload, as in a repository), otherwise it is an
 * uncompressed flatbuffer given a valid header, so the flatbuffer reader
 * sees the bytes directly. Checks beyond "no crash, no sanitizer report": a
 * failure carries an Icechunk error (or an allocation failure); on success
 * every string lies inside the payload or memory the object owns, every
 * reference and parent index is in range, every chunk reference is of a
 * known kind with its coordinates inside the coordinate array, and no more
 * entries of vectors of tables than the payload holds unshared (4 bytes
 * each). */
#include <stdlib.h>
#include <string.h>
#include "icechunk.h"


static void in_payload(const zbuf *p, ic_str s, char **owned, size_t nowned) {
  if (s.n == 0) return;
  const char *lo = (const char *)p->data, *hi = lo + p->size;
  if (s.s >= lo && s.s + s.n <= hi) return;
  for (size_t k = 0; k < nowned; k++)
    if (s.s == owned[k] && strlen(owned[k]) == s.n) return;
  abort();
}

static void check_failure(const zerr *e) {
  if (e->kind != ZE_ICECHUNK && e->kind != ZE_NOMEM) abort();
  if (e->msg[0] == '\0') abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int mode = data[0];
  int type = (mode & 3) == 0 ? IC_REPO : (mode & 3) == 1 ? IC_SNAPSHOT : IC_MANIFEST;
  const uint8_t *p = data + 1;
  size_t n = size - 1;
  uint8_t *obj = NULL;
  if (!(mode & 4)) { /* a valid header, no compression, then the flatbuffer */
    obj = malloc(39 + n);
    if (obj == NULL) return 0;
    memcpy(obj, IC_MAGIC, sizeof IC_MAGIC);
    memset(obj + 12, ' ', 24);
    obj[36] = (mode & 8) ? 1 : 2;
    obj[37] = (uint8_t)type;
    obj[38] = 0;
    if (n) memcpy(obj + 39, p, n);
    p = obj;
    n += 39;
  }
  size_t limit = (size_t)64 << 20; /* the parse budget */
  zerr e = {ZE_OK, ""};
  if (type == IC_REPO) {
    ic_repo r;
    if (ic_repo_parse(p, n, limit, &r, &e)) {
      check_failure(&e);
    } else {
      for (size_t i = 0; i < r.nsnaps; i++) {
        if (r.snaps[i].parent < -1 || r.snaps[i].parent >= (int32_t)r.nsnaps) abort();
        in_payload(&r.payload, r.snaps[i].message, NULL, 0);
      }
      for (size_t i = 0; i < r.nbranches; i++) {
        if (r.branches[i].snap >= r.nsnaps) abort();
        in_payload(&r.payload, r.branches[i].name, NULL, 0);
      }
      for (size_t i = 0; i < r.ntags; i++) {
        if (r.tags[i].snap >= r.nsnaps) abort();
        in_payload(&r.payload, r.tags[i].name, NULL, 0);
      }
    }
    ic_repo_free(&r);
  } else if (type == IC_SNAPSHOT) {
    ic_snapshot s;
    if (ic_snapshot_parse(p, n, limit, &s, &e)) {
      check_failure(&e);
    } else {
      in_payload(&s.payload, s.message, NULL, 0);
      size_t slots = s.nnodes;
      for (size_t i = 0; i < s.nnodes; i++) slots += s.nodes[i].nman;
      if (s.h.spec >= 2) slots += s.nmfiles; /* spec 1: structs, not entries of a vector of tables */
      if (s.h.spec < 2 && s.nmfiles > s.payload.size / 32) abort();
      if (slots > s.payload.size / 4) abort(); /* no table shared between entries */
      for (size_t i = 0; i < s.nnodes; i++) {
        const ic_node *nd = &s.nodes[i];
        in_payload(&s.payload, nd->path, NULL, 0);
        in_payload(&s.payload, nd->user_data, NULL, 0);
        if (!nd->is_array && nd->nman) abort();
        for (size_t j = 0; j < nd->nman; j++)
          if (nd->man[j].ndim < 0 || nd->man[j].ndim > ZARR_MAX_DIMS) abort();
      }
    }
    ic_snapshot_free(&s);
  } else {
    ic_manifest m;
    if (ic_manifest_parse(p, n, limit, &m, &e)) {
      check_failure(&e);
    } else {
      size_t total = 0, seen = 0;
      for (size_t a = 0; a < m.narrays; a++) {
        if (m.arrays[a].first != seen || m.arrays[a].ndim > ZARR_MAX_DIMS) abort();
        seen += m.arrays[a].count;
        total += m.arrays[a].count * (size_t)m.arrays[a].ndim;
      }
      if (seen != m.nrefs) abort();
      if (m.narrays + m.nrefs > m.payload.size / 4) abort(); /* no table shared between entries */
      for (size_t a = 0; a < m.narrays; a++)
        for (size_t k = m.arrays[a].first; k < m.arrays[a].first + m.arrays[a].count; k++) {
          if (m.cpos[k] + (size_t)m.arrays[a].ndim > total) abort();
          if (m.kind[k] > IC_VIRTUAL) abort();
          if (m.kind[k] == IC_INLINE) in_payload(&m.payload, m.inl[k], NULL, 0);
          if (m.kind[k] == IC_VIRTUAL) {
            if (m.loc[k].n == 0) abort();
            in_payload(&m.payload, m.loc[k], m.owned, m.nowned);
          }
          in_payload(&m.payload, m.etag[k], NULL, 0);
        }
    }
    ic_manifest_free(&m);
  }
  free(obj);
  return 0;
}
