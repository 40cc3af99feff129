// Writes Icechunk repositories with the official implementation
// (@earthmover/icechunk, native module) and zarrita, then opens each one again
// read-only and records what the official implementation reads back in
// <outdir>/expected.json: the test oracle of the package's Icechunk reader.
//
// usage: node make_repos.mjs <outdir> [--http-url URL] [--http-port N]
//   (run through run.sh, which builds and preloads the glibc shim)
//
// <outdir>/<name>/      one repository per name (see expected.json "repos")
// <outdir>/virtual/     files that virtual chunks point into with file:// URLs
// <outdir>/http/        the same for http:// URLs, served from <outdir>
// --http-url URL   an HTTP server already serving <outdir> (the tests start
//                  tools/testserver/server.js there first); without it this
//                  script starts that server itself for the generation only,
//                  on --http-port (default 0: any free port)
//
// expected.json: {generator, outdir, http_url, repos: {<name>: {spec,
// description, branches, tags, history: {<branch or tag>: [{id, parent,
// time, epoch, message}, ...] newest first}, refs: [{kind: "branch"|"tag"|
// "snapshot", name, snapshot, nodes: {<path>: group {type, attributes} |
// array {type, shape, chunk_shape, dtype, fill_value, attributes, values}
// | {error}}} | {kind, name, error}]}}} (nodes: {} for a snapshot without
// nodes, as the initial one of empty_v1 and empty_v2); corrupted copies also have
// corrupted: true and must_fail: the refs ("branch:main", "tag:v1") that
// any reader must refuse (other refs may fail with the official
// implementation, which reads more than it needs, yet read elsewhere).
// Array values are flat in C order; in R, aperm(array(values, rev(shape))).
// An "error" is the message the official implementation gave for that step
// (corrupted and stale repos; an array "error" means reading its values
// failed). The stale repository's http:// array reads without an error:
// the official implementation leaves the date check to the server
// (If-Unmodified-Since), which tools/testserver ignores. The "etag"
// repository also has s3_etag: the ETag its s3:// target must have.
// Everything but snapshot ids and times is deterministic (seeded).

import fs from "node:fs";
import path from "node:path";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import { Repository, Storage } from "@earthmover/icechunk";
import * as zarr from "zarrita";
import { flat } from "./values.mjs";
import { crc32c } from "../interop/crc32c.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));

// ---------------------------------------------------------------- arguments
const args = process.argv.slice(2);
let outdir = null;
let httpUrl = null;
let httpPort = 0;
for (let i = 0; i < args.length; i++) {
	if (args[i] === "--http-url") httpUrl = args[++i].replace(/\/+$/, "");
	else if (args[i] === "--http-port") httpPort = Number(args[++i]);
	else outdir = args[i];
}
if (!outdir) {
	console.error("usage: node make_repos.mjs <outdir> [--http-url URL] [--http-port N]");
	process.exit(2);
}
outdir = path.resolve(outdir);
fs.mkdirSync(outdir, { recursive: true });

// ------------------------------------------------------------- determinism
function rng(seed) { // mulberry32
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}
const rand = rng(20261126);
const randInt = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
// Doubles with short exact decimal forms, so JSON round trips them exactly.
const randF64 = () => Math.round((rand() * 2000 - 1000) * 1024) / 1024;

// A fixed modification time for virtual targets: Icechunk records seconds.
const VIRTUAL_MTIME = 1700000000;

// -------------------------------------------------------------- HTTP server
let server = null;
async function startServer() {
	server = spawn(process.execPath, [path.join(here, "..", "testserver", "server.js"), "--root", outdir,
		"--port", String(httpPort)], { stdio: ["pipe", "pipe", "inherit"] });
	const port = await new Promise((resolve, reject) => {
		let out = "";
		server.stdout.on("data", (d) => {
			out += d;
			const m = out.match(/listening (\d+)/);
			if (m) resolve(Number(m[1]));
		});
		server.on("exit", (code) => reject(new Error(`test server exited (${code})`)));
	});
	return `http://127.0.0.1:${port}`;
}
if (!httpUrl) httpUrl = await startServer();

