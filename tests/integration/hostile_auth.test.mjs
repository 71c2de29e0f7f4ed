// hostile_auth: attempts to get past --admin-token-file on every admin route:
// no token, an empty one, the wrong one, near misses (a prefix, an extension,
// another case, a NUL after it), other schemes, the token in the query string
// or another header, two Authorization headers. Each gets 401 unauthorized
// with WWW-Authenticate: Bearer, changes nothing, and the token never shows
// up in an answer or in the log.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { tempRoot } from './lib.mjs';
import { problem, runGroup, send, Target, uploadFixtures } from './hostile_lib.mjs';

const TOKEN = randomBytes(16).toString('hex');
const UNAUTH = problem(401, 'unauthorized');

// The admin routes, each with a body that would change something.
const ADMIN = [
  { method: 'POST', path: '/v1/config', ct: 'application/json', body: '{"shuffle_partitions":3}' },
  { method: 'PUT', path: '/v1/datasets/victim', ct: 'text/csv', body: 'a,b\n6,6\n' },
  { method: 'DELETE', path: '/v1/datasets/victim' },
  { method: 'DELETE', path: '/v1/runner?force=true' },
];

const ATTEMPTS = [
  ['no Authorization', {}],
  ['an empty Authorization', { authorization: '' }],
  ['Bearer and nothing', { authorization: 'Bearer' }],
  ['Bearer and a space', { authorization: 'Bearer ' }],
  ['a wrong token', { authorization: `Bearer ${'0'.repeat(32)}` }],
  ['the token with a suffix', { authorization: `Bearer ${TOKEN}x` }],
  ['a prefix of the token', { authorization: `Bearer ${TOKEN.slice(0, 31)}` }],
  ['the token in upper case', { authorization: `Bearer ${TOKEN.toUpperCase()}` }],
  ['lower-case scheme, wrong token', { authorization: `bearer ${TOKEN.slice(1)}` }],
  ['the Basic scheme', { authorization: `Basic ${Buffer.from(`admin:${TOKEN}`).toString('base64')}` }],
  ['the bare token', { authorization: TOKEN }],
  ['the token as Token scheme', { authorization: `Token ${TOKEN}` }],
  ['the token in X-Admin-Token', { 'x-admin-token': TOKEN }],
  ['the token in a cookie', { cookie: `token=${TOKEN}` }],
  ['a wrong token and the right one, comma-joined', { authorization: `Bearer x, Bearer ${TOKEN}` }],
  ['1 MB of token', { authorization: `Bearer ${'a'.repeat(1 << 20)}` }],
];

function cases() {
  const out = [];
  for (const r of ADMIN) {
    for (const [label, headers] of ATTEMPTS) {
      out.push({
        name: `${r.method} ${r.path}: ${label}`, method: r.method, path: r.path, body: r.body,
        headers: { ...(r.ct ? { 'content-type': r.ct } : {}), ...headers },
        // 1 MB of headers is past libmicrohttpd's connection memory: it
        // answers 431 with its own HTML page before the server sees the
        // request (no hook in 0.9.75; README, "Framing"). A refusal all the same.
        expect: label.startsWith('1 MB') ? { status: 431, problem: false } : UNAUTH,
        check: (res) => {
          if (res.status === 401) assert.match(res.headers['www-authenticate'] ?? '', /^Bearer/);
          assert.ok(!res.text.includes(TOKEN), 'the token is in the answer');
        },
      });
    }
    for (const q of [`access_token=${TOKEN}`, `token=${TOKEN}`, `authorization=Bearer%20${TOKEN}`]) {
      const sep = r.path.includes('?') ? '&' : '?';
      out.push({
        name: `${r.method} ${r.path}: ${q.split('=')[0]} in the query`, method: r.method, path: `${r.path}${sep}${q}`, body: r.body,
        headers: r.ct ? { 'content-type': r.ct } : {}, expect: UNAUTH,
      });
    }
    out.push({
      name: `${r.method} ${r.path}: a NUL after the token`, raw: rawWith(r, `Bearer ${TOKEN}\0x`),
      expect: { status: [400, 401], type: null },
    });
    out.push({
      name: `${r.method} ${r.path}: a NUL after the token, Authorization last`, raw: Buffer.from(rawWith(r, `Bearer ${TOKEN}\0x`).toString('latin1')
        .replace(/(Authorization: [^\r]*\r\n)((?:.*\r\n)*?)\r\n/, '$2$1\r\n'), 'latin1'),
      expect: { status: [400, 401], type: null },
    });
    out.push({
      name: `${r.method} ${r.path}: two Authorization headers`, raw: rawWith(r, 'Bearer wrong', `Bearer ${TOKEN}`),
      expect: { status: [400, 401], type: null },
    });
  }
  return out;
}

function rawWith(r, ...auths) {
  const body = r.body ?? '';
  const head = [`${r.method} ${r.path} HTTP/1.1`, 'Host: x', 'Connection: close', ...auths.map((a) => `Authorization: ${a}`),
    ...(r.ct ? [`Content-Type: ${r.ct}`] : []), `Content-Length: ${Buffer.byteLength(body)}`];
  return Buffer.from(`${head.join('\r\n')}\r\n\r\n${body}`, 'latin1');
}

test('auth bypass attempts with --admin-token-file', async (t) => {
  const root = tempRoot();
  const file = path.join(root, 'token');
  writeFileSync(file, `${TOKEN}\n`);
  // The fixtures go up with the token; the runner exists, so DELETE /v1/runner would act.
  const setup = async (target) => {
    await uploadFixtures(target, { authorization: `Bearer ${TOKEN}` });
    const r = await send(target.base, { method: 'POST', path: '/v1/dataframes', headers: { 'content-type': 'application/json' }, body: '{"source":{"rows":[{"a":1}]}}' });
    assert.equal(r.status, 201, r.text);
  };
  const target = await new Target('serve', { root, args: ['--admin-token-file', file], setup }).start();
  try {
    await runGroup(t, target, 'admin routes without the admin token', cases());
  } finally {
    await target.stop();
  }
  assert.ok(!target.srv.stderr().includes(TOKEN), 'the token is in the log');
});
