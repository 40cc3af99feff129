'use strict';
// S3 test server for the zarr R package: s3rver (which checks no signatures
// and knows no bucket policies) behind a proxy that does what S3 does with
// Signature Version 4 requests:
//   - a signed request is checked against the configured credentials: an
//     unknown access key is 403 InvalidAccessKeyId, a wrong signature 403
//     SignatureDoesNotMatch, a missing or wrong x-amz-content-sha256 400
//     (InvalidRequest / XAmzContentSHA256Mismatch), a session key without its
//     token 403 InvalidToken;
//   - an unsigned request to a private bucket, or an unsigned write anywhere,
//     is 403 AccessDenied; unsigned reads of a public bucket pass;
//   - a conditional PUT (If-None-Match: *, If-Match: <etag>; s3rver ignores
//     both) is checked against the object's ETag first and answered 412
//     PreconditionFailed when its condition fails, one at a time;
//   - everything else goes to s3rver unsigned (path-style addressing).
// Usage (s3rver's continuation tokens are DES-encrypted, which OpenSSL 3
// has only in its legacy provider, hence the flag):
//   node --openssl-legacy-provider proxy.js --dir DIR [--port 0] --cred AK:SECRET[:TOKEN] ...
//                 --private b1,b2 --public p1 [--region us-east-1]
// Prints "LISTENING <port>" once both servers are up, and exits when stdin
// closes (when stdin is a pipe). GET /_proxy/stats gives JSON counts and a
// log of requests (method, path, query, range, status); /_proxy/reset clears it.
// /_proxy/indent and /_proxy/compact switch how XML answers are sent from then
// on: indented, one element a line (as MinIO, moto and LocalStack send them),
// or as s3rver writes them (the default).
const http = require('http');
const crypto = require('crypto');
const fs = require('fs');
const S3rver = require('s3rver');
const v4 = require('./sigv4');

function args(argv) {
  const o = { dir: null, port: 0, creds: [], priv: [], pub: [], region: 'us-east-1' };
  for (let i = 2; i < argv.length; i++) {
    const a = argv[i], v = argv[i + 1];
    if (a === '--dir') { o.dir = v; i++; }
    else if (a === '--port') { o.port = Number(v); i++; }
    else if (a === '--cred') {
      const p = v.split(':');
      o.creds.push({ key: p[0], secret: p[1], token: p.length > 2 ? p.slice(2).join(':') : null });
      i++;
    } else if (a === '--private') { o.priv = v.split(',').filter(Boolean); i++; }
    else if (a === '--public') { o.pub = v.split(',').filter(Boolean); i++; }
    else if (a === '--region') { o.region = v; i++; }
    else throw new Error('unknown argument ' + a);
  }
  if (!o.dir) throw new Error('--dir is required');
  return o;
}

function xmlEscape(s) {
  return String(s).replace(/[<>&'"]/g, c => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' }[c]));
}

// A compact XML document with one element a line, indented by depth.
function indentXml(xml) {
  let depth = 0;
  return xml.replace(/>\s*</g, '>\n<').split('\n').map(line => {
    const closing = /^<\//.test(line);
    const opening = /^<[^?!/]/.test(line) && !/\/>$/.test(line) && !/<\/[^>]+>$/.test(line);
    if (closing) depth = Math.max(0, depth - 1);
    const out = '  '.repeat(depth) + line;
    if (opening) depth++;
    return out;
  }).join('\n') + '\n';
}