// ------------------------------------------------------- virtual chunk files
const virtDir = path.join(outdir, "virtual");
const httpDir = path.join(outdir, "http");
fs.rmSync(virtDir, { recursive: true, force: true });
fs.rmSync(httpDir, { recursive: true, force: true });
fs.mkdirSync(virtDir);
fs.mkdirSync(httpDir);
const fileRoot = `file://${virtDir}/`;
const httpRoot = `${httpUrl}/http/`;

const zstd = (await zarr.registry.get("zstd")()).fromConfig({ level: 3, checksum: false });

// The virtual target: 64 bytes of header, then the pieces appended by
// `place` (each at a recorded offset), like a netCDF/HDF5 file's chunks.
const pieces = [Buffer.from("not zarr: a file whose byte ranges are chunks ".padEnd(64, "."))];
let targetSize = 64;
function place(bytes) {
	const offset = targetSize;
	pieces.push(Buffer.from(bytes));
	targetSize += bytes.length;
	return { offset, length: bytes.length };
}
const le = (ta) => new Uint8Array(ta.buffer, ta.byteOffset, ta.byteLength);

// ------------------------------------------------------------------ writing
function storageAt(name) {
	return Storage.newLocalFilesystem(path.join(outdir, name));
}
const containers = {
	[fileRoot]: { urlPrefix: fileRoot, store: { type: "LocalFileSystem", field0: virtDir } },
	[`${httpUrl}/`]: { urlPrefix: `${httpUrl}/`, store: { type: "Http", field0: { opts: {}, headers: {} } } },
};
const authorize = { [fileRoot]: null, [`${httpUrl}/`]: { type: "HttpAccess" } };

// Manifests of arrays named "split..." hold at most 3 chunks along any
// dimension, so that one array's chunk refs spread over several manifests.
const splitting = { splitting: { split_sizes: [[{ path_matches: { regex: "split" } }, [{ condition: "Any", num_chunks: 3 }]]] } };

async function createRepo(name, spec, { virtual = false, manifest = splitting } = {}) {
	fs.rmSync(path.join(outdir, name), { recursive: true, force: true });
	const config = { manifest, ...(virtual ? { virtualChunkContainers: containers } : {}) };
	const repo = await Repository.create(await storageAt(name), config, spec, virtual ? authorize : null);
	await repo.saveConfig();
	return repo;
}

const TA = { int32: Int32Array, float64: Float64Array, uint16: Uint16Array, int16: Int16Array, uint8: Uint8Array, float32: Float32Array };
function values(dtype, n, gen) {
	if (dtype === "bool") return new zarr.BoolArray(Array.from({ length: n }, gen));
	return TA[dtype].from({ length: n }, gen);
}
function cstride(shape) {
	const s = new Array(shape.length);
	let k = 1;
	for (let i = shape.length - 1; i >= 0; i--) { s[i] = k; k *= shape[i]; }
	return s;
}
async function setAll(arr, data, selection = null, shape = arr.shape) {
	await zarr.set(arr, selection, { data, shape, stride: cstride(shape) });
}
const zstdCodecs = [{ name: "bytes", configuration: { endian: "little" } }, { name: "zstd", configuration: { level: 3, checksum: false } }];

