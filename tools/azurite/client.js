// An independent Azure Blob client for the zarr R package's Azure tests
// (Microsoft's @azure/storage-blob, not part of the R package):
//   node client.js ENDPOINT ACCOUNT KEY setup
//     creates the containers "private" and "public" (public read access) and
//     prints {"sas_read": ..., "sas_write": ...}: SAS tokens for "private"
//     that allow reading and listing, and everything;
//   node client.js ENDPOINT ACCOUNT KEY put CONTAINER BLOB FILE
//   node client.js ENDPOINT ACCOUNT KEY get CONTAINER BLOB FILE
//     write a blob from a file, read one into a file;
//   node client.js ENDPOINT ACCOUNT KEY blocks CONTAINER BLOB
//     prints the sizes of the committed blocks of a blob as JSON;
//   node client.js ENDPOINT ACCOUNT KEY list CONTAINER PREFIX
//     prints the blob names below PREFIX as JSON.
"use strict";
const fs = require("fs");
const {
  BlobServiceClient, StorageSharedKeyCredential, ContainerSASPermissions,
  generateBlobSASQueryParameters,
} = require("@azure/storage-blob");

async function main() {
  const [endpoint, account, key, cmd, ...args] = process.argv.slice(2);
  const cred = new StorageSharedKeyCredential(account, key);
  const service = new BlobServiceClient(endpoint, cred);
  if (cmd === "setup") {
    await service.getContainerClient("private").createIfNotExists();
    await service.getContainerClient("public").createIfNotExists({ access: "container" });
    const sas = (perms) => generateBlobSASQueryParameters({
      containerName: "private",
      permissions: ContainerSASPermissions.parse(perms),
      startsOn: new Date(Date.now() - 5 * 60 * 1000),
      expiresOn: new Date(Date.now() + 3600 * 1000),
    }, cred).toString();
    process.stdout.write(JSON.stringify({ sas_read: sas("rl"), sas_write: sas("racwdl") }) + "\n");
  } else if (cmd === "put") {
    const [container, blob, file] = args;
    await service.getContainerClient(container).getBlockBlobClient(blob).uploadData(fs.readFileSync(file));
  } else if (cmd === "get") {
    const [container, blob, file] = args;
    const buf = await service.getContainerClient(container).getBlobClient(blob).downloadToBuffer();
    fs.writeFileSync(file, buf);
  } else if (cmd === "blocks") {
    const [container, blob] = args;
    const l = await service.getContainerClient(container).getBlockBlobClient(blob).getBlockList("committed");
    process.stdout.write(JSON.stringify((l.committedBlocks || []).map((b) => b.size)) + "\n");
  } else if (cmd === "list") {
    const [container, prefix] = args;
    const names = [];
    for await (const b of service.getContainerClient(container).listBlobsFlat({ prefix })) names.push(b.name);
    process.stdout.write(JSON.stringify(names) + "\n");
  } else {
    throw new Error("unknown command " + cmd);
  }
}

main().catch((e) => {
  process.stderr.write(String(e && e.message ? e.message : e) + "\n");
  process.exit(1);
});
