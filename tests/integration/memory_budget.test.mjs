// memory_budget: --memory-limit is exact. Every charged byte has one owner (a
// query record's result or a dataframe's materialized run) and is released
// once: cycles of materialize-until-507, plain query results, dataframe
// deletes and runner resets keep framed_memory_used_bytes in [0, limit], the
// runner's kept_bytes under the limit, and bring the gauge back to 0 after a
// reset. A materialized frame is charged what the runner reports it keeps.
// The same on the local runner and the remote runner with a worker.
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { call, SOURCE_DIR, startServer, startWorker } from './lib.mjs';

// The limit of the test running now. On the local runner a running task's working
// memory counts against it too (the join example's preview charges about 36 kB:
// room for two of those); the remote runner's tasks run on the workers.
let LIMIT = 30000;
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
// (at create, for the preview's working memory, or at submit) or fails a run
// with memory-budget-exceeded; returns the ids
// and the query of each materializing run (runs[frame]).
async function fillUp(base, where, runs) {
  const frames = [];
  for (let i = 0; i < 200; i++) {
    let r = await call(base, 'POST', '/v1/dataframes', { json: JOIN });
    if (r.status === 507) { // its preview's working memory did not fit what is left
      assert.equal(r.body.type, 'https://framed.dev/problems/memory-budget-exceeded');
      await budget(base, `${where}, create ${i}`);
      return frames;
    }
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
    runs[frames.at(-1)] = r.body.id;
  }
  assert.fail(`${where}: 200 materialized dataframes never reached the ${LIMIT}-byte budget`);
}

async function cycles(base) {
  for (let cycle = 0; cycle < 3; cycle++) {
    const where = `cycle ${cycle}`;
    assert.equal((await budget(base, `${where} start`)).used, 0, `${where}: the reset left charges`);
    // one materialized frame: the gauge charges what the runner keeps, one measure
    let m = await call(base, 'POST', '/v1/dataframes', { json: JOIN });
    assert.equal(m.status, 201, m.text);
    const only = m.body.id;
    m = await call(base, 'POST', '/v1/queries?wait=60', { json: { dataframe: only } });
    assert.equal(m.body.state, 'succeeded', m.text);
    const one = await budget(base, `${where} one frame`);
    assert.ok(one.kept > 0, `${where}: the frame keeps bytes`);
    assert.equal(one.used, one.kept, `${where}: the gauge charges ${one.used} for ${one.kept} kept bytes`);
    assert.equal((await call(base, 'DELETE', `/v1/dataframes/${only}`)).status, 204);
    assert.equal((await budget(base, `${where} one frame deleted`)).used, 0);
    // a plain query's kept result is charged to its record
    let r = await call(base, 'POST', '/v1/queries?wait=60', { json: { plan: JOIN } });
    assert.equal(r.body.state, 'succeeded', r.text);
    const afterQuery = await budget(base, `${where} query`);
    assert.ok(afterQuery.used > 0, 'a kept result is charged');
    const runs = {};
    const frames = await fillUp(base, where, runs);
    assert.ok(runs[frames[0]] && runs[frames[1]], `${where}: two frames materialized`);
    // deleting a materialized frame frees its bytes, and its run's result with them
    let before = await budget(base, `${where} full`);
    r = await call(base, 'DELETE', `/v1/dataframes/${frames[0]}`);
    assert.equal(r.status, 204, r.text);
    let after = await budget(base, `${where} delete`);
    assert.ok(after.used < before.used, `${where}: a delete freed nothing (${before.used} -> ${after.used})`);
    r = await call(base, 'GET', `/v1/queries/${runs[frames[0]]}/result`);
    assert.equal(r.status, 410, r.text);
    assert.equal(r.body.type, 'https://framed.dev/problems/result-released');
    r = await call(base, 'GET', `/v1/queries/${runs[frames[0]]}`);
    assert.equal(r.body.state, 'succeeded', 'the run keeps its status');
    // a run of a dataframe again replaces its data: the charge stays one frame's
    before = after;
    r = await call(base, 'POST', '/v1/queries?wait=60', { json: { dataframe: frames[1] } });
    assert.ok([200, 201].includes(r.status), r.text);
    assert.equal(r.body.state, 'succeeded', r.text);
    after = await budget(base, `${where} rerun`);
    assert.equal(after.used, before.used, `${where}: a rerun changed the charge ${before.used} -> ${after.used}`);
    r = await call(base, 'GET', `/v1/queries/${runs[frames[1]]}/result`);
    assert.equal(r.status, 410, `the older run's result went with the data it was: ${r.text}`);
    r = await call(base, 'DELETE', `/v1/dataframes/${frames[1]}`);
    assert.equal(r.status, 204, r.text);
    await budget(base, `${where} delete again`);
    r = await call(base, 'DELETE', '/v1/runner');
    assert.equal(r.status, 200, r.text);
    assert.equal((await budget(base, `${where} reset`)).used, 0, `${where}: the gauge is 0 after a reset`);
  }
}