// The scenario shared by the spec 1 and spec 2 repositories: three commits
// on main, a tag, a branch with different data.
async function writeMain(name, spec) {
	const repo = await createRepo(name, spec);
	let s = await repo.writableSession("main");
	let root = zarr.root(s.store);
	await zarr.create(root, { attributes: { title: "icechunk oracle", spec, seed: 20261126 } });
	const grp = await zarr.create(root.resolve("grp"), { attributes: { nested: { a: 1, b: [1.5, "x"] }, unicode: "Zürich ✓" } });
	await zarr.create(root.resolve("grp/sub"), { attributes: { level: 2 } });
	// small chunks: stored inline in the manifest
	const i32 = await zarr.create(grp.resolve("int32"), { shape: [5, 7], chunkShape: [2, 3], dtype: "int32", fillValue: 0,
		attributes: { units: "counts" } });
	await setAll(i32, values("int32", 35, () => randInt(-(2 ** 31) + 1, 2 ** 31 - 1)));
	// compressed 2400-byte chunks: stored natively under chunks/
	const f64 = await zarr.create(root.resolve("float64"), { shape: [40, 30], chunkShape: [20, 15], dtype: "float64",
		fillValue: 0, codecs: zstdCodecs });
	await setAll(f64, values("float64", 1200, randF64));
	const u16 = await zarr.create(root.resolve("uint16"), { shape: [100], chunkShape: [16], dtype: "uint16", fillValue: 7 });
	await setAll(u16, values("uint16", 100, () => randInt(0, 65535)));
	const b = await zarr.create(root.resolve("bool"), { shape: [3, 4], chunkShape: [2, 2], dtype: "bool", fillValue: false });
	await setAll(b, values("bool", 12, () => rand() < 0.5));
	// fill value 42, only the first of four chunks written
	const fill = await zarr.create(root.resolve("fill"), { shape: [6, 6], chunkShape: [3, 3], dtype: "int32", fillValue: 42 });
	await setAll(fill, values("int32", 9, () => randInt(-100, 100)), [zarr.slice(0, 3), zarr.slice(0, 3)], [3, 3]);
	await writeSharded(s.store, "sharded");
	// 25 chunks, manifests split 3 x 3
	const split = await zarr.create(root.resolve("split"), { shape: [10, 10], chunkShape: [2, 2], dtype: "int32", fillValue: 0 });
	await setAll(split, values("int32", 100, () => randInt(-99999, 99999)));
	const c1 = await s.commit("create groups and arrays");

	s = await repo.writableSession("main");
	root = zarr.root(s.store);
	const i32b = await zarr.open.v3(root.resolve("grp/int32"), { kind: "array" });
	await setAll(i32b, values("int32", 6, () => randInt(-1000, 1000)), [zarr.slice(1, 3), zarr.slice(2, 5)], [2, 3]);
	const f64b = await zarr.open.v3(root.resolve("float64"), { kind: "array" });
	await setAll(f64b, values("float64", 20 * 15, randF64), [zarr.slice(20, 40), zarr.slice(0, 15)], [20, 15]);
	const c2 = await s.commit("update int32 and float64");
	await repo.createTag("v1", c2);
	await repo.createBranch("dev", c2);

	s = await repo.writableSession("main");
	root = zarr.root(s.store);
	await s.store.set("zarr.json", Buffer.from(JSON.stringify({ zarr_format: 3, node_type: "group",
		attributes: { title: "icechunk oracle, third commit", spec, seed: 20261126 } })));
	await s.store.deleteDir("bool");
	const c3 = await s.commit("new root attributes; delete bool");

	// spec 2 only: amend that commit; main's history skips the replaced
	// snapshot, which can still be opened by its id
	if (spec >= 2) {
		s = await repo.writableSession("main");
		await s.store.set("grp/sub/zarr.json", Buffer.from(JSON.stringify({ zarr_format: 3, node_type: "group",
			attributes: { level: 2, amended: true } })));
		await s.amend("new root attributes; delete bool; grp/sub attributes (amended)");
	}

	s = await repo.writableSession("dev");
	root = zarr.root(s.store);
	const u16d = await zarr.open.v3(root.resolve("uint16"), { kind: "array" });
	await setAll(u16d, values("uint16", 100, () => randInt(0, 65535)));
	const only = await zarr.create(root.resolve("dev_only"), { shape: [3], chunkShape: [3], dtype: "float64", fillValue: 0 });
	await setAll(only, Float64Array.from([0.5, -1.25, 1e10]));
	await s.commit("dev: new uint16 values and dev_only");

	// spec 2 only: move a node (it keeps its id and chunks)
	let moved = false;
	if (spec >= 2) {
		s = await repo.rearrangeSession("dev");
		await s.moveNode("/dev_only", "/grp/dev_only_moved");
		await s.commit("dev: move dev_only to grp/dev_only_moved");
		moved = true;
	}
	return { repo, first: c1, amended: c3, moved };
}

