/* CRC-32C (Castagnoli). Uses the SSE4.2 crc32 instruction when the CPU has it,
 * otherwise a slicing-by-8 table. */
#include <string.h>
#include "zarr_core.h"

static uint32_t table[8][256];
static int table_ready = 0;

static void table_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int t = 1; t < 8; t++)
      table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xFF];
  table_ready = 1;
}

static uint32_t crc32c_soft(uint32_t crc, const uint8_t *p, size_t n) {
  if (!table_ready) table_init();
  while (n >= 8) {
    uint32_t lo, hi;
    memcpy(&lo, p, 4);
    memcpy(&hi, p + 4, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    lo = __builtin_bswap32(lo);
    hi = __builtin_bswap32(hi);
#endif
    lo ^= crc;
    crc = table[7][lo & 0xFF] ^ table[6][(lo >> 8) & 0xFF] ^ table[5][(lo >> 16) & 0xFF] ^
          table[4][lo >> 24] ^ table[3][hi & 0xFF] ^ table[2][(hi >> 8) & 0xFF] ^
          table[1][(hi >> 16) & 0xFF] ^ table[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xFF];
  return crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const uint8_t *p,
                                                             size_t n) {
  uint64_t c = crc;
  while (n >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = (uint32_t)c;
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}
static int have_hw = -1;
#endif

uint32_t crc32c(uint32_t crc, const uint8_t *p, size_t n) {
  crc = ~crc;
#if defined(__x86_64__) && defined(__GNUC__)
  if (have_hw < 0) have_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
  if (have_hw) return ~crc32c_hw(crc, p, n);
#endif
  return ~crc32c_soft(crc, p, n);
}

/* ---- table row: 4 little-endian checksum bytes after the data ---- */

static int crc32c_strip(const zcodec *c, const uint8_t *src, size_t n, size_t *off, size_t *len,
                        zerr *e) {
  (void)c;
  if (n < 4) return zerr_set(e, ZE_CORRUPT, "chunk is too short to hold a crc32c checksum");
  uint32_t stored = (uint32_t)src[n - 4] | ((uint32_t)src[n - 3] << 8) |
                    ((uint32_t)src[n - 2] << 16) | ((uint32_t)src[n - 1] << 24);
  uint32_t actual = crc32c(0, src, n - 4);
  if (stored != actual)
    return zerr_set(e, ZE_CHECKSUM, "crc32c checksum mismatch (stored %08x, computed %08x)",
                    stored, actual);
  *off = 0;
  *len = n - 4;
  return 0;
}

static int crc32c_inplace(const zcodec *c, zbuf *buf, size_t n, zerr *e) {
  (void)c;
  if (zbuf_reserve(buf, n + 4, e)) return -1;
  uint32_t v = crc32c(0, buf->data, n);
  for (int k = 0; k < 4; k++) buf->data[n + k] = (uint8_t)(v >> (8 * k));
  buf->size = n + 4;
  return 0;
}

static int crc32c_enc(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  if (zbuf_reserve(out, n + 4, e)) return -1;
  memmove(out->data, src, n);
  return crc32c_inplace(c, out, n, e);
}

const zcodec_vt zc_crc32c = {.name = "crc32c", .encode = crc32c_enc, .strip = crc32c_strip,
                             .encode_inplace = crc32c_inplace, .overhead = 4};
