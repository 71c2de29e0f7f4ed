// result_locations: GET /v1/queries/{id}/result/locations tells a client where
// it reads a result itself. On a cluster with a secret, the parts left on the
// workers are read from the workers (GET /v1/results/{id} on a signed token),
// and their Arrow streams, read back by apache-arrow in order, equal the
// coordinator's JSON result row for row. A token changed in any way (another
// range, another partition, a later expiry, a flipped digit), one that expired
// or is missing is refused with 401 and changes nothing; a signed location
// past a partition's rows is 416, of a partition that is gone 404. DELETE
// /v1/queries/{id}/result drops the partitions on the workers (410 after), once a
// read of it in progress has ended. A worker streams a partition in record
// batches of a few MiB and counts an open stream in its metrics.
// On the local runner the locations are the coordinator's own result route.
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';
import { assertProblem, call, signedGet, SOURCE_DIR, startServer, startWorker, waitWorkersActive } from './lib.mjs';

const require = createRequire(path.join(SOURCE_DIR, 'package.json'));
const arrow = require('apache-arrow');

const ROWS = 30000;

function writeData(dataDir) {
  let s = 'k,v,name\n';
  for (let i = 0; i < ROWS; i++) s += `${i % 101},${i},n${i % 7}${'é'.repeat(i % 3)}\n`;
  writeFileSync(path.join(dataDir, 'big.csv'), s);
}

async function getBytes(url) {
  const r = await fetch(url);
  const body = Buffer.from(await r.arrayBuffer());
  return { status: r.status, type: r.headers.get('content-type'), body };
}

// The rows of every location, read in order, as [k, v, name] arrays.
async function readAll(base, locations) {
  const rows = [];
  let first = 0;
  for (const l of locations) {
    assert.equal(l.first_row, first, 'locations are in row order, without gaps');
    const got = await getBytes(new URL(l.url, base));
    assert.equal(got.status, 200, got.body.toString().slice(0, 300));
    assert.equal(got.type, 'application/vnd.apache.arrow.stream');
    const table = arrow.tableFromIPC(got.body);
    assert.equal(table.numRows, l.rows);
    for (const row of table) rows.push([Number(row.k), Number(row.v), row.name]);
    first += l.rows;
  }
  return rows;
}

async function jsonRows(base, id) {
  const r = await call(base, 'GET', `/v1/queries/${id}/result`);
  assert.equal(r.status, 200, r.text);
  return r.body.rows.map((row) => [row[0], row[1], row[2]]);
}

function sign(secret, part, config, offset, limit, expires) {
  return createHmac('sha256', secret).update(`framed-result\n${part}\n${config}\n${offset}\n${limit}\n${expires}`).digest('hex');
}

