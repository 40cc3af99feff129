// Reads a local Icechunk repository with the official implementation
// (@earthmover/icechunk, native module) and zarrita, and prints what it
// reads as JSON: the oracle of the package's Icechunk writer.
//
// usage: bash tools/icechunk/run.sh read_repo.mjs <repo_dir | s3://bucket/prefix> [--write <branch> <path> <int>]
//   (run through run.sh, which builds and preloads the glibc shim)
//
// Output: {branches: [...], tags: [...], history: {<branch>: [{id, parent,
// message}, ...] newest first}, refs: {"branch:<b>" | "tag:<t>": {snapshot,
// nodes: {<path>: {type: "group", attributes} | {type: "array", shape,
// chunk_shape, dtype, attributes, values (flat, C order)}}}}}.
// --write: before reading, commit with the official implementation to
// <branch>: a group at <path> with attribute {"written_by": "icechunk",
// "n": <int>} (the writer's tests then read that commit back in R).
import { Repository, Storage } from "@earthmover/icechunk";
import * as zarr from "zarrita";
import { flat } from "./values.mjs";

const args = process.argv.slice(2);
const dir = args[0];
if (!dir) {
	console.error("usage: node read_repo.mjs <repo_dir> [--write <branch> <path> <int>]");
	process.exit(2);
}

async function readNodes(session) {
	const keys = await session.store.list();
	const paths = keys.filter((k) => k === "zarr.json" || k.endsWith("/zarr.json"))
		.map((k) => (k === "zarr.json" ? "/" : "/" + k.slice(0, -"/zarr.json".length))).sort();
	const nodes = {};
	const root = zarr.root(session.store);
	for (const p of paths) {
		const node = await zarr.open.v3(p === "/" ? root : root.resolve(p.slice(1)));
		if (node instanceof zarr.Array) {
			nodes[p] = { type: "array", shape: node.shape, chunk_shape: node.chunks, dtype: node.dtype,
				attributes: node.attrs, values: flat(await zarr.get(node), node.dtype) };
		} else {
			nodes[p] = { type: "group", attributes: node.attrs };
		}
	}
	return nodes;
}

// s3://bucket/prefix: through an S3-compatible server (path-style, plain
// HTTP allowed) at $ICECHUNK_S3_ENDPOINT with the static credentials in
// $ICECHUNK_S3_KEY and $ICECHUNK_S3_SECRET (the package's S3 test server).
function storage() {
	const m = /^s3:\/\/([^/]+)\/?(.*)$/.exec(dir);
	if (!m) return Storage.newLocalFilesystem(dir);
	const env = process.env;
	return Storage.newS3(m[1], m[2] || null,
		{ type: "Static", field0: { accessKeyId: env.ICECHUNK_S3_KEY, secretAccessKey: env.ICECHUNK_S3_SECRET } },
		{ endpointUrl: env.ICECHUNK_S3_ENDPOINT, allowHttp: true, forcePathStyle: true, region: env.ICECHUNK_S3_REGION || "us-east-1" });
}
const open = async () => Repository.open(await storage());

if (args[1] === "--write") {
	const [branch, p, n] = args.slice(2);
	const repo = await open();
	const session = await repo.writableSession(branch);
	await zarr.create(zarr.root(session.store).resolve(p.slice(1)), { attributes: { written_by: "icechunk", n: Number(n) } });
	await session.commit(`icechunk wrote ${p}`);
}

const repo = await open();
const out = { branches: (await repo.listBranches()).sort(), tags: (await repo.listTags()).sort(), history: {}, refs: {} };
for (const b of out.branches) {
	out.history[b] = (await repo.ancestry({ branch: b })).map((h) => ({ id: h.id, parent: h.parentId ?? null, message: h.message }));
}
for (const [kind, names] of [["branch", out.branches], ["tag", out.tags]]) {
	for (const name of names) {
		const session = await repo.readonlySession(kind === "branch" ? { branch: name } : { tag: name });
		out.refs[`${kind}:${name}`] = { snapshot: session.snapshotId, nodes: await readNodes(session) };
	}
}
process.stdout.write(JSON.stringify(out));
