#!/usr/bin/env node
// Self-test of the interop harness: round-trips arrays through write.mjs and
// read.mjs (as child processes, exactly as the R tests call them), checks
// chunk key names, checks the CRC-32C fill-in against zarr-python's shard
// indexes, and reads zarr-python fixtures against expected.json.
//
// usage: node selftest.mjs [--table]
//   ZARR_FIXTURES_DIR=<dir> overrides the fixtures folder (default
//   ../../../shared/fixtures relative to this file); missing -> skipped.
// Exit 0 when every case behaves as expected (including the expected
// failures of codecs zarrita cannot encode), 1 otherwise.

import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { crc32c } from "./crc32c.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const work = fs.mkdtempSync(path.join(os.tmpdir(), "zarr-interop-"));
const fixtures = process.env.ZARR_FIXTURES_DIR || path.resolve(here, "../../../shared/fixtures");

function run(script, args) {
	const p = spawnSync(process.execPath, [path.join(here, script), ...args], {
		encoding: "utf8",
		maxBuffer: 1 << 28,
	});
	let json;
	try {
		json = JSON.parse(p.stdout);
	} catch {
		json = { error: `no JSON on stdout: ${p.stdout.slice(0, 200)} ${p.stderr.slice(0, 500)}` };
	}
	return { status: p.status, json, stderr: p.stderr };
}

// ------------------------------------------------------------ test data

function values(dtype, n) {
	const out = [];
	for (let i = 0; i < n; i++) {
		switch (dtype) {
			case "bool": out.push(i % 3 === 0); break;
			case "int8": out.push((i % 200) - 100); break;
			case "uint8": out.push((i * 7) % 256); break;
			case "int16": out.push(i * 37 - 3000); break;
			case "uint16": out.push((i * 977) % 65536); break;
			case "int32": out.push(i * 100003 - 2 ** 30); break;
			case "uint32": out.push((i * 2654435761) % 2 ** 32); break;
			case "int64":
				out.push(i === 0 ? "9223372036854775807" : i === 1 ? "-9223372036854775807"
					: String(BigInt(i) * 123456789012345n - 10n ** 15n));
				break;
			case "uint64":
				out.push(i === 0 ? "18446744073709551615" : String(BigInt(i) * 98765432109876543n));
				break;
			case "float32":
			case "float64":
				out.push(i === 1 ? "NaN" : i === 2 ? "Infinity" : i === 3 ? "-Infinity"
					: i === 4 ? -0 : (i - 10) / 3);
				break;
			case "float16": out.push(i / 4); break;
			case "string": out.push(`s${i}`); break;
			default: throw new Error(dtype);
		}
	}
	return out;
}

// What read.mjs should print for a written value.
function expected(dtype, v, fill) {
	if (v === null) v = fill;
	if (dtype === "float32" && typeof v === "number") v = Math.fround(v);
	if ((dtype === "int64" || dtype === "uint64") && typeof v === "number") v = String(v);
	if (typeof v === "number" && Object.is(v, -0)) v = 0; // JSON has no -0
	return v;
}

// ------------------------------------------------------------- cases

const cases = [];
function add(name, array, opts = {}) {
	const shape = array.shape;
	const n = shape.reduce((a, b) => a * b, 1);
	const data = opts.noData ? undefined : array.data ?? values(array.data_type, n);
	cases.push({
		name,
		format: opts.format ?? 3,
		node_encoders: opts.node_encoders ?? false,
		expect: opts.expect ?? "pass",
		keys: opts.keys ?? [],
		group: opts.group,
		array: { path: `/${name.replace(/[^A-Za-z0-9_.-]+/g, "_")}`, fill_value: 0, ...array, data },
		n,
	});
}
const LE = { name: "bytes", configuration: { endian: "little" } };
const BE = { name: "bytes", configuration: { endian: "big" } };
const T2 = { name: "transpose", configuration: { order: [1, 0] } };
const T3 = { name: "transpose", configuration: { order: [2, 0, 1] } };
const GZ = { name: "gzip", configuration: { level: 5 } };
const ZL = { name: "zlib", configuration: { level: 5 } };
const ZS = { name: "zstd", configuration: { level: 3, checksum: false } };
const CRC = { name: "crc32c" };
const blosc = (cname, shuffle, typesize = 2) => ({
	name: "blosc",
	configuration: { cname, clevel: 5, shuffle, typesize, blocksize: 0 },
});
const A2 = { shape: [5, 7], chunk_shape: [2, 3] }; // ragged edge chunks
const A3 = { shape: [4, 5, 6], chunk_shape: [3, 2, 4] }; // ragged edge chunks

