#!/usr/bin/env node
// A static HTTP/1.1 file server with injectable faults, for the package's
// HTTP tests and remote benchmarks. Node.js >= 18, no npm packages.
//
// usage: node tools/testserver/server.js --root DIR [--port 0] [--host 127.0.0.1] [--no-stdin]
//
// Binds a loopback address only and prints exactly "listening <port>" on
// stdout once it accepts connections. When its stdin is a pipe or a socket
// (as when a test starts it), it exits when that closes, so a test process
// that dies never leaves it behind; --no-stdin turns that off. Any other
// stdin (/dev/null, a terminal, a file) is left alone: run it in the
// background with `node server.js --root DIR </dev/null &` and stop it with
// SIGTERM. It always exits on SIGTERM / SIGINT.
//
// Files: GET /<path> serves the file <DIR>/<path> (the path percent-decoded
// segment by segment, so UTF-8 names and names with spaces work). "." and
// ".." segments, encoded slashes, NUL bytes and anything resolving outside
// DIR are refused (400); missing files and directories answer 404 (there is
// no directory listing). The query string is ignored for the lookup but
// recorded. Only GET is served: any other method (HEAD included) gets 405
// and is counted and logged like every other request.
//
// Ranges (RFC 9110, one range per request): "bytes=a-b", "bytes=a-" and
// "bytes=-n" answer 206 with Content-Range and Content-Length; a range
// starting at or past the end (or "bytes=-0") answers 416 with
// "Content-Range: bytes */<size>". A Range header that is not a single valid
// bytes range is ignored (200 with the whole file), as RFC 9110 allows.
//
// Validators: every file answer carries Last-Modified and an ETag made of
// the file's size, modification and change times (so rewriting a file
// changes it even when its modification time is set back). A request with
// If-Match that names no current ETag (and is not "*") answers 412; quotes
// and weak markers are not compared.
//
// Fault profiles: when the first path segment contains "=", it is a
// comma-separated list of options for this request and the rest of the path
// is the file path, e.g. /latency=20,fail=3,retryafter=1/store.zarr/zarr.json.
// Each option value is percent-decoded on its own (write "," as %2C and "/"
// as %2F inside a regular expression). Options:
//   latency=MS    wait MS milliseconds before answering (every request)
//   fail=N        every Nth request of this profile answers `status`
//   status=CODE   the status of those failures (default 503)
//   failCODE=N    shorthand for fail=N,status=CODE (fail503=3)
//   retryafter=S  add "Retry-After: S" to those failures
//   truncate=N    every Nth response sends its headers and half its body,
//                 then destroys the connection
//   norange=1     ignore Range headers (200 with the whole file)
//   badrange=N    every Nth 206 response claims a Content-Range whose start
//                 is off by one (the body is the requested range)
//   hang=N        every Nth request is never answered; the connection stays
//                 open until the client leaves
//   notfound=RE   file paths matching the regular expression answer 404
//   redirect=URL  answer "302 Found" with "Location: URL<file path>[?query]"
//                 (write the URL percent-encoded: redirect=http%3A%2F%2Flocalhost%3A8080)
//   encoding=NAME send the file as it is with "Content-Encoding: NAME" (a
//                 gzip file served so is a decompression bomb for a client
//                 that inflates what it receives)
//   overlong=N    append N bytes of 'X' to every body, Content-Length included
//                 (a 206 then holds more than its Content-Range says)
//   short=N       drop the last N bytes of every body, Content-Length included
//                 (a 206 then holds less than its Content-Range says)
//   endless=LEN   answer 200 with an endless body of zeros (never the file),
//                 with "Content-Length: LEN", or chunked when LEN is 0
//   only=RE       the options above apply only to file paths matching RE
//                 (other requests of the profile are served normally and do
//                 not advance its counters)
// "Every Nth" counts the requests of that exact profile string (the first
// path segment) since the start or the last /_reset, from 1: with fail=3 the
// 3rd, 6th, 9th, ... requests fail. A failing request is neither truncated
// nor hung. File paths that the regular expressions see are the decoded
// paths below DIR with a leading "/", e.g. "/store.zarr/a/c/0/0".
//
// Control endpoints (not counted, not logged, no faults):
//   GET /_stats  JSON {requests, bytes, connections, methods: {GET: n, ...},
//                log: [{method, path, query, range, status, bytes, time, ...}]}
//                requests: requests received; bytes: response body bytes
//                sent; connections: TCP connections that carried at least
//                one such request; log: the last 10000 requests (path
//                decoded, including the profile segment; query without "?";
//                range: the Range header or null; status 0: never answered;
//                time: milliseconds since the server started, on arrival)
//                Log entries also carry host (the Host header), auth (an
//                Authorization header was sent), amztoken (an
//                x-amz-security-token header was sent), acceptencoding
//                (the Accept-Encoding header or null) and ifmatch (the
//                If-Match header or null).
//   GET /_reset  clears the statistics, the log, the fault counters and the
//                default profile
//   GET /_default?PROFILE  sets the fault profile of requests that have none
//                (their first path segment holds no "="), e.g. for an S3
//                client, whose URLs start with the bucket;
//                /_default? with nothing clears it
'use strict';