test('local runner: the budget returns to 0 and never goes below it or over the limit', async () => {
  LIMIT = 100000;
  const srv = await startServer({ args: ['--memory-limit', String(LIMIT)] });
  try {
    copyExamples(srv.dataDir);
    await cycles(srv.base);
  } finally {
    await srv.stop();
  }
});

test('remote runner: the same accounting with a worker', async () => {
  LIMIT = 30000;
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

// An upload's check (every record read once, as strings) holds memory too:
// under --memory-limit it counts against the budget with what is kept. A
// check that does not fit what is left now answers 507 memory-budget-exceeded
// (a later try may fit); one that needs more than the whole budget, 413
// payload-too-large. Either way nothing is stored. Before, checks ran outside
// the budget whatever it was.
test('an upload check over the budget: 413 when it never fits, 507 while kept results hold the room', async () => {
  let csv = 'id,name,value\n';
  for (let i = 0; i < 40000; i++) csv += `${i},name-${i % 977},${i * 3}\n`;
  const put = (base, name, body, type = 'text/csv') => call(base, 'PUT', `/v1/datasets/${name}`, { body, headers: { 'content-type': type } });
  const tiny = await startServer({ args: ['--memory-limit', '200000'] });
  try {
    // a file 4 times the budget is checked a range at a time (ranges of a sixteenth of the
    // budget): it fits (it was 413 while ranges were at least 64 KiB, 9 times that as strings)
    assert.ok(csv.length > 4 * 200000);
    let r = await put(tiny.base, 'wide', csv);
    assert.equal(r.status, 201, r.text);
    assert.equal((await call(tiny.base, 'GET', '/v1/datasets/wide')).body.bytes, csv.length);
    // a record of 400 kB is read whole: its check needs more than the whole budget
    const fat = 'x'.repeat(400000);
    r = await put(tiny.base, 'fat', `id,name\n1,${fat}\n2,b\n`);
    assert.equal(r.status, 413, r.text);
    assert.equal(r.body.type, 'https://framed.dev/problems/payload-too-large');
    assert.match(r.body.detail, /whole budget.*nothing was stored/);
    r = await put(tiny.base, 'fat', `{"id":1,"name":"${fat}"}\n{"id":2,"name":"b"}\n`, 'application/x-ndjson');
    assert.equal(r.status, 413, r.text);
    assert.equal((await call(tiny.base, 'GET', '/v1/datasets/fat')).status, 404, 'nothing stored');
  } finally {
    await tiny.stop();
  }
  // nothing spills: the kept results are to hold the memory room
  const srv = await startServer({ args: ['--memory-limit', '8M', '--spill-dir', 'none'] });
  try {
    let r = await put(srv.base, 'base', csv); // fits while nothing is held
    assert.equal(r.status, 201, r.text);
    // kept results of one int column (320 kB each) until the budget has no room for another
    const kept = [];
    for (let i = 0; i < 40; i++) {
      r = await call(srv.base, 'POST', '/v1/queries?wait=60', { json: { plan: { source: { dataset: 'base' }, ops: [{ select: ['id'] }] } } });
      if (r.status === 507 || r.body.state === 'failed') break; // no room for another
      assert.equal(r.body.state, 'succeeded', r.text);
      kept.push(r.body.id);
    }
    assert.ok(kept.length >= 5, `${kept.length} results kept`);
    r = await put(srv.base, 'again', csv);
    assert.equal(r.status, 507, r.text);
    assert.equal(r.body.type, 'https://framed.dev/problems/memory-budget-exceeded');
    assert.equal(r.body.file, 'again.csv');
    assert.match(r.body.detail, /has left now; nothing was stored/);
    assert.equal((await call(srv.base, 'GET', '/v1/datasets/again')).status, 404, 'nothing stored');
    let metrics = (await call(srv.base, 'GET', '/metrics')).text;
    assert.match(metrics, /^framed_memory_checking_bytes 0$/m, 'the check gave its memory back');
    for (const id of kept) assert.equal((await call(srv.base, 'DELETE', `/v1/queries/${id}/result`)).status, 204);
    r = await put(srv.base, 'again', csv); // the room is back
    assert.equal(r.status, 201, r.text);
    metrics = (await call(srv.base, 'GET', '/metrics')).text;
    assert.match(metrics, /^framed_memory_checking_bytes 0$/m);
    assert.match(metrics, /^framed_memory_used_bytes 0$/m);
  } finally {
    await srv.stop();
  }
});

// Freed big blocks (32 MiB and over; the columns of a deleted result here) are kept for the next
// query's, which then needs no fresh pages; they are outside the budget, so a quarter of it at
// most, shown as framed_memory_kept_free_bytes, and given back when not reused for 10 s, and at a
// runner reset.
test('freed big blocks are kept for reuse within a quarter of the budget, and given back', async () => {
  let a = 'k,i\n', b = 'k,j\n';
  for (let i = 0; i < 2100; i++) { a += `1,${i}\n`; b += `1,${i}\n`; }
  const kept = async (base) => {
    const m = /^framed_memory_kept_free_bytes (\d+)$/m.exec((await call(base, 'GET', '/metrics')).text);
    assert.ok(m, 'the gauge is there');
    return Number(m[1]);
  };
  const limit = '1G', most = 256 << 20;
  const srv = await startServer({ args: ['--memory-limit', limit] });
  try {
    for (const [name, body] of [['a', a], ['b', b]]) {
      const r = await call(srv.base, 'PUT', `/v1/datasets/${name}`, { body, headers: { 'content-type': 'text/csv' } });
      assert.equal(r.status, 201, r.text);
    }
    // 2100 x 2100 rows on one key: 4.41e6 rows, each column 35 MB, its result deleted
    const joinAndDelete = async () => {
      const plan = { source: { dataset: 'a' }, ops: [{ join: { right: { source: { dataset: 'b' } }, on: ['k'] } }] };
      const q = await call(srv.base, 'POST', '/v1/queries?wait=120', { json: { plan } });
      assert.equal(q.body.state, 'succeeded', q.text);
      assert.equal(q.body.rows, 2100 * 2100);
      assert.equal((await call(srv.base, 'DELETE', `/v1/queries/${q.body.id}/result`)).status, 204);
      const held = await kept(srv.base);
      assert.ok(held <= most, `${limit}: ${held} bytes kept, over a quarter of the budget`);
      assert.ok(held >= 32 << 20, `${limit}: the result's blocks were kept (${held})`);
    };
    await joinAndDelete();
    // not reused: given back after 10 s (the server's periodic thread)
    const t0 = Date.now();
    while (await kept(srv.base) > 0 && Date.now() - t0 < 30000) await new Promise((res) => setTimeout(res, 250));
    assert.equal(await kept(srv.base), 0, 'given back when not reused');
    assert.ok(Date.now() - t0 >= 8000, 'kept for about 10 s first');
    await joinAndDelete();
    assert.equal((await call(srv.base, 'DELETE', '/v1/runner')).status, 200);
    assert.equal(await kept(srv.base), 0, 'given back at the reset');
  } finally {
    await srv.stop();
  }
});
