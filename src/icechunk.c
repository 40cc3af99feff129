/* Icechunk repository objects: see icechunk.h. Field ids follow the
 * declaration order of the schemas in the Icechunk repository
 * (icechunk-format/flatbuffers/{repo,snapshot,manifest}.fbs); a union takes
 * two ids (its type, then its value). */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include "icechunk.h"

const uint8_t IC_MAGIC[12] = {0x49, 0x43, 0x45, 0xF0, 0x9F, 0xA7, 0x8A, 0x43, 0x48, 0x55, 0x4E, 0x4B};

/* Failures of the flatbuffer reader and of zstd become Icechunk errors. */
static int fail(zerr *e) {
  if (e->kind == ZE_OK || e->kind == ZE_CORRUPT) e->kind = ZE_ICECHUNK;
  return -1;
}

static int need(int r, const char *what, zerr *e) {
  if (r < 0) return fail(e);
  if (r == 0) return zerr_set(e, ZE_ICECHUNK, "malformed Icechunk object: required field '%s' is missing", what);
  return 0;
}

static const char *type_name(int t) {
  switch (t) {
  case IC_SNAPSHOT: return "snapshot";
  case IC_MANIFEST: return "manifest";
  case IC_TXLOG: return "transaction log";
  case IC_REPO: return "repo info";
  default: return "unknown";
  }
}

/* Failure of a parse beyond its budget: an Icechunk error saying the budget
 * and the option that sets it (the caller adds the object's key). */
static int over_budget(const char *what, size_t limit, zerr *e) {
  return zerr_set(e, ZE_ICECHUNK,
                  "the Icechunk %s would take more than %.0f bytes of memory to parse (the budget of "
                  "options(zarr.max_decoded_bytes))",
                  what, (double)limit);
}

int ic_payload(const uint8_t *p, size_t n, int want, size_t limit, ic_header *h, zbuf *out, zerr *e) {
  if (n < IC_HEADER_LEN || memcmp(p, IC_MAGIC, sizeof IC_MAGIC) != 0)
    return zerr_set(e, ZE_ICECHUNK, "not an Icechunk object (%s)",
                    n < IC_HEADER_LEN ? "too short for its header" : "bad magic bytes");
  size_t k = 24;
  memcpy(h->impl, p + 12, 24);
  while (k > 0 && (h->impl[k - 1] == ' ' || h->impl[k - 1] == '\0')) k--;
  h->impl[k] = '\0';
  for (size_t i = 0; i < k; i++)
    if ((unsigned char)h->impl[i] < 0x20) h->impl[i] = '?';
  h->spec = p[36];
  h->type = p[37];
  h->comp = p[38];
  if (h->spec != 1 && h->spec != 2)
    return zerr_set(e, ZE_ICECHUNK, "Icechunk spec version %d is not supported (only 1 and 2)", h->spec);
  if (h->type != want)
    return zerr_set(e, ZE_ICECHUNK, "Icechunk object of type %d (%s), expected a %s", h->type, type_name(h->type),
                    type_name(want));
  const uint8_t *body = p + IC_HEADER_LEN;
  size_t m = n - IC_HEADER_LEN;
  out->size = 0;
  if (h->comp == 0) {
    if (m > limit) return over_budget(type_name(want), limit, e);
    if (zbuf_reserve(out, m ? m : 1, e)) return -1;
    if (m) memcpy(out->data, body, m);
    out->size = m;
    return 0;
  }
  if (h->comp != 1) return zerr_set(e, ZE_ICECHUNK, "Icechunk compression %d is not supported (only none and zstd)", h->comp);
  /* a few kB of zstd can declare gigabytes: the budget is checked first */
  unsigned long long declared = ZSTD_getFrameContentSize(body, m);
  if (declared != ZSTD_CONTENTSIZE_ERROR && declared != ZSTD_CONTENTSIZE_UNKNOWN && declared > limit)
    return over_budget(type_name(want), limit, e);
  if (zstd_decode(body, m, out, limit, e)) {
    if (out->size > limit) {
      e->kind = ZE_OK;
      return over_budget(type_name(want), limit, e);
    }
    if (e->kind != ZE_NOMEM) {
      char msg[ZARR_MSG_LEN];
      memcpy(msg, e->msg, sizeof msg);
      e->kind = ZE_OK;
      zerr_set(e, ZE_ICECHUNK, "Icechunk object payload: %s", msg);
    }
    return -1;
  }
  return 0;
}

