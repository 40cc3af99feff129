/* Data type names and sizes shared by the engine and the R-facing helpers. */
#include <string.h>
#include "zarr_core.h"

static const char *dt_names[DT_COUNT] = {
    "bool",   "int8",   "int16",   "int32",   "int64",     "uint8",     "uint16",
    "uint32", "uint64", "float16", "float32", "float64", "complex64", "complex128", "string"};
static const size_t dt_sizes[DT_COUNT] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8, 8, 16, sizeof(zstr)};

int dtype_from_name(const char *name) {
  for (int i = 0; i < DT_COUNT; i++)
    if (strcmp(name, dt_names[i]) == 0) return i;
  return -1;
}

size_t dtype_size(zdtype t) { return dt_sizes[t]; }

static const char *rt_names[RT_COUNT] = {"logical", "integer", "double", "integer64", "complex",
                                         "character", "list"};
static const size_t rt_sizes[RT_COUNT] = {4, 4, 8, 8, 16, sizeof(zstr), sizeof(zstr)};

int rtype_from_name(const char *name) {
  for (int i = 0; i < RT_COUNT; i++)
    if (strcmp(name, rt_names[i]) == 0) return i;
  return -1;
}

size_t rtype_size(zrtype t) { return rt_sizes[t]; }
