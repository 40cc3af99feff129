/* The two sides of compat.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#ifdef _WIN32
#include <direct.h>
#include <io.h>
#include <wchar.h>
#include <windows.h>
#endif
#include "compat.h"

#ifdef _WIN32
#if !defined(_FILE_OFFSET_BITS) || _FILE_OFFSET_BITS != 64
#error "compile with -D_FILE_OFFSET_BITS=64 (src/Makevars.ucrt): sizes of files over 2 GiB"
#endif

/* UTF-8 to a malloc'd wide string; NULL (errno set) when it is not UTF-8. */
static wchar_t *wide(const char *s) {
  int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, NULL, 0);
  if (n <= 0) {
    errno = EINVAL;
    return NULL;
  }
  wchar_t *w = malloc((size_t)n * sizeof *w);
  if (w == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  if (MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, w, n) != n) {
    free(w);
    errno = EINVAL;
    return NULL;
  }
  return w;
}

/* errno from GetLastError() for the few failures callers tell apart */
static void set_errno(DWORD err) {
  switch (err) {
  case ERROR_FILE_NOT_FOUND:
  case ERROR_PATH_NOT_FOUND: errno = ENOENT; break;
  case ERROR_ACCESS_DENIED:
  case ERROR_SHARING_VIOLATION: errno = EACCES; break;
  case ERROR_ALREADY_EXISTS:
  case ERROR_FILE_EXISTS: errno = EEXIST; break;
  case ERROR_NOT_ENOUGH_MEMORY: errno = ENOMEM; break;
  case ERROR_DISK_FULL: errno = ENOSPC; break;
  default: errno = EIO; break;
  }
}

int zarr_open(const char *path, int flags, int mode) {
  wchar_t *w = wide(path);
  if (w == NULL) return -1;
  /* binary always: text mode would translate line ends in chunk bytes */
  int fd = _wopen(w, flags | O_BINARY, mode);
  if (fd < 0 && errno == EACCES) { /* what Windows says for a directory */
    DWORD a = GetFileAttributesW(w);
    if (a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_DIRECTORY)) errno = EISDIR;
  }
  free(w);
  return fd;
}

int zarr_stat(const char *path, struct stat *st) {
  wchar_t *w = wide(path);
  if (w == NULL) return -1;
  /* struct stat is struct _stat64 with _FILE_OFFSET_BITS=64 (Makevars.ucrt) */
  int rc = _wstat64(w, st);
  free(w);
  return rc;
}

int zarr_mkdir(const char *path) {
  wchar_t *w = wide(path);
  if (w == NULL) return -1;
  int rc = _wmkdir(w);
  if (rc != 0 && errno != EEXIST) { /* a drive ("C:") or other existing root */
    DWORD a = GetFileAttributesW(w);
    if (a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_DIRECTORY)) errno = EEXIST;
  }
  free(w);
  return rc;
}

int zarr_unlink(const char *path) {
  wchar_t *w = wide(path);
  if (w == NULL) return -1;
  int rc = _wunlink(w);
  free(w);
  return rc;
}

FILE *zarr_fopen(const char *path, const char *mode) {
  wchar_t *w = wide(path), *m = wide(mode);
  FILE *f = w && m ? _wfopen(w, m) : NULL;
  free(w);
  free(m);
  return f;
}

int zarr_rename(const char *from, const char *to) {
  wchar_t *a = wide(from), *b = wide(to);
  int ok = a && b && MoveFileExW(a, b, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH);
  if (a && b && !ok) set_errno(GetLastError());
  free(a);
  free(b);
  return ok ? 0 : -1;
}

int zarr_fsync(int fd) { return _commit(fd); }

int zarr_num_cores(void) {
  SYSTEM_INFO si;
  GetSystemInfo(&si);
  return si.dwNumberOfProcessors > 0 ? (int)si.dwNumberOfProcessors : 1;
}

int zarr_is_link(const char *path) {
  wchar_t *w = wide(path);
  if (w == NULL) return 0;
  DWORD a = GetFileAttributesW(w);
  free(w);
  return a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_REPARSE_POINT);
}

#else

int zarr_open(const char *path, int flags, int mode) { return open(path, flags, mode); }
int zarr_stat(const char *path, struct stat *st) { return stat(path, st); }
int zarr_mkdir(const char *path) { return mkdir(path, 0777); }
int zarr_unlink(const char *path) { return unlink(path); }
FILE *zarr_fopen(const char *path, const char *mode) { return fopen(path, mode); }
int zarr_rename(const char *from, const char *to) { return rename(from, to); }
int zarr_fsync(int fd) { return fsync(fd); }

int zarr_num_cores(void) {
  long n = 1;
#ifdef _SC_NPROCESSORS_ONLN
  n = sysconf(_SC_NPROCESSORS_ONLN);
#endif
  return n > 0 && n < 1 << 20 ? (int)n : 1;
}

int zarr_is_link(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

#endif