/* What a parse may take. FlatBuffers let many vector entries point at one
 * table, so a few kB can name billions of entries: every entry of a vector
 * of tables (a 4-byte slot, never shared by a writer) is counted against the
 * payload's size, and the memory of what is made of it (the parsed object
 * and the R values made from it: strings and blobs are copied) against the
 * budget, before it is allocated. */
typedef struct {
  const char *what; /* the object, for messages */
  size_t limit;     /* bytes (zarr.max_decoded_bytes) */
  size_t used;      /* bytes counted so far (the payload first) */
  size_t slots;     /* entries of vectors of tables walked */
  size_t max_slots; /* what the payload holds unshared: size / 4 */
} budget;

/* Count `slots` entries of vectors of tables and `bytes` of memory. */
static int spend(budget *b, size_t slots, size_t bytes, zerr *e) {
  b->slots = slots > SIZE_MAX - b->slots ? SIZE_MAX : b->slots + slots;
  if (b->slots > b->max_slots)
    return zerr_set(e, ZE_ICECHUNK,
                    "malformed %s: its vectors list more tables than its %zu bytes can hold (tables shared "
                    "between entries)",
                    b->what, b->max_slots * 4);
  b->used = bytes > SIZE_MAX - b->used ? SIZE_MAX : b->used + bytes;
  if (b->used > b->limit) return over_budget(b->what, b->limit, e);
  return 0;
}

/* `n` entries of `each` bytes, without overflow. */
static size_t times(size_t n, size_t each) { return each && n > SIZE_MAX / each ? SIZE_MAX : n * each; }

static int opened(const uint8_t *p, size_t n, int want, size_t limit, ic_header *h, zbuf *payload, fb_buf *b,
                  fb_table *root, budget *bg, zerr *e) {
  if (ic_payload(p, n, want, limit, h, payload, e)) return -1;
  b->p = payload->data;
  b->n = payload->size;
  bg->what = type_name(want);
  bg->limit = limit;
  bg->used = payload->size;
  bg->slots = 0;
  bg->max_slots = payload->size / 4;
  if (fb_root(b, root, e)) return fail(e);
  return 0;
}

/* Estimates of the memory per entry beyond its strings: the parsed struct,
 * and the R values made of it (a CHARSXP of an id is about 72 bytes, a
 * vector element 8). */
#define R_ID 72
#define R_ELT 8

static void *cal(size_t n, size_t size, zerr *e) {
  void *p = calloc(n ? n : 1, size);
  if (p == NULL) zerr_set(e, ZE_NOMEM, "cannot allocate %zu bytes for an Icechunk object", n * size);
  return p;
}

static int id12(const fb_table *t, int id, uint8_t *out, const char *what, zerr *e) {
  const uint8_t *s;
  if (need(fb_struct(t, id, 12, &s, e), what, e)) return -1;
  memcpy(out, s, 12);
  return 0;
}

static int str(const fb_table *t, int id, ic_str *out, int required, const char *what, zerr *e) {
  int r = fb_string(t, id, &out->s, &out->n, e);
  return required ? need(r, what, e) : (r < 0 ? fail(e) : 0);
}

/* ---- repo info ------------------------------------------------------------ */

static int refs(const fb_table *root, int id, ic_ref **out, size_t *n, size_t nsnaps, const char *what, budget *bg,
                zerr *e) {
  fb_vec v;
  if (need(fb_vector(root, id, 4, &v, e), what, e)) return -1;
  if (spend(bg, v.count, times(v.count, sizeof **out + R_ID + 2 * R_ELT), e)) return -1;
  if ((*out = cal(v.count, sizeof **out, e)) == NULL) return -1;
  *n = v.count;
  for (size_t i = 0; i < v.count; i++) {
    fb_table t;
    if (fb_vec_table(&v, i, &t, e)) return fail(e);
    if (str(&t, 0, &(*out)[i].name, 1, "Ref.name", e)) return -1;
    if (spend(bg, 0, (*out)[i].name.n, e)) return -1;
    if (fb_u32(&t, 1, 0, &(*out)[i].snap, e) < 0) return fail(e);
    if ((*out)[i].snap >= nsnaps)
      return zerr_set(e, ZE_ICECHUNK, "malformed repo info: %s '%.*s' points at snapshot %u of %zu", what,
                      (int)((*out)[i].name.n > 100 ? 100 : (*out)[i].name.n), (*out)[i].name.s, (*out)[i].snap, nsnaps);
  }
  return 0;
}

