// task_ahead: a worker takes one task past its slots when every slot is taken, if the task
// has input partitions to fetch: it fetches them while the task before it runs, then waits
// for the slot (runner_registry.c's pick, worker_task.c's fetch before the slot). On a worker
// with one thread, the final stage's tasks of a groupby then overlap in time (the next one is
// sent as the one before starts); scans, which have no inputs, are never sent ahead; the
// answer is the local runner's. (On the old coordinator no task overlapped another.)
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { call, startServer, startWorker, waitWorkersActive } from './lib.mjs';

const CONFIG = { maintain_order: false, shuffle_partitions: 6, shuffle_coalesce_bytes: 0,
  scan_tasks_max_size_bytes: 262144, scan_tasks_min_size_bytes: 65536 };

test('a task with inputs goes one ahead of a busy worker; scans do not', async () => {
  const coord = await startServer({ args: ['--runner', 'remote'] });
  const local = await startServer({ args: ['--threads', '1'] });
  let w;
  try {
    const lines = ['id,g,v'];
    for (let i = 0; i < 300000; i++) lines.push(`${i},g${i % 5003},${(i * 7) % 1000}`);
    for (const dir of [coord.dataDir, local.dataDir]) writeFileSync(path.join(dir, 't.csv'), lines.join('\n') + '\n');
    w = await startWorker(coord.base, { args: ['--threads', '1', '--data-dir', coord.dataDir] });
    await waitWorkersActive(coord, 1);
    for (const s of [coord, local]) assert.equal((await call(s.base, 'POST', '/v1/config', { json: CONFIG })).status, 200);
    const plan = { source: { dataset: 't' }, ops: [{ groupby: ['g'], agg: ['sum(v) as s', 'count(*) as n'] }, { sort: ['g'] }] };
    const r = await call(coord.base, 'POST', '/v1/queries?wait=60', { json: { plan } });
    assert.equal(r.body.state, 'succeeded', r.text);
    const want = await call(local.base, 'POST', '/v1/queries?wait=60', { json: { plan } });
    const rows = (await call(coord.base, 'GET', `/v1/queries/${r.body.id}/result?limit=10000`)).body.rows;
    const wantRows = (await call(local.base, 'GET', `/v1/queries/${want.body.id}/result?limit=10000`)).body.rows;
    assert.deepEqual(rows, wantRows);
    const stages = (await call(coord.base, 'GET', `/v1/queries/${r.body.id}/stages`)).body.stages;
    const overlaps = (tasks) => {
      const t = tasks.filter((x) => x.state === 'ok')
        .map((x) => ({ from: Date.parse(x.started_at), to: Date.parse(x.finished_at) }))
        .sort((x, y) => x.from - y.from);
      let n = 0;
      for (let i = 1; i < t.length; i++) if (t[i].from < t[i - 1].to) n++;
      return n;
    };
    const scan = stages[0], fin = stages[1];
    assert.ok(scan.tasks.length >= 4, `scan tasks: ${scan.tasks.length}`);
    assert.equal(overlaps(scan.tasks), 0, `scans were sent ahead: ${JSON.stringify(scan.tasks)}`);
    assert.ok(fin.tasks.length >= 4, `final tasks: ${fin.tasks.length}`);
    assert.ok(overlaps(fin.tasks) >= 1, `no final task was sent ahead: ${JSON.stringify(fin.tasks)}`);
  } finally {
    await w?.stop();
    await coord.stop();
    await local.stop();
  }
});
