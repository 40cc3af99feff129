'use strict';
// Reproduce the signatures of AWS's published Signature Version 4 examples
// for S3 (example credentials, 2013-05-24, us-east-1): prints one line per
// example, "ok <name>" or "FAIL <name> <got> <expected>", and exits 1 on any
// failure.
const v4 = require('./sigv4');
const secret = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const date = '20130524T000000Z';
const host = 'examplebucket.s3.amazonaws.com';
const examples = [
  { name: 'GET Object (range)', method: 'GET', path: '/test.txt', query: '',
    headers: { host, range: 'bytes=0-9', 'x-amz-content-sha256': v4.EMPTY_SHA256, 'x-amz-date': date },
    want: 'f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41' },
  { name: 'GET Bucket lifecycle', method: 'GET', path: '/', query: 'lifecycle',
    headers: { host, 'x-amz-content-sha256': v4.EMPTY_SHA256, 'x-amz-date': date },
    want: 'fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543' },
  { name: 'GET Bucket (list objects)', method: 'GET', path: '/', query: 'max-keys=2&prefix=J',
    headers: { host, 'x-amz-content-sha256': v4.EMPTY_SHA256, 'x-amz-date': date },
    want: '34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7' },
  { name: 'PUT Object', method: 'PUT', path: '/test%24file.text', query: '',
    headers: { host, date: 'Fri, 24 May 2013 00:00:00 GMT', 'x-amz-date': date,
               'x-amz-storage-class': 'REDUCED_REDUNDANCY',
               'x-amz-content-sha256': v4.sha256hex('Welcome to Amazon S3.') },
    want: '98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd' },
];
let bad = 0;
for (const ex of examples) {
  const r = { method: ex.method, path: ex.path, query: ex.query, headers: ex.headers,
              signedHeaders: Object.keys(ex.headers).sort(), payloadHash: ex.headers['x-amz-content-sha256'] };
  const got = v4.signature(r, secret, date, 'us-east-1', 's3');
  if (got === ex.want) console.log('ok ' + ex.name);
  else { bad++; console.log('FAIL ' + ex.name + ' ' + got + ' ' + ex.want); }
}
process.exit(bad ? 1 : 0);
