// hostile_http_raw: requests node:http will not send, written byte for byte
// on a socket: NUL bytes in the target and headers, framing lies
// (Content-Length against the body, two lengths, chunked and unknown
// transfer codings), missing or doubled Host, other HTTP versions, oversized
// targets and headers, 10,000 headers. Errors that libmicrohttpd raises
// itself must still be application/problem+json; the server stays up and
// its state does not change.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { problem, runGroup, Target, uploadFixtures } from './hostile_lib.mjs';

const LIMIT = 1 << 20;
const ANY_400 = { status: 400, type: null };
const CUT = { status: null }; // the client went away: no answer needed, nothing may change
const GONE = { endAfter: true, timeoutMs: 2000 };

// One request as bytes. headers: [name, value] pairs written as they are.
function req(method, target, headers = [['Host', 'x']], body = '', version = 'HTTP/1.1') {
  const head = `${method} ${target} ${version}\r\n${headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), Buffer.from(body)]);
}
const H = (...more) => [['Host', 'x'], ['Connection', 'close'], ...more];
const JSONCT = ['Content-Type', 'application/json'];
const CFG = '{"shuffle_partitions":3}';
const chunked = (...parts) => parts.join('');

const raw = (name, bytes, expect, rawOpts) => ({ name, raw: bytes, expect, rawOpts });
// libmicrohttpd 0.9.75 (Debian 12) answers these itself, before the server
// sees a request, with its own short HTML page: it has no hook to replace
// them (README, "Framing"). What holds: the status, Connection: close, the
// server up and the state unchanged (runGroup checks those two).
const mhdPage = (name, bytes, status) => ({
  name: `${name} (libmicrohttpd's own page)`, raw: bytes, expect: { status, problem: false },
  check: (r) => assert.match(r.headers.connection ?? '', /close/i, `${name}: the connection stays open`),
});

function nulCases() {
  return [
    raw('NUL in the request target', req('GET', '/v1/con\0fig', H()), ANY_400),
    raw('NUL after the target', req('GET', '/v1/config\0', H()), ANY_400),
    raw('NUL in a header value', req('GET', '/livez', H(['X-A', 'a\0b'])), ANY_400),
    mhdPage('NUL in a header name', req('GET', '/livez', H(['X-\0A', 'b'])), 400),
    raw('NUL in Content-Type', req('POST', '/v1/config', H(['Content-Type', 'application/json\0'], ['Content-Length', String(CFG.length)]), CFG), { status: [400, 415], type: null }),
    raw('NUL in Content-Length', req('POST', '/v1/config', H(JSONCT, ['Content-Length', `${CFG.length}\0`]), CFG), ANY_400),
    raw('NUL in Authorization', req('DELETE', '/v1/datasets/nothere', H(['Authorization', 'Bearer \0'])), ANY_400),
    raw('NUL in the method', req('GE\0T', '/livez', H()), ANY_400),
    raw('NUL in the query string', req('POST', '/v1/queries?wait=1\0', H(JSONCT, ['Content-Length', '23']), '{"dataframe":"df-none"}'), ANY_400),
    raw('NUL in a dataset name', req('DELETE', '/v1/datasets/victim\0.bak', H()), ANY_400),
    raw('invalid UTF-8 in the target', req('GET', '/v1/datasets/\xff\xfe', H()), { status: 400, type: null }),
    raw('a space in the target', req('GET', '/v1/con fig', H()), { ...ANY_400, alt: problem(404, 'not-found') }),
    raw('a bare CR in a header', req('GET', '/livez', H(['X-A', 'a\rb'])), ANY_400),
  ];
}

