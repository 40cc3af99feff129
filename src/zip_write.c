/* Writing zip files (the writable zarr_zipstore, R/store_zip.R): the files of
 * a staging folder become the members of a new archive, stored or deflated
 * (raw deflate, method 8, as Python's zipfile and zip tools write it), with
 * ZIP64 records where a size, an offset or the member count needs them.
 * Names are UTF-8 (flag bit 11). Each local header is written first with
 * zero sizes and patched once the member's data is written, so members are
 * streamed in pieces and never held whole. The members of the previous
 * archive whose names cannot be store keys (which the staging folder does
 * not hold) are copied into the new one as they are stored. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "zarr.h"


#define PIECE ((size_t)1 << 20)
#define U32_MAX 0xFFFFFFFFu

typedef struct {
  uint64_t offset, csize, usize;
  uint32_t crc;
  uint16_t method, flags, t, d;
  const char *name; /* nlen bytes */
  size_t nlen;
} wmember;

typedef struct {
  FILE *f;
  const char *path;
  uint8_t *in, *out;
  wmember *mem;
  z_stream zs;
  int zs_live;
} zwriter;

static void put16(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v) {
  put16(p, v & 0xFFFF);
  put16(p + 2, v >> 16);
}
static void put64(uint8_t *p, uint64_t v) {
  put32(p, (uint32_t)v);
  put32(p + 4, (uint32_t)(v >> 32));
}

static int wr(zwriter *w, const void *p, size_t n, zerr *e) {
  if (n && fwrite(p, 1, n, w->f) != n)
    return zerr_set(e, ZE_IO, "cannot write '%s': %s", w->path, strerror(errno));
  return 0;
}

/* MS-DOS time and date of now (zip's only mandatory timestamp) */
static void dos_now(uint16_t *t, uint16_t *d) {
  time_t now = time(NULL);
  struct tm tmv, *tm = localtime_r(&now, &tmv);
  if (tm == NULL || tm->tm_year < 80) {
    *t = 0;
    *d = (1 << 5) | 1; /* 1980-01-01 */
    return;
  }
  *t = (uint16_t)((tm->tm_hour << 11) | (tm->tm_min << 5) | (tm->tm_sec / 2));
  *d = (uint16_t)(((tm->tm_year - 80) << 9) | ((tm->tm_mon + 1) << 5) | tm->tm_mday);
}

/* Local header with a zip64 extra (sizes patched later) when the member may
 * reach 4 GiB. */
static int local_header(zwriter *w, const wmember *m, int z64, zerr *e) {
  uint8_t h[30 + 20];
  memset(h, 0, sizeof h);
  put32(h, 0x04034b50u);
  put16(h + 4, z64 ? 45 : 20);
  put16(h + 6, m->flags);
  put16(h + 8, m->method);
  put16(h + 10, m->t);
  put16(h + 12, m->d);
  put16(h + 26, (uint32_t)m->nlen);
  put16(h + 28, z64 ? 20 : 0);
  if (z64) {
    put32(h + 18, U32_MAX);
    put32(h + 22, U32_MAX);
    put16(h + 30, 1);
    put16(h + 32, 16);
  }
  if (wr(w, h, 30, e) || wr(w, m->name, m->nlen, e) || (z64 && wr(w, h + 30, 20, e))) return -1;
  return 0;
}

/* A member of the previous archive, its stored bytes copied as they are. */
static int member_copy(zwriter *w, const zipidx *z, const zip_odd_member *o, wmember *m, zerr *e) {
  const char *spath = zip_file_path(z);
  FILE *src = zarr_fopen(spath, "rb");
  if (src == NULL) return zerr_set(e, ZE_IO, "cannot open '%s': %s", spath, strerror(errno));
  int rc = 0;
  if (fseeko(src, (off_t)o->data_off, SEEK_SET) != 0)
    rc = zerr_set(e, ZE_IO, "cannot seek in '%s': %s", spath, strerror(errno));
  for (uint64_t left = o->csize; rc == 0 && left > 0;) {
    size_t want = left < PIECE ? (size_t)left : PIECE;
    size_t got = fread(w->in, 1, want, src);
    if (got != want) {
      rc = zerr_set(e, ZE_CORRUPT, "zip file '%s' is cut off in a member it copies", spath);
      break;
    }
    rc = wr(w, w->in, got, e);
    left -= got;
  }
  fclose(src);
  m->crc = o->crc;
  m->csize = o->csize;
  m->usize = o->usize;
  return rc;
}

