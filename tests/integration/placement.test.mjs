// placement: the remote runner places scan tasks where their data is. Of two
// workers, one has the dataset in its data dir and one has an empty one
// (it reads the coordinator's bytes by range). Once the coordinator has seen
// which worker reads the file locally, later scans of it go to that worker,
// which waits a little for a busy one rather than sending the scan to the
// worker without the file; a changed file is learned again; tasks over
// materialized partitions run where the partitions are. A busy worker with
// the file or the partitions is waited for while it keeps finishing tasks
// (delay scheduling), so a loaded machine does not send them elsewhere; only
// a worker that finishes nothing for 500 ms loses them (or, however busy it
// keeps, a task that waited 3 s in all).
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { call, startServer, startWorker } from './lib.mjs';

const CONFIG = { scan_tasks_max_size_bytes: 65536, scan_tasks_min_size_bytes: 1, maintain_order: false, shuffle_partitions: 4 };

function writeData(dataDir, rows) {
  let s = 'id,g,v\n';
  for (let i = 0; i < rows; i++) s += `${i},g${i % 11},${i % 1000}\n`;
  writeFileSync(path.join(dataDir, 'big.csv'), s);
}

async function remoteScanBytes(w) {
  const text = (await call(w.base, 'GET', '/metrics')).text;
  const m = /^framed_worker_scan_bytes_total\{source="remote"\} (\d+)$/m.exec(text);
  return m ? Number(m[1]) : 0;
}

async function scanTasks(base, id) {
  const r = await call(base, 'GET', `/v1/queries/${id}/stages`);
  assert.equal(r.status, 200, r.text);
  return r.body.stages[0].tasks.filter((t) => t.state === 'ok');
}

test('scans go to the worker that has the file; tasks over kept partitions go to them', async () => {
  const coord = await startServer({ args: ['--runner', 'remote'] });
  const empty = path.join(coord.root, 'empty');
  mkdirSync(empty);
  const workers = [];
  try {
    writeData(coord.dataDir, 150000);
    const holder = await startWorker(coord.base, { args: ['--threads', '2', '--data-dir', coord.dataDir] });
    const other = await startWorker(coord.base, { args: ['--threads', '2', '--data-dir', empty] });
    workers.push(holder, other);
    for (let i = 0; i < 100; i++) {
      const r = await call(coord.base, 'GET', '/v1/workers');
      if (r.body.workers.filter((w) => w.state === 'active').length === 2) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.equal((await call(coord.base, 'POST', '/v1/config', { json: CONFIG })).status, 200);
    const plan = { source: { dataset: 'big' }, ops: [{ groupby: ['g'], agg: ['sum(v) as s', 'count(*) as n'] }] };
    const run = async () => {
      const r = await call(coord.base, 'POST', '/v1/queries?wait=120', { json: { plan } });
      assert.equal(r.body.state, 'succeeded', r.text);
      return r.body.id;
    };
    // Two queries teach the coordinator who reads the file locally (the
    // first may run every scan on one worker).
    await run();
    await run();
    const before = await remoteScanBytes(other);
    const id = await run();
    const tasks = await scanTasks(coord.base, id);
    assert.ok(tasks.length >= 8, `several scan tasks (${tasks.length})`);
    // A busy holder is waited for while it finishes tasks: placement by load
    // alone would send about half the scans to the other worker. (Before the
    // wait followed the holder's progress, a loaded machine sent 8 of 31.)
    const elsewhere = tasks.filter((t) => t.worker_url !== holder.base);
    assert.ok(elsewhere.length <= tasks.length / 10, `${elsewhere.length} of ${tasks.length} scans ran on the worker without the file`);
    if (elsewhere.length === 0) assert.equal(await remoteScanBytes(other), before, 'no bytes read by range for it');
    const res = await call(coord.base, 'GET', `/v1/queries/${id}/result`);
    assert.equal(res.body.rows.reduce((a, r) => a + r[2], 0), 150000);

    // A rewritten file is another file: learned again, and the answer is the new one's.
    writeData(coord.dataDir, 160000);
    await run();
    const id2 = await run();
    const after = await call(coord.base, 'GET', `/v1/queries/${id2}/result`);
    assert.equal(after.body.rows.reduce((a, r) => a + r[2], 0), 160000);

    // A materialized dataframe's partitions stay where they were made; a
    // query over them runs each task where its partition is.
    const df = await call(coord.base, 'POST', '/v1/dataframes', { json: { source: { dataset: 'big' }, ops: [{ where: 'v >= 0' }] } });
    assert.equal(df.status, 201, df.text);
    const mat = await call(coord.base, 'POST', '/v1/queries?wait=120', { json: { dataframe: df.body.id } });
    assert.equal(mat.body.state, 'succeeded', mat.text);
    const made = await scanTasks(coord.base, mat.body.id);
    const q = await call(coord.base, 'POST', '/v1/queries?wait=120', { json: { plan: { source: { dataframe: df.body.id }, ops: [{ where: 'v < 500' }] } } });
    assert.equal(q.body.state, 'succeeded', q.text);
    const over = await scanTasks(coord.base, q.body.id);
    assert.equal(over.length, made.length);
    const where = new Map(made.map((t) => [t.task, t.worker_url]));
    const moved = over.filter((t) => t.worker_url !== where.get(t.task));
    assert.ok(moved.length <= over.length / 4, `${moved.length} of ${over.length} tasks ran away from their partition`);
  } finally {
    for (const w of workers) await w.stop();
    await coord.stop();
  }
});
