'use strict';
// AWS Signature Version 4 (header form) as an S3 server checks it, written
// for the zarr R package's tests from the published description of the
// algorithm. Hashes and HMACs come from node's crypto module.
const crypto = require('crypto');

const EMPTY_SHA256 = crypto.createHash('sha256').update('').digest('hex');

function sha256hex(data) {
  return crypto.createHash('sha256').update(data).digest('hex');
}

function hmac(key, data) {
  return crypto.createHmac('sha256', key).update(data, 'utf8').digest();
}

// RFC 3986 encoding of one query name or value: everything but A-Z a-z 0-9 - _ . ~
function encodeStrict(s) {
  return encodeURIComponent(s).replace(/[!'()*]/g, c => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}

function decodeQueryPart(s) {
  try { return decodeURIComponent(s.replace(/\+/g, '%20')); } catch (e) { return s; }
}

// The canonical query string: names and values decoded, re-encoded strictly,
// sorted by name then value.
function canonicalQuery(query) {
  if (!query) return '';
  const pairs = query.split('&').filter(p => p.length > 0).map(p => {
    const eq = p.indexOf('=');
    const k = eq < 0 ? p : p.slice(0, eq);
    const v = eq < 0 ? '' : p.slice(eq + 1);
    return [encodeStrict(decodeQueryPart(k)), encodeStrict(decodeQueryPart(v))];
  });
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  return pairs.map(p => p[0] + '=' + p[1]).join('&');
}

// headers: an object of lower-case names to values; signed: the names signed.
function canonicalHeaders(headers, signed) {
  return signed.map(n => {
    const v = headers[n];
    const val = (Array.isArray(v) ? v.join(',') : (v === undefined ? '' : String(v)))
      .trim().replace(/\s+/g, ' ');
    return n + ':' + val + '\n';
  }).join('');
}

// r: {method, path (as sent, already URI-encoded), query (raw, without '?'),
//     headers (lower-case names), signedHeaders (array), payloadHash}
function canonicalRequest(r) {
  return [r.method, r.path, canonicalQuery(r.query), canonicalHeaders(r.headers, r.signedHeaders),
          r.signedHeaders.join(';'), r.payloadHash].join('\n');
}

function scopeOf(date, region, service) {
  return date.slice(0, 8) + '/' + region + '/' + service + '/aws4_request';
}

function stringToSign(amzDate, scope, canonical) {
  return ['AWS4-HMAC-SHA256', amzDate, scope, sha256hex(canonical)].join('\n');
}

function signingKey(secret, date8, region, service) {
  const kDate = hmac('AWS4' + secret, date8);
  const kRegion = hmac(kDate, region);
  const kService = hmac(kRegion, service);
  return hmac(kService, 'aws4_request');
}

// The signature (hex) of request r made at amzDate (YYYYMMDDTHHMMSSZ).
function signature(r, secret, amzDate, region, service) {
  const scope = scopeOf(amzDate, region, service);
  const sts = stringToSign(amzDate, scope, canonicalRequest(r));
  return crypto.createHmac('sha256', signingKey(secret, amzDate.slice(0, 8), region, service))
    .update(sts, 'utf8').digest('hex');
}

// Parse "AWS4-HMAC-SHA256 Credential=AK/date/region/service/aws4_request,
// SignedHeaders=a;b, Signature=hex"; null when it is not that form.
function parseAuthorization(h) {
  if (typeof h !== 'string') return null;
  const m = /^AWS4-HMAC-SHA256\s+(.*)$/.exec(h.trim());
  if (!m) return null;
  const out = {};
  for (const part of m[1].split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) return null;
    out[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  if (!out.Credential || !out.SignedHeaders || !out.Signature) return null;
  const c = out.Credential.split('/');
  if (c.length !== 5 || c[4] !== 'aws4_request') return null;
  return {
    accessKey: c[0], date: c[1], region: c[2], service: c[3],
    signedHeaders: out.SignedHeaders.split(';'), signature: out.Signature,
  };
}

module.exports = {
  EMPTY_SHA256, sha256hex, encodeStrict, canonicalQuery, canonicalRequest,
  stringToSign, signingKey, signature, parseAuthorization, scopeOf,
};