const http = require('http');
const fs = require('fs');
const path = require('path');

// ---------------------------------------------------------------- arguments

function usage(msg) {
  if (msg) process.stderr.write(`server.js: ${msg}\n`);
  process.stderr.write('usage: node server.js --root DIR [--port 0] [--host 127.0.0.1] [--no-stdin]\n');
  process.exit(2);
}

const opts = { root: null, port: 0, host: '127.0.0.1', watchStdin: true };
{
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--root') opts.root = val();
    else if (a === '--port') opts.port = Number(val());
    else if (a === '--host') opts.host = val();
    else if (a === '--no-stdin') opts.watchStdin = false;
    else if (a === '--help' || a === '-h') usage();
    else usage(`unknown argument ${a}`);
  }
}
if (!opts.root) usage('--root is required');
if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) usage('bad --port');
if (!/^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|localhost)$/.test(opts.host)) {
  usage(`--host ${opts.host}: only loopback addresses are allowed`);
}
let root;
try {
  root = fs.realpathSync(opts.root);
  if (!fs.statSync(root).isDirectory()) usage(`--root ${opts.root} is not a directory`);
} catch (e) {
  usage(`--root ${opts.root}: ${e.message}`);
}

// ---------------------------------------------------------------- statistics

const LOG_MAX = 10000;
const t0 = process.hrtime.bigint();
const nowMs = () => Number(process.hrtime.bigint() - t0) / 1e6;

let epoch = 0;       // bumped by /_reset: connections are counted once per epoch
let stats;
let counters;        // profile string -> {requests, ranges}
let defaultProfile = null;   // the profile segment of requests without one (/_default)
function resetStats() {
  epoch++;
  stats = { requests: 0, bytes: 0, connections: 0, methods: {}, log: [] };
  counters = new Map();
  defaultProfile = null;
}
resetStats();

