// hostile_uploads: dataset uploads under attack. Wrong and look-alike media
// types, malformed CSV and NDJSON, too many columns, bodies over the limit,
// uploads cut mid-body (nothing half-written may remain), a kill -9 in the
// middle of one (cleaned at the next start), concurrent PUTs of one name in
// both formats (exactly one dataset remains), and the records that broke the
// readers (2 MB fields, NUL bytes) must work. Column floods: hostile_hangs.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { listTree, problem, runGroup, send, Target, uploadFixtures } from './hostile_lib.mjs';

const UPLOAD_LIMIT = 4 << 20;
const MEDIA = problem(415, 'unsupported-media-type');
const MALFORMED = problem(422, 'malformed-data');
const TOO_LARGE = problem(413, 'payload-too-large');

const put = (name, ct, body, expect, label) => ({
  name: label ?? `PUT ${name} as ${ct}`, method: 'PUT', path: `/v1/datasets/${name}`,
  headers: ct === null ? {} : { 'content-type': ct }, body, expect,
});

function badUploadCases() {
  const cases = [];
  for (const ct of ['text/csvx', 'text/csv2', 'application/x-ndjsonx', 'application/json', 'text/plain', 'text/ndjson',
    'multipart/form-data; boundary=x', 'application/octet-stream', null]) {
    cases.push(put('victim', ct, 'a,b\n1,2\n', MEDIA));
  }
  const csv = (label, body, expect = MALFORMED, name = 'victim') => put(name, 'text/csv', body, expect, `CSV ${label}`);
  const nd = (label, body, expect = MALFORMED, name = 'victim') => put(name, 'application/x-ndjson', body, expect, `NDJSON ${label}`);
  cases.push(
    csv('empty', ''), csv('ragged rows', 'a,b\n1,2\n3\n'), csv('too many fields', 'a,b\n1,2,3\n'),
    csv('an unclosed quote', 'a,b\n"1,2\n'),
    csv('ragged rows under a new name', 'a,b\n1\n', MALFORMED, 'newname'),
    nd('a non-object line', '{"a":1}\n[1]\n'), nd('blank lines only', '\n\n\n'), nd('a bare number', '5\n'),
    nd('a cut object', '{"a":1}\n{"a":\n'), nd('invalid UTF-8', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d, 0x0a])),
    nd('10,000 nested levels', `{"a":${'['.repeat(10000)}${']'.repeat(10000)}}\n`),
    nd('an escaped NUL key', '{"a\\u0000b":1}\n'),
    put('victim', 'text/csv', `a\n${'1\n'.repeat(UPLOAD_LIMIT / 2 + 10)}`, TOO_LARGE, 'CSV over the upload limit'),
    { name: 'CSV chunked over the upload limit', method: 'PUT', path: '/v1/datasets/victim', headers: { 'content-type': 'text/csv' },
      chunks: ['a\n', ...Array.from({ length: 80 }, () => '1\n'.repeat(32768))], expect: TOO_LARGE },
    { name: 'NDJSON chunked over the limit, new name', method: 'PUT', path: '/v1/datasets/bignew', headers: { 'content-type': 'application/x-ndjson' },
      chunks: Array.from({ length: 80 }, () => '{"a":1}\n'.repeat(8192)), expect: TOO_LARGE },
  );
  return cases;
}

// An upload that stops half way: `bytes` of a body that declared `declared`.
function cutUpload(port, name, declared, bytes) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.write(`PUT /v1/datasets/${name} HTTP/1.1\r\nHost: x\r\nContent-Type: text/csv\r\nContent-Length: ${declared}\r\n\r\n`);
      s.write(`a,b\n${'1,2\n'.repeat(Math.floor(bytes / 4))}`, () => setTimeout(() => { s.destroy(); resolve(); }, 200));
    });
    s.on('error', resolve);
  });
}

