/* Internal interfaces of the zarr C core.
 *
 * The core is split so that everything a worker thread runs (codecs, slab
 * copies, local file I/O) is plain C that never touches the R API; only the
 * ffi_* entry points and spec.c / errors.c talk to R.
 */
#ifndef ZARR_H
#define ZARR_H

#include "zarr_core.h"
#include <Rinternals.h>
#include <R_ext/Rdynload.h>

/* Raise an R condition of class zarr_error_<kind>; never returns. The caller
 * must have released all C resources first. */
void zarr_raise(zerr_kind kind, const char *array, const char *key, const char *msg)
#ifdef __GNUC__
    __attribute__((noreturn))
#endif
    ;
void zarr_raise_err(const zerr *e, const char *array, const char *key)
#ifdef __GNUC__
    __attribute__((noreturn))
#endif
    ;

/* Build a zarray from the list made by chunk_grid_regular's c_spec(); raises R errors. */
void spec_parse(SEXP spec, zarray *a);
/* The chunk edges of a rectilinear grid ("chunk_edges" in the spec; none for
 * a regular grid) into a->edges (R_alloc'd); raises R errors. */
void grid_parse(SEXP spec, zarray *a);
const char *list_str(SEXP list, const char *name, const char *dflt);
SEXP list_get(SEXP list, const char *name);
void parse_bb(SEXP cd, zcodec *bb);

/* Main thread: the index behind an external pointer from ffi_zip_open(). */
const zipidx *zip_index_from(SEXP ptr);
SEXP ffi_zip_open(SEXP path, SEXP budget);
SEXP ffi_zip_list(SEXP ptr);
SEXP ffi_zip_read(SEXP ptr, SEXP name, SEXP range);
SEXP ffi_zip_extract(SEXP ptr, SEXP dir);
SEXP ffi_zip_write(SEXP path, SEXP dir, SEXP names, SEXP level, SEXP keep);
/* A user interrupt is pending (checked safely, on the R thread only). */
int interrupt_pending(void);

/* The R vector type of an R element type (engine.c). */
SEXPTYPE rtype_sexp(zrtype rt);

/* Results that keep the stored width (compact_vector.c). */
#define COMPACT_MIN_ELEMENTS ((int64_t)1 << 16)
int compact_possible(int dtype, int rtype);
/* Memory for the stored elements of such a result (nbytes), held by the
 * external pointer returned (R_NilValue: out of memory); compact_wrap()
 * makes the R vector of n elements over it. */
SEXP compact_payload(size_t nbytes, uint8_t **data);
SEXP compact_wrap(SEXP payload, int64_t n, int dtype, int rtype, int na, const uint8_t *fill);
void compact_init(DllInfo *dll);
SEXP ffi_compact_state(SEXP x);
SEXP ffi_compact_payloads(void);

/* Read results kept warm between reads (result_pool.c): an R vector of n
 * elements (nbytes of data) whose memory a result R freed may have held. */
#define RESULT_POOL_MIN ((size_t)256 << 10)
#define RESULT_POOL_MAX ((size_t)64 << 20)
#define RESULT_POOL_KEEP ((size_t)64 << 20)
SEXP result_alloc(SEXPTYPE type, R_xlen_t n, size_t nbytes);
void result_pool_limit(double bytes); /* keep at most this (and RESULT_POOL_KEEP) */
void result_pool_release(void);
SEXP ffi_result_pool(SEXP limit);

/* ---- entry points ------------------------------------------------------------- */

SEXP ffi_array_read(SEXP spec, SEXP store, SEXP sel, SEXP opts);
SEXP ffi_array_write(SEXP spec, SEXP store, SEXP sel, SEXP data, SEXP opts);
SEXP ffi_arrays_read(SEXP spec, SEXP store, SEXP keys, SEXP shape, SEXP chunk, SEXP opts);
SEXP ffi_chunk_keys(SEXP spec, SEXP coords);
SEXP ffi_codec_encode(SEXP codec, SEXP data);
void codec_r_init(void); /* adds the row of codecs written in R */
SEXP ffi_codec_decode(SEXP codec, SEXP data, SEXP expect);
SEXP ffi_crc32c(SEXP data);
SEXP ffi_zv_frag_parse(SEXP blob, SEXP nrows, SEXP what, SEXP budget);
SEXP ffi_zv_frag_encode(SEXP is_range, SEXP start, SEXP count, SEXP offsets, SEXP indices);
SEXP ffi_zv_manifests(SEXP data, SEXP starts, SEXP ids, SEXP ndim, SEXP what, SEXP budget);
SEXP ffi_zv_manifest_encode(SEXP object, SEXP coords, SEXP fragment, SEXP nobj);
SEXP ffi_zv_rows_decode(SEXP blobs, SEXP dtype, SEXP ncol, SEXP columns, SEXP what, SEXP nthreads, SEXP budget);
SEXP ffi_zv_rows_encode(SEXP x, SEXP dtype, SEXP breaks);
SEXP ffi_file_read(SEXP path, SEXP range);
SEXP ffi_file_write(SEXP path, SEXP data);
SEXP ffi_file_size(SEXP path);
SEXP ffi_local_probe(SEXP path);
SEXP ffi_json_member_spans(SEXP raw, SEXP path);
SEXP ffi_meta_doc_key(SEXP kind, SEXP docs);
SEXP ffi_key_is_safe(SEXP key);
SEXP ffi_redact(SEXP x);
SEXP ffi_r6_build(SEXP plan);
SEXP ffi_encode_elements(SEXP data, SEXP dtype, SEXP big_endian, SEXP fill, SEXP na);
SEXP ffi_decode_elements(SEXP raw, SEXP dtype, SEXP rtype, SEXP big_endian, SEXP fill, SEXP na);
SEXP ffi_fill_bytes(SEXP dtype, SEXP value);
SEXP ffi_cf_unpack(SEXP x, SEXP scale, SEXP offset, SEXP markers, SEXP range);
SEXP ffi_num_cores(void);
SEXP ffi_read_opts(SEXP fill_as_na, SEXP dflt);
SEXP ffi_index_runs(SEXP sel, SEXP shape);
SEXP ffi_sel_lengths(SEXP sel);
SEXP ffi_all_ranges(SEXP sel, SEXP nd);
SEXP ffi_capabilities(void); /* capabilities.c */
SEXP ffi_s3_parse_list(SEXP body, SEXP where);
SEXP ffi_azure_parse_list(SEXP body, SEXP where);
SEXP ffi_xml_text(SEXP body, SEXP tag);
SEXP ffi_codec_piece(SEXP n);

#endif
