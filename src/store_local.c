/* Local file store I/O. Reads take a whole file or a byte range; writes go to
 * a temporary file in the same directory that is renamed over the target, so
 * a crash or error never leaves a torn chunk or metadata document. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#ifdef _WIN32
#include <io.h>
#define ZARR_O_BINARY O_BINARY
#else
#define ZARR_O_BINARY 0
#endif
#include "store.h"

int path_join(char *buf, size_t cap, const char *root, const char *key) {
  int n = snprintf(buf, cap, "%s/%s", root, key);
  return (n < 0 || (size_t)n >= cap) ? -1 : 0;
}

int64_t file_size(const char *path) {
  struct stat st;
  if (zarr_stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  return (int64_t)st.st_size;
}

int file_read(const char *path, int64_t off, int64_t len, zbuf *out, int *missing, zerr *e) {
  *missing = 0;
  out->size = 0;
  /* never blocks on a FIFO or device a key may name; a directory is absent */
  struct stat st;
  int fd = open_regular(path, &st, missing, e);
  if (fd < 0) return *missing ? 0 : -1;
  int64_t size = (int64_t)st.st_size;
  if (off < 0) off = size + off < 0 ? 0 : size + off;
  if (off > size) off = size;
  int64_t want = (len < 0 || off + len > size) ? size - off : len;
  if (zbuf_reserve(out, (size_t)want + 1, e)) {
    close(fd);
    return -1;
  }
  int64_t got = 0;
  while (got < want) {
    size_t chunk = (size_t)(want - got) > ((size_t)1 << 30) ? ((size_t)1 << 30) : (size_t)(want - got);
#ifdef _WIN32
    if (_lseeki64(fd, off + got, SEEK_SET) < 0) break;
    ssize_t r = read(fd, out->data + got, (unsigned)chunk);
#else
    ssize_t r = pread(fd, out->data + got, chunk, (off_t)(off + got));
#endif
    if (r < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      close(fd);
      return zerr_set(e, ZE_IO, "cannot read '%s': %s", path, strerror(err));
    }
    if (r == 0) break;
    got += r;
  }
  close(fd);
  out->size = (size_t)got;
  return 0;
}

/* mkdir -p of `dir` (changed in place while it works, restored after),
 * from the deepest folder up: creating a node, only its own folder is
 * missing, so one mkdir() does, where one per level of the path was made
 * before. */
static int make_dir_up(char *dir, zerr *e) {
  if (zarr_mkdir(dir) == 0 || errno == EEXIST) return 0;
  int err = errno;
  char *cut = strrchr(dir, '/');
  if (err == ENOENT && cut != NULL && cut != dir) {
    *cut = '\0';
    int rc = make_dir_up(dir, e);
    *cut = '/';
    if (rc) return rc;
    if (zarr_mkdir(dir) == 0 || errno == EEXIST) return 0;
    err = errno;
  }
  return zerr_set(e, ZE_IO, "cannot create directory '%s': %s", dir, strerror(err));
}

/* mkdir -p for the directory part of `path` */
static int make_parents(const char *path, zerr *e) {
  size_t n = strlen(path);
  char *tmp = malloc(n + 1);
  if (tmp == NULL) return zerr_set(e, ZE_NOMEM, "out of memory");
  memcpy(tmp, path, n + 1);
  char *cut = strrchr(tmp, '/');
  int rc = 0;
  if (cut != NULL && cut != tmp) {
    *cut = '\0';
    rc = make_dir_up(tmp, e);
  }
  free(tmp);
  return rc;
}

static unsigned long temp_counter = 0;