int ic_repo_parse(const uint8_t *p, size_t n, size_t limit, ic_repo *r, zerr *e) {
  memset(r, 0, sizeof *r);
  fb_buf b;
  fb_table root;
  budget bg;
  if (opened(p, n, IC_REPO, limit, &r->h, &r->payload, &b, &root, &bg, e)) return -1;
  if (fb_u8(&root, 0, 0, &r->spec, e) < 0) return fail(e);
  fb_vec sv;
  if (need(fb_vector(&root, 4, 4, &sv, e), "Repo.snapshots", e)) return -1;
  if (spend(&bg, sv.count, times(sv.count, sizeof *r->snaps + 2 * R_ID + 4 * R_ELT), e)) return -1;
  if ((r->snaps = cal(sv.count, sizeof *r->snaps, e)) == NULL) return -1;
  r->nsnaps = sv.count;
  for (size_t i = 0; i < sv.count; i++) {
    fb_table t;
    ic_snapinfo *s = &r->snaps[i];
    if (fb_vec_table(&sv, i, &t, e)) return fail(e);
    if (id12(&t, 0, s->id, "SnapshotInfo.id", e)) return -1;
    int32_t po;
    if (fb_i32(&t, 1, 0, &po, e) < 0) return fail(e); /* absent: 0, the schema default */
    if (po < -1 || (po >= 0 && (size_t)po >= sv.count))
      return zerr_set(e, ZE_ICECHUNK, "malformed repo info: snapshot %zu has parent %d of %zu", i, po, sv.count);
    s->parent = po;
    if (fb_u64(&t, 2, 0, &s->flushed_at, e) < 0) return fail(e);
    if (str(&t, 3, &s->message, 1, "SnapshotInfo.message", e)) return -1;
    if (spend(&bg, 0, s->message.n, e)) return -1;
  }
  if (refs(&root, 2, &r->branches, &r->nbranches, r->nsnaps, "branch", &bg, e)) return -1;
  if (refs(&root, 1, &r->tags, &r->ntags, r->nsnaps, "tag", &bg, e)) return -1;
  return 0;
}

void ic_repo_free(ic_repo *r) {
  zbuf_free(&r->payload);
  free(r->branches);
  free(r->tags);
  free(r->snaps);
  memset(r, 0, sizeof *r);
}

/* ---- snapshot ----------------------------------------------------------------- */

static int node_parse(const fb_table *t, ic_node *nd, budget *bg, zerr *e) {
  const uint8_t *id8;
  if (need(fb_struct(t, 0, 8, &id8, e), "NodeSnapshot.id", e)) return -1;
  memcpy(nd->id, id8, 8);
  if (str(t, 1, &nd->path, 1, "NodeSnapshot.path", e)) return -1;
  fb_vec ud;
  if (need(fb_vector(t, 2, 1, &ud, e), "NodeSnapshot.user_data", e)) return -1;
  nd->user_data.s = (const char *)fb_vec_at(&ud, 0);
  nd->user_data.n = ud.count;
  uint8_t type;
  if (fb_u8(t, 3, 0, &type, e) < 0) return fail(e);
  if (type != 1 && type != 2) return zerr_set(e, ZE_ICECHUNK, "malformed snapshot: node of unknown type %d", type);
  nd->is_array = type == 1;
  if (spend(bg, 0, nd->path.n + nd->user_data.n, e)) return -1;
  fb_table data;
  if (need(fb_table_at(t, 4, &data, e), "NodeSnapshot.node_data", e)) return -1;
  if (!nd->is_array) return 0;
  fb_vec mv;
  if (need(fb_vector(&data, 2, 4, &mv, e), "ArrayNodeData.manifests", e)) return -1;
  /* R: the id, and its extents in two matrices */
  if (spend(bg, mv.count, times(mv.count, sizeof *nd->man + R_ID + R_ELT + 2 * R_ELT * ZARR_MAX_DIMS), e)) return -1;
  if ((nd->man = cal(mv.count, sizeof *nd->man, e)) == NULL) return -1;
  nd->nman = mv.count;
  for (size_t j = 0; j < mv.count; j++) {
    fb_table mt;
    ic_mref *m = &nd->man[j];
    if (fb_vec_table(&mv, j, &mt, e)) return fail(e);
    if (id12(&mt, 0, m->id, "ManifestRef.object_id", e)) return -1;
    fb_vec ex;
    if (need(fb_vector(&mt, 1, 8, &ex, e), "ManifestRef.extents", e)) return -1;
    if (ex.count > ZARR_MAX_DIMS)
      return zerr_set(e, ZE_ICECHUNK, "malformed snapshot: manifest extents of %zu dimensions", ex.count);
    m->ndim = (int)ex.count;
    for (size_t d = 0; d < ex.count; d++) {
      m->from[d] = fb_rd32(fb_vec_at(&ex, d));
      m->to[d] = fb_rd32(fb_vec_at(&ex, d) + 4);
    }
  }
  return 0;
}