// data types, v3, default codecs
for (const dt of ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"]) {
	const fill = dt === "bool" ? false : dt.startsWith("float") ? "NaN" : 0;
	add(`v3 dtype ${dt}`, { ...A2, data_type: dt, fill_value: fill });
	add(`v2 dtype ${dt}`, { ...A2, data_type: dt, fill_value: fill }, { format: 2 });
}
add("v3 dtype float16", { ...A2, data_type: "float16" }, { expect: "write-error" });
add("v3 dtype string (vlen-utf8)", { ...A2, data_type: "string", fill_value: "",
	codecs: [{ name: "vlen-utf8", configuration: {} }] }, { expect: "write-error" });
// 64-bit extremes as fill values, nulls -> fill value
add("v3 int64 min fill + nulls", { shape: [4], chunk_shape: [3], data_type: "int64",
	fill_value: "-9223372036854775808", data: [null, "1", null, "-2"] });
add("v3 uint64 max fill + nulls", { shape: [4], chunk_shape: [3], data_type: "uint64",
	fill_value: "18446744073709551615", data: [null, "1", null, "2"] });
add("v3 float32 NaN fill + nulls", { shape: [3], chunk_shape: [2], data_type: "float32",
	fill_value: "NaN", data: [1.5, null, "Infinity"] });

// codecs, v3, 2-d int16 and 3-d float64 (ragged edges)
for (const [label, base, T] of [["2d int16", { ...A2, data_type: "int16" }, T2], ["3d float64", { ...A3, data_type: "float64" }, T3]]) {
	add(`v3 ${label} none (bytes LE)`, { ...base, codecs: [LE] });
	add(`v3 ${label} codecs [] (zarrita default)`, { ...base, codecs: [], insert_bytes_codec: false });
	add(`v3 ${label} bytes BE`, { ...base, codecs: [BE] });
	add(`v3 ${label} transpose`, { ...base, codecs: [T, LE] });
	add(`v3 ${label} transpose+BE+zstd`, { ...base, codecs: [T, BE, ZS] });
	add(`v3 ${label} zstd`, { ...base, codecs: [LE, ZS] });
	add(`v3 ${label} gzip`, { ...base, codecs: [LE, GZ] }, { expect: "write-error" });
	add(`v3 ${label} gzip (node_encoders)`, { ...base, codecs: [LE, GZ] }, { node_encoders: true });
	add(`v3 ${label} zlib`, { ...base, codecs: [LE, ZL] }, { expect: "write-error" });
	add(`v3 ${label} zlib (node_encoders)`, { ...base, codecs: [LE, ZL] }, { node_encoders: true });
	add(`v3 ${label} crc32c`, { ...base, codecs: [LE, CRC] }, { expect: "write-error" });
	add(`v3 ${label} crc32c (node_encoders)`, { ...base, codecs: [LE, CRC] }, { node_encoders: true });
	add(`v3 ${label} transpose+BE+blosc+crc32c (node_encoders)`,
		{ ...base, codecs: [T, BE, blosc("zstd", "bitshuffle"), CRC] }, { node_encoders: true });
	add(`v3 ${label} lz4 (numcodecs name)`, { ...base, codecs: [LE, { name: "lz4", configuration: { acceleration: 1 } }] });
	for (const cname of ["blosclz", "lz4", "lz4hc", "zlib", "zstd", "snappy"]) {
		add(`v3 ${label} blosc ${cname} shuffle`, { ...base, codecs: [LE, blosc(cname, "shuffle")] });
	}
	for (const sh of ["noshuffle", "bitshuffle"]) {
		add(`v3 ${label} blosc lz4 ${sh}`, { ...base, codecs: [LE, blosc("lz4", sh)] });
	}
	add(`v3 ${label} sharding_indexed`, { ...base, codecs: [{ name: "sharding_indexed",
		configuration: { chunk_shape: base.chunk_shape.map(() => 1), codecs: [LE],
			index_codecs: [LE, CRC], index_location: "end" } }] }, { expect: "write-error" });
}
// bool / uint8 / float32 with compressors
add("v3 bool blosc", { ...A2, data_type: "bool", fill_value: false, codecs: [LE, blosc("lz4", "shuffle", 1)] });
add("v3 float32 zstd NaN", { ...A2, data_type: "float32", fill_value: "NaN", codecs: [LE, ZS] });
add("v3 int64 BE blosc", { ...A2, data_type: "int64", codecs: [BE, blosc("zstd", "shuffle", 8)] });
// a larger array, so blosc and zstd really compress (tiny chunks are stored raw)
add("v3 int32 64x64 blosc shuffle", { shape: [64, 64], chunk_shape: [32, 32], data_type: "int32",
	codecs: [LE, blosc("lz4", "shuffle", 4)] });
add("v3 float64 64x64 blosc bitshuffle", { shape: [64, 64], chunk_shape: [32, 32], data_type: "float64",
	codecs: [LE, blosc("zstd", "bitshuffle", 8)] });