int file_write_atomic(const char *path, const uint8_t *data, size_t n, zerr *e) {
  size_t plen = strlen(path) + 64;
  char *tmp = malloc(plen);
  if (tmp == NULL) return zerr_set(e, ZE_NOMEM, "out of memory");
  unsigned long id = __atomic_add_fetch(&temp_counter, 1, __ATOMIC_RELAXED);
  snprintf(tmp, plen, "%s.%ld.%lu.partial", path, (long)getpid(), id);
  int fd = zarr_open(tmp, O_WRONLY | O_CREAT | O_EXCL | ZARR_O_BINARY, 0666);
  if (fd < 0 && errno == ENOENT) { /* create the directories only when missing */
    if (make_parents(path, e)) {
      free(tmp);
      return -1;
    }
    fd = zarr_open(tmp, O_WRONLY | O_CREAT | O_EXCL | ZARR_O_BINARY, 0666);
  }
  if (fd < 0) {
    int err = errno;
    zerr_set(e, ZE_IO, "cannot create '%s': %s", tmp, strerror(err));
    free(tmp);
    return -1;
  }
  size_t done = 0;
  while (done < n) {
    size_t chunk = n - done > ((size_t)1 << 30) ? ((size_t)1 << 30) : n - done;
    ssize_t w = write(fd, data + done, chunk);
    if (w < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      close(fd);
      zarr_unlink(tmp);
      zerr_set(e, ZE_IO, "cannot write '%s': %s", path, strerror(err));
      free(tmp);
      return -1;
    }
    done += (size_t)w;
  }
  if (close(fd) != 0) {
    int err = errno;
    zarr_unlink(tmp);
    zerr_set(e, ZE_IO, "cannot write '%s': %s", path, strerror(err));
    free(tmp);
    return -1;
  }
  int ok = zarr_rename(tmp, path) == 0; /* replaces an existing file, also on Windows */
  if (!ok) {
    int err = errno;
    zarr_unlink(tmp);
    zerr_set(e, ZE_IO, "cannot move data into '%s': %s", path, strerror(err));
    free(tmp);
    return -1;
  }
  free(tmp);
  return 0;
}

/* A key that is absent is not an error; nor is a folder at its path (keys
 * below it make it one: after a promote, the old chunk key "a/c/0/0" is the
 * folder of "a/c/0/0/0"), nor a file where a folder on its path would be:
 * neither holds a value for the key. */
int file_remove(const char *path, zerr *e) {
  if (zarr_unlink(path) == 0 || errno == ENOENT || errno == ENOTDIR) return 0;
  int err = errno;
  struct stat st;
  if ((err == EISDIR || err == EPERM || err == EACCES) && zarr_stat(path, &st) == 0 && S_ISDIR(st.st_mode))
    return 0;
  return zerr_set(e, ZE_IO, "cannot remove '%s': %s", path, strerror(err));
}

/* ---- the local store (store.h) ------------------------------------------------ */

typedef struct {
  char *root;
  char *real; /* the root with its symbolic links resolved (NULL: not resolved) */
} local_impl;

static int local_path(const zstore *s, const char *key, char *buf, size_t cap, zerr *e) {
  if (path_join(buf, cap, ((const local_impl *)s->impl)->root, key))
    return zerr_set(e, ZE_KEY, "store path is too long");
  return 0;
}

/* A write or erase never leaves the root: the folder that would hold the key
 * (its deepest part that exists) must resolve to the root or below it. A
 * folder inside the store that is a symbolic link to elsewhere is read
 * through (a store may link arrays in), never written or erased through; the
 * key's last part may itself be a link (erasing removes the link, writing
 * replaces it). */
static int local_inside(zstore *s, const char *key, zerr *e) {
#ifdef _WIN32
  (void)s;
  (void)key;
  (void)e;
  return 0;
#else
  const local_impl *li = s->impl;
  char path[8192];
  if (local_path(s, key, path, sizeof path, e)) return -1;
  char *rel = path + strlen(li->root);
  while (*rel == '/') rel++;
  char *cut = strrchr(rel, '/');
  if (cut == NULL) return 0; /* directly in the root */
  *cut = '\0';
  struct stat st;
  while (lstat(path, &st) != 0) { /* not there yet (made when written) */
    cut = strrchr(rel, '/');
    if (cut == NULL) return 0;
    *cut = '\0';
  }
  if (!S_ISLNK(st.st_mode) && strchr(rel, '/') == NULL) return 0; /* a folder of the root */
  char *root = li->real != NULL ? li->real : realpath(li->root, NULL);
  char *real = realpath(path, NULL);
  size_t n = root != NULL ? strlen(root) : 0;
  int ok = root != NULL && real != NULL && strncmp(real, root, n) == 0 &&
           (real[n] == '/' || real[n] == '\0' || (n == 1 && root[0] == '/'));
  if (root != li->real) free(root);
  free(real);
  if (ok) return 0;
  return zerr_set(e, ZE_KEY, "key '%.300s' leads outside the store (through a symbolic link): not written or erased",
                  key);
#endif
}

static int local_get(zstore *s, const zrange *r, zbuf *out, int *missing, zerr *e) {
  char path[8192];
  if (local_path(s, r->key, path, sizeof path, e)) return -1;
  return file_read(path, r->off, r->off < 0 ? -1 : r->len, out, missing, e);
}

static int local_set(zstore *s, const char *key, const uint8_t *p, size_t n, zerr *e) {
  char path[8192];
  if (local_path(s, key, path, sizeof path, e)) return -1;
  return file_write_atomic(path, p, n, e);
}

