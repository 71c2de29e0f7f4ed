// result_stream: a remote runner's result stays on the workers that made it
// and is streamed through the coordinator when read, partition by partition
// in order, in every format and page; a worker gone after the query makes
// the read fail by name (424 input-lost, or a cut stream once rows were
// sent), never a short answer that looks whole; the memory budget still
// bounds results; reads do not consume them; a reset drops them.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { createRequire } from 'node:module';
import { assertProblem, call, startServer, startWorker } from './lib.mjs';

const require = createRequire(import.meta.url);
const arrow = require('apache-arrow');

const ROWS = 60000;
const CONFIG = { scan_tasks_max_size_bytes: 65536, scan_tasks_min_size_bytes: 1, maintain_order: true };

function writeData(dataDir) {
  let s = 'id,g,v\n';
  for (let i = 0; i < ROWS; i++) s += `${i},g${i % 7},${i / 4}\n`;
  writeFileSync(path.join(dataDir, 'big.csv'), s);
}

async function startCluster(coordArgs = []) {
  const coord = await startServer({ args: ['--runner', 'remote', ...coordArgs] });
  writeData(coord.dataDir);
  const workers = [];
  for (let i = 0; i < 2; i++) workers.push(await startWorker(coord.base, { args: ['--threads', '2', '--data-dir', coord.dataDir] }));
  for (let i = 0; i < 100; i++) {
    const r = await call(coord.base, 'GET', '/v1/workers');
    if (r.body.workers.filter((w) => w.state === 'active').length === 2) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  return {
    coord, workers,
    async stop() { for (const w of workers) if (!w.killed) await w.stop(); await coord.stop(); },
  };
}

async function gauge(base, name) {
  const r = await call(base, 'GET', '/metrics');
  const m = new RegExp(`^${name} (\\d+)$`, 'm').exec(r.text);
  assert.ok(m, `${name} in ${base}/metrics`);
  return Number(m[1]);
}

async function heldParts(workers) {
  let n = 0;
  for (const w of workers) if (!w.killed) n += await gauge(w.base, 'framed_worker_partitions');
  return n;
}

// The tasks of the last stage, each with its worker and rows out.
async function resultTasks(base, id) {
  const r = await call(base, 'GET', `/v1/queries/${id}/stages`);
  assert.equal(r.status, 200, r.text);
  const last = r.body.stages[r.body.stages.length - 1];
  return last.tasks.filter((t) => t.state === 'ok').sort((a, b) => a.task - b.task);
}

const expectedRow = (i) => [i, `g${i % 7}`, i / 4];

async function fetchRaw(base, urlPath) {
  const r = await fetch(base + urlPath);
  try {
    return { status: r.status, bytes: Buffer.from(await r.arrayBuffer()) };
  } catch (e) {
    return { status: r.status, cut: e };
  }
}

test('a remote result stays on the workers and streams from them, whole and in pages', async () => {
  const cluster = await startCluster();
  const { base } = cluster.coord;
  try {
    assert.equal((await call(base, 'POST', '/v1/config', { json: CONFIG })).status, 200);
    const plan = { source: { dataset: 'big' }, ops: [{ where: 'id >= 0' }] };
    // A preview is fetched whole when it is made, and its copies on the workers go then.
    const df = await call(base, 'POST', '/v1/dataframes', { json: plan });
    assert.equal(df.status, 201, df.text);
    assert.ok(df.body.preview.length > 0);
    for (let i = 0; i < 50 && await heldParts(cluster.workers) > 0; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(await heldParts(cluster.workers), 0, 'a preview leaves nothing on the workers');
    const q = await call(base, 'POST', '/v1/queries?wait=60', { json: { plan } });
    assert.equal(q.body.state, 'succeeded', q.text);
    assert.equal(q.body.rows, ROWS);
    const tasks = await resultTasks(base, q.body.id);
    assert.ok(tasks.length >= 4, `several result partitions (${tasks.length})`);
    assert.equal(tasks.reduce((a, t) => a + t.rows_out, 0), ROWS);
    // Nothing was copied to the coordinator: the partitions are still on the workers.
    assert.ok(await heldParts(cluster.workers) >= tasks.length, 'the result partitions stay on the workers');
    assert.equal(await gauge(base, 'framed_memory_used_bytes') > 0, true, 'the budget charges the result');

    const all = await call(base, 'GET', `/v1/queries/${q.body.id}/result`);
    assert.equal(all.status, 200, all.text);
    assert.equal(all.body.total_rows, ROWS);
    assert.equal(all.body.rows.length, ROWS);
    for (const i of [0, 1, 12345, ROWS - 1]) assert.deepEqual(all.body.rows[i], expectedRow(i));
    assert.ok(all.body.rows.every((r, i) => r[0] === i), 'rows in order, none twice, none missing');

    // Pages that start inside one partition and end in another.
    let start = 0;
    for (const t of tasks.slice(0, 3)) start += t.rows_out;
    for (const [offset, limit] of [[start - 5, 10], [tasks[0].rows_out - 1, tasks[1].rows_out + 2], [ROWS - 3, 100], [ROWS + 10, 5]]) {
      const page = await call(base, 'GET', `/v1/queries/${q.body.id}/result?offset=${offset}&limit=${limit}`);
      assert.equal(page.status, 200, page.text);
      const want = [];
      for (let i = offset; i < Math.min(ROWS, offset + limit); i++) want.push(expectedRow(i));
      assert.deepEqual(page.body.rows, want, `offset ${offset} limit ${limit}`);
    }

    const csv = await call(base, 'GET', `/v1/queries/${q.body.id}/result?format=csv`);
    const lines = csv.text.trimEnd().split('\n');
    assert.equal(lines.length, ROWS + 1);
    assert.equal(lines[0], 'id,g,v');
    assert.equal(lines[ROWS], `${ROWS - 1},g${(ROWS - 1) % 7},${(ROWS - 1) / 4}`);
    const nd = await call(base, 'GET', `/v1/queries/${q.body.id}/result?format=ndjson&offset=100&limit=3`);
    assert.deepEqual(nd.text.trimEnd().split('\n').map((l) => JSON.parse(l).id), [100, 101, 102]);

    const ipc = await fetchRaw(base, `/v1/queries/${q.body.id}/result?format=arrow`);
    const table = arrow.tableFromIPC(ipc.bytes);
    assert.equal(table.numRows, ROWS);
    const ids = table.getChild('id').toArray();
    assert.ok(ids.every((v, i) => Number(v) === i), 'Arrow rows in order');
    assert.ok(table.batches.length >= tasks.length, 'at least a record batch per partition');

    // Reads do not consume the result; a reset drops it from the workers.
    const again = await call(base, 'GET', `/v1/queries/${q.body.id}/result?offset=${ROWS - 1}`);
    assert.deepEqual(again.body.rows, [expectedRow(ROWS - 1)]);
    assert.equal((await call(base, 'DELETE', '/v1/runner')).status, 200);
    assert.equal(await heldParts(cluster.workers), 0, 'the reset dropped the partitions');
  } finally {
    await cluster.stop();
  }
});

test('a worker gone after the query: the read fails by name, never short', async () => {
  const cluster = await startCluster();
  const { base } = cluster.coord;
  try {
    await call(base, 'POST', '/v1/config', { json: CONFIG });
    const q = await call(base, 'POST', '/v1/queries?wait=60', { json: { plan: { source: { dataset: 'big' }, ops: [{ where: 'id >= 0' }] } } });
    assert.equal(q.body.state, 'succeeded', q.text);
    const tasks = await resultTasks(base, q.body.id);
    // The victim holds some partition but not the first, so both the 424 and the cut stream show.
    const victim = cluster.workers.find((w) => w.base !== tasks[0].worker_url && tasks.some((t) => t.worker_url === w.base && t.rows_out > 0));
    assert.ok(victim, 'the other worker holds result partitions');
    const mine = tasks.map((t, i) => ({ ...t, i })).filter((t) => t.worker_url === victim.base);
    const starts = [];
    let acc = 0;
    for (const t of tasks) { starts.push(acc); acc += t.rows_out; }
    process.kill(victim.pid, 'SIGKILL');
    victim.killed = true;
    await victim.exited;
    // A page inside a partition of the dead worker: 424 before any byte.
    const first = mine.find((t) => t.rows_out > 0);
    const page = await call(base, 'GET', `/v1/queries/${q.body.id}/result?offset=${starts[first.i]}&limit=5`);
    assertProblem(page, 424, 'input-lost');
    assert.match(page.body.detail, /run the query again/);
    assert.ok(page.body.detail.includes(victim.base), 'names the worker');
    // The whole result, its first partition on a live worker: the stream is
    // cut (the chunked body never ends), so no client takes it whole.
    const whole = await fetchRaw(base, `/v1/queries/${q.body.id}/result?format=csv`);
    assert.equal(whole.status, 200);
    assert.ok(whole.cut, 'the body ends with an error, not as if complete');
    // HEAD renders the whole body: it answers the lost partition's problem.
    const head = await fetch(`${base}/v1/queries/${q.body.id}/result`, { method: 'HEAD' });
    assert.equal(head.status, 424);
    // The status still says what the query did; the coordinator lives on.
    assert.equal((await call(base, 'GET', `/v1/queries/${q.body.id}`)).body.state, 'succeeded');
    assert.equal((await call(base, 'GET', '/livez')).status, 200);
  } finally {
    await cluster.stop();
  }
});

test('the memory budget still bounds a result left on the workers', async () => {
  const cluster = await startCluster(['--memory-limit', String(256 * 1024)]);
  const { base } = cluster.coord;
  try {
    await call(base, 'POST', '/v1/config', { json: CONFIG });
    const q = await call(base, 'POST', '/v1/queries?wait=60', { json: { plan: { source: { dataset: 'big' }, ops: [{ where: 'id >= 0' }] } } });
    assert.equal(q.body.state, 'failed', q.text);
    assert.equal(q.body.error.kind, 'memory-budget-exceeded');
    for (let i = 0; i < 50 && await heldParts(cluster.workers) > 0; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(await heldParts(cluster.workers), 0, 'a refused result is dropped from the workers');
    const small = await call(base, 'POST', '/v1/queries?wait=60', { json: { plan: { source: { dataset: 'big' }, ops: [{ where: 'id < 10' }] } } });
    assert.equal(small.body.state, 'succeeded', small.text);
    const r = await call(base, 'GET', `/v1/queries/${small.body.id}/result`);
    assert.deepEqual(r.body.rows.map((x) => x[0]), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  } finally {
    await cluster.stop();
  }
});

// A result partition of more than 16 MiB is read from its worker in pieces
// (GET /v1/partitions/{id}?offset=&limit=, each a whole number of morsels),
// the next fetched while the one before is sent: the answer is the same rows
// in order, pages across a piece's edge included, and the worker served the
// one partition in several GETs of part of it each.
test('a large result partition is read from its worker in pieces', async () => {
  const cluster = await startCluster();
  const { base } = cluster.coord;
  const N = 1200000; // 3 int64 columns and a string with nulls: about 40 MB, one partition
  const str = (i) => (i % 13 === 0 ? null : `s${i % 1000}`);
  try {
    const chunks = ['i,a,b,s\n'];
    for (let s = 0; s < N; s += 100000) {
      let c = '';
      for (let i = s; i < s + 100000; i++) c += `${i},${i * 7},${i % 1000},${str(i) ?? ''}\n`;
      chunks.push(c);
    }
    writeFileSync(path.join(cluster.coord.dataDir, 'wide.csv'), chunks.join(''));
    const cfg = { scan_tasks_max_size_bytes: 1 << 30, maintain_order: true, morsel_size_rows: 65536 };
    assert.equal((await call(base, 'POST', '/v1/config', { json: cfg })).status, 200);
    const q = await call(base, 'POST', '/v1/queries?wait=120', { json: { plan: { source: { dataset: 'wide' }, ops: [{ where: 'i >= 0' }] } } });
    assert.equal(q.body.state, 'succeeded', q.text);
    const tasks = await resultTasks(base, q.body.id);
    assert.equal(tasks.length, 1, 'one result partition');
    const holder = cluster.workers.find((w) => w.base === tasks[0].worker_url);
    assert.ok(holder, `the holder ${tasks[0].worker_url} is one of the workers`);
    const gets = () => holder.logLines().filter((l) => l.method === 'GET' && /^\/v1\/partitions\//.test(l.path ?? ''));
    const before = gets().length;
    const ipc = await fetchRaw(base, `/v1/queries/${q.body.id}/result?format=arrow`);
    assert.equal(ipc.status, 200);
    const table = arrow.tableFromIPC(ipc.bytes);
    assert.equal(table.numRows, N);
    const iv = table.getChild('i').toArray(), av = table.getChild('a').toArray();
    const sv = table.getChild('s');
    let ordered = true;
    for (let k = 0; k < N && ordered; k++) ordered = Number(iv[k]) === k && Number(av[k]) === k * 7;
    assert.ok(ordered, 'every row, in order');
    let strings = true; // the pieces' own validity bits and string offsets
    for (let k = 0; k < N && strings; k += 97) strings = sv.get(k) === str(k);
    assert.ok(strings, 'strings and nulls in place');
    let served = [];
    for (let k = 0; k < 50 && served.length < 2; k++) { // the log line comes when the reply is done
      served = gets().slice(before);
      if (served.length < 2) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(served.length >= 2, `the partition was read in pieces (${served.length} GETs)`);
    assert.ok(served.every((l) => l.status === 200), JSON.stringify(served));
    // A page across the first piece's edge, sized as the coordinator sizes
    // it from the bytes the task reported (a whole number of 65536-row morsels).
    const perRow = tasks[0].bytes_out / tasks[0].rows_out;
    const edge = (Math.floor(Math.floor((16 * 1024 * 1024) / perRow) / 65536) + 1) * 65536;
    assert.ok(edge < N, `a first piece of ${edge} rows`);
    const page = await call(base, 'GET', `/v1/queries/${q.body.id}/result?offset=${edge - 2}&limit=4`);
    assert.deepEqual(page.body.rows.map((r) => [r[0], r[3]]), [0, 1, 2, 3].map((d) => [edge - 2 + d, str(edge - 2 + d)]));
  } finally {
    await cluster.stop();
  }
});