// zarrita cannot write sharded arrays: write the metadata with zarrita and
// each shard by hand (inner chunks zstd-compressed, index with CRC-32C at
// the end, one inner chunk left empty to read as the fill value).
async function writeSharded(store, key) {
	const shape = [64, 64], shard = [32, 32], inner = [8, 8];
	await zarr.create(zarr.root(store).resolve(key), { shape, chunkShape: shard, dtype: "int32", fillValue: -1,
		codecs: [{ name: "sharding_indexed", configuration: { chunk_shape: inner, codecs: zstdCodecs,
			index_codecs: [{ name: "bytes", configuration: { endian: "little" } }, { name: "crc32c" }],
			index_location: "end" } }] });
	const per = shard[0] / inner[0];
	for (let si = 0; si < 2; si++) for (let sj = 0; sj < 2; sj++) {
		const parts = [];
		const index = new BigUint64Array(per * per * 2);
		let at = 0;
		for (let ci = 0; ci < per; ci++) for (let cj = 0; cj < per; cj++) {
			const k = ci * per + cj;
			if (si === 1 && sj === 0 && k === 5) { index[2 * k] = index[2 * k + 1] = 0xffffffffffffffffn; continue; }
			const v = Int32Array.from({ length: inner[0] * inner[1] }, (_, e) => {
				const r = si * shard[0] + ci * inner[0] + Math.floor(e / inner[1]);
				const c = sj * shard[1] + cj * inner[1] + (e % inner[1]);
				return r * 1000 + c + randInt(0, 3);
			});
			const enc = await zstd.encode(le(v));
			parts.push(enc);
			index[2 * k] = BigInt(at);
			index[2 * k + 1] = BigInt(enc.length);
			at += enc.length;
		}
		const ib = le(index);
		const crc = Buffer.alloc(4);
		crc.writeUInt32LE(crc32c(ib));
		await store.set(`${key}/c/${si}/${sj}`, Buffer.concat([...parts.map((p) => Buffer.from(p)), Buffer.from(ib), crc]));
	}
}

// Virtual chunks: int16 raw chunks and zstd chunks in a target file, read
// through file:// and http:// URLs, with and without a recorded
// modification time; one array mixes virtual, inline and native chunks.
async function writeVirtual(name, spec) {
	const repo = await createRepo(name, spec, { virtual: true });
	const s = await repo.writableSession("main");
	const root = zarr.root(s.store);
	await zarr.create(root, { attributes: { kind: "virtual" } });
	const mtime = new Date(VIRTUAL_MTIME * 1000);
	for (const [arr, base] of [["vfile", fileRoot], ["vhttp", httpRoot]]) {
		await zarr.create(root.resolve(arr), { shape: [4, 8], chunkShape: [2, 4], dtype: "int16", fillValue: -7 });
		// chunks (0,0), (0,1) with a recorded mtime, (1,0) without, (1,1) missing
		for (const [ci, cj, checked] of [[0, 0, true], [0, 1, true], [1, 0, false]]) {
			const r = place(le(Int16Array.from({ length: 8 }, () => randInt(-32768, 32767))));
			await s.store.setVirtualRef(`${arr}/c/${ci}/${cj}`, `${base}target.bin`, r.offset, r.length, null,
				checked ? mtime : null, true);
		}
	}
	const mixed = await zarr.create(root.resolve("mixed"), { shape: [600], chunkShape: [200], dtype: "int32", fillValue: 0,
		codecs: zstdCodecs });
	await setAll(mixed, values("int32", 200, () => randInt(-1e9, 1e9)), [zarr.slice(0, 200)], [200]); // native
	await setAll(mixed, Int32Array.from({ length: 200 }, () => 5), [zarr.slice(200, 400)], [200]); // inline
	const r = place(await zstd.encode(le(Int32Array.from({ length: 200 }, () => randInt(-50, 50)))));
	await s.store.setVirtualRef("mixed/c/2", `${fileRoot}target.bin`, r.offset, r.length, null, mtime, true);
	await s.commit("virtual chunks");
	return { repo };
}

