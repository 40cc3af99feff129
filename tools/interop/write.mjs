#!/usr/bin/env node
// Write Zarr arrays with zarrita, described by a JSON spec.
//
// usage: node write.mjs <spec.json>
//
// spec.json:
// {
//   "store": "<dir>",                 // created if missing (mkdir -p)
//   "zarr_format": 3,                 // 3 (default) or 2
//   "node_encoders": false,           // optional, see README ("fill-in encoders")
//   "arrays": [{
//     "path": "/a",                   // "/" for a root array; parents become groups
//     "shape": [..], "chunk_shape": [..],
//     "data_type": "int16",           // bool, int8..int64, uint8..uint64, float32, float64
//     "fill_value": 0,                // optional (default 0 / false); "NaN", "Infinity", ...
//     "codecs": [ {v3 codec JSON} ],  // optional; passed through to zarr.json
//     "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
//     "attributes": {}, "dimension_names": [..],   // optional
//     "data": [..C-order flat values..]
//   }]
// }
//
// stdout (exit 0): {"ok": true, "store": "<abs dir>", "zarr_format": 3,
//                   "groups": ["/", ...], "arrays": {"/a": {...zarr.json or .zarray as written...}}}
// stdout (exit 1): {"error": "<message>"}
//
// Values use the same encoding as read.mjs: "NaN"/"Infinity"/"-Infinity"
// for non-finite floats, int64/uint64 preferably as decimal strings,
// true/false for bool; null (or jsonlite's "NA") stands for the fill value,
// and jsonlite's "Inf"/"-Inf" are accepted. Length-1 scalars for shape,
// chunk_shape and data (jsonlite auto_unbox) are treated as 1-element lists.

import * as fs from "node:fs";
import * as path from "node:path";
import * as zlib from "node:zlib";
import { FileSystemStore } from "@zarrita/storage";
import * as zarr from "zarrita";
import { crc32c } from "./crc32c.mjs";

// ---------------------------------------------------------------- helpers

function fail(message) {
	process.stdout.write(`${JSON.stringify({ error: String(message) })}\n`);
	process.exitCode = 1;
}

const DTYPES = {
	bool: { kind: "bool", v2: "|b1" },
	int8: { kind: "int", min: -128, max: 127, v2: "|i1" },
	int16: { kind: "int", min: -32768, max: 32767, v2: "i2" },
	int32: { kind: "int", min: -2147483648, max: 2147483647, v2: "i4" },
	int64: { kind: "bigint", min: -(2n ** 63n), max: 2n ** 63n - 1n, v2: "i8" },
	uint8: { kind: "int", min: 0, max: 255, v2: "|u1" },
	uint16: { kind: "int", min: 0, max: 65535, v2: "u2" },
	uint32: { kind: "int", min: 0, max: 4294967295, v2: "u4" },
	uint64: { kind: "bigint", min: 0n, max: 2n ** 64n - 1n, v2: "u8" },
	float32: { kind: "float", v2: "f4" },
	float64: { kind: "float", v2: "f8" },
};

const TYPED = {
	int8: Int8Array,
	int16: Int16Array,
	int32: Int32Array,
	int64: BigInt64Array,
	uint8: Uint8Array,
	uint16: Uint16Array,
	uint32: Uint32Array,
	uint64: BigUint64Array,
	float32: Float32Array,
	float64: Float64Array,
};

function convertValue(v, dtype, what) {
	const info = DTYPES[dtype];
	// jsonlite (R) spells these "Inf", "-Inf" and "NA"
	if (v === "Inf") v = "Infinity";
	else if (v === "-Inf") v = "-Infinity";
	switch (info.kind) {
		case "bool":
			if (v === true || v === 1) return true;
			if (v === false || v === 0) return false;
			throw new Error(`${what}: ${JSON.stringify(v)} is not a bool`);
		case "float": {
			if (v === "NaN") return Number.NaN;
			if (v === "Infinity") return Number.POSITIVE_INFINITY;
			if (v === "-Infinity") return Number.NEGATIVE_INFINITY;
			const x = typeof v === "string" && v.trim() !== "" ? Number(v) : v;
			if (typeof x !== "number" || Number.isNaN(x)) {
				throw new Error(`${what}: ${JSON.stringify(v)} is not a ${dtype}`);
			}
			return x;
		}
		case "int": {
			const x = typeof v === "string" && v.trim() !== "" ? Number(v) : v;
			if (!Number.isInteger(x) || x < info.min || x > info.max) {
				throw new Error(`${what}: ${JSON.stringify(v)} is not a ${dtype}`);
			}
			return x;
		}
		case "bigint": {
			let x;
			try {
				if (typeof v === "string") x = BigInt(v.trim());
				else if (typeof v === "number" && Number.isSafeInteger(v)) x = BigInt(v);
			} catch {
				x = undefined;
			}
			if (x === undefined || x < info.min || x > info.max) {
				throw new Error(
					`${what}: ${JSON.stringify(v)} is not a ${dtype} ` +
						"(give 64-bit integers as decimal strings)",
				);
			}
			return x;
		}
	}
	throw new Error(`unsupported data_type ${dtype}`);
}