static int local_erase(zstore *s, const char *key, zerr *e) {
  char path[8192];
  if (local_path(s, key, path, sizeof path, e)) return -1;
  return file_remove(path, e);
}

static void local_destroy(zstore *s) {
  local_impl *li = s->impl;
  free(li->root);
  free(li->real);
  free(li);
}

static int local_stat(zstore *s, const char *key, double *mtime, char *etag, int *missing, zerr *e) {
  char path[8192];
  struct stat st;
  if (local_path(s, key, path, sizeof path, e)) return -1;
  *missing = zarr_stat(path, &st) != 0 || !S_ISREG(st.st_mode);
  *mtime = *missing ? -1 : (double)st.st_mtime;
  etag[0] = '\0'; /* files have none */
  return 0;
}

/* The file as it is now: which file (device and inode: a rename over it
 * makes another), its size, and its modification and change times to the
 * nanosecond where the system keeps them. Anything but a regular file is a
 * missing value, as for local_get(). */
void file_stamp(const char *path, zstamp *out) {
  struct stat st;
  memset(out, 0, sizeof *out);
  out->valid = 1;
  if (zarr_stat(path, &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) out->missing = 1;
    else out->unknown = 1;
    return;
  }
  if (!S_ISREG(st.st_mode)) {
    out->missing = 1;
    return;
  }
  out->dev = (uint64_t)st.st_dev;
  out->ino = (uint64_t)st.st_ino;
  out->size = (int64_t)st.st_size;
  out->mtime_s = (int64_t)st.st_mtime;
  out->ctime_s = (int64_t)st.st_ctime;
#if defined(__APPLE__)
  out->mtime_ns = (int64_t)st.st_mtimespec.tv_nsec;
  out->ctime_ns = (int64_t)st.st_ctimespec.tv_nsec;
#elif !defined(_WIN32)
  out->mtime_ns = (int64_t)st.st_mtim.tv_nsec;
  out->ctime_ns = (int64_t)st.st_ctim.tv_nsec;
#endif
}

static void local_stamp(zstore *s, const char *key, zstamp *out) {
  char path[8192];
  zerr e = {ZE_OK, ""};
  if (local_path(s, key, path, sizeof path, &e)) {
    memset(out, 0, sizeof *out);
    out->valid = out->unknown = 1;
    return;
  }
  file_stamp(path, out);
}

static const zstore_ops local_ops = {
    "local", local_get, NULL, local_set, local_erase, local_destroy, 0, NULL, 1, local_stat, local_stamp, local_inside};

/* The store's name in the decoded-chunk cache: the folder's real path (no
 * symbolic link, no "." or ".."), ending in "/", so that an entry is named
 * by its file's path whichever folder of the path the store was opened at.
 * A root that cannot be resolved is named as given. */
static char *local_ident(const char *root, const char *resolved) {
#ifdef _WIN32
  (void)resolved;
  char *real = _fullpath(NULL, root, 0);
#else
  char *real = resolved != NULL ? strdup(resolved) : *root ? realpath(root, NULL) : NULL;
#endif
  const char *r = real ? real : root;
  size_t n = strlen(r);
  int slash = n > 0 && r[n - 1] == '/';
  char *id = malloc(n + 8);
  if (id != NULL) snprintf(id, n + 8, "local:%s%s", r, slash ? "" : "/");
  free(real);
  return id;
}

/* `resolved`: the root is already a real path (zarr_localstore keeps its
 * root normalised), so it is not resolved again. */
zstore *local_store_new(const char *root, int resolved, zerr *e) {
  local_impl *li = calloc(1, sizeof *li);
  if (li != NULL) li->root = strdup(root);
#ifndef _WIN32
  if (li != NULL && *root)
    li->real = resolved ? strdup(root) : realpath(root, NULL); /* NULL: resolved when needed */
#else
  (void)resolved;
#endif
  zstore *s = li && li->root ? store_alloc(&local_ops, li, root) : NULL;
  if (s != NULL) s->ident = local_ident(root, li->real); /* (resolved once) */
  if (s == NULL || s->ident == NULL) {
    if (s != NULL) free(s->where);
    free(s);
    if (li != NULL) {
      free(li->root);
      free(li->real);
    }
    free(li);
    zerr_set(e, ZE_NOMEM, "out of memory");
    return NULL;
  }
  return s;
}

SEXP ffi_store_local(SEXP root, SEXP resolved) {
  zerr e = {ZE_OK, ""};
  zstore *s = local_store_new(translateCharUTF8(STRING_ELT(root, 0)), asLogical(resolved) == TRUE, &e);
  if (s == NULL) zarr_raise_err(&e, NULL, NULL);
  return store_wrap(s, R_NilValue);
}