// Many virtual chunks with the manifest's virtual locations compressed
// (a zstd dictionary trained on the URLs; spec 2).
async function writeVirtualCompressed(name) {
	const repo = await createRepo(name, 2, { virtual: true,
		manifest: { virtual_chunk_location_compression: { min_num_chunks: 4 } } });
	const s = await repo.writableSession("main");
	const root = zarr.root(s.store);
	await zarr.create(root, { attributes: { kind: "virtual, compressed locations" } });
	await zarr.create(root.resolve("vmany"), { shape: [96, 4], chunkShape: [2, 4], dtype: "uint8", fillValue: 0 });
	for (let i = 0; i < 48; i++) {
		const r = place(Uint8Array.from({ length: 8 }, () => randInt(0, 255)));
		await s.store.setVirtualRef(`vmany/c/${i}/0`, `${i % 3 === 2 ? httpRoot : fileRoot}target.bin`, r.offset, r.length,
			null, i % 2 ? new Date(VIRTUAL_MTIME * 1000) : null, true);
	}
	await s.commit("48 virtual chunks");
	return { repo };
}

function writeTargets() {
	for (const d of [virtDir, httpDir]) {
		const f = path.join(d, "target.bin");
		fs.writeFileSync(f, Buffer.concat(pieces));
		fs.utimesSync(f, VIRTUAL_MTIME, VIRTUAL_MTIME);
	}
}

// A virtual chunk whose target changes after the commit: the recorded
// modification time no longer matches (file:// and http://).
async function writeStale(name) {
	const repo = await createRepo(name, 2, { virtual: true });
	const s = await repo.writableSession("main");
	const root = zarr.root(s.store);
	await zarr.create(root, { attributes: { kind: "stale" } });
	const data = le(Uint8Array.from({ length: 64 }, () => randInt(0, 255)));
	for (const [arr, dir, base] of [["vfile", virtDir, fileRoot], ["vhttp", httpDir, httpRoot]]) {
		fs.writeFileSync(path.join(dir, "stale.bin"), data);
		fs.utimesSync(path.join(dir, "stale.bin"), VIRTUAL_MTIME, VIRTUAL_MTIME);
		await zarr.create(root.resolve(arr), { shape: [8], chunkShape: [4], dtype: "uint8", fillValue: 0 });
		await s.store.setVirtualRef(`${arr}/c/0`, `${base}stale.bin`, 8, 4, null, new Date(VIRTUAL_MTIME * 1000), true);
		await s.store.setVirtualRef(`${arr}/c/1`, `${base}stale.bin`, 16, 4, null, new Date(VIRTUAL_MTIME * 1000), true);
	}
	await zarr.create(root.resolve("vmissing"), { shape: [4], chunkShape: [4], dtype: "uint8", fillValue: 0 });
	await s.store.setVirtualRef("vmissing/c/0", `${fileRoot}no-such-file.bin`, 0, 4, null, null, true);
	await s.commit("virtual chunks, targets modified afterwards");
	for (const dir of [virtDir, httpDir]) {
		const f = path.join(dir, "stale.bin");
		const b = fs.readFileSync(f);
		b[9] ^= 0xff;
		fs.writeFileSync(f, b);
		fs.utimesSync(f, VIRTUAL_MTIME + 3600, VIRTUAL_MTIME + 3600);
	}
	return { repo };
}

// Virtual chunks that record an ETag instead of a modification time: `ok`
// (http://, target unchanged), `changed` (http://, target rewritten after
// the commit with its modification time set back: only the ETag tells) and
// `vs3` (s3://private/icechunk-etag/etag.bin, ETag the MD5 an S3 server gives
// `http/etag_s3.bin`; no container serves it here: the R tests upload it).
async function writeEtag(name) {
	const repo = await createRepo(name, 2, { virtual: true });
	const s = await repo.writableSession("main");
	const root = zarr.root(s.store);
	await zarr.create(root, { attributes: { kind: "etag" } });
	const data = le(Uint8Array.from({ length: 64 }, () => randInt(0, 255)));
	for (const arr of ["ok", "changed"]) {
		const f = path.join(httpDir, `etag_${arr}.bin`);
		fs.writeFileSync(f, data);
		fs.utimesSync(f, VIRTUAL_MTIME, VIRTUAL_MTIME);
		const res = await fetch(`${httpRoot}etag_${arr}.bin`, { headers: { Range: "bytes=0-0" } });
		const etag = res.headers.get("etag");
		if (!etag) throw new Error("the HTTP test server sends no ETag");
		await zarr.create(root.resolve(arr), { shape: [8], chunkShape: [4], dtype: "uint8", fillValue: 0 });
		await s.store.setVirtualRef(`${arr}/c/0`, `${httpRoot}etag_${arr}.bin`, 8, 4, etag, null, true);
		await s.store.setVirtualRef(`${arr}/c/1`, `${httpRoot}etag_${arr}.bin`, 16, 4, etag, null, true);
	}
	fs.writeFileSync(path.join(httpDir, "etag_s3.bin"), data);
	const md5 = `"${createHash("md5").update(data).digest("hex")}"`;
	await zarr.create(root.resolve("vs3"), { shape: [8], chunkShape: [4], dtype: "uint8", fillValue: 0 });
	await s.store.setVirtualRef("vs3/c/0", "s3://private/icechunk-etag/etag.bin", 8, 4, md5, null, false);
	await s.store.setVirtualRef("vs3/c/1", "s3://private/icechunk-etag/etag.bin", 16, 4, md5, null, false);
	await s.commit("virtual chunks with ETags");
	const f = path.join(httpDir, "etag_changed.bin");
	const b = fs.readFileSync(f);
	b[9] ^= 0xff;
	fs.writeFileSync(f, b);
	fs.utimesSync(f, VIRTUAL_MTIME, VIRTUAL_MTIME);
	return { repo, s3_etag: md5 };
}