/* The member's data from `src`: copied or deflated, CRC-32 on the way. */
static int member_data(zwriter *w, FILE *src, const char *spath, wmember *m, int level, zerr *e) {
  m->crc = (uint32_t)crc32(0L, Z_NULL, 0);
  m->usize = m->csize = 0;
  if (m->method == 8) {
    memset(&w->zs, 0, sizeof w->zs);
    if (deflateInit2(&w->zs, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      return zerr_set(e, ZE_NOMEM, "cannot initialise deflate");
    w->zs_live = 1;
  }
  for (;;) {
    size_t got = fread(w->in, 1, PIECE, src);
    if (got < PIECE && ferror(src)) return zerr_set(e, ZE_IO, "cannot read '%s': %s", spath, strerror(errno));
    int last = got < PIECE;
    m->crc = (uint32_t)crc32(m->crc, w->in, (uInt)got);
    m->usize += got;
    if (m->method == 0) {
      if (wr(w, w->in, got, e)) return -1;
      m->csize += got;
    } else {
      w->zs.next_in = w->in;
      w->zs.avail_in = (uInt)got;
      int rc;
      do {
        w->zs.next_out = w->out;
        w->zs.avail_out = (uInt)PIECE;
        rc = deflate(&w->zs, last ? Z_FINISH : Z_NO_FLUSH);
        size_t n = PIECE - w->zs.avail_out;
        if (wr(w, w->out, n, e)) return -1;
        m->csize += n;
      } while (w->zs.avail_out == 0 || (last && rc != Z_STREAM_END));
    }
    if (last) break;
  }
  if (w->zs_live) {
    deflateEnd(&w->zs);
    w->zs_live = 0;
  }
  return 0;
}

static int patch_local(zwriter *w, const wmember *m, int z64, size_t nlen, zerr *e) {
  uint8_t b[16];
  if (!z64 && (m->usize >= U32_MAX || m->csize >= U32_MAX))
    return zerr_set(e, ZE_IO, "internal: member of '%s' grew past 4 GiB without a zip64 header", w->path);
  off_t end = ftello(w->f);
  put32(b, m->crc);
  put32(b + 4, z64 ? U32_MAX : (uint32_t)m->csize);
  put32(b + 8, z64 ? U32_MAX : (uint32_t)m->usize);
  if (end < 0 || fseeko(w->f, (off_t)m->offset + 14, SEEK_SET) || wr(w, b, 12, e)) goto fail;
  if (z64) {
    put64(b, m->usize);
    put64(b + 8, m->csize);
    if (fseeko(w->f, (off_t)(m->offset + 30 + nlen + 4), SEEK_SET) || wr(w, b, 16, e)) goto fail;
  }
  if (fseeko(w->f, end, SEEK_SET)) goto fail;
  return 0;
fail:
  if (e->kind == ZE_OK) zerr_set(e, ZE_IO, "cannot seek in '%s': %s", w->path, strerror(errno));
  return -1;
}

static int central(zwriter *w, R_xlen_t n, zerr *e) {
  uint64_t cd_start = (uint64_t)ftello(w->f);
  for (R_xlen_t i = 0; i < n; i++) {
    const wmember *m = &w->mem[i];
    uint8_t h[46], ex[4 + 24];
    int nex = 0;
    memset(h, 0, sizeof h);
    /* zip64 extra: only the fields whose 32-bit slot holds 0xFFFFFFFF, in this order */
    if (m->usize >= U32_MAX) put64(ex + 4 + 8 * nex++, m->usize);
    if (m->csize >= U32_MAX) put64(ex + 4 + 8 * nex++, m->csize);
    if (m->offset >= U32_MAX) put64(ex + 4 + 8 * nex++, m->offset);
    put32(h, 0x02014b50u);
    put16(h + 4, (3u << 8) | 45); /* made by: Unix, spec 4.5 */
    put16(h + 6, nex ? 45 : 20);
    put16(h + 8, m->flags);
    put16(h + 10, m->method);
    put16(h + 12, m->t);
    put16(h + 14, m->d);
    put32(h + 16, m->crc);
    put32(h + 20, m->csize >= U32_MAX ? U32_MAX : (uint32_t)m->csize);
    put32(h + 24, m->usize >= U32_MAX ? U32_MAX : (uint32_t)m->usize);
    put16(h + 28, (uint32_t)m->nlen);
    put16(h + 30, nex ? 4 + 8 * nex : 0);
    put32(h + 38, 0100644u << 16); /* a regular file, rw-r--r-- */
    put32(h + 42, m->offset >= U32_MAX ? U32_MAX : (uint32_t)m->offset);
    put16(ex, 1);
    put16(ex + 2, 8 * nex);
    if (wr(w, h, 46, e) || wr(w, m->name, m->nlen, e) || (nex && wr(w, ex, 4 + 8 * nex, e))) return -1;
  }
  uint64_t cd_end = (uint64_t)ftello(w->f), cd_size = cd_end - cd_start;
  int z64 = n >= 0xFFFF || cd_start >= U32_MAX || cd_size >= U32_MAX;
  if (z64) {
    uint8_t r[56 + 20];
    memset(r, 0, sizeof r);
    put32(r, 0x06064b50u);
    put64(r + 4, 56 - 12);
    put16(r + 12, (3u << 8) | 45);
    put16(r + 14, 45);
    put64(r + 24, (uint64_t)n);
    put64(r + 32, (uint64_t)n);
    put64(r + 40, cd_size);
    put64(r + 48, cd_start);
    put32(r + 56, 0x07064b50u); /* locator */
    put64(r + 64, cd_end);
    put32(r + 72, 1);
    if (wr(w, r, sizeof r, e)) return -1;
  }
  uint8_t q[22];
  memset(q, 0, sizeof q);
  put32(q, 0x06054b50u);
  put16(q + 8, z64 ? 0xFFFF : (uint32_t)n);
  put16(q + 10, z64 ? 0xFFFF : (uint32_t)n);
  put32(q + 12, z64 ? U32_MAX : (uint32_t)cd_size);
  put32(q + 16, z64 ? U32_MAX : (uint32_t)cd_start);
  return wr(w, q, 22, e);
}

static void writer_free(zwriter *w) {
  if (w->zs_live) deflateEnd(&w->zs);
  if (w->f) fclose(w->f);
  free(w->in);
  free(w->out);
  free(w->mem);
  memset(w, 0, sizeof *w);
}

/* Write the zip file `path` (which must not exist) from the files `names`
 * (store keys, UTF-8) of the folder `dir`: stored when level < 0, else
 * deflated at that level; then the members of the index `keep` (NULL, or
 * the previous archive's) that are not keys, as they are. On an error the
 * partial file is removed. */
SEXP ffi_zip_write(SEXP path, SEXP dir, SEXP names, SEXP level, SEXP keep) {
  zwriter w = {0};
  zerr e = {ZE_OK, ""};
  const char *out_path = translateCharUTF8(STRING_ELT(path, 0));
  const char *root = translateCharUTF8(STRING_ELT(dir, 0));
  int lev = asInteger(level);
  R_xlen_t n = XLENGTH(names);
  const zipidx *old = isNull(keep) ? NULL : zip_index_from(keep);
  R_xlen_t n_odd = old ? (R_xlen_t)zip_odd_count(old) : 0;
  char *spath = NULL;
  int created = 0;
  w.path = out_path;
  uint16_t t, d;
  dos_now(&t, &d);
  w.in = malloc(PIECE);
  w.out = malloc(PIECE);
  w.mem = calloc(n + n_odd ? (size_t)(n + n_odd) : 1, sizeof *w.mem);
  size_t cap = strlen(root) + 4096;
  spath = malloc(cap);
  if (!w.in || !w.out || !w.mem || !spath) {
    zerr_set(&e, ZE_NOMEM, "out of memory");
    goto done;
  }
  w.f = zarr_fopen(out_path, "wbx");
  if (w.f == NULL) {
    zerr_set(&e, ZE_IO, "cannot create '%s': %s", out_path, strerror(errno));
    goto done;
  }
  created = 1;
  for (R_xlen_t i = 0; i < n; i++) {
    const char *name = CHAR(STRING_ELT(names, i));
    size_t nlen = strlen(name);
    if (nlen > 0xFFFF || path_join(spath, cap, root, name)) {
      zerr_set(&e, ZE_KEY, "key '%.200s' cannot be a zip member", name);
      goto done;
    }
    if (i % 256 == 0 && interrupt_pending()) {
      zerr_set(&e, ZE_INTERRUPT, "writing '%s' was interrupted", out_path);
      goto done;
    }
    FILE *src = zarr_fopen(spath, "rb");
    if (src == NULL) {
      zerr_set(&e, ZE_IO, "cannot open '%s': %s", spath, strerror(errno));
      goto done;
    }
    int64_t size = file_size(spath);
    /* deflate may add a little to incompressible data */
    int z64 = size < 0 || (uint64_t)size >= (uint64_t)U32_MAX - (U32_MAX >> 10);
    wmember *m = &w.mem[i];
    m->method = lev < 0 ? 0 : 8;
    m->flags = 1u << 11; /* UTF-8 name */
    m->t = t;
    m->d = d;
    m->name = name;
    m->nlen = nlen;
    m->offset = (uint64_t)ftello(w.f);
    int rc = local_header(&w, m, z64, &e) || member_data(&w, src, spath, m, lev, &e) ||
             patch_local(&w, m, z64, nlen, &e);
    fclose(src);
    if (rc) goto done;
  }
  for (R_xlen_t i = 0; i < n_odd; i++) {
    zip_odd_member o;
    if (i % 256 == 0 && interrupt_pending()) {
      zerr_set(&e, ZE_INTERRUPT, "writing '%s' was interrupted", out_path);
      goto done;
    }
    if (zip_odd_locate(old, (int64_t)i, &o, &e)) goto done;
    wmember *m = &w.mem[n + i];
    m->method = o.method;
    m->flags = o.flags & ~0x0008u; /* sizes in the header: no data descriptor follows */
    m->t = o.mtime;
    m->d = o.mdate;
    m->name = o.name;
    m->nlen = o.name_len;
    m->offset = (uint64_t)ftello(w.f);
    int z64 = o.csize >= U32_MAX || o.usize >= U32_MAX;
    if (local_header(&w, m, z64, &e) || member_copy(&w, old, &o, m, &e) || patch_local(&w, m, z64, o.name_len, &e))
      goto done;
  }
  if (central(&w, n + n_odd, &e)) goto done;
  if (fflush(w.f) != 0 || zarr_fsync(fileno(w.f)) != 0)
    zerr_set(&e, ZE_IO, "cannot write '%s': %s", out_path, strerror(errno));
done:
  if (w.f && fclose(w.f) != 0 && e.kind == ZE_OK)
    zerr_set(&e, ZE_IO, "cannot write '%s': %s", out_path, strerror(errno));
  w.f = NULL;
  writer_free(&w);
  free(spath);
  if (e.kind != ZE_OK) {
    if (created) zarr_unlink(out_path);
    zarr_raise_err(&e, NULL, NULL);
  }
  return R_NilValue;
}