/* ---- every file below a directory, for zarr_localstore$list_prefix() ---- */

#define ZARR_PATH_MAX 8192
#define ZARR_MAX_WALK 256 /* directory levels */

/* Directories are walked following symbolic links (a store may link arrays
 * in from elsewhere), except a link back to a directory on its own path: that
 * would be a loop, listing forever. Files are regular files (broken links,
 * FIFOs and the like are not values); paths are relative to the top, "/"
 * separated, NUL-terminated one after the other in `out`. */
typedef struct {
  zbuf out;
  size_t n;
  int links; /* list the links to directories instead of the files (not followed) */
  dev_t dev[ZARR_MAX_WALK];
  ino_t ino[ZARR_MAX_WALK];
} walk;

static int walk_record(walk *w, const char *rel, size_t kl, zerr *e) {
  if (zbuf_reserve(&w->out, w->out.size + kl + 1, e)) return -1;
  memcpy(w->out.data + w->out.size, rel, kl + 1);
  w->out.size += kl + 1;
  w->n++;
  return 0;
}

static int walk_dir(walk *w, char *path, size_t plen, size_t top, int depth, zerr *e) {
  DIR *d = opendir(path);
  if (d == NULL) return depth == 0 ? zerr_set(e, ZE_IO, "cannot list '%s': %s", path, strerror(errno)) : 0;
  struct stat st;
  if (zarr_stat(path, &st) == 0) {
    w->dev[depth] = st.st_dev;
    w->ino[depth] = st.st_ino;
  }
  int rc = 0;
  struct dirent *ent;
  while (rc == 0 && (ent = readdir(d)) != NULL) {
    const char *nm = ent->d_name;
    if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0) continue;
    size_t nl = strlen(nm);
    if (plen + 1 + nl + 1 > ZARR_PATH_MAX) continue; /* too long to name, so not a key */
    path[plen] = '/';
    memcpy(path + plen + 1, nm, nl + 1);
    if (zarr_stat(path, &st) != 0) continue; /* a broken link */
    int is_link = zarr_is_link(path); /* Windows: a symbolic link or junction */
    if (w->links && is_link && S_ISDIR(st.st_mode)) {
      rc = walk_record(w, path + top, plen + 1 + nl - top, e);
    } else if (S_ISDIR(st.st_mode)) {
      int loop = depth + 1 >= ZARR_MAX_WALK;
#ifndef _WIN32 /* no inode numbers there (nor symbolic links to follow) */
      for (int k = 0; k <= depth && !loop; k++) loop = w->dev[k] == st.st_dev && w->ino[k] == st.st_ino;
#endif
      if (!loop) rc = walk_dir(w, path, plen + 1 + nl, top, depth + 1, e);
    } else if (S_ISREG(st.st_mode) && !w->links) {
      rc = walk_record(w, path + top, plen + 1 + nl - top, e);
    }
  }
  closedir(d);
  path[plen] = '\0';
  return rc;
}

static SEXP walk_strings(void *data) {
  walk *w = data;
  SEXP out = PROTECT(allocVector(STRSXP, (R_xlen_t)w->n));
  const char *p = (const char *)w->out.data;
  for (size_t i = 0; i < w->n; i++) {
    SET_STRING_ELT(out, (R_xlen_t)i, mkCharCE(p, CE_UTF8));
    p += strlen(p) + 1;
  }
  UNPROTECT(1);
  return out;
}

static void walk_free(void *data) {
  walk *w = data;
  zbuf_free(&w->out);
  free(w);
}

SEXP ffi_dir_files(SEXP dir, SEXP links) {
  const char *top = translateCharUTF8(STRING_ELT(dir, 0));
  size_t tl = strlen(top);
  zerr e = {ZE_OK, ""};
  char *path = malloc(ZARR_PATH_MAX);
  walk *w = calloc(1, sizeof *w);
  if (path == NULL || w == NULL || tl + 2 > ZARR_PATH_MAX) {
    free(path);
    free(w);
    zarr_raise(tl + 2 > ZARR_PATH_MAX ? ZE_IO : ZE_NOMEM, NULL, NULL,
               tl + 2 > ZARR_PATH_MAX ? "the directory path is too long" : "out of memory");
  }
  memcpy(path, top, tl + 1);
  w->links = asLogical(links) == TRUE;
  int rc = walk_dir(w, path, tl, tl + 1, 0, &e);
  free(path);
  if (rc) {
    walk_free(w);
    zarr_raise_err(&e, NULL, NULL);
  }
  return R_ExecWithCleanup(walk_strings, w, walk_free, w);
}