int ic_snapshot_parse(const uint8_t *p, size_t n, size_t limit, ic_snapshot *s, zerr *e) {
  memset(s, 0, sizeof *s);
  fb_buf b;
  fb_table root;
  budget bg;
  if (opened(p, n, IC_SNAPSHOT, limit, &s->h, &s->payload, &b, &root, &bg, e)) return -1;
  if (id12(&root, 0, s->id, "Snapshot.id", e)) return -1;
  const uint8_t *par;
  int r = fb_struct(&root, 1, 12, &par, e);
  if (r < 0) return fail(e);
  s->has_parent = r == 1;
  if (r == 1) memcpy(s->parent, par, 12);
  if (fb_u64(&root, 3, 0, &s->flushed_at, e) < 0) return fail(e);
  if (str(&root, 4, &s->message, 1, "Snapshot.message", e)) return -1;
  fb_vec nv;
  if (need(fb_vector(&root, 2, 4, &nv, e), "Snapshot.nodes", e)) return -1;
  /* R: path, id, type, metadata and the manifests' list; the CHARSXPs */
  if (spend(&bg, nv.count, times(nv.count, sizeof *s->nodes + R_ID + 3 * 56 + 5 * R_ELT), e)) return -1;
  if ((s->nodes = cal(nv.count, sizeof *s->nodes, e)) == NULL) return -1;
  s->nnodes = nv.count;
  for (size_t i = 0; i < nv.count; i++) {
    fb_table t;
    if (fb_vec_table(&nv, i, &t, e)) return fail(e);
    if (node_parse(&t, &s->nodes[i], &bg, e)) return -1;
  }
  /* the manifests it points to: a vector of tables in spec 2, of structs in 1 */
  fb_vec mv;
  int r2 = s->h.spec >= 2 ? fb_vector(&root, 7, 4, &mv, e) : 0;
  if (r2 < 0) return fail(e);
  if (s->h.spec < 2) { /* structs of 32 bytes (id, padding, size, count, padding) */
    fb_vec v1;
    int r1 = fb_vector(&root, 6, 32, &v1, e);
    if (r1 < 0) return fail(e);
    if (r1 == 1) {
      if (spend(&bg, 0, times(v1.count, sizeof *s->mfiles + R_ID + 2 * R_ELT), e)) return -1;
      if ((s->mfiles = cal(v1.count, sizeof *s->mfiles, e)) == NULL) return -1;
      s->nmfiles = v1.count;
      for (size_t i = 0; i < v1.count; i++) {
        const uint8_t *f = fb_vec_at(&v1, i);
        memcpy(s->mfiles[i].id, f, 12);
        s->mfiles[i].size = fb_rd64(f + 16);
        s->mfiles[i].nrefs = fb_rd32(f + 24);
      }
    }
  }
  if (r2 == 1) {
    if (spend(&bg, mv.count, times(mv.count, sizeof *s->mfiles + R_ID + 2 * R_ELT), e)) return -1;
    if ((s->mfiles = cal(mv.count, sizeof *s->mfiles, e)) == NULL) return -1;
    s->nmfiles = mv.count;
    for (size_t i = 0; i < mv.count; i++) {
      fb_table t;
      if (fb_vec_table(&mv, i, &t, e)) return fail(e);
      if (id12(&t, 0, s->mfiles[i].id, "ManifestFileInfoV2.id", e)) return -1;
      if (fb_u64(&t, 1, 0, &s->mfiles[i].size, e) < 0 || fb_u32(&t, 2, 0, &s->mfiles[i].nrefs, e) < 0) return fail(e);
    }
  }
  return 0;
}

