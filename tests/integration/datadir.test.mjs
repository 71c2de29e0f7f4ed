// datadir: what the data dir may hold besides datasets, and what a request
// may name. Links out of the dir, FIFOs and names with an encoded NUL are
// refused with a problem and change nothing; racing uploads of one name leave
// exactly one file; a server killed mid-upload cleans up on its next start;
// media types are parsed, not prefix-matched. Real files, links and FIFOs.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { assertProblem, call, startServer, tempRoot } from './lib.mjs';

const CSV = 'id,name\n1,a\n2,b\n';
// A hang (a FIFO opened blockingly) fails the test instead of stalling it.
function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([promise, new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms);
  })]).finally(() => clearTimeout(timer));
}

const put = (srv, name, body, type = 'text/csv') => call(srv.base, 'PUT', `/v1/datasets/${name}`, {
  body, headers: { 'content-type': type },
});
const query = (srv, source) => call(srv.base, 'POST', '/v1/queries?wait=30', { json: { plan: { source } } });
const listed = async (srv) => (await call(srv.base, 'GET', '/v1/datasets')).body.datasets.map((d) => d.name);

test('links out of the data dir are not datasets; links inside it are', async () => {
  const srv = await startServer();
  try {
    const outside = path.join(srv.root, 'outside');
    mkdirSync(outside);
    writeFileSync(path.join(outside, 'secret.csv'), 'secret\ntop-secret-value\n');
    symlinkSync(path.join(outside, 'secret.csv'), path.join(srv.dataDir, 'leak.csv'));
    symlinkSync('../outside/secret.csv', path.join(srv.dataDir, 'leak2.ndjson'));
    writeFileSync(path.join(srv.dataDir, 'real.csv'), CSV);
    symlinkSync('real.csv', path.join(srv.dataDir, 'alias.csv'));

    for (const name of ['leak', 'leak2']) {
      const r = await call(srv.base, 'GET', `/v1/datasets/${name}`);
      assertProblem(r, 404, 'dataset-not-found');
      assert.match(r.body.detail, /outside the data dir/);
      assert.doesNotMatch(r.text, /top-secret-value/);
      const q = await query(srv, { dataset: name });
      assertProblem(q, 404, 'dataset-not-found');
      assert.doesNotMatch(q.text, /top-secret-value/);
    }
    const names = await listed(srv);
    assert.ok(!names.includes('leak') && !names.includes('leak2'), `listed: ${names}`);
    assert.ok(names.includes('real') && names.includes('alias'), `listed: ${names}`);

    const a = await call(srv.base, 'GET', '/v1/datasets/alias');
    assert.equal(a.status, 200, a.text);
    assert.deepEqual(a.body.schema.map((c) => c.name), ['id', 'name']);
    // deleting a link removes the link, not its target
    const d = await call(srv.base, 'DELETE', '/v1/datasets/alias');
    assert.equal(d.status, 204, d.text);
    assert.ok(existsSync(path.join(srv.dataDir, 'real.csv')));
    assert.ok(existsSync(path.join(outside, 'secret.csv')));
    assert.ok(srv.logLines().some((l) => l.level === 'warn' && /leak\.csv is not a dataset/.test(l.msg)));
  } finally {
    await srv.stop();
  }
});

test('a FIFO in the data dir is never opened blockingly', async () => {
  const srv = await startServer();
  try {
    execFileSync('mkfifo', [path.join(srv.dataDir, 'pipe.csv')]);
    execFileSync('mkfifo', [path.join(srv.dataDir, 'pipe2.ndjson')]);
    writeFileSync(path.join(srv.dataDir, 'ok.csv'), CSV);
    const l = await withTimeout(call(srv.base, 'GET', '/v1/datasets'), 15000, 'listing');
    assert.equal(l.status, 200);
    assert.deepEqual(l.body.datasets.map((d) => d.name), ['ok']);
    let r = await withTimeout(call(srv.base, 'GET', '/v1/datasets/pipe'), 15000, 'get');
    assertProblem(r, 404, 'dataset-not-found');
    assert.match(r.body.detail, /not a regular file/);
    r = await withTimeout(query(srv, { dataset: 'pipe2' }), 15000, 'query by dataset');
    assertProblem(r, 404, 'dataset-not-found');
    // by path the plan reaches the readers themselves: they must refuse too
    r = await withTimeout(query(srv, { path: 'pipe.csv', format: 'csv' }), 15000, 'query by path');
    assert.ok(r.status >= 400 && r.status < 500, `${r.status}: ${r.text}`);
    assert.match(r.headers.get('content-type') ?? '', /problem\+json/);
    r = await call(srv.base, 'GET', '/livez');
    assert.equal(r.status, 200);
  } finally {
    await srv.stop();
  }
});

test('an encoded NUL in a dataset name is refused and changes nothing', async () => {
  const srv = await startServer();
  try {
    for (const name of ['trips', 'victim', 'victim2']) assert.equal((await put(srv, name, CSV)).status, 201);
    let r = await call(srv.base, 'GET', '/v1/datasets/trips%00evil');
    assertProblem(r, 400, 'invalid-parameter');
    assert.equal(r.body.parameter, 'name');
    r = await call(srv.base, 'DELETE', '/v1/datasets/victim%00.bak');
    assertProblem(r, 400, 'invalid-parameter');
    r = await put(srv, 'victim2%00x', 'other\n1\n');
    assertProblem(r, 400, 'invalid-parameter');
    r = await put(srv, 'victim2%2500x', 'other\n1\n'); // "%2500" decodes to "%00": not a NUL, a bad name
    assertProblem(r, 400, 'invalid-parameter');
    assert.equal(readFileSync(path.join(srv.dataDir, 'victim.csv'), 'utf8'), CSV);
    assert.equal(readFileSync(path.join(srv.dataDir, 'victim2.csv'), 'utf8'), CSV);
    assert.deepEqual(readdirSync(srv.dataDir).sort(), ['trips.csv', 'victim.csv', 'victim2.csv']);
  } finally {
    await srv.stop();
  }
});