async function waitNoUploads(dataDir, ms) {
  const deadline = Date.now() + ms;
  for (;;) {
    const left = listTree(dataDir).filter((l) => /(^|\/)\.upload-/.test(l));
    if (left.length === 0 || Date.now() > deadline) return left;
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('malformed and look-alike uploads change nothing', async (t) => {
  const target = await new Target('serve', { args: ['--max-upload-bytes', String(UPLOAD_LIMIT)], setup: uploadFixtures }).start();
  try {
    await runGroup(t, target, 'bad uploads', badUploadCases());
    await t.test('an upload cut mid-body leaves nothing half-written', async () => {
      const victim = readFileSync(path.join(target.dataDir, 'victim.csv'));
      await cutUpload(target.srv.port, 'victim', 3 << 20, 1 << 20);
      await cutUpload(target.srv.port, 'freshcut', 3 << 20, 1 << 20);
      assert.deepEqual(await waitNoUploads(target.dataDir, 5000), []);
      assert.deepEqual(readFileSync(path.join(target.dataDir, 'victim.csv')), victim);
      assert.ok(!existsSync(path.join(target.dataDir, 'freshcut.csv')));
      assert.equal((await send(target.base, { method: 'GET', path: '/v1/datasets/freshcut' })).status, 404);
    });
  } finally {
    await target.stop();
  }
});

test('media types match exactly, case-insensitively', async () => {
  const target = await new Target('serve').start();
  try {
    for (const [i, ct] of ['TEXT/CSV', 'text/csv; charset=utf-8', 'Text/Csv;charset=UTF-8', 'APPLICATION/X-NDJSON', 'application/ndjson'].entries()) {
      const body = /ndjson/i.test(ct) ? '{"a":1}\n' : 'a,b\n1,2\n';
      const r = await send(target.base, { method: 'PUT', path: `/v1/datasets/m${i}`, headers: { 'content-type': ct }, body });
      assert.equal(r.status, 201, `${ct}: ${r.status} ${r.text}`);
    }
  } finally {
    await target.stop();
  }
});

test('records that broke the readers: 2 MB fields, newlines in quotes, NUL bytes', async () => {
  const target = await new Target('serve').start();
  try {
    const big = 'x'.repeat(2 << 20);
    const cases = [
      ['bigfield', `a,b\n1,${big}\n2,y\n`, 2],
      ['newlines', `a,b\n1,"${'line\n'.repeat(50000)}"\n2,"y"\n`, 2],
      ['nul', 'a,b\n1,x\0y\n2,z\n', 2],
    ];
    for (const [name, body, rows] of cases) {
      const r = await send(target.base, { method: 'PUT', path: `/v1/datasets/${name}`, headers: { 'content-type': 'text/csv' }, body });
      assert.equal(r.status, 201, `${name}: ${r.status} ${r.text.slice(0, 300)}`);
      const q = await send(target.base, {
        method: 'POST', path: '/v1/queries?wait=30', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ plan: { source: { dataset: name }, ops: [{ agg: ['count(*) as n'] }] } }),
      });
      assert.equal(q.status, 200, `${name}: ${q.status} ${q.text.slice(0, 300)}`);
      assert.equal(q.body.state, 'succeeded', `${name}: ${q.text.slice(0, 500)}`);
      assert.equal(q.body.rows, 1);
      const res = await send(target.base, { method: 'GET', path: `/v1/queries/${q.body.id}/result` });
      assert.equal(JSON.stringify(res.body?.rows), JSON.stringify([[rows]]), `${name}: ${res.text.slice(0, 300)}`);
      const df = await send(target.base, {
        method: 'POST', path: '/v1/dataframes', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ source: { dataset: name } }),
      });
      assert.equal(df.status, 201, `${name}: ${df.text.slice(0, 300)}`);
      assert.equal(df.body.preview.length, rows, `${name}: the preview has ${df.body.preview.length} rows`);
    }
  } finally {
    await target.stop();
  }
});

test('concurrent PUTs of one name, CSV against NDJSON, leave exactly one dataset', async () => {
  const target = await new Target('serve').start();
  try {
    for (let round = 0; round < 40; round++) {
      const csv = send(target.base, { method: 'PUT', path: '/v1/datasets/race', headers: { 'content-type': 'text/csv' }, body: `a,b\n${'1,2\n'.repeat(2000)}` });
      const nd = send(target.base, { method: 'PUT', path: '/v1/datasets/race', headers: { 'content-type': 'application/x-ndjson' }, body: '{"a":1}\n'.repeat(2000) });
      const [r1, r2] = await Promise.all([csv, nd]);
      for (const r of [r1, r2]) assert.ok([200, 201, 409].includes(r.status), `round ${round}: ${r.status} ${r.text}`);
      const files = listTree(target.dataDir).map((l) => l.split(' ')[0]);
      const present = ['race.csv', 'race.ndjson'].filter((f) => files.includes(f));
      assert.equal(present.length, 1, `round ${round}: ${JSON.stringify(files)}`);
      assert.equal((await send(target.base, { method: 'GET', path: '/v1/datasets/race' })).status, 200);
      assert.deepEqual(files.filter((f) => f.startsWith('.upload-')), []);
    }
    // Eight CSV PUTs at once: the survivor is one of them, whole.
    const bodies = Array.from({ length: 8 }, (_, i) => `a,b\n${`${i},${i}\n`.repeat(5000)}`);
    const rs = await Promise.all(bodies.map((body) => send(target.base, { method: 'PUT', path: '/v1/datasets/race', headers: { 'content-type': 'text/csv' }, body })));
    for (const r of rs) assert.ok([200, 201, 409].includes(r.status), `${r.status} ${r.text}`);
    const final = readFileSync(path.join(target.dataDir, 'race.csv'), 'utf8');
    assert.ok(bodies.includes(final), 'the surviving file is not one whole upload');
  } finally {
    await target.stop();
  }
});

test('a kill -9 during an upload leaves no .upload-* behind after the restart', async () => {
  const target = await new Target('serve', { setup: uploadFixtures }).start();
  try {
    const victim = readFileSync(path.join(target.dataDir, 'victim.csv'));
    const s = net.connect(target.srv.port, '127.0.0.1');
    await new Promise((r) => s.on('connect', r));
    s.write('PUT /v1/datasets/victim HTTP/1.1\r\nHost: x\r\nContent-Type: text/csv\r\nContent-Length: 100000000\r\n\r\na,b\n');
    s.write('1,2\n'.repeat(1 << 18));
    let partial = [];
    for (let i = 0; i < 50 && partial.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      partial = listTree(target.dataDir).filter((l) => l.includes('.upload-'));
    }
    assert.notDeepEqual(partial, [], 'the upload never started writing');
    await target.kill();
    s.destroy();
    await target.start();
    assert.deepEqual(listTree(target.dataDir).filter((l) => l.includes('.upload-')), []);
    assert.deepEqual(readFileSync(path.join(target.dataDir, 'victim.csv')), victim);
  } finally {
    await target.stop();
  }
});