function makeTypedData(values, dtype, fill, n, what) {
	if (!Array.isArray(values)) throw new Error(`${what}: data must be an array`);
	if (values.length !== n) {
		throw new Error(`${what}: data has ${values.length} elements, shape needs ${n}`);
	}
	const conv = (v, i) =>
		v === null || v === "NA" ? fill : convertValue(v, dtype, `${what}: data[${i}]`);
	if (dtype === "bool") return new zarr.BoolArray(values.map(conv));
	const out = new TYPED[dtype](n);
	for (let i = 0; i < n; i++) out[i] = conv(values[i], i);
	return out;
}

function cStrides(shape) {
	const stride = new Array(shape.length);
	let step = 1;
	for (let i = shape.length - 1; i >= 0; i--) {
		stride[i] = step;
		step *= shape[i];
	}
	return stride;
}

// JSON with NaN/Infinity as strings (as zarrita and the Zarr spec do) and
// BigInt as exact numeric literals.
function toJson(obj) {
	const marks = [];
	const text = JSON.stringify(
		obj,
		(_k, v) => {
			if (typeof v === "bigint") {
				marks.push(v.toString());
				return `\u0000BIGINT${marks.length - 1}\u0000`;
			}
			if (typeof v === "number") {
				if (Number.isNaN(v)) return "NaN";
				if (v === Infinity) return "Infinity";
				if (v === -Infinity) return "-Infinity";
			}
			return v;
		},
		2,
	);
	return text.replace(/"\\u0000BIGINT(\d+)\\u0000"/g, (_m, i) => marks[Number(i)]);
}

function normalisePath(p) {
	let s = String(p ?? "").trim();
	if (!s.startsWith("/")) s = `/${s}`;
	if (s.length > 1) s = s.replace(/\/+$/, "");
	if (s.split("/").some((part) => part === "." || part === "..")) {
		throw new Error(`invalid array path ${JSON.stringify(p)}`);
	}
	return s;
}

function locationOf(store, p) {
	return zarr.root(store).resolve(p === "/" ? "." : p.slice(1));
}

function isArrayToBytes(name) {
	return ["bytes", "vlen-utf8", "vlen-bytes", "sharding_indexed", "packbits"].includes(name);
}

// ------------------------------------------------- codec registry tweaks

// numcodecs.js Blosc takes `shuffle` as a number (0 none, 1 byte, 2 bit).
// Zarr v3 metadata spells it "noshuffle" / "shuffle" / "bitshuffle", which
// numcodecs.js silently treats as "no shuffle". Map the names, so that the
// stored blosc stream really uses the shuffle the metadata declares.
const BLOSC_SHUFFLE = { noshuffle: 0, shuffle: 1, bitshuffle: 2 };
{
	const loadBlosc = zarr.registry.get("blosc");
	zarr.registry.set("blosc", async () => {
		const Blosc = await loadBlosc();
		return {
			fromConfig(config = {}, meta) {
				const shuffle =
					typeof config.shuffle === "string"
						? BLOSC_SHUFFLE[config.shuffle]
						: config.shuffle;
				if (shuffle === undefined && config.shuffle !== undefined) {
					throw new Error(`blosc: unknown shuffle ${JSON.stringify(config.shuffle)}`);
				}
				return Blosc.fromConfig({ ...config, shuffle }, meta);
			},
		};
	});
}