function s3error(res, status, code, message, resource) {
  const body = '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>' + code + '</Code><Message>' +
    xmlEscape(message) + '</Message><Resource>' + xmlEscape(resource) + '</Resource>' +
    '<RequestId>0</RequestId></Error>';
  res.writeHead(status, { 'Content-Type': 'application/xml', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
  return status;
}

// What S3 would say to this request: null when it may go on, otherwise
// [status, code, message].
function check(o, req, body, path, query, bucket) {
  const h = req.headers;
  const write = !(req.method === 'GET' || req.method === 'HEAD');
  if (h.authorization === undefined) {
    if (o.priv.includes(bucket) || write || bucket === '')
      return [403, 'AccessDenied', 'Access Denied'];
    return null;
  }
  const a = v4.parseAuthorization(h.authorization);
  if (!a) return [400, 'AuthorizationHeaderMalformed', 'The authorization header is malformed'];
  const cred = o.creds.find(c => c.key === a.accessKey);
  if (!cred) return [403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.'];
  if (a.region !== o.region || a.service !== 's3')
    return [400, 'AuthorizationHeaderMalformed', "The authorization header is malformed; the region '" + a.region +
            "' is wrong; expecting '" + o.region + "'"];
  const date = h['x-amz-date'];
  if (!date || !/^\d{8}T\d{6}Z$/.test(date) || date.slice(0, 8) !== a.date)
    return [403, 'AccessDenied', 'X-Amz-Date is missing or does not match the credential scope'];
  const payload = h['x-amz-content-sha256'];
  if (!payload) return [400, 'InvalidRequest', 'Missing required header for this request: x-amz-content-sha256'];
  if (payload !== 'UNSIGNED-PAYLOAD' && payload !== v4.sha256hex(body))
    return [400, 'XAmzContentSHA256Mismatch', "The provided 'x-amz-content-sha256' header does not match what was computed."];
  for (const n of ['host', 'x-amz-date', 'x-amz-content-sha256'])
    if (!a.signedHeaders.includes(n)) return [403, 'AccessDenied', 'Header ' + n + ' is not signed'];
  if (cred.token !== null) {
    if (h['x-amz-security-token'] !== cred.token || !a.signedHeaders.includes('x-amz-security-token'))
      return [403, 'InvalidToken', 'The provided token is malformed or otherwise invalid.'];
  }
  const want = v4.signature({ method: req.method, path, query, headers: h, signedHeaders: a.signedHeaders,
                              payloadHash: payload }, cred.secret, date, a.region, a.service);
  const got = Buffer.from(a.signature);
  const exp = Buffer.from(want);
  if (got.length !== exp.length || !crypto.timingSafeEqual(got, exp))
    return [403, 'SignatureDoesNotMatch',
            'The request signature we calculated does not match the signature you provided. Check your key and signing method.'];
  return null;
}

async function main() {
  const o = args(process.argv);
  fs.mkdirSync(o.dir, { recursive: true });
  const s3 = new S3rver({
    address: '127.0.0.1', port: 0, silent: true, directory: o.dir,
    configureBuckets: o.priv.concat(o.pub).map(name => ({ name })),
  });
  const addr = await s3.run();
  const upstream = addr.port;
  const stats = { requests: 0, rejected: 0, methods: {}, log: [] };
  let indent = false;
  let conditional = Promise.resolve(); // the chain of conditional writes
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', d => chunks.push(d));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const q = req.url.indexOf('?');
      const path = q < 0 ? req.url : req.url.slice(0, q);
      const query = q < 0 ? '' : req.url.slice(q + 1);
      if (path === '/_proxy/indent' || path === '/_proxy/compact') indent = path === '/_proxy/indent';
      if (path === '/_proxy/stats' || path === '/_proxy/reset' || path === '/_proxy/indent' ||
          path === '/_proxy/compact') {
        if (path === '/_proxy/reset') { stats.requests = 0; stats.rejected = 0; stats.methods = {}; stats.log = []; }
        const out = JSON.stringify(stats);
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(out) });
        res.end(out);
        return;
      }
      stats.requests++;
      stats.methods[req.method] = (stats.methods[req.method] || 0) + 1;
      const entry = { method: req.method, path, query, range: req.headers.range || null, status: 0 };
      stats.log.push(entry);
      let bucket = '';
      try { bucket = decodeURIComponent(path.split('/')[1] || ''); } catch (e) { bucket = ''; }
      const bad = check(o, req, body, path, query, bucket);
      if (bad) {
        stats.rejected++;
        entry.status = s3error(res, bad[0], bad[1], bad[2], path);
        return;
      }
      const headers = {};
      for (const [k, v] of Object.entries(req.headers)) {
        if (k === 'authorization' || k.startsWith('x-amz-') || k === 'expect') continue;
        headers[k] = v;
      }
      headers.host = '127.0.0.1:' + upstream;
      headers['content-length'] = String(body.length);
      const forward = () => {
      const up = http.request({ host: '127.0.0.1', port: upstream, method: req.method, path: req.url, headers }, ur => {
        entry.status = ur.statusCode;
        if (!indent || !/xml/.test(ur.headers['content-type'] || '')) {
          res.writeHead(ur.statusCode, ur.headers);
          ur.pipe(res);
          return;
        }
        const parts = [];
        ur.on('data', d => parts.push(d));
        ur.on('end', () => {
          const out = Buffer.from(indentXml(Buffer.concat(parts).toString('utf8')), 'utf8');
          const h = Object.assign({}, ur.headers, { 'content-length': String(out.length) });
          delete h['transfer-encoding'];
          res.writeHead(ur.statusCode, h);
          res.end(out);
        });
      });
      up.on('error', err => { entry.status = s3error(res, 500, 'InternalError', String(err), path); });
      up.end(body);
      };
      // Conditional writes (If-None-Match: *, If-Match: <etag>), which S3
      // honours and s3rver ignores: the object's ETag is asked first, and a
      // failed condition is 412 PreconditionFailed. They run one at a time,
      // so no other conditional write slips between the check and the write.
      const ifNone = req.headers['if-none-match'], ifMatch = req.headers['if-match'];
      if (req.method === 'PUT' && (ifNone !== undefined || ifMatch !== undefined)) {
        delete headers['if-none-match'];
        delete headers['if-match'];
        conditional = conditional.then(() => new Promise(done => {
          const head = http.request({ host: '127.0.0.1', port: upstream, method: 'HEAD', path: req.url,
                                      headers: { host: headers.host } }, hr => {
            hr.resume();
            const etag = hr.statusCode === 200 ? String(hr.headers.etag || '') : null;
            const unq = v => String(v).trim().replace(/^"|"$/g, '');
            const failed = (ifNone !== undefined && ifNone.trim() === '*' && etag !== null) ||
              (ifMatch !== undefined && (etag === null || unq(ifMatch) !== unq(etag)));
            if (failed) {
              entry.status = s3error(res, 412, 'PreconditionFailed',
                'At least one of the pre-conditions you specified did not hold', path);
              done();
              return;
            }
            res.on('finish', done);
            res.on('close', done);
            forward();
          });
          head.on('error', () => { entry.status = s3error(res, 500, 'InternalError', 'HEAD failed', path); done(); });
          head.end();
        }));
        return;
      }
      // s3rver answers a suffix range (bytes=-N) as bytes=0-N; S3 gives the
      // last N bytes. Ask s3rver for the object's size and send it the range
      // S3 means.
      const suffix = req.method === 'GET' && /^bytes=-(\d+)$/.exec(req.headers.range || '');
      if (!suffix) { forward(); return; }
      const head = http.request({ host: '127.0.0.1', port: upstream, method: 'HEAD', path: req.url,
                                  headers: { host: headers.host } }, hr => {
        hr.resume();
        const size = Number(hr.headers['content-length']);
        if (hr.statusCode === 200 && Number.isFinite(size)) {
          const n = Number(suffix[1]);
          headers.range = size === 0 ? 'bytes=0-' : 'bytes=' + Math.max(0, size - n) + '-' + (size - 1);
          if (n === 0) delete headers.range;
        }
        forward();
      });
      head.on('error', () => forward());
      head.end();
    });
  });
  server.keepAliveTimeout = 30000;
  server.listen(o.port, '127.0.0.1', () => {
    process.stdout.write('LISTENING ' + server.address().port + '\n');
  });
  const stop = () => { server.close(); s3.close().finally(() => process.exit(0)); setTimeout(() => process.exit(0), 500); };
  let piped = false;
  try { const st = fs.fstatSync(0); piped = st.isFIFO() || st.isSocket(); } catch (e) { piped = false; }
  if (piped) { process.stdin.on('end', stop); process.stdin.on('close', stop); process.stdin.resume(); }
  process.on('SIGTERM', stop);
}

main().catch(err => { process.stderr.write(String(err && err.stack || err) + '\n'); process.exit(1); });