function framingCases() {
  const cl = (n) => ['Content-Length', String(n)];
  return [
    raw('no Host in HTTP/1.1', req('GET', '/v1/config', [['Connection', 'close']]), ANY_400),
    raw('Host with a space before the colon', Buffer.from('GET /v1/config HTTP/1.1\r\nHost : x\r\nConnection: close\r\n\r\n'), ANY_400),
    raw('two Host headers', req('GET', '/v1/config', H(['Host', 'y'])), ANY_400),
    raw('two different Content-Length', req('POST', '/v1/config', H(JSONCT, cl(2), cl(CFG.length)), CFG), ANY_400),
    raw('Content-Length and chunked', req('POST', '/v1/config', H(JSONCT, cl(CFG.length), ['Transfer-Encoding', 'chunked']), chunked(`${CFG.length.toString(16)}\r\n${CFG}\r\n0\r\n\r\n`)), ANY_400),
    raw('Transfer-Encoding: gzip', req('POST', '/v1/config', H(JSONCT, ['Transfer-Encoding', 'gzip']), CFG), { status: [400, 501], type: null }),
    raw('Transfer-Encoding: xchunked', req('POST', '/v1/config', H(JSONCT, ['Transfer-Encoding', 'xchunked']), CFG), { status: [400, 501], type: null }),
    // libmicrohttpd parses Content-Length before any callback of ours.
    mhdPage('Content-Length -1', req('POST', '/v1/config', H(JSONCT, cl(-1)), CFG), 400),
    mhdPage('Content-Length abc', req('POST', '/v1/config', H(JSONCT, cl('abc')), CFG), 400),
    mhdPage('Content-Length +24', req('POST', '/v1/config', H(JSONCT, cl('+24')), CFG), 400),
    mhdPage('Content-Length 2^64+', req('POST', '/v1/config', H(JSONCT, cl('99999999999999999999')), CFG), [400, 413]),
    raw('Content-Length 1e9 over the limit', req('POST', '/v1/config', H(JSONCT, cl(1e9))), problem(413, 'payload-too-large')),
    raw('Content-Length over the limit with Expect: 100-continue', req('POST', '/v1/config', H(JSONCT, cl(LIMIT + 1), ['Expect', '100-continue'])), problem(413, 'payload-too-large')),
    raw('Content-Length shorter than the body', req('POST', '/v1/config', H(JSONCT, cl(5)), CFG), problem(400, 'invalid-json')),
    raw('Content-Length longer than the body, then gone', req('POST', '/v1/config', H(JSONCT, cl(1000)), CFG), CUT, GONE),
    raw('upload longer than its body, then gone', req('PUT', '/v1/datasets/cut', H(['Content-Type', 'text/csv'], cl(100000)), 'a,b\n1,2\n'), CUT, GONE),
    raw('chunked config, invalid field', req('POST', '/v1/config', H(JSONCT, ['Transfer-Encoding', 'chunked']), '5\r\n{"shu\r\n14\r\nffle_partition": 3}\r\n0\r\n\r\n'), problem(422, 'validation-failed')),
    raw('chunked with an extension and a trailer', req('POST', '/v1/config', H(JSONCT, ['Transfer-Encoding', 'chunked']), '19;a=b\r\n{"shuffle_partition": 3}\r\n0\r\nX-T: 1\r\n\r\n'), problem(422, 'validation-failed')),
    // libmicrohttpd decodes the chunked framing itself and hands us only the data.
    mhdPage('chunk size not hex', req('POST', '/v1/config', H(JSONCT, ['Transfer-Encoding', 'chunked']), 'zz\r\n{}\r\n0\r\n\r\n'), 400),
    mhdPage('chunk size past 2^64', req('POST', '/v1/config', H(JSONCT, ['Transfer-Encoding', 'chunked']), 'fffffffffffffffffffff\r\n{}\r\n0\r\n\r\n'), [400, 413]),
    mhdPage('chunk size negative', req('POST', '/v1/config', H(JSONCT, ['Transfer-Encoding', 'chunked']), '-5\r\n{}\r\n0\r\n\r\n'), 400),
    raw('chunked, cut mid-chunk', req('POST', '/v1/config', H(JSONCT, ['Transfer-Encoding', 'chunked']), '100\r\n{"shuffle_partitions": 3'), CUT, GONE),
    raw('chunked upload, cut mid-chunk', req('PUT', '/v1/datasets/cut', H(['Content-Type', 'text/csv'], ['Transfer-Encoding', 'chunked']), '1000\r\na,b\n1,2\n'), CUT, GONE),
    raw('chunked upload, ragged then cut', req('PUT', '/v1/datasets/trips', H(['Content-Type', 'text/csv'], ['Transfer-Encoding', 'chunked']), '8\r\nx,y\n1,2\n\r\n'), CUT, GONE),
    raw('a folded header line', Buffer.from('GET /livez HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\nConnection: close\r\n\r\n'), ANY_400),
    mhdPage('a header line without a colon', Buffer.from('GET /livez HTTP/1.1\r\nHost: x\r\nnocolon\r\nConnection: close\r\n\r\n'), 400),
  ];
}

function lineCases() {
  const big = 'x'.repeat(100 * 1024);
  const many = Array.from({ length: 10000 }, (_, i) => [`X-H${i}`, 'v']);
  return [
    // libmicrohttpd checks the version as it reads the request line.
    mhdPage('HTTP/2.0 request line', req('GET', '/livez', H(), '', 'HTTP/2.0'), 505),
    mhdPage('HTTP/3.0 request line', req('GET', '/livez', H(), '', 'HTTP/3.0'), 505),
    mhdPage('HTTP/1.x request line', req('GET', '/livez', H(), '', 'HTTP/1.x'), [400, 505]),
    mhdPage('an HTTP/0.9 request', Buffer.from('GET /livez\r\n\r\n'), [400, 505]),
    // A TLS hello is no HTTP at all: an answer or a close will do, but soon.
    raw('a TLS hello', Buffer.from('\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n', 'latin1'), { status: null, closes: true }),
    raw('lower-case method', req('get', '/v1/config', H()), { status: [400, 405, 501], type: null }),
    raw('CONNECT', req('CONNECT', '127.0.0.1:1', H()), { status: [400, 404, 405, 501], type: null }),
    raw('a 100 KB target', req('GET', `/v1/datasets/${big}`, H()), { status: 414, type: null }),
    raw('a 100 KB query string', req('GET', `/v1/config?a=${big}`, H()), { status: 414, type: null }),
    raw('a 100 KB header', req('GET', '/livez', H(['X-Big', big])), { status: 431, type: null }),
    // 10,000 header records do not fit in libmicrohttpd's connection memory
    // (256 KiB): it answers 431 before our own 16 KiB check can.
    mhdPage('10,000 headers', req('GET', '/livez', H(...many)), 431),
    mhdPage('10,000 headers on an upload', req('PUT', '/v1/datasets/flood', H(['Content-Type', 'text/csv'], ['Content-Length', '8'], ...many), 'a,b\n1,2\n'), 431),
    // Over the target limit: 414 before libmicrohttpd parses the 10,000 arguments
    // (it hung when their records did not fit in the connection's memory).
    raw('10,000 query parameters', req('GET', `/v1/config?${Array.from({ length: 10000 }, (_, i) => `p${i}=1`).join('&')}`, H()), problem(414, 'uri-too-long')),
  ];
}

test('raw hostile HTTP against a coordinator', async (t) => {
  const target = await new Target('serve', { args: ['--max-body-bytes', String(LIMIT)], setup: uploadFixtures }).start();
  try {
    await runGroup(t, target, 'NUL bytes and odd bytes', nulCases());
    await runGroup(t, target, 'Content-Length lies and chunked bodies', framingCases());
    await runGroup(t, target, 'request lines, versions and header floods', lineCases());
  } finally {
    await target.stop();
  }
});