// ------------------------------------------------------------------ reading
// Everything below is what the official implementation reads back from a
// fresh read-only open.
async function openRepo(name) {
	return Repository.open(await storageAt(name), null, authorize);
}

const msg = (e) => String(e && e.message ? e.message : e).trim();

// The nodes of a session: found by listing, or (for a corrupted copy, whose
// listing may fail) the paths the intact repository has at the same ref.
async function readNodes(session, knownPaths = null) {
	let paths = knownPaths;
	if (!paths) {
		paths = (await session.store.list()).filter((k) => k === "zarr.json" || k.endsWith("/zarr.json"))
			.map((k) => (k === "zarr.json" ? "/" : "/" + k.slice(0, -"/zarr.json".length))).sort();
	}
	const nodes = {};
	const root = zarr.root(session.store);
	for (const p of paths) {
		const key = p === "/" ? "zarr.json" : `${p.slice(1)}/zarr.json`;
		try {
			const node = await zarr.open.v3(p === "/" ? root : root.resolve(p.slice(1)));
			if (node instanceof zarr.Array) {
				const meta = JSON.parse(new TextDecoder().decode(await session.store.get(key)));
				nodes[p] = { type: "array", shape: node.shape, chunk_shape: node.chunks, dtype: node.dtype,
					fill_value: meta.fill_value, attributes: node.attrs };
				try {
					nodes[p].values = flat(await zarr.get(node), node.dtype);
				} catch (e) {
					nodes[p].error = msg(e);
				}
			} else {
				nodes[p] = { type: "group", attributes: node.attrs };
			}
		} catch (e) {
			nodes[p] = { error: msg(e) };
		}
	}
	return nodes;
}

async function readRef(name, kind, ref, knownPaths) {
	const out = { kind, name: ref };
	try {
		const repo = await openRepo(name);
		const opt = kind === "branch" ? { branch: ref } : kind === "tag" ? { tag: ref } : { snapshotId: ref };
		const session = await repo.readonlySession(opt);
		out.snapshot = session.snapshotId;
		out.nodes = await readNodes(session, knownPaths);
	} catch (e) {
		out.error = msg(e);
	}
	return out;
}

// "2026-11-26T11:22:40.145956+00:00": seconds since 1970 to the microsecond
function epoch(iso) {
	const frac = iso.match(/\.(\d+)/)?.[1] ?? "0";
	return Date.parse(iso.replace(/\.\d+/, "")) / 1000 + Number("0." + frac);
}

async function history(repo, opt) {
	return (await repo.ancestry(opt)).map((h) => ({ id: h.id, parent: h.parentId ?? null, time: h.writtenAt,
		epoch: epoch(h.writtenAt), message: h.message }));
}

