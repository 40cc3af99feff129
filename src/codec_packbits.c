/* packbits (a registered Zarr v3 extension): each element keeps only its bits
 * first_bit..last_bit, packed one after another into a bit stream, least
 * significant bit first, padded with zero bits to whole bytes; an optional
 * byte before or after the stream counts the padding bits. Decoding shifts
 * the bits back to first_bit and sign-extends signed integers.
 *
 * R's flat description puts this row right after `bytes` (little endian), so
 * it sees elements as little-endian bytes: "dtype" ("<i2", "|u1"), "bits"
 * (bits of the type: 1 for bool), "first_bit", "last_bit" and "padding"
 * ("none", "first_byte", "last_byte"), and "bit_order": "little" (the
 * registered codec) or "big" (numcodecs' packbits of bool arrays in Zarr
 * v2, which fills each byte from its most significant bit, as
 * numpy.packbits() does). */
#include <string.h>
#include "zarr_core.h"

typedef struct {
  znum t;
  int bits, first, last, pad; /* pad: 0 none, 1 first byte, 2 last byte */
  int msb;                     /* bit_order "big": bit k of a byte is 1 << (7 - k) */
} packbits_cfg;
ZCODEC_CFG_FITS(packbits_cfg);

static int packbits_parse(zcodec *c, const zcfg *cfg, zerr *e) {
  packbits_cfg *k = ZCODEC_CFG(c, packbits_cfg);
  const char *pad, *order;
  if (cfg_num_type(cfg, "packbits", "dtype", &k->t, e) ||
      cfg_int(cfg, "packbits", "bits", 1, 64, &k->bits, e) ||
      cfg_int(cfg, "packbits", "first_bit", 0, 63, &k->first, e) ||
      cfg_int(cfg, "packbits", "last_bit", 0, 63, &k->last, e) ||
      cfg_str(cfg, "packbits", "padding", &pad, e) ||
      cfg_str(cfg, "packbits", "bit_order", &order, e))
    return -1;
  if (strcmp(order, "little") != 0 && strcmp(order, "big") != 0)
    return zerr_set(e, ZE_CODEC, "codec 'packbits': bit_order must be \"little\" or \"big\"");
  k->msb = strcmp(order, "big") == 0;
  if (k->t.big) return zerr_set(e, ZE_CODEC, "codec 'packbits' reads little-endian elements");
  if (k->bits > k->t.size * 8 || k->last >= k->bits || k->first > k->last)
    return zerr_set(e, ZE_CODEC, "codec 'packbits': bits %d to %d do not fit a %d-bit element",
                    k->first, k->last, k->bits);
  k->pad = strcmp(pad, "none") == 0 ? 0 : strcmp(pad, "first_byte") == 0 ? 1
         : strcmp(pad, "last_byte") == 0 ? 2 : -1;
  if (k->pad < 0) return zerr_set(e, ZE_CODEC, "codec 'packbits': unknown padding_encoding '%.20s'", pad);
  return 0;
}

static uint64_t load_le(const uint8_t *p, int size) {
  uint64_t v = 0;
  for (int i = 0; i < size; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static void store_le(uint8_t *p, int size, uint64_t v) {
  for (int i = 0; i < size; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static int packbits_encode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out, zerr *e) {
  const packbits_cfg *k = ZCODEC_CFG(c, const packbits_cfg);
  size_t es = (size_t)k->t.size, count = n / es;
  if (n % es) return zerr_set(e, ZE_CODEC, "packbits: data is not a whole number of elements");
  int b = k->last - k->first + 1;
  size_t nbits = count * (size_t)b, nbytes = (nbits + 7) / 8;
  size_t head = k->pad == 1 ? 1 : 0, total = nbytes + (k->pad ? 1 : 0);
  if (zbuf_reserve(out, total + 1, e)) return -1;
  memset(out->data, 0, total);
  uint8_t *o = out->data + head;
  uint64_t mask = b == 64 ? UINT64_MAX : (1ULL << b) - 1;
  size_t pos = 0;
  for (size_t i = 0; i < count; i++) {
    uint64_t v = (load_le(src + i * es, k->t.size) >> k->first) & mask;
    for (int j = 0; j < b; j++, pos++)
      if ((v >> j) & 1) o[pos / 8] |= (uint8_t)(1u << (k->msb ? 7 - pos % 8 : pos % 8));
  }
  if (k->pad) out->data[k->pad == 1 ? 0 : total - 1] = (uint8_t)(nbytes * 8 - nbits);
  out->size = total;
  return 0;
}

static int packbits_decode(const zcodec *c, const uint8_t *src, size_t n, zbuf *out,
                           size_t limit, zerr *e) {
  const packbits_cfg *k = ZCODEC_CFG(c, const packbits_cfg);
  size_t es = (size_t)k->t.size;
  int b = k->last - k->first + 1;
  const uint8_t *s = src;
  size_t sn = n;
  if (k->pad) {
    if (n < 1) return zerr_set(e, ZE_CORRUPT, "packbits data lacks its padding byte");
    if (k->pad == 1) s++;
    sn--;
  }
  size_t count = sn * 8 / (size_t)b; /* whole elements the bits hold */
  if (k->pad) {
    uint8_t padbits = src[k->pad == 1 ? 0 : n - 1];
    if (padbits > 7 || (sn * 8 < padbits))
      return zerr_set(e, ZE_CORRUPT, "packbits padding byte %d is invalid", padbits);
    count = (sn * 8 - padbits) / (size_t)b;
  } else if (limit && limit / es < count) {
    count = limit / es; /* the padding may hold room for more */
  }
  if (limit && count * es > limit)
    return zerr_set(e, ZE_CORRUPT, "packbits data decodes to more than the expected %.0f bytes",
                    (double)limit);
  if (zbuf_reserve(out, count * es + 1, e)) return -1;
  int top = k->last; /* the sign bit of a signed element after the shift */
  size_t pos = 0;
  for (size_t i = 0; i < count; i++) {
    uint64_t v = 0;
    for (int j = 0; j < b; j++, pos++)
      if ((s[pos / 8] >> (k->msb ? 7 - pos % 8 : pos % 8)) & 1) v |= 1ULL << j;
    v <<= k->first;
    if (k->t.kind == 'i' && top < 63 && ((v >> top) & 1)) v |= ~0ULL << (top + 1);
    store_le(out->data + i * es, k->t.size, v);
  }
  out->size = count * es;
  return 0;
}

const zcodec_vt zc_packbits = {.name = "packbits", .parse = packbits_parse,
                               .decode = packbits_decode, .encode = packbits_encode,
                               .overhead = -1, .bounded = 1};