// chunk key encodings
add("v3 key default /", { ...A2, data_type: "int16",
	chunk_key_encoding: { name: "default", configuration: { separator: "/" } } }, { keys: ["c/0/0", "c/2/2"] });
add("v3 key default .", { ...A2, data_type: "int16",
	chunk_key_encoding: { name: "default", configuration: { separator: "." } } }, { keys: ["c.0.0", "c.2.2"] });
add("v3 key v2 .", { ...A2, data_type: "int16",
	chunk_key_encoding: { name: "v2", configuration: { separator: "." } } }, { keys: ["0.0", "2.2"] });
add("v3 key v2 /", { ...A2, data_type: "int16",
	chunk_key_encoding: { name: "v2", configuration: { separator: "/" } } }, { keys: ["0/0", "2/2"] });
add("v2 key .", { ...A2, data_type: "int16" }, { format: 2, keys: ["0.0", "2.2"] });
add("v2 key /", { ...A2, data_type: "int16",
	chunk_key_encoding: { name: "v2", configuration: { separator: "/" } } }, { format: 2, keys: ["0/0", "2/2"] });

// v2 codecs / order / endianness
add("v2 3d float64 F order", { ...A3, data_type: "float64", codecs: [{ name: "transpose", configuration: { order: [2, 1, 0] } }] }, { format: 2 });
add("v2 2d int16 F order", { ...A2, data_type: "int16", codecs: [T2] }, { format: 2 });
add("v2 2d int16 big endian", { ...A2, data_type: "int16", codecs: [BE] }, { format: 2 });
add("v2 2d int16 zstd", { ...A2, data_type: "int16", codecs: [ZS] }, { format: 2 });
add("v2 2d int16 lz4", { ...A2, data_type: "int16", codecs: [{ name: "lz4", configuration: {} }] }, { format: 2 });
add("v2 2d int16 blosc", { ...A2, data_type: "int16", codecs: [blosc("lz4", "shuffle")] }, { format: 2 });
add("v2 2d int16 gzip", { ...A2, data_type: "int16", codecs: [GZ] }, { format: 2, expect: "write-error" });
add("v2 2d int16 gzip (node_encoders)", { ...A2, data_type: "int16", codecs: [GZ] }, { format: 2, node_encoders: true });
add("v2 2d int16 zlib (node_encoders)", { ...A2, data_type: "int16", codecs: [ZL] }, { format: 2, node_encoders: true });
add("v2 3d float32 F+BE+blosc", { ...A3, data_type: "float32",
	codecs: [{ name: "transpose", configuration: { order: [2, 1, 0] } }, BE, blosc("zstd", "bitshuffle")] }, { format: 2 });

// shapes: 1-d ragged, 0-d, empty, root array, nested groups
add("v3 1d ragged", { shape: [10], chunk_shape: [4], data_type: "int32" }, { keys: ["c/0", "c/2"] });
add("v3 0d int32", { shape: [], chunk_shape: [], data_type: "int32", data: [42] }, { keys: ["c"] });
add("v3 0d bool", { shape: [], chunk_shape: [], data_type: "bool", fill_value: false, data: [true] });
add("v3 0d float64 NaN", { shape: [], chunk_shape: [], data_type: "float64", data: ["NaN"] });
add("v2 0d int16", { shape: [], chunk_shape: [], data_type: "int16", data: [-7] }, { format: 2, keys: ["0"] });
add("v3 no data (chunks missing -> fill)", { ...A2, data_type: "float32", fill_value: "NaN" }, { noData: true });
add("v2 no data (chunks missing -> fill)", { ...A2, data_type: "int16", fill_value: -1 }, { format: 2, noData: true });
add("v3 empty [0,3]", { shape: [0, 3], chunk_shape: [2, 2], data_type: "int16" });
add("v3 nested /g/h/a", { ...A2, data_type: "uint8", path: "/g/h/a" });
add("v3 root array", { ...A2, data_type: "int16", path: "/" });
add("v2 root array", { ...A2, data_type: "int16", path: "/" }, { format: 2 });

// --------------------------------------------------------------- run

