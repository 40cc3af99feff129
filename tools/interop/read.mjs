#!/usr/bin/env node
// Read whole Zarr arrays with zarrita and print them as one JSON document.
//
// usage: node read.mjs <store_dir> <array_path> [<array_path> ...]
//
// stdout (exit 0):
//   {"<array_path>": {"shape": [...], "dtype": "<zarrita dtype>",
//                     "zarr_format": 2|3, "chunk_shape": [...],
//                     "fill_value": ..., "data": [...C-order...]}, ...}
// stdout (exit 1):
//   {"error": "<message>"}
//
// Value encoding (data and fill_value): NaN -> "NaN", Infinity ->
// "Infinity", -Infinity -> "-Infinity", int64/uint64 (BigInt) -> decimal
// string, bool -> true/false, strings as strings. A 0-d array has shape []
// and data of length 1. Data is always row-major (C order), whatever the
// chunk memory order (transpose codec, v2 order "F") was.

import * as fs from "node:fs";
import * as path from "node:path";
import { FileSystemStore } from "@zarrita/storage";
import * as zarr from "zarrita";

function fail(message) {
	process.stdout.write(`${JSON.stringify({ error: String(message) })}\n`);
	process.exitCode = 1;
}

function encodeValue(v) {
	switch (typeof v) {
		case "number":
			if (Number.isNaN(v)) return "NaN";
			if (v === Infinity) return "Infinity";
			if (v === -Infinity) return "-Infinity";
			return v;
		case "bigint":
			return v.toString();
		case "boolean":
		case "string":
			return v;
		case "undefined":
			return null;
		default:
			// null, or objects from v2 "|O" json2 arrays: leave as JSON.
			return v;
	}
}

function elementGetter(data) {
	// BoolArray, ByteStringArray and UnicodeStringArray expose get(i);
	// TypedArrays and plain Arrays (string, v2:object) are indexable.
	if (typeof data.get === "function" && !ArrayBuffer.isView(data)) {
		return (i) => data.get(i);
	}
	return (i) => data[i];
}

// Walk the output chunk in C order using its strides, which follow the
// array's native memory order (e.g. a transpose codec) and are not
// necessarily C-contiguous.
function toCOrder(chunk) {
	const { shape, stride } = chunk;
	const get = elementGetter(chunk.data);
	const size = shape.reduce((a, b) => a * b, 1);
	const out = new Array(size);
	if (size === 0) return out;
	const rank = shape.length;
	const idx = new Array(rank).fill(0);
	let offset = 0;
	for (let n = 0; n < size; n++) {
		out[n] = encodeValue(get(offset));
		// increment the multi-index, last axis fastest
		for (let d = rank - 1; d >= 0; d--) {
			idx[d] += 1;
			offset += stride[d];
			if (idx[d] < shape[d]) break;
			offset -= stride[d] * shape[d];
			idx[d] = 0;
		}
	}
	return out;
}

function normalisePath(p) {
	let s = String(p).trim();
	if (!s.startsWith("/")) s = `/${s}`;
	if (s.length > 1) s = s.replace(/\/+$/, "");
	return s;
}

async function openArray(store, arrayPath) {
	const loc = zarr.root(store).resolve(arrayPath.slice(1) || ".");
	const dir = arrayPath === "/" ? "" : arrayPath;
	// Pick the format from the metadata document that is present, so that
	// errors are about the right format rather than a fallback attempt.
	if (await store.has(`${dir}/zarr.json`)) {
		return { arr: await zarr.open.v3(loc, { kind: "array" }), format: 3 };
	}
	if (await store.has(`${dir}/.zarray`)) {
		return { arr: await zarr.open.v2(loc, { kind: "array" }), format: 2 };
	}
	throw new Error(`no zarr.json or .zarray found for array ${arrayPath}`);
}

async function readOne(store, arrayPath) {
	const { arr, format } = await openArray(store, arrayPath);
	let shape;
	let data;
	if (arr.shape.includes(0)) {
		// zarrita's get() throws on arrays with a zero-length dimension
		shape = arr.shape.slice();
		data = [];
	} else if (arr.shape.length === 0) {
		const result = await zarr.get(arr);
		// zarrita returns a bare scalar for 0-d arrays
		shape = [];
		data = [encodeValue(result)];
	} else {
		const result = await zarr.get(arr);
		shape = result.shape.slice();
		data = toCOrder(result);
	}
	return {
		shape,
		dtype: arr.dtype,
		zarr_format: format,
		chunk_shape: arr.chunks.slice(),
		fill_value: encodeValue(arr.fillValue),
		data,
	};
}

async function main(argv) {
	if (argv.length < 2) {
		throw new Error(
			"usage: node read.mjs <store_dir> <array_path> [<array_path> ...]",
		);
	}
	const storeDir = path.resolve(argv[0]);
	if (!fs.statSync(storeDir, { throwIfNoEntry: false })?.isDirectory()) {
		throw new Error(`store directory ${storeDir} does not exist`);
	}
	const store = new FileSystemStore(storeDir);
	const out = {};
	for (const raw of argv.slice(1)) {
		const arrayPath = normalisePath(raw);
		try {
			out[raw] = await readOne(store, arrayPath);
		} catch (err) {
			const cause = err?.cause ? ` (cause: ${err.cause?.message ?? err.cause})` : "";
			throw new Error(`${raw}: ${err?.message ?? err}${cause}`);
		}
	}
	process.stdout.write(`${JSON.stringify(out)}\n`);
}

process.on("unhandledRejection", (err) => {
	fail(err?.message ?? err);
	process.exit(1);
});

main(process.argv.slice(2)).catch((err) => fail(err?.message ?? err));