void ic_snapshot_free(ic_snapshot *s) {
  zbuf_free(&s->payload);
  if (s->nodes)
    for (size_t i = 0; i < s->nnodes; i++) free(s->nodes[i].man);
  free(s->nodes);
  free(s->mfiles);
  memset(s, 0, sizeof *s);
}

/* ---- manifest ------------------------------------------------------------------ */

#define MAX_LOCATION 65536

/* What decompressing the locations of one manifest needs: a context, the
 * dictionary, and one scratch buffer of MAX_LOCATION bytes (each location
 * then takes only its own length). */
typedef struct {
  ZSTD_DCtx *dctx;
  ZSTD_DDict *dict;
  char *scratch;
} unzip_ctx;

static int location_unzip(ic_manifest *m, unzip_ctx *u, const fb_vec *cl, ic_str *out, budget *bg, zerr *e) {
  if (u->dctx == NULL && (u->dctx = ZSTD_createDCtx()) == NULL)
    return zerr_set(e, ZE_NOMEM, "cannot allocate a zstd context");
  if (u->scratch == NULL && (u->scratch = malloc(MAX_LOCATION)) == NULL)
    return zerr_set(e, ZE_NOMEM, "cannot allocate a location");
  size_t got = u->dict != NULL
                   ? ZSTD_decompress_usingDDict(u->dctx, u->scratch, MAX_LOCATION, fb_vec_at(cl, 0), cl->count, u->dict)
                   : ZSTD_decompressDCtx(u->dctx, u->scratch, MAX_LOCATION, fb_vec_at(cl, 0), cl->count);
  if (ZSTD_isError(got))
    return zerr_set(e, ZE_ICECHUNK, "malformed manifest: a compressed location does not decompress (%s)",
                    ZSTD_getErrorName(got));
  if (memchr(u->scratch, 0, got) != NULL)
    return zerr_set(e, ZE_ICECHUNK, "malformed manifest: a compressed location holds a NUL");
  /* ten bytes decompress to 64 kB: what they make counts (here and in R) */
  if (spend(bg, 0, 2 * (got + 1), e)) return -1;
  char *buf = malloc(got + 1);
  if (buf == NULL) return zerr_set(e, ZE_NOMEM, "cannot allocate a location");
  memcpy(buf, u->scratch, got);
  buf[got] = '\0';
  m->owned[m->nowned++] = buf;
  out->s = buf;
  out->n = got;
  return 0;
}

