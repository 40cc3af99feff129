// Copies a plain Zarr v3 directory store into a new Icechunk repository with
// the official implementation, in one commit, byte for byte: every chunk
// (shards included) becomes an inline or native chunk of the repository, so
// that the two hold the very same array (bench/icechunk.R compares reading
// them). Prints {"ok", "snapshot", "keys", "native_chunk_objects"}.
//
// usage: bash run.sh import_store.mjs <zarr_dir> <repo_dir> [--spec 1|2]

import fs from "node:fs";
import path from "node:path";
import { Repository, Storage } from "@earthmover/icechunk";

const args = process.argv.slice(2);
let spec = 2;
const pos = [];
for (let i = 0; i < args.length; i++) {
	if (args[i] === "--spec") spec = Number(args[++i]);
	else pos.push(args[i]);
}
if (pos.length !== 2) {
	console.error("usage: node import_store.mjs <zarr_dir> <repo_dir> [--spec 1|2]");
	process.exit(2);
}
const [src, dest] = pos.map((p) => path.resolve(p));
if (!fs.existsSync(path.join(src, "zarr.json"))) {
	console.error(`${src} is not a Zarr v3 store (no zarr.json at its top)`);
	process.exit(2);
}
fs.rmSync(dest, { recursive: true, force: true });

const keys = fs.readdirSync(src, { recursive: true })
	.filter((k) => fs.statSync(path.join(src, k)).isFile())
	.map((k) => k.split(path.sep).join("/"))
	.sort();
const repo = await Repository.create(await Storage.newLocalFilesystem(dest), null, spec);
const session = await repo.writableSession("main");
// metadata first: Icechunk needs each node before its chunks
const order = (k) => (k.endsWith("zarr.json") ? k.split("/").length : 1000);
for (const k of [...keys].sort((a, b) => order(a) - order(b) || (a < b ? -1 : 1))) {
	await session.store.set(k, fs.readFileSync(path.join(src, k)));
}
const snapshot = await session.commit(`import of ${path.basename(src)}`);
const chunks = path.join(dest, "chunks");
console.log(JSON.stringify({ ok: true, snapshot, keys: keys.length,
	native_chunk_objects: fs.existsSync(chunks) ? fs.readdirSync(chunks).length : 0 }));
