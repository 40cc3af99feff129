/* The codec table's rows, one line per codec: ZCODEC(x) names the row
 * `const zcodec_vt zc_x` that src/codec_<file>.c defines. codec_table.c
 * includes this list; nothing else switches on codecs. */
ZCODEC(gzip)
ZCODEC(zlib)
ZCODEC(zstd)
ZCODEC(blosc)
ZCODEC(crc32c)
ZCODEC(lz4)
ZCODEC(bz2)
ZCODEC(adler32)
ZCODEC(fletcher32)
ZCODEC(shuffle)
ZCODEC(delta)
ZCODEC(fixedscaleoffset)
ZCODEC(bitround)
ZCODEC(quantize)
ZCODEC(astype)
ZCODEC(packbits)