// An ETag without weak marker and quotes (clients that drop the quotes
// still match, as with S3).
const bareEtag = (t) => t.trim().replace(/^W\//, '').replace(/^"(.*)"$/, '$1');

function logEntry(entry) {
  stats.log.push(entry);
  if (stats.log.length > LOG_MAX) stats.log.splice(0, stats.log.length - LOG_MAX);
  return entry;
}

// ---------------------------------------------------------------- requests

class BadRequest extends Error {}

// Decode one path segment; refuse what could escape the root.
function decodeSegment(seg) {
  let s;
  try {
    s = decodeURIComponent(seg);
  } catch (e) {
    throw new BadRequest(`bad percent-encoding in "${seg}"`);
  }
  if (s === '.' || s === '..' || s.includes('/') || s.includes('\\') || s.includes('\0')) {
    throw new BadRequest(`refused path segment "${seg}"`);
  }
  return s;
}

function parseProfile(seg) {
  const p = { text: seg, status: 503 };
  for (const item of seg.split(',')) {
    if (item === '') continue;
    const eq = item.indexOf('=');
    if (eq < 0) throw new BadRequest(`fault option "${item}" has no value`);
    const key = item.slice(0, eq);
    let value;
    try {
      value = decodeURIComponent(item.slice(eq + 1));
    } catch (e) {
      throw new BadRequest(`bad percent-encoding in fault option "${item}"`);
    }
    const int = () => {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 0) throw new BadRequest(`fault option ${key}: "${value}" is not a whole number`);
      return n;
    };
    const re = () => {
      try {
        return new RegExp(value);
      } catch (e) {
        throw new BadRequest(`fault option ${key}: bad regular expression: ${e.message}`);
      }
    };
    let m;
    if (key === 'latency') p.latency = int();
    else if (key === 'fail') p.fail = int();
    else if ((m = /^fail([1-5][0-9][0-9])$/.exec(key))) { p.fail = int(); p.status = Number(m[1]); }
    else if (key === 'status') {
      p.status = int();
      if (p.status < 100 || p.status > 599) throw new BadRequest(`fault option status: ${value}`);
    }
    else if (key === 'retryafter') p.retryafter = value;
    else if (key === 'truncate') p.truncate = int();
    else if (key === 'norange') p.norange = value !== '0' && value !== '';
    else if (key === 'badrange') p.badrange = int();
    else if (key === 'hang') p.hang = int();
    else if (key === 'notfound') p.notfound = re();
    else if (key === 'redirect') p.redirect = value;
    else if (key === 'encoding') p.encoding = value;
    else if (key === 'overlong') p.overlong = int();
    else if (key === 'short') p.short = int();
    else if (key === 'endless') p.endless = int();
    else if (key === 'only') p.only = re();
    else throw new BadRequest(`unknown fault option "${key}"`);
  }
  return p;
}

// The single byte range of a Range header, against a file of `size` bytes:
// null (ignore the header), {unsatisfiable: true}, or {start, end} inclusive.
function parseRange(header, size) {
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m) return null;   // not bytes, several ranges, or malformed
  const [a, b] = [m[1], m[2]];
  if (a === '' && b === '') return null;
  if (a === '') {  // suffix
    const n = Number(b);
    if (n === 0) return { unsatisfiable: true };
    if (size === 0) return null;   // nothing to send a range of: whole (empty) file
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(a);
  if (b !== '' && Number(b) < start) return null;   // invalid: ignored
  if (start >= size) return { unsatisfiable: true };
  const end = b === '' ? size - 1 : Math.min(Number(b), size - 1);
  return { start, end };
}

function every(n, k) {
  return n > 0 && k % n === 0;
}