// Optional fill-in encoders for codecs zarrita 0.7.5 can only decode
// (gzip, zlib, crc32c). Enabled with "node_encoders": true in the spec.
// They use node:zlib and a table-driven CRC-32C, not zarrita code.
function registerNodeEncoders() {
	const deflateLike = (compress, decompress) => ({
		fromConfig(config = {}) {
			const level = config.level ?? 6;
			return {
				kind: "bytes_to_bytes",
				async encode(bytes) {
					return new Uint8Array(compress(bytes, { level }));
				},
				async decode(bytes) {
					return new Uint8Array(decompress(bytes));
				},
			};
		},
	});
	const gzip = deflateLike(zlib.gzipSync, zlib.gunzipSync);
	const zl = deflateLike(zlib.deflateSync, zlib.inflateSync);
	const crc = {
		fromConfig() {
			return {
				kind: "bytes_to_bytes",
				async encode(bytes) {
					const out = new Uint8Array(bytes.length + 4);
					out.set(bytes, 0);
					new DataView(out.buffer).setUint32(bytes.length, crc32c(bytes), true);
					return out;
				},
				async decode(bytes) {
					return bytes.subarray(0, bytes.length - 4);
				},
				computeEncodedSize(n) {
					return n + 4;
				},
			};
		},
	};
	zarr.registry.set("gzip", () => gzip);
	zarr.registry.set("numcodecs.gzip", () => gzip);
	zarr.registry.set("zlib", () => zl);
	zarr.registry.set("numcodecs.zlib", () => zl);
	zarr.registry.set("crc32c", () => crc);
}

// ------------------------------------------------------------- writing

async function writeFile(store, key, text) {
	await store.set(key, new TextEncoder().encode(text));
}

async function ensureGroups(store, arrayPaths, format) {
	const groups = new Set();
	for (const p of arrayPaths) {
		const parts = p.split("/").filter(Boolean);
		if (parts.length === 0) continue; // root array: no root group
		groups.add("/");
		for (let i = 1; i < parts.length; i++) groups.add(`/${parts.slice(0, i).join("/")}`);
	}
	for (const g of groups) {
		if (arrayPaths.includes(g)) {
			throw new Error(`${g} is both an array and the parent of another array`);
		}
		const dir = g === "/" ? "" : g;
		if (format === 3) {
			await zarr.create(locationOf(store, g));
		} else {
			await writeFile(store, `${dir}/.zgroup`, toJson({ zarr_format: 2 }));
		}
	}
	return [...groups];
}

function checkShape(a, what) {
	const ok = (x) => Array.isArray(x) && x.every((d) => Number.isInteger(d) && d >= 0);
	if (!ok(a.shape)) throw new Error(`${what}: shape must be an array of integers >= 0`);
	if (!ok(a.chunk_shape) || a.chunk_shape.length !== a.shape.length) {
		throw new Error(`${what}: chunk_shape must be integers with the rank of shape`);
	}
	if (a.chunk_shape.some((d) => d < 1)) throw new Error(`${what}: chunk sizes must be >= 1`);
}

function separatorOf(cke, format) {
	const sep = cke?.configuration?.separator;
	if (sep === undefined) return cke?.name === "v2" || (!cke && format === 2) ? "." : "/";
	if (sep !== "." && sep !== "/") throw new Error(`chunk key separator must be "." or "/"`);
	return sep;
}

async function createV3(store, a, p, fill) {
	const what = `array ${p}`;
	const dtype = a.data_type;
	const isBig = DTYPES[dtype].kind === "bigint";
	let codecs = Array.isArray(a.codecs) ? a.codecs.map((c) => ({ ...c })) : [];
	if (a.insert_bytes_codec !== false && !codecs.some((c) => isArrayToBytes(c.name))) {
		// Zarr v3 requires exactly one array->bytes codec; zarrita itself
		// writes `"codecs": []` when given none.
		const at = codecs.findIndex((c) => c.name !== "transpose");
		const bytes = { name: "bytes", configuration: { endian: "little" } };
		codecs.splice(at === -1 ? codecs.length : at, 0, bytes);
	}
	const cke = a.chunk_key_encoding;
	if (cke && cke.name !== "default" && cke.name !== "v2") {
		throw new Error(`${what}: unknown chunk_key_encoding ${JSON.stringify(cke.name)}`);
	}
	const loc = locationOf(store, p);
	let arr = await zarr.create(loc, {
		shape: a.shape,
		chunkShape: a.chunk_shape,
		dtype,
		codecs,
		// zarrita serialises metadata with JSON.stringify, which cannot take a
		// BigInt; give it a Number and patch the exact value below if needed.
		fillValue: isBig ? Number(fill) : fill,
		chunkSeparator: separatorOf(cke, 3),
		dimensionNames: a.dimension_names,
		attributes: a.attributes,
	});
	const needBigPatch = isBig && !Number.isSafeInteger(Number(fill));
	const needCkePatch = cke && (cke.name === "v2" || cke.configuration === undefined);
	const key = `${p === "/" ? "" : p}/zarr.json`;
	if (needBigPatch || needCkePatch) {
		const meta = JSON.parse(new TextDecoder().decode(await store.get(key)));
		if (needBigPatch) meta.fill_value = fill;
		if (needCkePatch) meta.chunk_key_encoding = cke;
		await writeFile(store, key, toJson(meta));
		arr = await zarr.open.v3(loc, { kind: "array" });
	}
	return { arr, metaKey: key };
}