test('racing CSV and NDJSON uploads of one name leave exactly one file', async () => {
  const srv = await startServer();
  try {
    const ndjson = '{"id":1,"name":"a"}\n{"id":2,"name":"b"}\n';
    for (let round = 0; round < 25; round++) {
      const [a, b] = await Promise.all([
        put(srv, 'race', CSV), put(srv, 'race', ndjson, 'application/x-ndjson'),
      ]);
      assert.ok(a.status === 200 || a.status === 201, a.text);
      assert.ok(b.status === 200 || b.status === 201, b.text);
      const files = readdirSync(srv.dataDir).filter((f) => f.startsWith('race.'));
      assert.equal(files.length, 1, `round ${round}: ${files}`);
      const g = await call(srv.base, 'GET', '/v1/datasets/race');
      assert.equal(g.status, 200, g.text);
      assert.equal(`race.${g.body.format}`, files[0]);
    }
  } finally {
    await srv.stop();
  }
});

// Sends the headers and part of a body, and keeps the socket open.
function partialUpload(port, name, declared, sent) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1', () => {
      sock.write(`PUT /v1/datasets/${name} HTTP/1.1\r\nHost: x\r\nContent-Type: text/csv\r\n` +
        `Content-Length: ${declared}\r\n\r\n${'a,b\n1,2\n'.repeat(sent / 8)}`, () => resolve(sock));
    });
    sock.on('error', reject);
  });
}

test('a server killed during an upload removes the partial upload at its next start', async () => {
  const root = tempRoot();
  const first = await startServer({ root });
  const sock = await partialUpload(first.port, 'cut', 1000000, 80000);
  const uploads = () => readdirSync(first.dataDir).filter((f) => f.startsWith('.upload-'));
  for (let i = 0; i < 100 && uploads().length === 0; i++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(uploads().length, 1, 'the upload is in progress');
  process.kill(first.pid, 'SIGKILL');
  await first.exited;
  sock.destroy();
  assert.equal(uploads().length, 1, 'kill -9 leaves the partial upload');
  const second = await startServer({ root });
  try {
    assert.deepEqual(readdirSync(second.dataDir), []);
    assert.ok(second.logLines().some((l) => /removed the interrupted upload \.upload-/.test(l.msg)),
      second.stderr());
  } finally {
    await second.stop();
    execFileSync('rm', ['-rf', root]);
  }
});

test('upload media types are parsed; blank NDJSON is refused; a format replaces the other', async () => {
  const srv = await startServer();
  try {
    for (const type of ['text/csvx', 'text/csv-x', 'text/cs', 'xtext/csv', 'application/x-ndjsonp',
      'text/csv,application/json']) {
      const r = await put(srv, 'm', CSV, type);
      assertProblem(r, 415, 'unsupported-media-type');
    }
    for (const type of ['TEXT/CSV', 'text/csv; charset=utf-8', 'Text/Csv;charset=UTF-8', ' text/csv ']) {
      const r = await put(srv, 'm', CSV, type);
      assert.ok(r.status === 200 || r.status === 201, `${type}: ${r.status} ${r.text}`);
      assert.equal(r.body.format, 'csv');
    }
    let r = await put(srv, 'blank', '\n\n\n', 'application/x-ndjson');
    assertProblem(r, 422, 'malformed-data');
    assert.match(r.body.detail, /no records/);
    r = await call(srv.base, 'GET', '/v1/datasets/blank');
    assertProblem(r, 404, 'dataset-not-found');

    r = await put(srv, 'm', '{"x":1}\n', 'Application/NDJSON; charset=utf-8');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.format, 'ndjson');
    assert.deepEqual(readdirSync(srv.dataDir).filter((f) => !f.startsWith('.')), ['m.ndjson']);
    r = await call(srv.base, 'GET', '/v1/datasets/m');
    assert.deepEqual(r.body.schema.map((c) => c.name), ['x']);
  } finally {
    await srv.stop();
  }
});

// Listings read files: they run off the pool threads, so health checks answer
// while several listings of a large data dir are in flight (before, they held
// every pool thread until done). The listing is bounded and says so.
test('listings are bounded and do not hold the pool threads', async () => {
  const srv = await startServer();
  try {
    for (let i = 0; i <= 10000; i++) writeFileSync(path.join(srv.dataDir, `d${i}.csv`), 'a,b\n1,2\n');
    const order = [];
    const listings = [];
    for (let i = 0; i < 2 * os.cpus().length; i++) {
      listings.push(call(srv.base, 'GET', '/v1/datasets').then((r) => { order.push('list'); return r; }));
    }
    await new Promise((r) => setTimeout(r, 30));
    const live = await call(srv.base, 'GET', '/livez');
    order.push('livez');
    assert.equal(live.status, 200);
    const done = await Promise.all(listings);
    assert.equal(order[0], 'livez', `answered in the order ${order}`);
    for (const r of done) {
      assert.equal(r.status, 200);
      assert.equal(r.body.datasets.length, 10000);
      assert.equal(r.body.truncated, true);
    }
  } finally {
    await srv.stop();
  }
});
