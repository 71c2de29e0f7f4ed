// stages: GET /v1/queries/{id}/stages shows what ran. A local-runner query
// with a shuffle join and a groupby lists its stages with their operators,
// the stages they read, how their input is exchanged and the planner
// decisions taken for them; every task ran once, ok, on a thread, and the
// last stage's rows are the result's. With the remote runner the tasks name
// the workers that ran them; a worker killed (SIGKILL) mid query leaves its
// attempts visible as retried or made again (rerun).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import path from 'node:path';
import { test } from 'node:test';
import { assertProblem, call, rowsPlan, startServer, startWorker } from './lib.mjs';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

async function waitFor(fn, what, timeoutMs = 60000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`waited in vain for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function writeTrips(dataDir, rows) {
  let s = 'trip_id,vendor,fare\n';
  for (let i = 0; i < rows; i++) s += `${i},${['acme', 'zoom', 'kite'][i % 3]},${(i % 50) + 0.5}\n`;
  writeFileSync(path.join(dataDir, 'trips.csv'), s);
  const v = ['acme', 'zoom', 'kite'].map((id, i) => JSON.stringify({ vendor: id, fleet: 10 * (i + 1) }));
  writeFileSync(path.join(dataDir, 'vendors.ndjson'), `${v.join('\n')}\n`);
}

function bigCsv(dataDir, rows) {
  let s = 'k,v\n';
  for (let i = 0; i < rows; i++) s += `${i % 97},${i}\n`;
  writeFileSync(path.join(dataDir, 'big.csv'), s);
}

async function stagesOf(base, id) {
  const r = await call(base, 'GET', `/v1/queries/${id}/stages`);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.query_id, id);
  return r.body;
}

// The members every stage and task has, with their types.
function checkShape(body) {
  assert.equal(typeof body.restarts, 'number');
  assert.equal(typeof body.retries, 'number');
  body.stages.forEach((s, i) => {
    assert.equal(s.stage, i);
    assert.equal(typeof s.label, 'string');
    assert.ok(s.label.length > 0);
    assert.ok(['none', 'shuffle', 'broadcast', 'gather', 'range'].includes(s.exchange), s.exchange);
    for (const input of s.inputs) assert.ok(input < i, `stage ${i} reads a later stage ${input}`);
    assert.equal(s.tasks_truncated, false);
    assert.ok(Number.isInteger(s.tasks_skipped) && s.tasks_skipped <= s.tasks_done, JSON.stringify(s));
    for (const t of s.tasks) {
      assert.ok(['queued', 'running', 'ok', 'failed', 'retried', 'cancelled', 'skipped'].includes(t.state));
      if (t.started_at !== null) assert.match(t.started_at, ISO);
      if (t.finished_at !== null) assert.match(t.finished_at, ISO);
      assert.equal(typeof t.rerun, 'boolean');
    }
  });
}

test('a local query with a shuffle join and a groupby shows its stages and tasks', async () => {
  const server = await startServer({ args: ['--threads', '2'] });
  try {
    writeTrips(server.dataDir, 3000);
    let r = await call(server.base, 'POST', '/v1/config', {
      // every shuffle partition its own task (no coalescing): each task below ran
      json: { shuffle_partitions: 3, broadcast_join_size_bytes_threshold: 0, scan_tasks_max_size_bytes: 8192, scan_tasks_min_size_bytes: 1, shuffle_coalesce_bytes: 0 },
    });
    assert.equal(r.status, 200, r.text);
    const plan = {
      source: { dataset: 'trips' },
      ops: [
        { join: { right: { source: { dataset: 'vendors' } }, on: ['vendor'], how: 'inner' } },
        { groupby: ['vendor'], agg: ['count(*) as n', 'sum(fleet) as f'] },
      ],
    };
    r = await call(server.base, 'POST', '/v1/queries?wait=60', { json: { plan } });
    assert.equal(r.body.state, 'succeeded', r.text);
    const id = r.body.id;
    const result = await call(server.base, 'GET', `/v1/queries/${id}/result`);
    const body = await stagesOf(server.base, id);
    checkShape(body);
    assert.equal(body.state, 'succeeded');
    assert.equal(body.config_id, r.body.config_id);
    assert.equal(body.restarts, 0);
    assert.equal(body.retries, 0);
    const scans = body.stages.filter((s) => s.label.startsWith('scan'));
    assert.ok(scans.some((s) => s.label.includes('trips')), JSON.stringify(body.stages.map((s) => s.label)));
    assert.ok(scans.some((s) => s.label.includes('vendors')));
    assert.ok(scans.find((s) => s.label.includes('trips')).tasks_total > 1, 'the scan was split');
    const join = body.stages.find((s) => s.label.startsWith('join'));
    assert.ok(join, 'a join stage');
    assert.equal(join.exchange, 'shuffle');
    assert.equal(join.inputs.length, 2);
    assert.equal(join.tasks_total, 3);
    assert.ok(join.bytes_shuffled > 0);
    assert.ok(join.decisions.some((d) => d.field === 'shuffle_partitions' && d.value === 3), JSON.stringify(join.decisions));
    const scanTrips = scans.find((s) => s.label.includes('trips'));
    assert.ok(scanTrips.decisions.some((d) => d.field === 'scan_tasks_max_size_bytes' && d.value === 8192));
    for (const s of body.stages) {
      assert.equal(s.tasks_done, s.tasks_total, `stage ${s.stage} finished`);
      assert.equal(s.tasks_running, 0);
      assert.equal(s.tasks.length, s.tasks_total, 'one attempt each');
      assert.match(s.finished_at, ISO);
      for (const t of s.tasks) {
        assert.equal(t.state, 'ok');
        assert.equal(t.attempt, 0);
        assert.equal(t.rerun, false);
        assert.equal(t.worker, null);
        assert.equal(Number.isInteger(t.thread) && t.thread >= 0 && t.thread < 2, true, `thread ${t.thread}`);
        assert.equal(t.error, null);
      }
      assert.equal(s.tasks.reduce((a, t) => a + t.rows_out, 0), s.rows_out);
    }
    // the scans read the files (rows and bytes as the executor says); the join reads what they made
    assert.equal(scanTrips.rows_in, 3000);
    assert.ok(scanTrips.bytes_in > 3000 * 8, `bytes_in ${scanTrips.bytes_in}`);
    assert.ok(scanTrips.tasks.every((t) => t.rows_in > 0 && t.bytes_in > 0));
    assert.equal(scanTrips.rows_out, 3000);
    assert.equal(join.rows_in, 3000 + 3);
    const last = body.stages[body.stages.length - 1];
    // each decision on the stage it is about: the aggregation's partitions on
    // its final stage (not the partial one), the push-down on the scan
    const agg = (d) => d.decision.startsWith('aggregation');
    assert.ok(last.decisions.some((d) => agg(d) && ['maintain_order', 'shuffle_partitions'].includes(d.field)), JSON.stringify(last.decisions));
    for (const st of body.stages.slice(0, -1)) assert.ok(!st.decisions.some(agg), `stage ${st.stage}: ${JSON.stringify(st.decisions)}`);
    assert.equal(last.rows_out, result.body.total_rows);
    assert.equal(last.rows_out, 3);
    // the optimizer's push-down (decided before any stage) is on the scan it changed
    r = await call(server.base, 'POST', '/v1/queries?wait=60', { json: { plan: { source: { dataset: 'trips' }, ops: [{ select: ['vendor'] }] } } });
    assert.equal(r.body.state, 'succeeded', r.text);
    const pushed = await stagesOf(server.base, r.body.id);
    assert.ok(pushed.stages[0].decisions.some((d) => /projection push-down/.test(d.decision) && d.field === null), JSON.stringify(pushed.stages));
    assertProblem(await call(server.base, 'GET', '/v1/queries/q-0000000000000000/stages'), 404, 'query-not-found');
  } finally {
    await server.stop();
  }
});

test('a remote query names the workers that ran its tasks', async () => {
  const coord = await startServer({ args: ['--runner', 'remote'] });
  const workers = [];
  try {
    for (let i = 0; i < 2; i++) workers.push(await startWorker(coord.base, { args: ['--threads', '1', '--data-dir', coord.dataDir] }));
    const listed = await waitFor(async () => {
      const w = (await call(coord.base, 'GET', '/v1/workers')).body.workers;
      return w.filter((x) => x.state === 'active').length === 2 ? w : null;
    }, 'two active workers');
    const ids = new Map(listed.map((w) => [w.id, w.url]));
    bigCsv(coord.dataDir, 20000);
    let r = await call(coord.base, 'POST', '/v1/config', { json: { scan_tasks_max_size_bytes: 8192, scan_tasks_min_size_bytes: 1, shuffle_partitions: 2 } });
    assert.equal(r.status, 200, r.text);
    r = await call(coord.base, 'POST', '/v1/queries?wait=60', { json: { plan: { source: { dataset: 'big' }, ops: [{ groupby: ['k'], agg: ['sum(v) as s'] }] } } });
    assert.equal(r.body.state, 'succeeded', r.text);
    const body = await stagesOf(coord.base, r.body.id);
    checkShape(body);
    const seen = new Set();
    for (const s of body.stages) {
      for (const t of s.tasks) {
        assert.equal(t.state, 'ok');
        assert.equal(t.thread, null);
        assert.ok(ids.has(t.worker), `task ran on a known worker: ${t.worker}`);
        assert.equal(t.worker_url, ids.get(t.worker));
        seen.add(t.worker);
      }
    }
    assert.equal(seen.size, 2, 'both workers ran tasks');
    const scan = body.stages[0];
    assert.ok(scan.tasks.every((t) => t.bytes_in > 0 && t.rows_in > 0), 'a worker says what it scanned');
    assert.equal(scan.rows_in, 20000);
    assert.equal(body.stages[body.stages.length - 1].rows_out, 97);
  } finally {
    for (const w of workers) await w.stop();
    await coord.stop();
  }
});

test('small shuffle partitions on two workers are read by one task, and the stages say so', async () => {
  const coord = await startServer({ args: ['--runner', 'remote'] });
  const workers = [];
  try {
    for (let i = 0; i < 2; i++) workers.push(await startWorker(coord.base, { args: ['--threads', '1', '--data-dir', coord.dataDir] }));
    await waitFor(async () => {
      const w = (await call(coord.base, 'GET', '/v1/workers')).body.workers;
      return w.filter((x) => x.state === 'active').length === 2 ? w : null;
    }, 'two active workers');
    bigCsv(coord.dataDir, 20000);
    let r = await call(coord.base, 'POST', '/v1/config', {
      json: { scan_tasks_max_size_bytes: 8192, scan_tasks_min_size_bytes: 1, shuffle_partitions: 4, maintain_order: false },
    });
    assert.equal(r.status, 200, r.text);
    r = await call(coord.base, 'POST', '/v1/queries?wait=60', { json: { plan: { source: { dataset: 'big' }, ops: [{ groupby: ['k'], agg: ['sum(v) as s'] }] } } });
    assert.equal(r.body.state, 'succeeded', r.text);
    assert.equal(r.body.progress.tasks_done, r.body.progress.tasks_total);
    const body = await stagesOf(coord.base, r.body.id);
    checkShape(body);
    const [scan, final] = body.stages;
    assert.ok(scan.tasks_total > 2, 'the scan was split');
    assert.equal(final.tasks_total, 4);
    assert.equal(final.tasks_done, 4);
    // the three tasks planned not to run are counted, with no record each
    assert.equal(final.tasks_skipped, 3);
    assert.deepEqual(final.tasks.map((t) => [t.task, t.state]), [[0, 'ok']]);
    assert.equal(final.tasks[0].rows_in, final.rows_in); // every partial, from both workers
    assert.equal(final.rows_in, scan.rows_out);
    const d = final.decisions.find((x) => x.field === 'shuffle_coalesce_bytes');
    assert.ok(d, JSON.stringify(final.decisions));
    assert.equal(d.value, 16 * 1024 * 1024);
    assert.match(d.decision, /^shuffle: 4 partitions \(\d+ bytes in all\) read by 1 tasks/);
    const res = await call(coord.base, 'GET', `/v1/queries/${r.body.id}/result`);
    assert.equal(res.body.total_rows, 97);
    const sums = new Map();
    for (let i = 0; i < 20000; i++) sums.set(i % 97, (sums.get(i % 97) ?? 0) + i);
    for (const [k, s] of res.body.rows) assert.equal(s, sums.get(k), `group ${k}`);
  } finally {
    for (const w of workers) await w.stop();
    await coord.stop();
  }
});

test('a worker killed mid query leaves retried or rerun attempts in the stages', async () => {
  const coord = await startServer({ args: ['--runner', 'remote'] });
  const workers = [];
  try {
    for (let i = 0; i < 3; i++) workers.push(await startWorker(coord.base, { args: ['--threads', '1', '--data-dir', coord.dataDir] }));
    const listed = await waitFor(async () => {
      const w = (await call(coord.base, 'GET', '/v1/workers')).body.workers;
      return w.filter((x) => x.state === 'active').length === 3 ? w : null;
    }, 'three active workers');
    bigCsv(coord.dataDir, 400000);
    let r = await call(coord.base, 'POST', '/v1/config', {
      json: { scan_tasks_max_size_bytes: 16384, scan_tasks_min_size_bytes: 1, shuffle_partitions: 4, maintain_order: false },
    });
    assert.equal(r.status, 200, r.text);
    r = await call(coord.base, 'POST', '/v1/queries', { json: { plan: { source: { dataset: 'big' }, ops: [{ groupby: ['k'], agg: ['sum(v) as s'] }] } } });
    assert.equal(r.status, 202, r.text);
    const id = r.body.id;
    const [victim] = workers;
    const victimId = listed.find((w) => w.url === victim.base).id;
    await waitFor(async () => (await call(victim.base, 'GET', '/v1/info')).body.partitions > 0, 'a partition on the victim', 120000);
    process.kill(victim.pid, 'SIGKILL');
    victim.killed = true;
    await victim.exited;
    const final = await waitFor(async () => {
      const q = await call(coord.base, 'GET', `/v1/queries/${id}`);
      return ['queued', 'running'].includes(q.body.state) ? null : q.body;
    }, 'the query to end', 300000);
    assert.equal(final.state, 'succeeded', JSON.stringify(final));
    const body = await stagesOf(coord.base, id);
    checkShape(body);
    const tasks = body.stages.flatMap((s) => s.tasks);
    const again = tasks.filter((t) => t.state === 'retried' || t.rerun);
    assert.ok(again.length > 0, `some attempt was retried or made again: restarts ${body.restarts}, retries ${body.retries}`);
    assert.ok(body.retries > 0 || body.restarts > 0 || tasks.some((t) => t.rerun));
    assert.equal(body.retries, tasks.filter((t) => t.state === 'retried').length);
    assert.ok(tasks.some((t) => t.worker === victimId), 'the victim ran some attempt');
    for (const t of tasks.filter((x) => x.state === 'retried')) assert.equal(typeof t.error, 'string');
    for (const s of body.stages) assert.equal(s.tasks_running, 0);
    assert.equal(body.stages[body.stages.length - 1].rows_out, 97);
  } finally {
    for (const w of workers) if (!w.killed) await w.stop();
    await coord.stop();
  }
});

// FRTB1 (engine_serde.c) with one int64 column "a" without nulls.
function frtbInt64(values) {
  const head = Buffer.alloc(17);
  head.write('FRTB1', 0, 'latin1');
  head.writeUInt32LE(1, 5);
  head.writeBigUInt64LE(BigInt(values.length), 9);
  const h = Buffer.alloc(4 + 1 + 1 + 8 + 1);
  h.writeUInt32LE(1, 0);
  h.write('a', 4, 'latin1');
  h.writeUInt8(2, 5); // DF_TYPE_INT64
  const v = Buffer.alloc(8 * values.length);
  values.forEach((x, i) => v.writeBigInt64LE(BigInt(x), 8 * i));
  return Buffer.concat([head, h, v]);
}

test('what a worker says it scanned is shown only within bounds', async () => {
  const coord = await startServer({ args: ['--runner', 'remote'] });
  const fake = { scan: null };
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const cid = req.headers['framed-config-id'] ?? '';
      res.setHeader('framed-config-id', cid);
      if (req.method === 'POST' && req.url === '/v1/tasks') {
        res.setHeader('content-type', 'application/json');
        return res.end(JSON.stringify({
          config_id: cid, worker_id: 'w-fake', outputs: [{ id: 'p-1', rows: 1, bytes: 64 }], null_errors: 0, elapsed_ms: 1, ...fake.said,
        }));
      }
      if (req.method === 'GET' && req.url.startsWith('/v1/partitions/')) {
        res.setHeader('content-type', 'application/vnd.framed.table');
        return res.end(frtbInt64([1]));
      }
      res.end('{}');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${server.address().port}`;
  const beat = () => call(coord.base, 'POST', '/v1/workers', {
    json: { id: 'w-fake', url, threads: 1, running_tasks: 0, config_ids: [] },
  }).catch(() => {});
  await beat();
  const timer = setInterval(beat, 300);
  try {
    const runOnce = async (said) => {
      fake.said = said;
      const r = await call(coord.base, 'POST', '/v1/queries?wait=60', { json: { plan: rowsPlan([{ a: 1 }]) } });
      assert.equal(r.body.state, 'succeeded', r.text);
      const body = await stagesOf(coord.base, r.body.id);
      checkShape(body);
      assert.equal(body.stages.length, 1);
      const [t] = body.stages[0].tasks;
      assert.equal(t.worker, 'w-fake');
      assert.equal(t.rows_out, 1);
      return t;
    };
    let t = await runOnce({ scan: { source: 'local', bytes: 123 }, source_rows: 7 });
    assert.equal(t.bytes_in, 123);
    assert.equal(t.rows_in, 7);
    const hostile = [
      { scan: { source: 'local', bytes: 2 ** 60 }, source_rows: -5 },
      { scan: { source: 'local', bytes: 'many' }, source_rows: 1.5 },
      { scan: 'junk', source_rows: 2 ** 62 },
      {},
    ];
    for (const said of hostile) {
      t = await runOnce(said);
      assert.equal(t.bytes_in, null, `ignored: ${JSON.stringify(said)}`);
      assert.equal(t.rows_in, null);
    }
  } finally {
    clearInterval(timer);
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await coord.stop();
  }
});