function v2Compressor(c, what) {
	const cfg = c.configuration ?? {};
	switch (c.name) {
		case "gzip":
		case "zlib":
			return { id: c.name, level: cfg.level ?? 1 };
		case "zstd":
			return { id: "zstd", level: cfg.level ?? 0, ...(cfg.checksum ? { checksum: true } : {}) };
		case "lz4":
			return { id: "lz4", acceleration: cfg.acceleration ?? 1 };
		case "blosc": {
			let shuffle = cfg.shuffle ?? 1;
			if (typeof shuffle === "string") shuffle = BLOSC_SHUFFLE[shuffle];
			if (shuffle === undefined) throw new Error(`${what}: bad blosc shuffle`);
			return {
				id: "blosc",
				cname: cfg.cname ?? "lz4",
				clevel: cfg.clevel ?? 5,
				shuffle,
				blocksize: cfg.blocksize ?? 0,
			};
		}
		default:
			throw new Error(`${what}: codec ${JSON.stringify(c.name)} cannot be a v2 compressor`);
	}
}

// zarrita cannot create v2 arrays. Write .zarray from the v3-style spec
// (transpose -> order, bytes endian -> dtype byte order, one bytes->bytes
// codec -> compressor), then let zarrita open it and encode the chunks.
async function createV2(store, a, p, fill) {
	const what = `array ${p}`;
	const dtype = a.data_type;
	const rank = a.shape.length;
	let order = "C";
	let endian = "<";
	let compressor = null;
	for (const c of a.codecs ?? []) {
		if (c.name === "transpose") {
			const o = c.configuration?.order;
			const isC = Array.isArray(o) && o.every((x, i) => x === i);
			const isF = Array.isArray(o) && o.every((x, i) => x === rank - 1 - i);
			if (o === "F" || (isF && !isC)) order = "F";
			else if (!(o === "C" || isC)) {
				throw new Error(`${what}: v2 supports only C or F order, not ${JSON.stringify(o)}`);
			}
		} else if (c.name === "bytes") {
			if (c.configuration?.endian === "big") endian = ">";
		} else {
			if (compressor) throw new Error(`${what}: v2 allows one compressor only`);
			compressor = v2Compressor(c, what);
		}
	}
	const v2dtype = DTYPES[dtype].v2.startsWith("|") ? DTYPES[dtype].v2 : endian + DTYPES[dtype].v2;
	const cke = a.chunk_key_encoding;
	const meta = {
		zarr_format: 2,
		shape: a.shape,
		chunks: a.chunk_shape,
		dtype: v2dtype,
		compressor,
		fill_value: fill,
		order,
		filters: null,
		dimension_separator: separatorOf(cke, 2),
	};
	const dir = p === "/" ? "" : p;
	await writeFile(store, `${dir}/.zarray`, toJson(meta));
	const attrs = { ...(a.attributes ?? {}) };
	if (a.dimension_names) attrs._ARRAY_DIMENSIONS = a.dimension_names;
	if (Object.keys(attrs).length > 0) await writeFile(store, `${dir}/.zattrs`, toJson(attrs));
	const arr = await zarr.open.v2(locationOf(store, p), { kind: "array" });
	return { arr, metaKey: `${dir}/.zarray` };
}