// What the official implementation reads of repository `name`. For a
// corrupted copy, `source` (the description of the intact repository) says
// which refs and nodes to try, since listing them may be what fails.
async function describe(name, spec, description, { snapshots = [], source = null } = {}) {
	const out = { spec, description };
	let repo = null;
	try {
		repo = await openRepo(name);
	} catch (e) {
		out.open_error = msg(e);
	}
	for (const what of ["branches", "tags"]) {
		try {
			out[what] = (await (what === "branches" ? repo.listBranches() : repo.listTags())).sort();
		} catch (e) {
			out[`${what}_error`] = msg(e);
		}
	}
	const branches = source ? source.branches : out.branches ?? [];
	const tags = source ? source.tags : out.tags ?? [];
	const known = (kind, ref) => source?.refs.find((r) => r.kind === kind && r.name === ref)?.nodes;
	const paths = (kind, ref) => { const n = known(kind, ref); return n ? Object.keys(n) : null; };
	out.history = {};
	out.refs = [];
	for (const [kind, ref] of [...branches.map((b) => ["branch", b]), ...tags.map((t) => ["tag", t]),
		...(source ? source.refs.filter((r) => r.kind === "snapshot").map((r) => r.name) : snapshots).map((i) => ["snapshot", i])]) {
		if (kind !== "snapshot") {
			const hk = kind === "branch" ? ref : `tag:${ref}`;
			try {
				if (!repo) throw new Error(out.open_error);
				out.history[hk] = await history(repo, kind === "branch" ? { branch: ref } : { tag: ref });
			} catch (e) {
				out.history[hk] = { error: msg(e) };
			}
		}
		out.refs.push(await readRef(name, kind, ref, paths(kind, ref)));
	}
	return out;
}

// --------------------------------------------------------------- corruption
function copyRepo(from, to) {
	fs.rmSync(path.join(outdir, to), { recursive: true, force: true });
	fs.cpSync(path.join(outdir, from), path.join(outdir, to), { recursive: true });
	return path.join(outdir, to);
}
const corruptRand = rng(7);
const garbage = (n) => Buffer.from(Uint8Array.from({ length: n }, () => Math.floor(corruptRand() * 256)));
const HEADER = 39; // magic (12) + implementation (24) + spec version + file type + compression

