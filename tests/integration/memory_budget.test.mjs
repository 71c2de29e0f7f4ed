// memory_budget: --memory-limit is exact. Every charged byte has one owner (a
// query record's result or a dataframe's materialized run) and is released
// once: cycles of materialize-until-507, plain query results, dataframe
// deletes and runner resets keep framed_memory_used_bytes in [0, limit], the
// runner's kept_bytes under the limit, and bring the gauge back to 0 after a
// reset. The same on the local runner and the remote runner with a worker.
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { call, SOURCE_DIR, startServer, startWorker } from './lib.mjs';

const LIMIT = 30000;
const EXAMPLES = path.join(SOURCE_DIR, 'api', 'examples');
const JOIN = JSON.parse(readFileSync(path.join(EXAMPLES, 'dataframe-join.json'), 'utf8'));

function copyExamples(dataDir) {
  for (const f of ['trips.csv', 'vendors.ndjson']) copyFileSync(path.join(EXAMPLES, f), path.join(dataDir, f));
}

// The gauge and the runner's kept bytes, each checked against [0, LIMIT].
async function budget(base, where) {
  const m = (await call(base, 'GET', '/metrics')).text.match(/^framed_memory_used_bytes (-?\d+)$/m);
  assert.ok(m, 'framed_memory_used_bytes is exported');
  const used = Number(m[1]);
  assert.ok(used >= 0, `${where}: the gauge went below 0 (${used})`);
  assert.ok(used <= LIMIT, `${where}: the gauge is over the limit (${used} > ${LIMIT})`);
  const runner = (await call(base, 'GET', '/v1/runner')).body;
  const kept = runner.detail?.kept_bytes ?? 0;
  assert.ok(kept <= LIMIT, `${where}: kept_bytes ${kept} is over the limit ${LIMIT}`);
  return { used, kept };
}

// Materializes dataframes of the join example until the budget answers 507
// (at submit) or fails a run with memory-budget-exceeded; returns the ids.
async function fillUp(base, where) {
  const frames = [];
  for (let i = 0; i < 200; i++) {
    let r = await call(base, 'POST', '/v1/dataframes', { json: JOIN });
    assert.equal(r.status, 201, r.text);
    frames.push(r.body.id);
    r = await call(base, 'POST', '/v1/queries?wait=60', { json: { dataframe: r.body.id } });
    await budget(base, `${where}, run ${i}`);
    if (r.status === 507) {
      assert.equal(r.body.type, 'https://framed.dev/problems/memory-budget-exceeded');
      return frames;
    }
    assert.ok(r.status === 200 || r.status === 201, r.text);
    if (r.body.state === 'failed') {
      assert.equal(r.body.error.kind, 'memory-budget-exceeded', r.text);
      return frames;
    }
    assert.equal(r.body.state, 'succeeded', r.text);
  }
  assert.fail(`${where}: 200 materialized dataframes never reached the ${LIMIT}-byte budget`);
}

async function cycles(base) {
  for (let cycle = 0; cycle < 3; cycle++) {
    const where = `cycle ${cycle}`;
    assert.equal((await budget(base, `${where} start`)).used, 0, `${where}: the reset left charges`);
    // a plain query's kept result is charged to its record
    let r = await call(base, 'POST', '/v1/queries?wait=60', { json: { plan: JOIN } });
    assert.equal(r.body.state, 'succeeded', r.text);
    const afterQuery = await budget(base, `${where} query`);
    assert.ok(afterQuery.used > 0, 'a kept result is charged');
    const frames = await fillUp(base, where);
    // a run of a dataframe again replaces its data: no new charge left behind
    const before = await budget(base, `${where} full`);
    const first = frames[0];
    r = await call(base, 'POST', '/v1/queries?wait=60', { json: { dataframe: first } });
    assert.ok([200, 201, 507].includes(r.status), r.text);
    const rerun = await budget(base, `${where} rerun`);
    assert.ok(rerun.used <= before.used, `${where}: a rerun grew the charge ${before.used} -> ${rerun.used}`);
    // deletes release each frame's charge at most once
    for (const id of frames.slice(0, 2)) {
      r = await call(base, 'DELETE', `/v1/dataframes/${id}`);
      assert.equal(r.status, 204, r.text);
      await budget(base, `${where} delete ${id}`);
    }
    r = await call(base, 'DELETE', '/v1/runner');
    assert.equal(r.status, 200, r.text);
    assert.equal((await budget(base, `${where} reset`)).used, 0, `${where}: the gauge is 0 after a reset`);
  }
}

test('local runner: the budget returns to 0 and never goes below it or over the limit', async () => {
  const srv = await startServer({ args: ['--memory-limit', String(LIMIT)] });
  try {
    copyExamples(srv.dataDir);
    await cycles(srv.base);
  } finally {
    await srv.stop();
  }
});

test('remote runner: the same accounting with a worker', async () => {
  const coord = await startServer({ args: ['--runner', 'remote', '--memory-limit', String(LIMIT)] });
  const worker = await startWorker(coord.base, { args: ['--threads', '2', '--data-dir', coord.dataDir] });
  try {
    copyExamples(coord.dataDir);
    for (let i = 0; i < 100; i++) {
      const r = await call(coord.base, 'GET', '/v1/workers');
      if (r.body.workers.some((w) => w.state === 'active')) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    await cycles(coord.base);
  } finally {
    await worker.stop();
    await coord.stop();
  }
});