// jsonlite's auto_unbox turns length-1 vectors into scalars; undo that.
function boxed(a) {
	const box = (x) => (x === undefined || x === null || Array.isArray(x) ? x : [x]);
	return {
		...a,
		shape: box(a.shape),
		chunk_shape: box(a.chunk_shape),
		data: box(a.data),
		dimension_names: box(a.dimension_names),
		codecs: Array.isArray(a.codecs) || a.codecs == null ? a.codecs : [a.codecs],
	};
}

async function writeArray(store, spec, format) {
	const a = boxed(spec);
	const p = normalisePath(a.path);
	const what = `array ${p}`;
	if (!DTYPES[a.data_type]) {
		throw new Error(
			`${what}: data_type ${JSON.stringify(a.data_type)} not supported ` +
				`(use one of ${Object.keys(DTYPES).join(", ")})`,
		);
	}
	checkShape(a, what);
	const dtype = a.data_type;
	const fillRaw = a.fill_value ?? (dtype === "bool" ? false : 0);
	const fill = convertValue(fillRaw, dtype, `${what}: fill_value`);
	const { arr, metaKey } =
		format === 3 ? await createV3(store, a, p, fill) : await createV2(store, a, p, fill);
	const n = a.shape.reduce((x, y) => x * y, 1);
	if (a.data !== undefined) {
		const data = makeTypedData(a.data, dtype, fill, n, what);
		if (a.shape.length === 0) {
			await zarr.set(arr, null, dtype === "bool" ? data.get(0) : data[0]);
		} else if (n > 0) {
			await zarr.set(arr, null, { data, shape: a.shape.slice(), stride: cStrides(a.shape) });
		}
	}
	// Raw metadata text (keeps 64-bit fill values exact); JSON strings
	// cannot hold raw newlines, so dropping them is safe.
	const written = new TextDecoder().decode(await store.get(metaKey)).replace(/\n\s*/g, "");
	return [p, written];
}

function explain(err) {
	let msg = err?.message ?? String(err);
	let cause = err?.cause;
	while (cause) {
		msg += ` (cause: ${cause?.message ?? cause})`;
		cause = cause?.cause;
	}
	if (/Unsupported: (gzip|zlib|crc32c|vlen-utf8|bitround|cast_value|scale_offset) encode/.test(msg)) {
		msg += ' [zarrita 0.7.5 can only decode this codec; gzip, zlib and crc32c can be' +
			' enabled with "node_encoders": true in the spec]';
	}
	return msg;
}

async function main(argv) {
	if (argv.length !== 1) throw new Error("usage: node write.mjs <spec.json>");
	const spec = JSON.parse(fs.readFileSync(argv[0], "utf8"));
	if (typeof spec.store !== "string" || spec.store === "") {
		throw new Error('spec: "store" must be a directory path');
	}
	const format = spec.zarr_format ?? 3;
	if (format !== 2 && format !== 3) throw new Error("spec: zarr_format must be 2 or 3");
	if (spec.arrays && !Array.isArray(spec.arrays)) spec.arrays = [spec.arrays];
	if (!Array.isArray(spec.arrays)) throw new Error('spec: "arrays" must be a list');
	if (spec.node_encoders) registerNodeEncoders();
	const storeDir = path.resolve(spec.store);
	fs.mkdirSync(storeDir, { recursive: true });
	const store = new FileSystemStore(storeDir);
	const paths = spec.arrays.map((a) => normalisePath(a.path));
	if (new Set(paths).size !== paths.length) throw new Error("spec: duplicate array paths");
	const groups = await ensureGroups(store, paths, format);
	const arrays = {};
	for (const a of spec.arrays) {
		try {
			const [p, meta] = await writeArray(store, a, format);
			arrays[p] = meta;
		} catch (err) {
			const msg = explain(err);
			throw new Error(msg.startsWith("array ") ? msg : `array ${a?.path}: ${msg}`);
		}
	}
	const head = JSON.stringify({ ok: true, store: storeDir, zarr_format: format, groups });
	const body = Object.entries(arrays)
		.map(([p, meta]) => `${JSON.stringify(p)}:${meta}`)
		.join(",");
	process.stdout.write(`${head.slice(0, -1)},"arrays":{${body}}}\n`);
}

process.on("unhandledRejection", (err) => {
	fail(explain(err));
	process.exit(1);
});

main(process.argv.slice(2)).catch((err) => fail(explain(err)));
