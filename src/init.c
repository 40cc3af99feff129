/* Routine registration. */
#include <R_ext/Rdynload.h>
#include "store.h"
#include "progress.h"

void slab_init(void);

/* via void (*)(void), the one function type GCC lets any other convert to */
#define CALLDEF(name, n) {#name, (DL_FUNC)(void (*)(void))&name, n}

static const R_CallMethodDef call_methods[] = {
    CALLDEF(ffi_r6_build, 1),
    CALLDEF(ffi_array_read, 4),
    CALLDEF(ffi_compact_state, 1),
    CALLDEF(ffi_compact_payloads, 0),
    CALLDEF(ffi_result_pool, 1),
    CALLDEF(ffi_arrays_read, 6),
    CALLDEF(ffi_array_write, 5),
    CALLDEF(ffi_chunk_keys, 2),
    CALLDEF(ffi_codec_encode, 2),
    CALLDEF(ffi_codec_decode, 3),
    CALLDEF(ffi_crc32c, 1),
    CALLDEF(ffi_zv_frag_parse, 4),
    CALLDEF(ffi_zv_frag_encode, 5),
    CALLDEF(ffi_zv_manifests, 6),
    CALLDEF(ffi_zv_manifest_encode, 4),
    CALLDEF(ffi_zv_rows_decode, 7),
    CALLDEF(ffi_zv_rows_encode, 3),
    CALLDEF(ffi_file_read, 2),
    CALLDEF(ffi_file_write, 2),
    CALLDEF(ffi_file_size, 1),
    CALLDEF(ffi_local_probe, 1),
    CALLDEF(ffi_json_member_spans, 2),
    CALLDEF(ffi_meta_doc_key, 2),
    CALLDEF(ffi_key_is_safe, 1),
    CALLDEF(ffi_redact, 1),
    CALLDEF(ffi_encode_elements, 5),
    CALLDEF(ffi_decode_elements, 6),
    CALLDEF(ffi_fill_bytes, 2),
    CALLDEF(ffi_cf_unpack, 5),
    CALLDEF(ffi_num_cores, 0),
    CALLDEF(ffi_read_opts, 2),
    CALLDEF(ffi_index_runs, 2),
    CALLDEF(ffi_sel_lengths, 1),
    CALLDEF(ffi_all_ranges, 2),
    CALLDEF(ffi_capabilities, 0),
    CALLDEF(ffi_s3_parse_list, 2),
    CALLDEF(ffi_azure_parse_list, 2),
    CALLDEF(ffi_xml_text, 2),
    CALLDEF(ffi_codec_piece, 1),
    CALLDEF(ffi_zip_open, 2),
    CALLDEF(ffi_zip_list, 1),
    CALLDEF(ffi_zip_read, 3),
    CALLDEF(ffi_zip_extract, 2),
    CALLDEF(ffi_zip_write, 5),
    CALLDEF(ffi_store_local, 2),
    CALLDEF(ffi_dir_files, 2),
    CALLDEF(ffi_store_zip, 2),
    CALLDEF(ffi_store_r, 1),
    CALLDEF(ffi_store_get, 3),
    CALLDEF(ffi_store_node_docs, 3),
    CALLDEF(ffi_store_get_keys, 3),
    CALLDEF(ffi_store_set, 3),
    CALLDEF(ffi_store_stats, 1),
    CALLDEF(ffi_store_http, 3),
    CALLDEF(ffi_store_http_options, 2),
    CALLDEF(ffi_store_s3, 2),
    CALLDEF(ffi_store_s3_request, 7),
    CALLDEF(ffi_store_s3_options, 2),
    CALLDEF(ffi_store_azure, 2),
    CALLDEF(ffi_store_ref, 12),
    CALLDEF(ffi_store_ref_options, 2),
    CALLDEF(ffi_store_copy, 5),
    CALLDEF(ffi_store_erase, 2),
    CALLDEF(ffi_store_check_keys, 3),
    CALLDEF(ffi_cache_drop, 3),
    CALLDEF(ffi_cache_count, 0),
    CALLDEF(ffi_icechunk_repo, 3),
    CALLDEF(ffi_icechunk_snapshot, 3),
    CALLDEF(ffi_icechunk_manifest, 3),
    CALLDEF(ffi_icechunk_write, 3),
    CALLDEF(ffi_icechunk_new_id, 1),
    CALLDEF(ffi_progress_begin, 2),
    CALLDEF(ffi_progress_end, 0),
    {NULL, NULL, 0}};

/* The persistent worker threads run this library's code: stop them first. */
void R_unload_zarr(DllInfo *dll) {
  (void)dll;
  threads_shutdown();
  tbufs_release();
  result_pool_release();
}

void R_init_zarr(DllInfo *dll) {
  R_registerRoutines(dll, NULL, call_methods, NULL, NULL);
  R_useDynamicSymbols(dll, FALSE);
  R_forceSymbols(dll, TRUE);
  /* build lookup tables now, before any worker thread may need them */
  slab_init();
  codec_r_init();
  compact_init(dll);
  xml_init();
  http_global_init();
  uint8_t probe[8] = {0};
  (void)crc32c(0, probe, sizeof probe);
}
