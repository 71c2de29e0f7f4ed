// tasks_metrics: /metrics counts the tasks the runners ended, by outcome
// (framed_tasks_total{outcome="ok|failed|cancelled|retried|skipped"}): every
// ended task once, so ok + failed + cancelled + skipped is the sum of the
// queries' tasks_done; the tasks of coalesced shuffle partitions planned not
// to run count as skipped (as their stages' tasks_skipped say), not ok; a
// failing task counts as failed; the counters never go back when a reset
// tears the runner down.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { call, startServer } from './lib.mjs';

const OUTCOMES = ['ok', 'failed', 'cancelled', 'retried', 'skipped'];

async function tasks(base) {
  const text = (await call(base, 'GET', '/metrics')).text;
  assert.match(text, /^# TYPE framed_tasks_total counter$/m);
  const out = {};
  for (const o of OUTCOMES) {
    const m = new RegExp(`^framed_tasks_total\\{outcome="${o}"\\} (\\d+)$`, 'm').exec(text);
    assert.ok(m, `framed_tasks_total{outcome="${o}"} is exported`);
    out[o] = Number(m[1]);
  }
  return out;
}

async function run(base, plan) {
  const r = await call(base, 'POST', '/v1/queries?wait=60', { json: { plan } });
  assert.ok(r.status === 200 || r.status === 201, r.text);
  return r.body;
}

test('framed_tasks_total counts every ended task once, by outcome, across resets', async () => {
  const srv = await startServer();
  try {
    let s = 'k,v\n';
    for (let i = 0; i < 3000; i++) s += `${i % 7},${i}\n`;
    writeFileSync(path.join(srv.dataDir, 'nums.csv'), s);
    writeFileSync(path.join(srv.dataDir, 'bad.csv'), `k,v\n${'1,2\n'.repeat(500)}1,oops\n`);
    assert.deepEqual(await tasks(srv.base), { ok: 0, failed: 0, cancelled: 0, retried: 0, skipped: 0 });
    let r = await call(srv.base, 'POST', '/v1/config', { json: { scan_tasks_max_size_bytes: 2048, scan_tasks_min_size_bytes: 1, shuffle_partitions: 3, maintain_order: false } });
    assert.equal(r.status, 200, r.text);
    const good = await run(srv.base, { source: { dataset: 'nums' }, ops: [{ groupby: ['k'], agg: ['sum(v) as s'] }] });
    assert.equal(good.state, 'succeeded', JSON.stringify(good));
    assert.ok(good.progress.tasks_total > 3, JSON.stringify(good.progress));
    // the final phase's 3 small partitions are read by one task: the others are skipped
    const stages = (await call(srv.base, 'GET', `/v1/queries/${good.id}/stages`)).body.stages;
    const skipped = stages.reduce((n, s) => n + s.tasks_skipped, 0);
    assert.equal(stages[stages.length - 1].tasks_skipped, 2, JSON.stringify(stages[stages.length - 1]));
    const ran = stages.reduce((n, s) => n + s.tasks.filter((x) => x.state === 'ok').length, 0);
    let t = await tasks(srv.base);
    assert.deepEqual(t, { ok: ran, failed: 0, cancelled: 0, retried: 0, skipped });
    assert.equal(ran + skipped, good.progress.tasks_done);
    const bad = await run(srv.base, { source: { dataset: 'bad', schema: { v: 'int64' } } });
    assert.equal(bad.state, 'failed', JSON.stringify(bad));
    t = await tasks(srv.base);
    assert.ok(t.failed >= 1, `a failing task counts as failed: ${JSON.stringify(t)}`);
    assert.equal(t.ok + t.failed + t.cancelled + t.skipped, good.progress.tasks_done + bad.progress.tasks_done, JSON.stringify(t));
    r = await call(srv.base, 'DELETE', '/v1/runner');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(await tasks(srv.base), t, 'a reset does not take the counters back');
    const again = await run(srv.base, { source: { dataset: 'nums' } });
    assert.equal(again.state, 'succeeded', JSON.stringify(again));
    const after = await tasks(srv.base);
    assert.equal(after.ok + after.skipped, t.ok + t.skipped + again.progress.tasks_done, JSON.stringify(after));
  } finally {
    await srv.stop();
  }
});
