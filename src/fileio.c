/* Opening local files that a store names. A store is untrusted input: a key
 * may name a FIFO (open() would wait for a writer forever), a device, or a
 * directory. open_regular() opens without blocking, looks at what it opened,
 * and hands back a descriptor (and its stat) only for a regular file. The
 * descriptor keeps O_NONBLOCK: reads of a regular file ignore it, and
 * clearing it cost two system calls per value read. It uses no R API, so
 * worker threads may call it. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include "zarr_core.h"

#ifdef _WIN32
#define ZARR_O_BINARY O_BINARY
#define ZARR_O_NONBLOCK 0
#else
#define ZARR_O_BINARY 0
#define ZARR_O_NONBLOCK O_NONBLOCK
#endif

int open_regular(const char *path, struct stat *st, int *missing, zerr *e) {
  *missing = 0;
  int fd;
  do {
    fd = zarr_open(path, O_RDONLY | ZARR_O_BINARY | ZARR_O_NONBLOCK, 0);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR || errno == EISDIR) { /* EISDIR: Windows */
      *missing = 1;
      return -1;
    }
    zerr_set(e, ZE_IO, "cannot open '%s': %s", path, strerror(errno));
    return -1;
  }
  if (fstat(fd, st) != 0) {
    int err = errno;
    close(fd);
    zerr_set(e, ZE_IO, "cannot stat '%s': %s", path, strerror(err));
    return -1;
  }
  if (S_ISDIR(st->st_mode)) { /* a prefix, not a value */
    close(fd);
    *missing = 1;
    return -1;
  }
  if (!S_ISREG(st->st_mode)) {
    close(fd);
    zerr_set(e, ZE_IO, "'%s' is not a regular file (a FIFO, socket or device), so it is not read",
             path);
    return -1;
  }
  return fd;
}