const rows = [];
let failures = 0;
for (const [i, c] of cases.entries()) {
	const store = path.join(work, `case${i}.zarr`);
	const spec = { store, zarr_format: c.format, node_encoders: c.node_encoders, arrays: [c.array] };
	const specFile = path.join(work, `case${i}.json`);
	fs.writeFileSync(specFile, JSON.stringify(spec));
	const w = run("write.mjs", [specFile]);
	let outcome;
	let detail = "";
	if (w.status !== 0 || w.json.error) {
		outcome = "write-error";
		detail = w.json.error ?? w.stderr;
	} else {
		const r = run("read.mjs", [store, c.array.path]);
		if (r.status !== 0 || r.json.error) {
			outcome = "read-error";
			detail = r.json.error ?? r.stderr;
		} else {
			const got = r.json[c.array.path];
			const fill = c.array.fill_value;
			const written = c.array.data ?? new Array(c.n).fill(null); // no data: all fill
			const exp = written.map((v) => expected(c.array.data_type, v, fill));
			const same = JSON.stringify(got.shape) === JSON.stringify(c.array.shape) &&
				JSON.stringify(got.data) === JSON.stringify(exp);
			outcome = same ? "pass" : "mismatch";
			if (!same) detail = `got ${JSON.stringify(got).slice(0, 300)} expected ${JSON.stringify(exp).slice(0, 200)}`;
			const dir = c.array.path === "/" ? store : path.join(store, c.array.path);
			for (const k of c.keys) {
				if (!fs.existsSync(path.join(dir, k))) {
					outcome = "mismatch";
					detail += ` missing chunk key ${k}`;
				}
			}
		}
	}
	const ok = outcome === c.expect;
	if (!ok) failures++;
	rows.push({ name: c.name, expect: c.expect, outcome, ok, detail });
}

// CRC-32C fill-in vs zarr-python shard indexes (bytes + crc32c at the end)
const crcRows = [];
const v3 = path.join(fixtures, "zarr-python/v3.zarr");
if (fs.existsSync(v3)) {
	for (const name of fs.readdirSync(v3)) {
		const metaFile = path.join(v3, name, "zarr.json");
		if (!fs.existsSync(metaFile)) continue;
		const meta = JSON.parse(fs.readFileSync(metaFile, "utf8"));
		const sh = meta.codecs?.find((c) => c.name === "sharding_indexed");
		if (!sh || !sh.configuration.index_codecs.some((c) => c.name === "crc32c")) continue;
		if (sh.configuration.index_location === "start") continue;
		const outer = meta.chunk_grid.configuration.chunk_shape;
		const k = outer.reduce((a, d, j) => a * Math.ceil(d / sh.configuration.chunk_shape[j]), 1);
		const walk = (d) => fs.readdirSync(d, { withFileTypes: true }).flatMap((e) =>
			e.isDirectory() ? walk(path.join(d, e.name)) : [path.join(d, e.name)]);
		for (const f of walk(path.join(v3, name)).filter((f) => !f.endsWith("zarr.json"))) {
			const b = fs.readFileSync(f);
			const idx = b.subarray(b.length - 16 * k - 4, b.length - 4);
			const stored = b.readUInt32LE(b.length - 4);
			const ok = crc32c(idx) === stored;
			if (!ok) failures++;
			crcRows.push({ file: path.relative(v3, f), ok });
		}
	}
}

// zarr-python fixtures vs expected.json (values read by zarrita 0.7.5)
const fixRows = [];
const expFile = path.join(fixtures, "expected.json");
if (fs.existsSync(expFile)) {
	const exp = JSON.parse(fs.readFileSync(expFile, "utf8"));
	const wanted = [
		"zarr-python/v3.zarr/2d.chunked.ragged.i2",
		"zarr-python/v3.zarr/3d.chunked.mixed.i2.F",
		"zarr-python/v2.zarr/1d.contiguous.i4",
	];
	for (const key of wanted) {
		const e = exp[key];
		const r = run("read.mjs", [path.join(fixtures, e.store), e.array]);
		const got = r.json[e.array];
		const ok = !!got && JSON.stringify(got.shape) === JSON.stringify(e.shape) &&
			JSON.stringify(got.data) === JSON.stringify(e.data) && got.dtype === e.dtype;
		if (!ok) failures++;
		fixRows.push({ key, ok, detail: ok ? "" : JSON.stringify(r.json).slice(0, 300) });
	}
}

for (const r of rows) {
	const mark = r.ok ? "ok  " : "FAIL";
	console.log(`${mark} ${r.name.padEnd(58)} ${r.outcome}${r.ok && r.outcome === "pass" ? "" : `  ${r.detail.slice(0, 160)}`}`);
}
console.log(`CRC-32C fill-in matches ${crcRows.filter((r) => r.ok).length}/${crcRows.length} zarr-python shard index checksums`);
for (const r of fixRows) console.log(`${r.ok ? "ok  " : "FAIL"} fixture ${r.key} ${r.detail}`);
if (!fs.existsSync(expFile)) console.log(`fixtures not found under ${fixtures}: skipped`);
console.log(`${cases.length} round-trip cases, ${failures} failure(s); scratch dir ${work}`);
if (failures === 0) fs.rmSync(work, { recursive: true, force: true });
process.exitCode = failures === 0 ? 0 : 1;