static int chunkref_parse(ic_manifest *m, size_t k, const fb_table *t, int ndim, int algo, unzip_ctx *u, budget *bg,
                          zerr *e) {
  fb_vec ix, inl, cl;
  if (need(fb_vector(t, 0, 4, &ix, e), "ChunkRef.index", e)) return -1;
  if ((int)ix.count != ndim)
    return zerr_set(e, ZE_ICECHUNK, "malformed manifest: chunk index of %zu dimensions in an array of %d", ix.count,
                    ndim);
  for (size_t d = 0; d < ix.count; d++) m->coords[m->cpos[k] + d] = fb_rd32(fb_vec_at(&ix, d));
  int has_inl = fb_vector(t, 1, 1, &inl, e);
  if (has_inl < 0) return fail(e);
  if (fb_u64(t, 2, 0, &m->off[k], e) < 0 || fb_u64(t, 3, 0, &m->len[k], e) < 0) return fail(e);
  const uint8_t *cid;
  int has_id = fb_struct(t, 4, 12, &cid, e);
  if (has_id < 0) return fail(e);
  int has_loc = fb_string(t, 5, &m->loc[k].s, &m->loc[k].n, e);
  if (has_loc < 0) return fail(e);
  if (fb_string(t, 6, &m->etag[k].s, &m->etag[k].n, e) < 0) return fail(e);
  if (fb_u32(t, 7, 0, &m->mtime[k], e) < 0) return fail(e);
  int has_cl = fb_vector(t, 8, 1, &cl, e);
  if (has_cl < 0) return fail(e);
  /* R copies inline bytes, locations and ETags (one shared blob would
   * otherwise be copied once per entry) */
  if (has_inl) {
    m->kind[k] = IC_INLINE;
    m->inl[k].s = (const char *)fb_vec_at(&inl, 0);
    m->inl[k].n = inl.count;
    if (spend(bg, 0, inl.count + 48, e)) return -1;
  } else if (has_id) {
    m->kind[k] = IC_NATIVE;
    memcpy(m->chunk_id + 12 * k, cid, 12);
  } else if (has_loc || has_cl) {
    m->kind[k] = IC_VIRTUAL;
    if (!has_loc) {
      if (algo == 0) { /* stored as they are */
        m->loc[k].s = (const char *)fb_vec_at(&cl, 0);
        m->loc[k].n = cl.count;
        if (memchr(m->loc[k].s, 0, m->loc[k].n) != NULL)
          return zerr_set(e, ZE_ICECHUNK, "malformed manifest: a location holds a NUL");
      } else if (location_unzip(m, u, &cl, &m->loc[k], bg, e)) {
        return -1;
      }
    }
    if (spend(bg, 0, m->loc[k].n + m->etag[k].n, e)) return -1;
    if (m->loc[k].n == 0) return zerr_set(e, ZE_ICECHUNK, "malformed manifest: a virtual chunk has an empty location");
  } else {
    return zerr_set(e, ZE_ICECHUNK, "malformed manifest: a chunk reference is neither inline, native nor virtual");
  }
  if (m->kind[k] != IC_INLINE && (m->off[k] > INT64_MAX || m->len[k] > INT64_MAX - m->off[k]))
    return zerr_set(e, ZE_ICECHUNK, "malformed manifest: a chunk reference has offset %llu and length %llu",
                    (unsigned long long)m->off[k], (unsigned long long)m->len[k]);
  return 0;
}

/* Bytes per chunk reference: its fields here, and its R values (8 columns
 * and the id's CHARSXP); per coordinate: 4 here, 4 in R. */
#define REF_BYTES (sizeof(size_t) + 1 + 8 + 8 + 12 + 3 * sizeof(ic_str) + 4 + sizeof(char *) + 8 * R_ELT + R_ID)

