// lazy_frames: creating a dataframe plans it and previews it over the first rows of each
// source only; the whole work runs when it is run. A bare scan's preview reads the start of
// the file (a task per thread or worker slot at most, about a MiB each, never the whole
// file, on the local and the remote runner), is marked exact and equals the first rows of
// the run; a groupby's, filter's or join's preview is marked not exact and
// the run still gives the whole answer; bad plans fail as before; a quoted newline at the
// preview's cut stays inside its record.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { assertProblem, call, startServer, startWorker, waitWorkersActive } from './lib.mjs';

const ROWS = 200000; // about 5 MB of CSV: several preview cuts long
function bigCsv(rows = ROWS) {
  const lines = ['id,grp,v,note'];
  for (let i = 0; i < rows; i++) lines.push(`${i},g${i % 7},${(i * 37) % 1000},"n ${i}"`);
  return lines.join('\n') + '\n';
}

async function create(srv, json) {
  const r = await call(srv.base, 'POST', '/v1/dataframes', { json });
  assert.equal(r.status, 201, r.text);
  return r.body;
}
async function runFrame(srv, id) {
  const r = await call(srv.base, 'POST', '/v1/queries?wait=60', { json: { dataframe: id } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.state, 'succeeded', r.text);
  const res = await call(srv.base, 'GET', `/v1/queries/${r.body.id}/result?limit=1000`);
  assert.equal(res.status, 200, res.text);
  return { n: r.body.rows, rows: res.body.rows };
}
// The preview's query: the newest query of the dataframe in the history.
async function previewStages(srv, frameId) {
  const r = await call(srv.base, 'GET', '/v1/queries?limit=50');
  assert.equal(r.status, 200, r.text);
  const q = r.body.queries.find((x) => x.dataframe === frameId);
  assert.ok(q, `no query of ${frameId} in ${r.text.slice(0, 400)}`);
  const s = await call(srv.base, 'GET', `/v1/queries/${q.id}/stages`);
  assert.equal(s.status, 200, s.text);
  return s.body.stages;
}

// The preview's scan stage: cut to the file's start, ran at most `slots` tasks of about a
// MiB each (a slow first task does not let the others run on: CI once saw 4 of 16 run),
// skipped the rest.
async function assertPreviewScan(srv, frameId, slots) {
  const scan = (await previewStages(srv, frameId))[0];
  assert.ok(scan.tasks.length <= 16, `the preview cut ${scan.tasks.length} tasks`);
  const ran = scan.tasks.filter((t) => t.state === 'ok');
  assert.ok(ran.length >= 1 && ran.length <= slots, `the preview ran ${ran.length} scan tasks: ${JSON.stringify(scan.tasks)}`);
  assert.ok(scan.tasks.some((t) => t.state === 'skipped'), JSON.stringify(scan.tasks));
  for (const t of ran) if (t.bytes_in != null) assert.ok(t.bytes_in <= 1.1 * 1048576, `a task read ${t.bytes_in} bytes`);
}

test('a bare scan previews the first rows from the start of the file, exact; the run reads it all', async () => {
  const srv = await startServer({ args: ['--threads', '2'] });
  try {
    const rows = 800000; // about 22 MB: more than the 16 tasks of 1 MiB a preview may cut
    writeFileSync(path.join(srv.dataDir, 'big.csv'), bigCsv(rows));
    await call(srv.base, 'POST', '/v1/config', { json: { scan_tasks_max_size_bytes: 1048576, scan_tasks_min_size_bytes: 65536 } });
    const df = await create(srv, { source: { dataset: 'big' } });
    assert.equal(df.preview_exact, true);
    assert.ok(df.preview.length > 0);
    df.preview.forEach((row, i) => assert.deepEqual(row, [i, `g${i % 7}`, (i * 37) % 1000, `n ${i}`]));
    // the preview cut only the file's start (at most 16 tasks, where the whole file makes 22)
    // and ran one per thread at most: a task starts only while fewer than the threads are
    // ahead of the first unfinished one, whose rows are enough; the rest were skipped
    await assertPreviewScan(srv, df.id, 2);
    const all = await runFrame(srv, df.id);
    assert.equal(all.n, rows);
    assert.deepEqual(all.rows.slice(0, df.preview.length), df.preview);
    const listed = await call(srv.base, 'GET', `/v1/dataframes/${df.id}`);
    assert.equal(listed.body.preview_exact, true);
    // a limit past the rows the preview read: not the dataframe's rows, so not exact
    const far = await create(srv, { source: { dataset: 'big' }, ops: [{ offset: 700000 }, { limit: 3 }] });
    assert.equal(far.preview_exact, false);
    assert.deepEqual((await runFrame(srv, far.id)).rows.map((r) => r[0]), [700000, 700001, 700002]);
  } finally {
    await srv.stop();
  }
});

test('on a remote runner the preview runs no more scan tasks than the workers have slots', async () => {
  const coord = await startServer({ args: ['--runner', 'remote'] });
  let worker;
  try {
    const rows = 800000;
    writeFileSync(path.join(coord.dataDir, 'big.csv'), bigCsv(rows));
    worker = await startWorker(coord.base, { args: ['--threads', '2', '--data-dir', coord.dataDir] });
    await waitWorkersActive(coord, 1);
    await call(coord.base, 'POST', '/v1/config', { json: { scan_tasks_max_size_bytes: 1048576, scan_tasks_min_size_bytes: 65536 } });
    const df = await create(coord, { source: { dataset: 'big' } });
    assert.equal(df.preview_exact, true);
    df.preview.forEach((row, i) => assert.deepEqual(row, [i, `g${i % 7}`, (i * 37) % 1000, `n ${i}`]));
    await assertPreviewScan(coord, df.id, 2);
    const all = await runFrame(coord, df.id);
    assert.equal(all.n, rows);
    assert.deepEqual(all.rows.slice(0, df.preview.length), df.preview);
  } finally {
    await worker?.stop();
    await coord.stop();
  }
});

test('blocking ops preview a sample, marked not exact; the run gives the whole answer', async () => {
  const srv = await startServer({ args: ['--threads', '2'] });
  try {
    writeFileSync(path.join(srv.dataDir, 'big.csv'), bigCsv());
    const g = await create(srv, { source: { dataset: 'big' }, ops: [{ groupby: ['grp'], agg: ['count(*) as n', 'sum(v) as s'] }, { sort: ['grp'] }] });
    assert.equal(g.preview_exact, false);
    const total = g.preview.reduce((a, r) => a + r[1], 0);
    assert.ok(total > 0 && total < ROWS, `the preview grouped a prefix, not all ${ROWS} rows (${total})`);
    const full = await runFrame(srv, g.id);
    assert.equal(full.rows.length, 7);
    assert.equal(full.rows.reduce((a, r) => a + r[1], 0), ROWS);
    let want = 0;
    for (let i = 0; i < ROWS; i++) if (i % 7 === 0) want += (i * 37) % 1000;
    assert.equal(full.rows[0][2], want);

    const f = await create(srv, { source: { dataset: 'big' }, ops: [{ where: 'id > 150000' }] });
    assert.equal(f.preview_exact, false);
    assert.equal(f.preview.length, 0, 'the filter found nothing in the first rows');
    assert.equal((await runFrame(srv, f.id)).n, ROWS - 150001);

    // a limit past the rows a preview reads (16 MiB of the file at most) still gives the
    // dataframe's rows: the file is read whole when it is that small
    const off = await create(srv, { source: { dataset: 'big' }, ops: [{ offset: 190000 }, { limit: 3 }] });
    assert.equal(off.preview_exact, true);
    assert.deepEqual(off.preview.map((r) => r[0]), [190000, 190001, 190002]);
    assert.deepEqual((await runFrame(srv, off.id)).rows.map((r) => r[0]), [190000, 190001, 190002]);

    // a materialized dataframe as the source: the preview reads its first partitions only
    await runFrame(srv, (await create(srv, { source: { dataset: 'big' } })).id);
  } finally {
    await srv.stop();
  }
});

test('plan errors are unchanged by the lazy preview and create nothing', async () => {
  const srv = await startServer();
  try {
    writeFileSync(path.join(srv.dataDir, 'big.csv'), bigCsv());
    assertProblem(await call(srv.base, 'POST', '/v1/dataframes', { json: { source: { dataset: 'nope' } } }), 404, 'dataset-not-found');
    assertProblem(await call(srv.base, 'POST', '/v1/dataframes',
      { json: { source: { dataset: 'big' }, ops: [{ where: 'missing > 1' }] } }), 400, 'invalid-expression');
    const r = await call(srv.base, 'GET', '/v1/dataframes');
    assert.equal(r.body.dataframes.length, 0);
  } finally {
    await srv.stop();
  }
});

test('a quoted newline across the preview cut stays inside its record', async () => {
  const srv = await startServer();
  try {
    // records of about 100 KiB with newlines inside quotes, so the 1 MiB cut lands in one
    const lines = ['id,text'];
    for (let i = 0; i < 40; i++) lines.push(`${i},"${`line ${i}\n`.repeat(10000)}"`);
    const csv = lines.join('\n') + '\n';
    writeFileSync(path.join(srv.dataDir, 'quoted.csv'), csv);
    const df = await create(srv, { source: { dataset: 'quoted' }, ops: [{ select: ['id', 'length(text) as n'] }] });
    assert.equal(df.preview_exact, true);
    assert.ok(df.preview.length > 0 && df.preview.length <= 40);
    df.preview.forEach((row, i) => assert.deepEqual(row, [i, `line ${i}\n`.repeat(10000).length]));
    const all = await runFrame(srv, df.id);
    assert.equal(all.n, 40);
  } finally {
    await srv.stop();
  }
});
