/* Debian 12's glibc 2.36 lacks two symbols that the prebuilt Icechunk native
 * module (built against glibc 2.38) imports. The C23 variants differ only in
 * accepting 0b binary literals, which the module never parses, so forwarding
 * to the classic functions is enough. Built and LD_PRELOADed by run.sh; used
 * only to run the test oracle, never part of the R package. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int __isoc23_sscanf(const char *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsscanf(s, fmt, ap);
  va_end(ap);
  return n;
}

long __isoc23_strtol(const char *s, char **end, int base) {
  return strtol(s, end, base);
}
