/* Zip file store: a read-only reader of the zip format (PKWARE APPNOTE).
 *
 * Opening a zip reads its central directory once into an index sorted by
 * member name. After that the index is never written, so worker threads look
 * members up (binary search) and read them concurrently: every read is a
 * positioned file_read() of the local header and data, with no shared file
 * offset or other shared state. Members are stored (method 0) or deflated
 * (method 8); the CRC-32 of every whole member read is verified.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "store.h"

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD 0x06054b50u
#define SIG_EOCD64 0x06064b50u
#define SIG_LOCATOR64 0x07064b50u
#define EOCD_LEN 22
#define EOCD64_LEN 56
#define LOCATOR64_LEN 20
#define CENTRAL_LEN 46
#define LOCAL_LEN 30
/* Local headers may carry a longer extra field than the central directory
 * (e.g. zip64 sizes, extended timestamps): read this much more up front so
 * that most members take a single read. */
#define LOCAL_SLACK 256

typedef struct {
  const char *name;   /* NUL-terminated, in the index's name pool */
  uint32_t name_len;
  uint16_t method;
  uint16_t flags;
  uint16_t mtime, mdate; /* MS-DOS, kept for members a rewrite copies */
  uint32_t crc;
  uint64_t offset;    /* of the local header, archive bias included */
  uint64_t csize;     /* compressed */
  uint64_t usize;     /* uncompressed */
} zipent;

struct zipidx {
  char *path;
  zstamp stamp;       /* the file's when the index was made: reads refuse another */
  int64_t n;
  zipent *ent;        /* files whose names can be store keys, sorted by name */
  int64_t n_odd;
  zipent *odd;        /* the other files, in central directory order */
  char *names;
};

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t rd32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | ((uint64_t)rd32(p + 4) << 32); }

void zip_close(zipidx *z) {
  if (z == NULL) return;
  free(z->path);
  free(z->ent);
  free(z->odd);
  free(z->names);
  free(z);
}

/* Exactly `len` bytes at `off`; a short read means the zip is cut off. */
static int read_exact(const char *path, int64_t off, int64_t len, zbuf *out, const char *what,
                      zerr *e) {
  int missing = 0;
  if (file_read(path, off, len, out, &missing, e)) return -1;
  if (missing) return zerr_set(e, ZE_IO, "zip file '%s' has disappeared", path);
  if ((int64_t)out->size != len)
    return zerr_set(e, ZE_STORE, "zip file '%s' is truncated (%s)", path, what);
  return 0;
}

/* Order by name; equal names (a member added again) by central directory
 * position, so that the later copy wins, as in other zip readers. */
typedef struct {
  zipent ent;
  int64_t pos;
} sortent;