test('a cluster with a secret: the client reads the parts from the workers on signed tokens', async () => {
  const secret = randomBytes(24).toString('hex');
  const env = { FRAMED_CLUSTER_SECRET: secret };
  const coord = await startServer({ args: ['--runner', 'remote'], env });
  const workers = [];
  try {
    for (let i = 0; i < 2; i++) workers.push(await startWorker(coord.base, { args: ['--threads', '1', '--data-dir', coord.dataDir], env }));
    await waitWorkersActive(coord, 2);
    writeData(coord.dataDir);
    let r = await call(coord.base, 'POST', '/v1/config', { json: { scan_tasks_max_size_bytes: 65536, scan_tasks_min_size_bytes: 1, morsel_size_rows: 4096 } });
    assert.equal(r.status, 200, r.text);
    r = await call(coord.base, 'POST', '/v1/queries?wait=60', { json: { plan: { source: { dataset: 'big' }, ops: [{ where: 'v % 3 != 1' }, { select: ['k', 'v', 'name'] }] } } });
    assert.equal(r.body.state, 'succeeded', r.text);
    const { id, config_id: config } = r.body;
    const loc = await call(coord.base, 'GET', `/v1/queries/${id}/result/locations`);
    assert.equal(loc.status, 200, loc.text);
    assert.equal(loc.body.query_id, id);
    assert.equal(loc.body.total_rows, r.body.rows);
    assert.ok(Date.parse(loc.body.expires_at) > Date.now() + 30 * 60 * 1000, loc.body.expires_at);
    const urls = loc.body.locations.map((l) => new URL(l.url, coord.base));
    assert.ok(urls.length > 1, 'several parts');
    const hosts = new Set(urls.map((u) => u.origin));
    assert.equal(hosts.size, 2, `the parts are read from both workers: ${[...hosts]}`);
    for (const u of urls) {
      assert.notEqual(u.origin, new URL(coord.base).origin);
      assert.match(u.pathname, /^\/v1\/results\/p-[0-9a-f]+$/);
      assert.equal(u.searchParams.get('config_id'), config);
      assert.match(u.searchParams.get('token'), /^[0-9a-f]{64}$/);
    }
    const want = await jsonRows(coord.base, id);
    assert.equal(want.length, r.body.rows);
    assert.deepEqual(await readAll(coord.base, loc.body.locations), want);

    // every change to a location is refused, 401 problem+json
    const u = new URL(urls[0]);
    const [part, offset, limit, expires] = [u.pathname.split('/').pop(), u.searchParams.get('offset'), u.searchParams.get('limit'), u.searchParams.get('expires')];
    assert.equal(u.searchParams.get('token'), sign(secret, part, config, offset, limit, expires), 'the token is the documented HMAC');
    const changed = (edit) => { const v = new URL(u); edit(v.searchParams); return v.href; };
    const flip = (t) => (t[0] === '0' ? '1' : '0') + t.slice(1);
    for (const [what, href] of [
      ['another limit', changed((p) => p.set('limit', String(Number(limit) + 1)))],
      ['another offset', changed((p) => p.set('offset', '1'))],
      ['a later expiry', changed((p) => p.set('expires', String(Number(expires) + 60)))],
      ['a flipped digit', changed((p) => p.set('token', flip(p.get('token'))))],
      ['no token', changed((p) => p.delete('token'))],
      ['another config', changed((p) => p.set('config_id', `sha256:${'0'.repeat(64)}`))],
      ['an expired one, signed', changed((p) => { p.set('expires', '1000'); p.set('token', sign(secret, part, config, offset, limit, 1000)); })],
      ['a day ahead and more, signed', (() => { const e = Math.floor(Date.now() / 1000) + 2 * 86400; return changed((p) => { p.set('expires', String(e)); p.set('token', sign(secret, part, config, offset, limit, e)); }); })()],
    ]) {
      const got = await call(u.origin, 'GET', href.slice(u.origin.length));
      assertProblem(got, 401, 'unauthorized');
      assert.ok(!got.text.includes(secret), what);
    }
    const signedAt = (p, off, lim) => {
      const e = Math.floor(Date.now() / 1000) + 600;
      return `/v1/results/${p}?config_id=${config}&offset=${off}&limit=${lim}&expires=${e}&token=${sign(secret, p, config, off, lim, e)}`;
    };
    assertProblem(await call(u.origin, 'GET', signedAt(part, 0, 1 << 30)), 416, 'range-not-satisfiable');
    assertProblem(await call(u.origin, 'GET', signedAt(`p-${'ab'.repeat(16)}`, 0, 1)), 404, 'partition-not-found');
    assertProblem(await call(u.origin, 'GET', `/v1/results/x?config_id=${config}&offset=0&limit=1&expires=1&token=0`), 400, 'invalid-parameter');
    // and what was refused changed nothing: the locations still read right
    assert.deepEqual(await readAll(coord.base, loc.body.locations), want);
    // a query that is not known has no locations
    assertProblem(await call(coord.base, 'GET', '/v1/queries/q-0000000000000000/result/locations'), 404, 'query-not-found');

    // DELETE /v1/queries/{id}/result gives the result back on the workers: their partitions go
    const held = async () => {
      let n = 0;
      for (const w of workers) n += (await call(w.base, 'GET', '/v1/info', { headers: signedGet(secret, '/v1/info') })).body.partitions;
      return n;
    };
    const before = await held();
    assert.ok(before >= urls.length, `the workers hold the result's partitions: ${before}`);
    assert.equal((await call(coord.base, 'DELETE', `/v1/queries/${id}/result`)).status, 204);
    for (let i = 0; i < 100 && (await held()) > before - hosts.size; i++) await new Promise((res) => setTimeout(res, 50));
    assert.ok((await held()) <= before - hosts.size, `the workers dropped the result: ${before} -> ${await held()}`);
    assertProblem(await call(coord.base, 'GET', `/v1/queries/${id}/result`), 410, 'result-released');
    assertProblem(await call(coord.base, 'GET', `/v1/queries/${id}/result/locations`), 410, 'result-released');
    assertProblem(await call(u.origin, 'GET', u.href.slice(u.origin.length)), 404, 'partition-not-found');
    assert.equal((await call(coord.base, 'DELETE', `/v1/queries/${id}/result`)).status, 204, 'idempotent');
    const status = await call(coord.base, 'GET', `/v1/queries/${id}`);
    assert.equal(status.body.state, 'succeeded');
    assert.equal(status.body.rows, r.body.rows, 'the status keeps its row count');
    assertProblem(await call(coord.base, 'DELETE', '/v1/queries/q-0000000000000000/result'), 404, 'query-not-found');
  } finally {
    for (const w of workers) await w.stop();
    await coord.stop();
  }
});

