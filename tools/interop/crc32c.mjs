// CRC-32C (Castagnoli), as used by the Zarr v3 "crc32c" codec: the
// checksum of the preceding bytes is appended as 4 little-endian bytes.
// Check value: crc32c("123456789") === 0xe3069283.

const TABLE = (() => {
	const t = new Uint32Array(256);
	for (let n = 0; n < 256; n++) {
		let c = n;
		for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
		t[n] = c >>> 0;
	}
	return t;
})();

export function crc32c(bytes) {
	let c = 0xffffffff;
	for (let i = 0; i < bytes.length; i++) c = TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
	return (c ^ 0xffffffff) >>> 0;
}
