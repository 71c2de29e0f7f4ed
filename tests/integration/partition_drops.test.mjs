// partition_drops: a query whose shuffle leaves thousands of partitions on
// one worker. Once they are read, the coordinator drops them (DELETE
// /v1/partitions/{id}), a bounded number at a time to each worker: a burst
// of one call per partition would open more connections from the
// coordinator's address than a worker serves (250), so drops and the
// result read would be refused (503) and partitions left behind. Every drop
// lands, the worker refuses nothing, it ends up holding only the result,
// and the result reads whole.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { call, startServer, startWorker, waitWorkersActive } from './lib.mjs';

const ROWS = 60000;
const KEYS = 1000;
const SHUFFLE = 256;

async function metricsText(base) {
  const r = await call(base, 'GET', '/metrics');
  assert.equal(r.status, 200, r.text);
  return r.text;
}

function gauge(text, name) {
  const m = new RegExp(`^${name} (\\d+)$`, 'm').exec(text);
  assert.ok(m, `${name} in /metrics`);
  return Number(m[1]);
}

// Requests the server answered with status, whatever their route.
function answered(text, status) {
  let n = 0;
  for (const m of text.matchAll(/^framed_http_requests_total\{[^}]*status="(\d+)"\} (\d+)$/gm)) {
    if (Number(m[1]) === status) n += Number(m[2]);
  }
  return n;
}

test('thousands of shuffle partitions are dropped a few at a time: no 503, nothing left behind', async () => {
  const coord = await startServer({ args: ['--runner', 'remote'] });
  let s = 'k,v\n';
  const sums = new Map();
  for (let i = 0; i < ROWS; i++) {
    s += `${i % KEYS},${i}\n`;
    sums.set(i % KEYS, (sums.get(i % KEYS) ?? 0) + i);
  }
  writeFileSync(path.join(coord.dataDir, 'big.csv'), s);
  const worker = await startWorker(coord.base, { args: ['--threads', '2', '--data-dir', coord.dataDir] });
  try {
    await waitWorkersActive(coord, 1);
    let r = await call(coord.base, 'POST', '/v1/config', {
      json: { scan_tasks_max_size_bytes: 16384, scan_tasks_min_size_bytes: 1, shuffle_partitions: SHUFFLE, maintain_order: false },
    });
    assert.equal(r.status, 200, r.text);
    r = await call(coord.base, 'POST', '/v1/queries?wait=120', {
      json: { plan: { source: { dataset: 'big' }, ops: [{ groupby: ['k'], agg: ['sum(v) as s'] }] } },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.state, 'succeeded', JSON.stringify(r.body));
    const id = r.body.id;
    const st = await call(coord.base, 'GET', `/v1/queries/${id}/stages`);
    const scans = st.body.stages[0].tasks.length;
    assert.ok(scans * SHUFFLE > 2000, `${scans} scan tasks of ${SHUFFLE} partitions each: thousands to drop`);
    const res = await call(coord.base, 'GET', `/v1/queries/${id}/result`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.rows.length, KEYS);
    for (const [k, v] of res.body.rows) assert.equal(v, sums.get(k), `sum of key ${k}`);
    // The drops run after the shuffle was read: wait for them to land (a drop
    // is counted once its answer is sent, after the partition went).
    const result = st.body.stages[st.body.stages.length - 1].tasks.length;
    const droppedIn = (text) => [...text.matchAll(/^framed_http_requests_total\{route="\/v1\/partitions\/\{id\}",method="DELETE",status="204"\} (\d+)$/gm)]
      .reduce((n, m) => n + Number(m[1]), 0);
    let text = '';
    for (let i = 0; i < 300; i++) {
      text = await metricsText(worker.base);
      if (gauge(text, 'framed_worker_partitions') <= result && droppedIn(text) >= scans * SHUFFLE) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.ok(gauge(text, 'framed_worker_partitions') <= result,
      `the worker holds only the result's ${result} partitions, not ${gauge(text, 'framed_worker_partitions')}`);
    assert.equal(answered(text, 503), 0, 'the worker refused no call as over its connection limits');
    assert.ok(droppedIn(text) >= scans * SHUFFLE, `${droppedIn(text)} partitions dropped one by one of ${scans * SHUFFLE} shuffled`);
  } finally {
    await call(coord.base, 'DELETE', '/v1/runner');
    await worker.stop();
    await coord.stop();
  }
});