async function readSlice(file, start, length) {
  const fh = await fs.promises.open(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(length);
    let got = 0;
    while (got < length) {
      const { bytesRead } = await fh.read(buf, got, length - got, start + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return got === length ? buf : buf.subarray(0, got);
  } finally {
    await fh.close();
  }
}

function countConnection(req) {
  const sock = req.socket;
  if (sock._zarrEpoch !== epoch) {
    sock._zarrEpoch = epoch;
    stats.connections++;
  }
}

function sendControl(res, status, body) {
  const buf = Buffer.from(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': buf.length,
    'Cache-Control': 'no-store' });
  res.end(buf);
}

async function handle(req, res) {
  const rawUrl = req.url || '/';
  const qpos = rawUrl.indexOf('?');
  const rawPath = qpos < 0 ? rawUrl : rawUrl.slice(0, qpos);
  const query = qpos < 0 ? '' : rawUrl.slice(qpos + 1);

  if (rawPath === '/_stats' || rawPath === '/_reset' || rawPath === '/_default') {
    if (req.method !== 'GET') {
      res.writeHead(405, { Allow: 'GET', 'Content-Length': 0 });
      res.end();
      return;
    }
    if (rawPath === '/_reset') {
      resetStats();
      sendControl(res, 200, '{"reset":true}');
    } else if (rawPath === '/_default') {
      if (query !== '') {
        try {
          parseProfile(query);
        } catch (e) {
          return sendControl(res, 400, JSON.stringify({ error: e.message }));
        }
      }
      defaultProfile = query === '' ? null : query;
      sendControl(res, 200, JSON.stringify({ default: defaultProfile }));
    } else {
      sendControl(res, 200, JSON.stringify(stats));
    }
    return;
  }

  stats.requests++;
  stats.methods[req.method] = (stats.methods[req.method] || 0) + 1;
  countConnection(req);
  const entry = logEntry({ method: req.method, path: rawPath, query, range: req.headers.range ?? null,
    status: 0, bytes: 0, time: nowMs(), host: req.headers.host ?? null,
    auth: req.headers.authorization !== undefined,
    amztoken: req.headers['x-amz-security-token'] !== undefined,
    acceptencoding: req.headers['accept-encoding'] ?? null, ifmatch: req.headers['if-match'] ?? null });

  const finish = (status, headers, body) => {
    entry.status = status;
    const h = Object.assign({ 'Content-Length': body ? body.length : 0 }, headers);
    res.writeHead(status, h);
    if (body && body.length && req.method !== 'HEAD') {
      res.end(body);
      entry.bytes = body.length;
      stats.bytes += body.length;
    } else {
      res.end();
    }
  };
  const text = (status, msg, headers = {}) =>
    finish(status, Object.assign({ 'Content-Type': 'text/plain; charset=utf-8' }, headers),
      Buffer.from(msg + '\n'));

  // decode the path; the first segment may be a fault profile
  let segs, profile = null;
  try {
    let raw = rawPath.split('/').slice(1);
    if (raw.length && raw[0].includes('=')) {
      profile = parseProfile(raw[0]);
      raw = raw.slice(1);
    } else if (defaultProfile !== null) {
      profile = parseProfile(defaultProfile);
    }
    segs = raw.map(decodeSegment);
  } catch (e) {
    if (e instanceof BadRequest) return text(400, e.message);
    throw e;
  }
  entry.path = '/' + (profile ? [profile.text] : []).concat(segs).join('/');
  const filePath = '/' + segs.join('/');

  // faults
  let k = 0;
  let active = profile !== null && (!profile.only || profile.only.test(filePath));
  if (active) {
    let c = counters.get(profile.text);
    if (!c) counters.set(profile.text, (c = { requests: 0, ranges: 0 }));
    k = ++c.requests;
    if (profile.latency) await new Promise((r) => setTimeout(r, profile.latency));
    if (res.destroyed || req.socket.destroyed) return;   // the client left meanwhile
    if (every(profile.fail, k)) {
      const h = profile.retryafter !== undefined ? { 'Retry-After': profile.retryafter } : {};
      entry.fault = 'fail';
      return text(profile.status, `injected failure (${profile.text}, request ${k})`, h);
    }
    if (every(profile.hang, k)) {
      entry.fault = 'hang';
      return;   // never answered; Node keeps the socket until the client closes it
    }
    if (profile.redirect !== undefined) {
      entry.fault = 'redirect';
      const to = profile.redirect + filePath.split('/').map(encodeURIComponent).join('/') +
        (query ? '?' + query : '');
      return text(302, `moved to ${to}`, { Location: to });
    }
    if (profile.endless !== undefined && req.method === 'GET') {
      entry.fault = 'endless';
      entry.status = 200;
      const h = { 'Content-Type': 'application/octet-stream' };
      if (profile.endless > 0) h['Content-Length'] = profile.endless;
      res.writeHead(200, h);
      const block = Buffer.alloc(65536);
      const pump = () => {
        while (!res.destroyed && !req.socket.destroyed) {
          entry.bytes += block.length;
          stats.bytes += block.length;
          if (!res.write(block)) return res.once('drain', pump);
        }
      };
      res.on('close', () => {});
      return pump();
    }
  }

  if (req.method !== 'GET') {
    return text(405, `method ${req.method} not allowed`, { Allow: 'GET' });
  }
  if (active && profile.notfound && profile.notfound.test(filePath)) {
    entry.fault = 'notfound';
    return text(404, 'not found (injected)');
  }

  // the file (an empty segment, as in "a//b" or "dir/", names no file)
  if (segs.length === 0 || segs.some((s) => s === '')) return text(404, 'not found');
  const full = path.join(root, ...segs);
  if (full !== root && !full.startsWith(root + path.sep)) return text(400, 'outside the root');
  let st;
  try {
    st = await fs.promises.stat(full);
  } catch (e) {
    return text(404, 'not found');
  }
  if (!st.isFile()) return text(404, 'not found');
  const size = st.size;

  const etag = `"${[size, Math.floor(st.mtimeMs), Math.floor(st.ctimeMs)].map((v) => v.toString(16)).join('-')}"`;
  const headers = { 'Content-Type': 'application/octet-stream', 'Accept-Ranges': 'bytes',
    'Last-Modified': st.mtime.toUTCString(), ETag: etag };
  const ifMatch = req.headers['if-match'];
  if (ifMatch !== undefined && ifMatch.trim() !== '*' &&
      !ifMatch.split(',').map(bareEtag).includes(bareEtag(etag))) {
    return text(412, 'precondition failed (If-Match)', { ETag: etag });
  }
  let status = 200, start = 0, end = size - 1;
  const rangeHeader = req.headers.range;
  if (rangeHeader !== undefined && !(active && profile.norange)) {
    const r = parseRange(rangeHeader, size);
    if (r && r.unsatisfiable) {
      return finish(416, { 'Content-Range': `bytes */${size}` }, null);
    }
    if (r) {
      status = 206;
      start = r.start;
      end = r.end;
      let claimed = start;
      if (active && profile.badrange) {
        const c = counters.get(profile.text);
        c.ranges++;
        if (every(profile.badrange, c.ranges)) {
          claimed = start === 0 ? 1 : start - 1;
          entry.fault = 'badrange';
        }
      }
      headers['Content-Range'] = `bytes ${claimed}-${claimed + (end - start)}/${size}`;
    }
  }
  const length = size === 0 ? 0 : end - start + 1;
  let body;
  try {
    body = length > 0 ? await readSlice(full, start, length) : Buffer.alloc(0);
  } catch (e) {
    return text(500, `cannot read: ${e.message}`);
  }
  if (res.destroyed || req.socket.destroyed) return;
  if (active && profile.encoding !== undefined) {
    headers['Content-Encoding'] = profile.encoding;
    entry.fault = 'encoding';
  }
  if (active && profile.overlong) {
    body = Buffer.concat([body, Buffer.alloc(profile.overlong, 'X')]);
    entry.fault = 'overlong';
  }
  if (active && profile.short) {
    body = body.subarray(0, Math.max(0, body.length - profile.short));
    entry.fault = 'short';
  }

  if (active && every(profile.truncate, k) && body.length > 0) {
    entry.status = status;
    entry.fault = 'truncate';
    const half = Math.floor(body.length / 2);
    headers['Content-Length'] = body.length;
    res.writeHead(status, headers);
    res.write(body.subarray(0, half), () => req.socket.destroy());
    entry.bytes = half;
    stats.bytes += half;
    return;
  }
  finish(status, headers, body);
}

const server = http.createServer((req, res) => {
  handle(req, res).catch((e) => {
    process.stderr.write(`server.js: ${e.stack || e}\n`);
    if (!res.headersSent) {
      res.writeHead(500, { 'Content-Length': 0 });
      res.end();
    } else {
      req.socket.destroy();
    }
  });
});
server.keepAliveTimeout = 60000;   // idle keep-alive connections stay open a minute
server.headersTimeout = 65000;
server.requestTimeout = 0;         // hanging requests are meant to hang
server.on('clientError', (err, socket) => {
  if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
  else socket.destroy();
});

function shutdown() {
  process.exit(0);
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
function stdinIsPipe() {
  try {
    const st = fs.fstatSync(0);
    return st.isFIFO() || st.isSocket();
  } catch (e) {
    return false;
  }
}
if (opts.watchStdin && stdinIsPipe()) {
  process.stdin.on('end', shutdown);
  process.stdin.on('close', shutdown);
  process.stdin.on('error', shutdown);
  process.stdin.on('data', () => {});   // whatever arrives is ignored
  process.stdin.resume();
}

server.on('error', (e) => {
  process.stderr.write(`server.js: ${e.message}\n`);
  process.exit(1);
});
server.listen(opts.port, opts.host, () => {
  process.stdout.write(`listening ${server.address().port}\n`);
});