// ---------------------------------------------------------------------- main
const t0 = Date.now();
const expected = { generator: { icechunk: "2.2.2", zarrita: "0.7.5", node: process.version }, outdir, http_url: httpUrl, repos: {} };
try {
	const made = {};
	made.v1 = await writeMain("v1", 1);
	made.v2 = await writeMain("v2", 2);
	made.virtual_v1 = await writeVirtual("virtual_v1", 1);
	made.virtual_v2 = await writeVirtual("virtual_v2", 2);
	made.virtual_compressed = await writeVirtualCompressed("virtual_compressed");
	writeTargets();
	made.stale = await writeStale("stale");
	made.etag = await writeEtag("etag");
	// no commit: only the initial snapshot ("Repository initialized", no nodes)
	for (const spec of [1, 2]) {
		const repo = await createRepo(`empty_v${spec}`, spec);
		made[`empty_v${spec}`] = { repo, first: (await repo.ancestry({ branch: "main" })).at(-1).id };
	}

	// head snapshot ids of main, for the corruptions
	const heads = {};
	for (const n of ["v1", "v2"]) heads[n] = await made[n].repo.lookupBranch("main");

	const corrupt = [];
	const snapFile = (dir, id) => path.join(dir, "snapshots", id);
	for (const [src, spec] of [["v1", 1], ["v2", 2]]) {
		let d = copyRepo(src, `${src}_truncated_snapshot`);
		let f = snapFile(d, heads[src]);
		fs.truncateSync(f, Math.floor(fs.statSync(f).size * 0.6));
		corrupt.push([`${src}_truncated_snapshot`, spec, "main's head snapshot cut to 60% of its size", ["branch:main"]]);

		d = copyRepo(src, `${src}_bad_magic`);
		f = snapFile(d, heads[src]);
		let b = fs.readFileSync(f);
		b.write("ICEBERG!", 0, "latin1");
		fs.writeFileSync(f, b);
		corrupt.push([`${src}_bad_magic`, spec, "main's head snapshot with wrong magic bytes", ["branch:main"]]);

		d = copyRepo(src, `${src}_garbage_after_header`);
		f = snapFile(d, heads[src]);
		b = fs.readFileSync(f);
		fs.writeFileSync(f, Buffer.concat([b.subarray(0, HEADER), garbage(b.length - HEADER)]));
		corrupt.push([`${src}_garbage_after_header`, spec, "main's head snapshot: valid header, random bytes after it", ["branch:main"]]);

		d = copyRepo(src, `${src}_missing_manifests`);
		for (const m of fs.readdirSync(path.join(d, "manifests"))) fs.rmSync(path.join(d, "manifests", m));
		corrupt.push([`${src}_missing_manifests`, spec, "every manifest object deleted", []]);

		d = copyRepo(src, `${src}_garbage_manifests`);
		for (const m of fs.readdirSync(path.join(d, "manifests"))) {
			f = path.join(d, "manifests", m);
			b = fs.readFileSync(f);
			fs.writeFileSync(f, Buffer.concat([b.subarray(0, HEADER), garbage(b.length - HEADER)]));
		}
		corrupt.push([`${src}_garbage_manifests`, spec, "every manifest: valid header, random bytes after it", []]);

		d = copyRepo(src, `${src}_missing_chunks`);
		for (const c of fs.readdirSync(path.join(d, "chunks"))) fs.rmSync(path.join(d, "chunks", c));
		corrupt.push([`${src}_missing_chunks`, spec, "every native chunk object deleted", []]);
	}
	{
		const d = copyRepo("v1", "v1_bad_ref");
		fs.writeFileSync(path.join(d, "refs", "branch.main", "ref.json"), '{"snapshot": ');
		corrupt.push(["v1_bad_ref", 1, "main's ref.json is not JSON", ["branch:main"]]);
		const d2 = copyRepo("v2", "v2_truncated_repo_object");
		const f = path.join(d2, "repo");
		fs.truncateSync(f, Math.floor(fs.statSync(f).size / 2));
		corrupt.push(["v2_truncated_repo_object", 2, "the repo object cut in half", ["branch:main", "branch:dev", "tag:v1"]]);
	}

	expected.repos.v1 = await describe("v1", 1, "spec 1: three commits on main, tag v1, branch dev; split manifests", { snapshots: [made.v1.first] });
	expected.repos.v2 = await describe("v2", 2, "spec 2: three commits on main (the last amended), tag v1, branch dev with a moved node; split manifests", { snapshots: [made.v2.first, made.v2.amended] });
	expected.repos.virtual_v1 = await describe("virtual_v1", 1, "spec 1: virtual chunks (file:// and http://), mixed array");
	expected.repos.virtual_v2 = await describe("virtual_v2", 2, "spec 2: virtual chunks (file:// and http://), mixed array");
	expected.repos.virtual_compressed = await describe("virtual_compressed", 2,
		"spec 2: 48 virtual chunks, virtual locations compressed in the manifest");
	expected.repos.stale = await describe("stale", 2, "virtual targets modified after the commit (recorded mtime older); one target missing");
	expected.repos.etag = { ...(await describe("etag", 2,
		"virtual chunks recording ETags: ok (unchanged), changed (rewritten, mtime set back), vs3 (s3://, no container)")),
		s3_etag: made.etag.s3_etag };
	for (const spec of [1, 2])
		expected.repos[`empty_v${spec}`] = await describe(`empty_v${spec}`, spec, `spec ${spec}: no commit, only the initial snapshot (no nodes)`,
			{ snapshots: [made[`empty_v${spec}`].first] });
	for (const [name, spec, what, mustFail] of corrupt) {
		const source = expected.repos[`v${spec}`];
		expected.repos[name] = { ...(await describe(name, spec, what, { source })), corrupted: true, must_fail: mustFail };
	}
	for (const [name, r] of Object.entries(expected.repos)) {
		const chunks = path.join(outdir, name, "chunks");
		r.native_chunk_objects = fs.existsSync(chunks) ? fs.readdirSync(chunks).length : 0;
	}
} finally {
	if (server) server.kill();
}
expected.seconds = (Date.now() - t0) / 1000;
fs.writeFileSync(path.join(outdir, "expected.json"), JSON.stringify(expected));
console.log(JSON.stringify({ ok: true, outdir, repos: Object.keys(expected.repos).length, seconds: expected.seconds }));