test('the local runner: the locations are the coordinator\'s own result route', async () => {
  const srv = await startServer({ args: ['--threads', '2'] });
  try {
    writeData(srv.dataDir);
    let r = await call(srv.base, 'POST', '/v1/config', { json: { scan_tasks_max_size_bytes: 65536, scan_tasks_min_size_bytes: 1 } });
    assert.equal(r.status, 200, r.text);
    r = await call(srv.base, 'POST', '/v1/queries?wait=60', { json: { plan: { source: { dataset: 'big' }, ops: [{ select: ['k', 'v', 'name'] }] } } });
    assert.equal(r.body.state, 'succeeded', r.text);
    const loc = await call(srv.base, 'GET', `/v1/queries/${r.body.id}/result/locations`);
    assert.equal(loc.status, 200, loc.text);
    assert.equal(loc.body.total_rows, ROWS);
    for (const l of loc.body.locations) assert.match(l.url, new RegExp(`^/v1/queries/${r.body.id}/result\\?format=arrow&offset=\\d+&limit=\\d+$`));
    assert.deepEqual(await readAll(srv.base, loc.body.locations), await jsonRows(srv.base, r.body.id));
    // a running query's result cannot be released; a dataframe's data only with the dataframe
    const df = await call(srv.base, 'POST', '/v1/dataframes', { json: { source: { dataset: 'big' } } });
    assert.equal(df.status, 201, df.text);
    r = await call(srv.base, 'POST', '/v1/queries?wait=60', { json: { dataframe: df.body.id } });
    assert.equal(r.body.state, 'succeeded', r.text);
    assertProblem(await call(srv.base, 'DELETE', `/v1/queries/${r.body.id}/result`), 409, 'conflict');
    assert.equal((await call(srv.base, 'GET', `/v1/queries/${r.body.id}/result?limit=1`)).status, 200);
  } finally {
    await srv.stop();
  }
});

// A worker's metric (its /metrics text), a number.
async function workerMetric(w, name) {
  const text = (await call(w.base, 'GET', '/metrics')).text;
  const m = new RegExp(`^${name} (\\d+)$`, 'm').exec(text);
  assert.ok(m, `${name} is exported`);
  return Number(m[1]);
}

async function until(what, fn) {
  for (let i = 0; i < 400; i++) {
    const v = await fn();
    if (v) return v;
    await new Promise((res) => setTimeout(res, 50));
  }
  return assert.fail(`${what} within 20 s`);
}

const BATCH_TARGET = 4 * 1024 * 1024; // the worker's Arrow record batches aim at this

test('a wide-row partition is streamed in batches under the byte target; an open stream is charged to the worker until it ends', async () => {
  const coord = await startServer({ args: ['--runner', 'remote'] });
  let worker = null;
  try {
    worker = await startWorker(coord.base, { args: ['--threads', '1', '--data-dir', coord.dataDir] });
    await waitWorkersActive(coord, 1);
    const rows = 8000; // ~32 MB of rows of 4 KB: one partition, far under 65536 rows
    let s = 'k,pad\n';
    for (let i = 0; i < rows; i++) s += `${i},${String.fromCharCode(97 + (i % 26)).repeat(4000)}\n`;
    writeFileSync(path.join(coord.dataDir, 'wide.csv'), s);
    const r = await call(coord.base, 'POST', '/v1/queries?wait=60', { json: { plan: { source: { dataset: 'wide' } } } });
    assert.equal(r.body.state, 'succeeded', r.text);
    const loc = await call(coord.base, 'GET', `/v1/queries/${r.body.id}/result/locations`);
    assert.equal(loc.status, 200, loc.text);
    assert.equal(loc.body.locations.length, 1, loc.text);
    const url = new URL(loc.body.locations[0].url, coord.base);
    assert.equal(url.origin, worker.base);

    // the batches: several, each under the target, every row once in order
    const got = await getBytes(url);
    assert.equal(got.status, 200);
    const sizes = [];
    let k = 0;
    for (const batch of arrow.RecordBatchReader.from(got.body)) {
      assert.ok(batch.numRows >= 1);
      sizes.push(batch.data.byteLength);
      for (const row of batch) assert.equal(Number(row.k), k++);
    }
    assert.equal(k, rows);
    assert.ok(sizes.length >= 3, `the 32 MB partition came in ${sizes.length} batch(es)`);
    for (const b of sizes) assert.ok(b <= BATCH_TARGET, `a batch of ${b} bytes`);
    assert.equal(await workerMetric(worker, 'framed_worker_result_streams'), 0);
    assert.equal(await workerMetric(worker, 'framed_worker_result_stream_bytes'), 0);

    // a read left open (the client stops reading): charged while it is open
    const held = await workerMetric(worker, 'framed_worker_partition_bytes');
    assert.ok(held >= rows * 4000, `the worker holds the partition: ${held}`);
    const req = http.get(url);
    const res = await new Promise((resolve, reject) => { req.on('response', resolve); req.on('error', reject); });
    assert.equal(res.statusCode, 200);
    await new Promise((resolve) => res.once('data', resolve));
    res.pause();
    const open = await until('the open stream counted', async () => ((await workerMetric(worker, 'framed_worker_result_streams')) === 1 ? workerMetric(worker, 'framed_worker_result_stream_bytes') : 0));
    assert.ok(open > 0 && open <= 2 * BATCH_TARGET, `an open stream holds its encoded batch: ${open}`);
    // the result released meanwhile: the partition goes from the worker's
    // partitions, but the stream still holds its columns, and says so
    assert.equal((await call(coord.base, 'DELETE', `/v1/queries/${r.body.id}/result`)).status, 204);
    await until('the partition dropped', async () => (await workerMetric(worker, 'framed_worker_partition_bytes')) === 0);
    assert.ok((await workerMetric(worker, 'framed_worker_result_stream_bytes')) >= open + held, 'the dropped partition is charged to the stream that keeps it');
    // the client goes away: the charge goes with the stream
    req.destroy();
    await until('the stream closed', async () => (await workerMetric(worker, 'framed_worker_result_streams')) === 0);
    assert.equal(await workerMetric(worker, 'framed_worker_result_stream_bytes'), 0);
  } finally {
    if (worker) await worker.stop();
    await coord.stop();
  }
});