static int cmp_sortent(const void *a, const void *b) {
  const sortent *x = a, *y = b;
  int c = strcmp(x->ent.name, y->ent.name);
  if (c != 0) return c;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Find the end of central directory record: search backwards from the end,
 * over at most a maximal comment. Prefer a record whose comment ends exactly
 * at the end of the file; accept trailing bytes after it otherwise. */
static int find_eocd(const uint8_t *tail, size_t n, size_t *at) {
  for (int strict = 1; strict >= 0; strict--) {
    for (size_t i = n >= EOCD_LEN ? n - EOCD_LEN + 1 : 0; i-- > 0;) {
      if (rd32(tail + i) != SIG_EOCD) continue;
      size_t clen = rd16(tail + i + 20);
      if (strict ? i + EOCD_LEN + clen == n : i + EOCD_LEN + clen <= n) {
        *at = i;
        return 0;
      }
    }
  }
  return -1;
}

/* Sizes and offset that the central directory marks 0xFFFFFFFF come from the
 * zip64 extended information extra field (id 0x0001), in this order. */
static int zip64_extra(const uint8_t *ex, size_t n, uint64_t *usize, uint64_t *csize,
                       uint64_t *offset, int need_u, int need_c, int need_o) {
  size_t i = 0;
  while (i + 4 <= n) {
    uint16_t id = rd16(ex + i), len = rd16(ex + i + 2);
    if (i + 4 + len > n) break;
    if (id == 0x0001) {
      const uint8_t *p = ex + i + 4;
      size_t k = 0;
      if (need_u) { if (k + 8 > len) return -1; *usize = rd64(p + k); k += 8; }
      if (need_c) { if (k + 8 > len) return -1; *csize = rd64(p + k); k += 8; }
      if (need_o) { if (k + 8 > len) return -1; *offset = rd64(p + k); }
      return 0;
    }
    i += 4 + (size_t)len;
  }
  return need_u || need_c || need_o ? -1 : 0;
}

static int utf8_valid(const char *s, size_t n) {
  const uint8_t *p = (const uint8_t *)s;
  for (size_t i = 0; i < n;) {
    uint8_t c = p[i];
    size_t k = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : 9;
    if (k == 9 || i + k >= n) return 0;
    for (size_t j = 1; j <= k; j++)
      if ((p[i + j] & 0xC0) != 0x80) return 0;
    i += k + 1;
  }
  return 1;
}
/* Can this name be a store key? (Names with NUL bytes cannot.) */
static int name_is_key(const char *name, size_t n) {
  return memchr(name, '\0', n) == NULL && key_is_safe(name) && utf8_valid(name, n);
}

/* `cd_off` is where the archive says the central directory starts; `bias`
 * is how far everything really is behind that. The index takes at most
 * `budget` bytes besides the central directory itself. */
static int parse_central(zipidx *z, const uint8_t *cd, uint64_t cd_size, uint64_t cd_off,
                         uint64_t bias, uint64_t budget, zerr *e) {
  const char *path = z->path;
  /* one pass to size the name pool and the entry tables: both are bounded by
   * the directory's size (an entry takes at least CENTRAL_LEN bytes of it) */
  size_t count = 0, pool = 0;
  for (uint64_t i = 0; i < cd_size;) {
    if (cd_size - i < CENTRAL_LEN || rd32(cd + i) != SIG_CENTRAL)
      return zerr_set(e, ZE_STORE, "zip file '%s' has a damaged central directory", path);
    uint64_t len = CENTRAL_LEN + (uint64_t)rd16(cd + i + 28) + rd16(cd + i + 30) + rd16(cd + i + 32);
    if (len > cd_size - i)
      return zerr_set(e, ZE_STORE, "zip file '%s' has a damaged central directory", path);
    count++;
    pool += (size_t)rd16(cd + i + 28) + 1;
    i += len;
  }
  uint64_t need = (uint64_t)pool + (uint64_t)count * (sizeof(sortent) + 2 * sizeof(zipent));
  if (need > budget)
    return zerr_set(e, ZE_NOMEM,
                    "zip file '%s': indexing its %.0f members would take %.0f bytes, more than "
                    "zarr.max_decoded_bytes (%.0f)",
                    path, (double)count, (double)need, (double)budget);
  sortent *tmp = malloc((count ? count : 1) * sizeof(sortent));
  z->names = malloc(pool ? pool : 1);
  z->odd = malloc((count ? count : 1) * sizeof(zipent));
  if (tmp == NULL || z->names == NULL || z->odd == NULL) {
    free(tmp);
    return zerr_set(e, ZE_NOMEM, "out of memory reading zip file '%s'", path);
  }
  char *np = z->names;
  size_t m = 0;
  uint64_t i = 0;
  for (size_t k = 0; k < count; k++) {
    const uint8_t *h = cd + i;
    uint16_t nlen = rd16(h + 28), xlen = rd16(h + 30), clen = rd16(h + 32);
    uint32_t cs32 = rd32(h + 20), us32 = rd32(h + 24), off32 = rd32(h + 42);
    memcpy(np, h + CENTRAL_LEN, nlen);
    np[nlen] = '\0';
    sortent *s = &tmp[m];
    s->pos = (int64_t)k;
    s->ent.name = np;
    s->ent.name_len = nlen;
    s->ent.flags = rd16(h + 8);
    s->ent.method = rd16(h + 10);
    s->ent.mtime = rd16(h + 12);
    s->ent.mdate = rd16(h + 14);
    s->ent.crc = rd32(h + 16);
    s->ent.csize = cs32;
    s->ent.usize = us32;
    s->ent.offset = off32;
    np += nlen + 1;
    i += CENTRAL_LEN + (uint64_t)nlen + xlen + clen;
    if (zip64_extra(h + CENTRAL_LEN + nlen, xlen, &s->ent.usize, &s->ent.csize, &s->ent.offset,
                    us32 == UINT32_MAX, cs32 == UINT32_MAX, off32 == UINT32_MAX)) {
      zerr_set(e, ZE_STORE, "zip file '%s': member '%s' lacks its zip64 sizes", path, s->ent.name);
      free(tmp);
      return -1;
    }
    if (nlen == 0 || s->ent.name[nlen - 1] == '/') continue; /* a directory */
    /* the member must lie before the central directory */
    int outside = s->ent.offset > cd_off || s->ent.csize > cd_off - s->ent.offset;
    s->ent.offset += bias;
    if (!name_is_key(s->ent.name, nlen)) {
      /* not a key: kept for a rewrite, unless it cannot be copied at all */
      if (!outside) z->odd[z->n_odd++] = s->ent;
      continue;
    }
    if (outside) {
      zerr_set(e, ZE_STORE, "zip file '%s': member '%s' lies outside the archive", path,
               s->ent.name);
      free(tmp);
      return -1;
    }
    m++;
  }
  qsort(tmp, m, sizeof(sortent), cmp_sortent);
  z->ent = malloc((m ? m : 1) * sizeof(zipent));
  if (z->ent == NULL) {
    free(tmp);
    return zerr_set(e, ZE_NOMEM, "out of memory reading zip file '%s'", path);
  }
  int64_t n = 0;
  for (size_t k = 0; k < m; k++) {
    if (k + 1 < m && strcmp(tmp[k].ent.name, tmp[k + 1].ent.name) == 0) continue;
    z->ent[n++] = tmp[k].ent;
  }
  z->n = n;
  free(tmp);
  return 0;
}

static int zip_parse(zipidx *z, uint64_t budget, zerr *e) {
  const char *path = z->path;
  int64_t size = file_size(path);
  if (size < 0) return zerr_set(e, ZE_IO, "cannot read zip file '%s'", path);
  if (size < EOCD_LEN) return zerr_set(e, ZE_STORE, "'%s' is not a zip file (too short)", path);
  zbuf b = {0};
  int64_t tail_len = size < EOCD_LEN + 65535 ? size : EOCD_LEN + 65535;
  int64_t tail_off = size - tail_len;
  size_t at = 0;
  if (read_exact(path, tail_off, tail_len, &b, "end of central directory", e)) goto fail;
  if (find_eocd(b.data, b.size, &at)) {
    zerr_set(e, ZE_STORE, "'%s' is not a zip file (no end of central directory record)", path);
    goto fail;
  }
  int64_t eocd_pos = tail_off + (int64_t)at;
  const uint8_t *r = b.data + at;
  uint64_t disk = rd16(r + 4), cd_disk = rd16(r + 6);
  uint64_t cd_size = rd32(r + 12), cd_off = rd32(r + 16), claimed = rd16(r + 10);
  int64_t cd_end = eocd_pos; /* where the central directory should end */
  /* a zip64 locator right before the record points to the zip64 record */
  if (eocd_pos >= LOCATOR64_LEN) {
    zbuf l = {0};
    if (read_exact(path, eocd_pos - LOCATOR64_LEN, LOCATOR64_LEN, &l, "zip64 locator", e)) {
      zbuf_free(&l);
      goto fail;
    }
    if (rd32(l.data) == SIG_LOCATOR64) {
      uint64_t rec = rd64(l.data + 8);
      uint32_t ndisks = rd32(l.data + 16);
      zbuf_free(&l);
      if (ndisks > 1) {
        zerr_set(e, ZE_STORE, "zip file '%s' spans several disks, which is not supported", path);
        goto fail;
      }
      /* the record sits before the locator; allow for data prepended to the archive */
      int64_t limit = eocd_pos - LOCATOR64_LEN - EOCD64_LEN;
      if (limit < 0) {
        zerr_set(e, ZE_STORE, "zip file '%s' has a damaged zip64 end of central directory", path);
        goto fail;
      }
      int64_t pos = (rec <= (uint64_t)limit) ? (int64_t)rec : limit;
      zbuf z64 = {0};
      if (read_exact(path, pos, EOCD64_LEN, &z64, "zip64 end of central directory", e)) {
        zbuf_free(&z64);
        goto fail;
      }
      if (rd32(z64.data) != SIG_EOCD64 && pos != limit) { /* try where it must be */
        pos = limit;
        if (read_exact(path, pos, EOCD64_LEN, &z64, "zip64 end of central directory", e)) {
          zbuf_free(&z64);
          goto fail;
        }
      }
      if (rd32(z64.data) != SIG_EOCD64) {
        zbuf_free(&z64);
        zerr_set(e, ZE_STORE, "zip file '%s' has a damaged zip64 end of central directory", path);
        goto fail;
      }
      disk = rd32(z64.data + 16);
      cd_disk = rd32(z64.data + 20);
      claimed = rd64(z64.data + 32);
      cd_size = rd64(z64.data + 40);
      cd_off = rd64(z64.data + 48);
      cd_end = pos;
      zbuf_free(&z64);
    } else {
      zbuf_free(&l);
    }
  }
  if (disk != 0 || cd_disk != 0) {
    zerr_set(e, ZE_STORE, "zip file '%s' spans several disks, which is not supported", path);
    goto fail;
  }
  /* Data prepended to the archive (e.g. a self-extractor) shifts every offset
   * by the same amount: measure it where the central directory really ends. */
  if (cd_size > (uint64_t)cd_end || cd_off > (uint64_t)cd_end - cd_size) {
    zerr_set(e, ZE_STORE, "zip file '%s' has a damaged end of central directory record", path);
    goto fail;
  }
  /* an entry takes at least CENTRAL_LEN bytes: a count the directory cannot
   * hold is a lie, and the directory is read only within the budget */
  if (claimed > cd_size / CENTRAL_LEN) {
    zerr_set(e, ZE_STORE,
             "zip file '%s' claims %.0f members, more than its central directory of %.0f bytes can hold",
             path, (double)claimed, (double)cd_size);
    goto fail;
  }
  if (cd_size > budget) {
    zerr_set(e, ZE_NOMEM,
             "zip file '%s' has a central directory of %.0f bytes, more than zarr.max_decoded_bytes (%.0f)",
             path, (double)cd_size, (double)budget);
    goto fail;
  }
  uint64_t bias = (uint64_t)cd_end - cd_size - cd_off;
  uint64_t cd_start = cd_off + bias;
  if (cd_size > 0 && read_exact(path, (int64_t)cd_start, (int64_t)cd_size, &b, "central directory", e))
    goto fail;
  if (parse_central(z, b.data, cd_size, cd_off, bias, budget - cd_size, e)) goto fail;
  zbuf_free(&b);
  return 0;
fail:
  zbuf_free(&b);
  return -1;
}

int zip_open(const char *path, uint64_t budget, zipidx **out, zerr *e) {
  *out = NULL;
  zipidx *z = calloc(1, sizeof(zipidx));
  if (z == NULL) return zerr_set(e, ZE_NOMEM, "out of memory");
  size_t n = strlen(path);
  z->path = malloc(n + 1);
  if (z->path == NULL) {
    zip_close(z);
    return zerr_set(e, ZE_NOMEM, "out of memory");
  }
  memcpy(z->path, path, n + 1);
  file_stamp(path, &z->stamp); /* before it is read: a change after this is seen */
  if (zip_parse(z, budget, e)) {
    zip_close(z);
    return -1;
  }
  *out = z;
  return 0;
}

static const zipent *zip_find(const zipidx *z, const char *name) {
  int64_t lo = 0, hi = z->n - 1;
  while (lo <= hi) {
    int64_t mid = lo + (hi - lo) / 2;
    int c = strcmp(z->ent[mid].name, name);
    if (c == 0) return &z->ent[mid];
    if (c < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return NULL;
}

static uint32_t crc_of(const uint8_t *p, size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (n > 0) {
    uInt k = n > (size_t)1 << 30 ? (uInt)1 << 30 : (uInt)n;
    crc = crc32(crc, p, k);
    p += k;
    n -= k;
  }
  return (uint32_t)crc;
}

/* Inflate a member into `out`, never past its recorded size plus one byte
 * (a member that inflates to more is corrupt). The buffer grows with what
 * actually inflates, so a central directory that claims a huge size for a
 * few damaged bytes costs no more than those bytes produce. */
static int inflate_member(const zipent *m, const uint8_t *src, zbuf *out, zerr *e) {
  uint64_t cap = m->usize + 1; /* total room ever given to zlib */
  uint64_t first = (m->csize < ((uint64_t)1 << 40) ? m->csize : ((uint64_t)1 << 40)) * 4 + 4096;
  if (zbuf_reserve(out, (size_t)(first < cap ? first : cap), e)) return -1;
  z_stream s;
  memset(&s, 0, sizeof s);
  if (inflateInit2(&s, -15) != Z_OK)
    return zerr_set(e, ZE_NOMEM, "cannot start inflating zip member '%s'", m->name);
  uint64_t in_left = m->csize, got = 0;
  s.next_in = (Bytef *)(uintptr_t)src; /* zlib's API is not const-correct */
  int rc = Z_OK;
  for (;;) {
    /* feed zlib in pieces its 32-bit counters can hold */
    if (s.avail_in == 0 && in_left > 0) {
      s.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
      in_left -= s.avail_in;
    }
    if (got == out->cap && got < cap) { /* grow, never beyond cap */
      uint64_t want = (uint64_t)out->cap * 2;
      if (zbuf_reserve(out, (size_t)(want < cap ? want : cap), e)) {
        rc = Z_MEM_ERROR;
        break;
      }
    }
    uint64_t room = (out->cap < cap ? out->cap : cap) - got;
    s.next_out = out->data + got;
    s.avail_out = room > UINT_MAX ? UINT_MAX : (uInt)room;
    uInt before = s.avail_out;
    rc = inflate(&s, Z_NO_FLUSH);
    got += before - s.avail_out;
    if (rc == Z_STREAM_END) break;
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && ((s.avail_in == 0 && in_left > 0) || (s.avail_out == 0 && got < cap)))
      continue;
    break;
  }
  inflateEnd(&s);
  if (e->kind != ZE_OK) return -1;
  if (rc != Z_STREAM_END || got != m->usize)
    return zerr_set(e, ZE_CORRUPT, "zip member '%s' does not inflate to its recorded size (%s)",
                    m->name, rc == Z_STREAM_END ? "the size differs" : "damaged or cut off data");
  out->size = (size_t)got;
  return 0;
}

/* Clamp a byte range (len < 0: to the end) to a member of `size` bytes. */
static void clamp_range(uint64_t size, int64_t off, int64_t len, uint64_t *from, uint64_t *want) {
  *from = (uint64_t)off > size ? size : (uint64_t)off;
  *want = len < 0 || (uint64_t)len > size - *from ? size - *from : (uint64_t)len;
}

/* Bytes of a member: all of it (len < 0, CRC checked) or a range. A range of
 * a stored member is read on its own, without the CRC check (that needs all
 * bytes); a range of a deflated member is cut from the checked whole. The
 * result is in `out` (*data points into it); `raw` holds the compressed bytes
 * of deflated members meanwhile and is free to reuse afterwards. */
/* Can this member be read at all? Its sizes come from the central directory
 * and must be believable before anything is allocated for them: deflate
 * never expands data more than 1032-fold. */
static int member_check(const zipent *m, zerr *e) {
  if (m->flags & 0x0001)
    return zerr_set(e, ZE_STORE, "zip member '%s' is encrypted, which is not supported", m->name);
  if (m->method != 0 && m->method != 8)
    return zerr_set(e, ZE_STORE,
                    "zip member '%s' uses compression method %d; only stored (0) and deflate (8) are supported",
                    m->name, (int)m->method);
  if (m->method == 0 && m->csize != m->usize)
    return zerr_set(e, ZE_CORRUPT, "stored zip member '%s' has two different sizes", m->name);
  if (m->method == 8 && m->usize / 1032 > m->csize + 1)
    return zerr_set(e, ZE_CORRUPT, "deflated zip member '%s' claims an impossible size", m->name);
  if (m->csize > (uint64_t)INT64_MAX / 2 || m->usize > (uint64_t)(SIZE_MAX / 2))
    return zerr_set(e, ZE_NOMEM, "zip member '%s' is too large", m->name);
  return 0;
}

static int member_read(const zipidx *z, const zipent *m, int64_t off, int64_t len, zbuf *out,
                       zbuf *raw, const uint8_t **data, size_t *n, zerr *e) {
  if (member_check(m, e)) return -1;
  /* the index gives offsets into the file as it was: another file now (a
   * zip store written again) would give other bytes */
  zstamp now;
  file_stamp(z->path, &now);
  if (!zstamp_same(&now, &z->stamp))
    return zerr_set(e, ZE_STORE, "zip file '%s' was changed after it was opened: open it again", z->path);
  int ranged = len >= 0 && m->method == 0;
  uint64_t from = 0, want = m->csize;
  if (ranged) clamp_range(m->usize, off, len, &from, &want);
  zbuf *buf = m->method == 0 ? out : raw;
  /* the local header (its name and extra field may differ in length from the
   * central directory's) and, when all of it is wanted, the data in one go */
  int64_t head = LOCAL_LEN + (int64_t)m->name_len + LOCAL_SLACK;
  int64_t ask = head + (ranged ? 0 : (int64_t)want);
  int missing = 0;
  if (file_read(z->path, (int64_t)m->offset, ask, buf, &missing, e)) return -1;
  if (missing) return zerr_set(e, ZE_IO, "zip file '%s' has disappeared", z->path);
  const uint8_t *h = buf->data;
  if (buf->size < LOCAL_LEN || rd32(h) != SIG_LOCAL)
    return zerr_set(e, ZE_CORRUPT, "zip member '%s' has no valid local header", m->name);
  uint64_t nlen = rd16(h + 26), skip = LOCAL_LEN + nlen + rd16(h + 28);
  if (nlen != m->name_len || buf->size < LOCAL_LEN + nlen ||
      memcmp(h + LOCAL_LEN, m->name, (size_t)nlen) != 0)
    return zerr_set(e, ZE_CORRUPT, "zip member '%s': its local header names another member", m->name);
  const uint8_t *src;
  if (!ranged && skip + want <= buf->size) {
    src = buf->data + skip;
  } else if (ranged || (int64_t)buf->size == ask) {
    /* a range, or a local extra field longer than we guessed: read the data itself */
    if (file_read(z->path, (int64_t)(m->offset + skip + from), (int64_t)want, buf, &missing, e))
      return -1;
    if (missing) return zerr_set(e, ZE_IO, "zip file '%s' has disappeared", z->path);
    if (buf->size != want) return zerr_set(e, ZE_CORRUPT, "zip member '%s' is cut off", m->name);
    src = buf->data;
  } else {
    return zerr_set(e, ZE_CORRUPT, "zip member '%s' is cut off", m->name);
  }
  if (m->method == 8) {
    if (inflate_member(m, src, out, e)) return -1;
    src = out->data;
  }
  if (!ranged && crc_of(src, (size_t)m->usize) != m->crc)
    return zerr_set(e, ZE_CHECKSUM, "zip member '%s' fails its CRC-32 check", m->name);
  if (!ranged) {
    clamp_range(m->usize, len >= 0 ? off : 0, len, &from, &want);
    src += from;
  }
  *data = src;
  *n = (size_t)want;
  return 0;
}

int zip_fetch(const zipidx *z, const char *name, zbuf *out, zbuf *scratch, const uint8_t **data,
              size_t *n, int *missing, zerr *e) {
  const zipent *m = zip_find(z, name);
  *missing = m == NULL;
  *data = NULL;
  *n = 0;
  if (m == NULL) return 0;
  return member_read(z, m, 0, -1, out, scratch, data, n, e);
}

/* ---- members that are not keys, for a rewrite of the archive -------------- */

int64_t zip_odd_count(const zipidx *z) { return z->n_odd; }

const char *zip_file_path(const zipidx *z) { return z->path; }

/* Where the stored (compressed) bytes of odd member i start: after its local
 * header, whose name must be the central directory's. */
int zip_odd_locate(const zipidx *z, int64_t i, zip_odd_member *out, zerr *e) {
  const zipent *m = &z->odd[i];
  zbuf h = {0};
  int rc = read_exact(z->path, (int64_t)m->offset, LOCAL_LEN + (int64_t)m->name_len, &h, "local header", e);
  if (rc == 0 && (rd32(h.data) != SIG_LOCAL || rd16(h.data + 26) != m->name_len ||
                  memcmp(h.data + LOCAL_LEN, m->name, m->name_len) != 0))
    rc = zerr_set(e, ZE_CORRUPT, "zip file '%s': a member has no valid local header", z->path);
  if (rc == 0) {
    out->name = m->name;
    out->name_len = m->name_len;
    out->method = m->method;
    out->flags = m->flags;
    out->mtime = m->mtime;
    out->mdate = m->mdate;
    out->crc = m->crc;
    out->csize = m->csize;
    out->usize = m->usize;
    out->data_off = m->offset + LOCAL_LEN + m->name_len + rd16(h.data + 28);
  }
  zbuf_free(&h);
  return rc;
}

/* ---- R entry points (main thread) ------------------------------------------ */

static SEXP zip_tag(void) { return install("zarr_zip_index"); }

static void zip_finalize(SEXP ptr) {
  zip_close(R_ExternalPtrAddr(ptr));
  R_ClearExternalPtr(ptr);
}

const zipidx *zip_index_from(SEXP ptr) {
  if (TYPEOF(ptr) != EXTPTRSXP || R_ExternalPtrTag(ptr) != zip_tag())
    zarr_raise(ZE_STORE, NULL, NULL, "internal: not a zip index");
  const zipidx *z = R_ExternalPtrAddr(ptr);
  if (z == NULL)
    zarr_raise(ZE_STORE, NULL, NULL,
               "the zip index is gone (a store saved and restored in another session?): open the zip file again");
  return z;
}

SEXP ffi_zip_open(SEXP path, SEXP budget) {
  zerr e = {ZE_OK, ""};
  zipidx *z = NULL;
  double b = asReal(budget);
  if (!(b >= 0)) zarr_raise(ZE_VALUE, NULL, NULL, "internal: invalid zip index budget");
  if (zip_open(translateCharUTF8(STRING_ELT(path, 0)), b > 1e18 ? (uint64_t)1e18 : (uint64_t)b, &z, &e))
    zarr_raise_err(&e, NULL, NULL);
  SEXP ptr = PROTECT(R_MakeExternalPtr(z, zip_tag(), R_NilValue));
  R_RegisterCFinalizerEx(ptr, zip_finalize, TRUE);
  UNPROTECT(1);
  return ptr;
}


/* The members, sorted by name: list(name, size). Names that could not be
 * store keys (absolute, "..", not UTF-8, ...) are not in the index. */
SEXP ffi_zip_list(SEXP ptr) {
  const zipidx *z = zip_index_from(ptr);
  SEXP names = PROTECT(allocVector(STRSXP, (R_xlen_t)z->n));
  SEXP sizes = PROTECT(allocVector(REALSXP, (R_xlen_t)z->n));
  for (int64_t i = 0; i < z->n; i++) {
    const zipent *x = &z->ent[i];
    SET_STRING_ELT(names, (R_xlen_t)i, mkCharLenCE(x->name, (int)x->name_len, CE_UTF8));
    REAL(sizes)[i] = (double)x->usize;
  }
  SEXP out = PROTECT(allocVector(VECSXP, 2));
  SET_VECTOR_ELT(out, 0, names);
  SET_VECTOR_ELT(out, 1, sizes);
  SEXP nm = PROTECT(allocVector(STRSXP, 2));
  SET_STRING_ELT(nm, 0, mkChar("name"));
  SET_STRING_ELT(nm, 1, mkChar("size"));
  setAttrib(out, R_NamesSymbol, nm);
  UNPROTECT(4);
  return out;
}

/* One member, or range = c(offset, length) of it; NULL when absent. */
SEXP ffi_zip_read(SEXP ptr, SEXP name, SEXP range) {
  const zipidx *z = zip_index_from(ptr);
  const char *nm = translateCharUTF8(STRING_ELT(name, 0));
  const zipent *m = zip_find(z, nm);
  if (m == NULL) return R_NilValue;
  int64_t off = 0, len = -1;
  if (!isNull(range)) {
    off = (int64_t)REAL(range)[0];
    len = (int64_t)REAL(range)[1];
    if (off < 0 || len < 0) zarr_raise(ZE_VALUE, NULL, NULL, "invalid byte range");
  }
  zerr e = {ZE_OK, ""};
  if (member_check(m, &e)) zarr_raise_err(&e, NULL, NULL);
  if (m->usize > (uint64_t)R_XLEN_T_MAX) zarr_raise(ZE_NOMEM, NULL, NULL, "zip member is too large for R");
  uint64_t from, want;
  clamp_range(m->usize, off, len, &from, &want);
  /* the R vector first: nothing may fail in R while C buffers are held */
  SEXP r = PROTECT(allocVector(RAWSXP, (R_xlen_t)want));
  zbuf out = {0}, raw = {0};
  const uint8_t *data = NULL;
  size_t n = 0;
  int rc = member_read(z, m, off, len, &out, &raw, &data, &n, &e);
  if (rc == 0 && n == want && n > 0) memcpy(RAW(r), data, n);
  zbuf_free(&out);
  zbuf_free(&raw);
  if (rc) zarr_raise_err(&e, NULL, NULL);
  if (n != want) zarr_raise(ZE_CORRUPT, NULL, NULL, "zip member read returned the wrong size");
  UNPROTECT(1);
  return r;
}

/* Every member whose name can be a store key, written below the folder
 * `dir` (the staging folder of a zip store opened for writing); the number
 * written. Directory entries are skipped (folders follow from the files). */
SEXP ffi_zip_extract(SEXP ptr, SEXP dir) {
  const zipidx *z = zip_index_from(ptr);
  const char *root = translateCharUTF8(STRING_ELT(dir, 0));
  size_t cap = strlen(root) + 4096;
  char *path = malloc(cap);
  if (path == NULL) zarr_raise(ZE_NOMEM, NULL, NULL, "out of memory");
  zbuf out = {0}, raw = {0};
  zerr e = {ZE_OK, ""};
  double done = 0;
  for (int64_t i = 0; i < z->n && e.kind == ZE_OK; i++) {
    const zipent *x = &z->ent[i];
    if (path_join(path, cap, root, x->name)) {
      zerr_set(&e, ZE_KEY, "zip member '%.200s' is too long a path", x->name);
      break;
    }
    const uint8_t *data = NULL;
    size_t n = 0;
    int missing = 0;
    if (zip_fetch(z, x->name, &out, &raw, &data, &n, &missing, &e) == 0 &&
        file_write_atomic(path, n ? data : (const uint8_t *)"", n, &e) == 0)
      done++;
    if (e.kind == ZE_OK && (i & 255) == 0 && interrupt_pending())
      zerr_set(&e, ZE_INTERRUPT, "copying the members of '%s' was interrupted", z->path);
  }
  zbuf_free(&out);
  zbuf_free(&raw);
  free(path);
  if (e.kind != ZE_OK) zarr_raise_err(&e, NULL, NULL);
  return ScalarReal(done);
}

/* ---- the zip store (store.h): members below a folder of the zip ------------- */

typedef struct {
  const zipidx *z; /* owned by the R index object the store handle protects */
  char *prefix;
} zipstore;

static int zipstore_get(zstore *s, const zrange *r, zbuf *out, int *missing, zerr *e) {
  const zipstore *zs = s->impl;
  char name[8192];
  int k = snprintf(name, sizeof name, "%s%s", zs->prefix, r->key);
  if (k < 0 || (size_t)k >= sizeof name) return zerr_set(e, ZE_KEY, "store path is too long");
  const zipent *m = zip_find(zs->z, name);
  *missing = m == NULL;
  out->size = 0;
  if (m == NULL) return 0;
  int64_t off = r->off, len = r->len;
  if (off < 0) { /* a suffix */
    len = -off;
    off = (uint64_t)len > m->usize ? 0 : (int64_t)m->usize - len;
  } else if (len < 0 && off > 0) {
    len = (uint64_t)off > m->usize ? 0 : (int64_t)m->usize - off;
  }
  zbuf raw = {0};
  const uint8_t *data = NULL;
  size_t n = 0;
  int rc = member_read(zs->z, m, off, len, out, &raw, &data, &n, e);
  if (rc == 0 && n > 0 && data != out->data) {
    if (data >= out->data && data < out->data + out->cap) {
      memmove(out->data, data, n);
    } else if (zbuf_reserve(out, n, e) == 0) {
      memcpy(out->data, data, n);
    } else {
      rc = -1;
    }
  }
  if (rc == 0) out->size = n;
  zbuf_free(&raw);
  return rc;
}

static void zipstore_destroy(zstore *s) {
  zipstore *zs = s->impl;
  if (zs != NULL) free(zs->prefix);
  free(zs);
}

/* Every member's stamp is the zip file's: a cached chunk of a file written
 * again is not used. */
static void zipstore_stamp(zstore *s, const char *key, zstamp *out) {
  (void)key;
  file_stamp(((const zipstore *)s->impl)->z->path, out);
}

static const zstore_ops zip_ops = {"zip", zipstore_get, NULL, NULL, NULL, zipstore_destroy, 0, NULL, 0, NULL, zipstore_stamp, NULL};

zstore *zip_store_new(const zipidx *z, const char *prefix, zerr *e) {
  zipstore *zs = calloc(1, sizeof *zs);
  char *p = strdup(prefix);
  zstore *s = (zs && p) ? store_alloc(&zip_ops, zs, z->path) : NULL;
  if (s == NULL) {
    free(zs);
    free(p);
    zerr_set(e, ZE_NOMEM, "out of memory");
    return NULL;
  }
  zs->z = z;
  zs->prefix = p;
  return s;
}

SEXP ffi_store_zip(SEXP index, SEXP prefix) {
  const zipidx *z = zip_index_from(index);
  zerr e = {ZE_OK, ""};
  zstore *s = zip_store_new(z, translateCharUTF8(STRING_ELT(prefix, 0)), &e);
  if (s == NULL) zarr_raise_err(&e, NULL, NULL);
  return store_wrap(s, index);
}
