// What zarrita read, as a flat array in C order (numbers; booleans for
// bool arrays): shared by make_repos.mjs and read_repo.mjs.
export function flat(res, dtype) {
	const { data, shape, stride } = res;
	const n = shape.reduce((a, b) => a * b, 1);
	const out = new Array(n);
	const idx = new Array(shape.length).fill(0);
	for (let k = 0; k < n; k++) {
		let off = 0;
		for (let d = 0; d < shape.length; d++) off += idx[d] * stride[d];
		out[k] = dtype === "bool" ? data.get(off) : Number(data[off]);
		for (let d = shape.length - 1; d >= 0; d--) { if (++idx[d] < shape[d]) break; idx[d] = 0; }
	}
	return out;
}