test('DELETE of a result while the coordinator streams it: 204 and 410 at once, the stream reads on to its end, and the charge leaves after it', async () => {
  const coord = await startServer({ args: ['--runner', 'remote'] });
  const workers = [];
  try {
    for (let i = 0; i < 2; i++) workers.push(await startWorker(coord.base, { args: ['--threads', '1', '--data-dir', coord.dataDir] }));
    await waitWorkersActive(coord, 2);
    const rows = 16000; // ~32 MB of CSV in ~1 MB parts: far more than the sockets buffer
    let s = 'k,pad\n';
    for (let i = 0; i < rows; i++) s += `${i},${String.fromCharCode(97 + (i % 26)).repeat(2000)}\n`;
    writeFileSync(path.join(coord.dataDir, 'wide.csv'), s);
    let r = await call(coord.base, 'POST', '/v1/config', { json: { scan_tasks_max_size_bytes: 1 << 20, scan_tasks_min_size_bytes: 1 } });
    assert.equal(r.status, 200, r.text);
    r = await call(coord.base, 'POST', '/v1/queries?wait=60', { json: { plan: { source: { dataset: 'wide' } } } });
    assert.equal(r.body.state, 'succeeded', r.text);
    const id = r.body.id;
    const memory = async () => Number(/^framed_memory_used_bytes (\d+)$/m.exec((await call(coord.base, 'GET', '/metrics')).text)[1]);
    const charged = await memory();
    assert.ok(charged >= rows * 2000, `the result is charged: ${charged}`);
    const partitions = async () => {
      let n = 0;
      for (const w of workers) n += (await call(w.base, 'GET', '/v1/info')).body.partitions;
      return n;
    };
    assert.ok((await partitions()) > 10, 'the result is in many parts on the workers');

    // a read that has begun, its client slow: the stream holds the result
    const req = http.get(new URL(`/v1/queries/${id}/result?format=csv`, coord.base));
    const res = await new Promise((resolve, reject) => { req.on('response', resolve); req.on('error', reject); });
    assert.equal(res.statusCode, 200);
    const chunks = [];
    const ended = new Promise((resolve, reject) => { res.on('end', resolve); res.on('error', reject); res.on('aborted', () => reject(new Error('the stream was cut'))); });
    res.on('data', (c) => chunks.push(c));
    await new Promise((resolve) => res.once('data', resolve));
    res.pause();
    assert.equal((await call(coord.base, 'DELETE', `/v1/queries/${id}/result`)).status, 204);
    assertProblem(await call(coord.base, 'GET', `/v1/queries/${id}/result`), 410, 'result-released');
    assert.equal(await memory(), charged, 'the read in progress keeps the charge');
    assert.ok((await partitions()) > 0, 'and the parts it has yet to read');
    res.resume();
    await ended;
    const lines = Buffer.concat(chunks).toString().split('\n').filter((l) => l);
    assert.equal(lines.length, rows + 1, 'every row was read');
    lines.slice(1).forEach((l, i) => assert.equal(l.slice(0, l.indexOf(',')), String(i)));
    await until('the charge given back', async () => (await memory()) === 0);
    await until('the parts dropped on the workers', async () => (await partitions()) === 0);
    assertProblem(await call(coord.base, 'GET', `/v1/queries/${id}/result`), 410, 'result-released');
  } finally {
    for (const w of workers) await w.stop();
    await coord.stop();
  }
});