int ic_manifest_parse(const uint8_t *p, size_t n, size_t limit, ic_manifest *m, zerr *e) {
  memset(m, 0, sizeof *m);
  fb_buf b;
  fb_table root;
  budget bg;
  if (opened(p, n, IC_MANIFEST, limit, &m->h, &m->payload, &b, &root, &bg, e)) return -1;
  fb_vec av;
  if (need(fb_vector(&root, 1, 4, &av, e), "Manifest.arrays", e)) return -1;
  uint8_t algo;
  if (fb_u8(&root, 3, 1, &algo, e) < 0) return fail(e);
  fb_vec dv;
  int has_dict = fb_vector(&root, 2, 1, &dv, e);
  if (has_dict < 0) return fail(e);
  if (spend(&bg, av.count, times(av.count, sizeof *m->arrays + R_ID + 3 * 4), e)) return -1;
  if ((m->arrays = cal(av.count, sizeof *m->arrays, e)) == NULL) return -1;
  m->narrays = av.count;
  /* first pass: sizes */
  size_t nrefs = 0, ncoords = 0;
  for (size_t i = 0; i < av.count; i++) {
    fb_table at, rt;
    fb_vec rv, ix;
    if (fb_vec_table(&av, i, &at, e)) return fail(e);
    const uint8_t *nid;
    if (need(fb_struct(&at, 0, 8, &nid, e), "ArrayManifest.node_id", e)) return -1;
    memcpy(m->arrays[i].node, nid, 8);
    if (need(fb_vector(&at, 1, 4, &rv, e), "ArrayManifest.refs", e)) return -1;
    m->arrays[i].first = nrefs;
    m->arrays[i].count = rv.count;
    m->arrays[i].ndim = 0;
    if (rv.count) {
      if (fb_vec_table(&rv, 0, &rt, e)) return fail(e);
      if (need(fb_vector(&rt, 0, 4, &ix, e), "ChunkRef.index", e)) return -1;
      if (ix.count > ZARR_MAX_DIMS)
        return zerr_set(e, ZE_ICECHUNK, "malformed manifest: chunk index of %zu dimensions", ix.count);
      m->arrays[i].ndim = (int)ix.count;
    }
    /* before anything is allocated for them */
    if (spend(&bg, rv.count, times(rv.count, REF_BYTES + 8 * (size_t)m->arrays[i].ndim), e)) return -1;
    nrefs += rv.count;
    ncoords += rv.count * (size_t)m->arrays[i].ndim;
  }
  m->nrefs = nrefs;
  if ((m->coords = cal(ncoords, sizeof *m->coords, e)) == NULL || (m->cpos = cal(nrefs, sizeof *m->cpos, e)) == NULL ||
      (m->kind = cal(nrefs, 1, e)) == NULL || (m->off = cal(nrefs, sizeof *m->off, e)) == NULL ||
      (m->len = cal(nrefs, sizeof *m->len, e)) == NULL || (m->chunk_id = cal(nrefs, 12, e)) == NULL ||
      (m->inl = cal(nrefs, sizeof *m->inl, e)) == NULL || (m->loc = cal(nrefs, sizeof *m->loc, e)) == NULL ||
      (m->etag = cal(nrefs, sizeof *m->etag, e)) == NULL || (m->mtime = cal(nrefs, sizeof *m->mtime, e)) == NULL ||
      (m->owned = cal(nrefs, sizeof *m->owned, e)) == NULL)
    return -1;
  unzip_ctx u = {NULL, NULL, NULL};
  if (has_dict == 1 && dv.count > 0 && (u.dict = ZSTD_createDDict(fb_vec_at(&dv, 0), dv.count)) == NULL)
    return zerr_set(e, ZE_ICECHUNK, "malformed manifest: its location dictionary is not a zstd dictionary");
  int rc = 0;
  size_t c = 0;
  for (size_t i = 0; i < av.count && rc == 0; i++) {
    fb_table at, rt;
    fb_vec rv;
    if (fb_vec_table(&av, i, &at, e) || fb_vector(&at, 1, 4, &rv, e) < 0) {
      rc = fail(e);
      break;
    }
    for (size_t j = 0; j < rv.count; j++) {
      size_t k = m->arrays[i].first + j;
      m->cpos[k] = c;
      c += (size_t)m->arrays[i].ndim;
      if (fb_vec_table(&rv, j, &rt, e)) {
        rc = fail(e);
        break;
      }
      if (chunkref_parse(m, k, &rt, m->arrays[i].ndim, algo, &u, &bg, e)) {
        rc = -1;
        break;
      }
    }
  }
  ZSTD_freeDCtx(u.dctx);
  ZSTD_freeDDict(u.dict);
  free(u.scratch);
  return rc;
}

void ic_manifest_free(ic_manifest *m) {
  zbuf_free(&m->payload);
  if (m->owned)
    for (size_t i = 0; i < m->nowned; i++) free(m->owned[i]);
  free(m->owned);
  free(m->arrays);
  free(m->coords);
  free(m->cpos);
  free(m->kind);
  free(m->off);
  free(m->len);
  free(m->chunk_id);
  free(m->inl);
  free(m->loc);
  free(m->etag);
  free(m->mtime);
  memset(m, 0, sizeof *m);
}

/* ---- ids -------------------------------------------------------------------------- */

void ic_base32(const uint8_t *id, size_t n, char *out) {
  static const char A[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  uint32_t acc = 0;
  int bits = 0;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    acc = (acc << 8) | id[i];
    bits += 8;
    while (bits >= 5) {
      out[k++] = A[(acc >> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out[k++] = A[(acc << (5 - bits)) & 31];
  out[k] = '\0';
}
