/* Portability between POSIX systems and Windows (mingw-w64 with Rtools'
 * UCRT), in one place: the file system calls whose Windows versions differ
 * (wide-character names, replacing renames, flushing to disk, links) are
 * declared here and written once for each side in compat.c. Included by
 * zarr_core.h, so every file sees it. Paths are UTF-8 on both sides. */
#ifndef ZARR_COMPAT_H
#define ZARR_COMPAT_H

#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

/* printf-style checking of our own formatters: mingw's gcc takes "printf"
 * as Microsoft's old dialect (no %zu); the package is built with the C99
 * printf family (src/Makevars.ucrt), which is gnu_printf to gcc. */
#if defined(__GNUC__) && defined(_WIN32) && !defined(__clang__)
#define ZARR_PRINTF(fmt, args) __attribute__((format(gnu_printf, fmt, args)))
#elif defined(__GNUC__)
#define ZARR_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define ZARR_PRINTF(fmt, args)
#endif

/* open(2), stat(2), mkdir(2) (mode 0777 where modes exist), unlink(2) and
 * fopen(3) on UTF-8 names; Windows goes through the wide-character API, so
 * a name is not limited to the code page, and opens in binary mode (opening
 * a directory fails with EISDIR there). Errors are left in errno. */
int zarr_open(const char *path, int flags, int mode);
int zarr_stat(const char *path, struct stat *st);
int zarr_mkdir(const char *path);
int zarr_unlink(const char *path);
FILE *zarr_fopen(const char *path, const char *mode);
/* rename(2) that replaces an existing `to` in one step (Windows:
 * MoveFileExW with MOVEFILE_REPLACE_EXISTING); 0 or -1 with errno set. */
int zarr_rename(const char *from, const char *to);
/* Flush a descriptor's data to the disk (fsync; Windows: _commit). */
int zarr_fsync(int fd);
/* Whether `path` is itself a link (symbolic link; on Windows any reparse
 * point: symbolic link or junction), not what it points to. */
int zarr_is_link(const char *path);
/* The number of processors online (at least 1). */
int zarr_num_cores(void);

#endif
