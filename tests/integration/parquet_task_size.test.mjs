// parquet_task_size: Parquet scan tasks are sized by what they hold, the
// estimate of the projected columns decoded, not by the compressed bytes
// they read: a dictionary-encoded file of repeated strings, a few KiB of
// column chunks, is cut into several tasks under a max that its chunks
// would fit in whole; explain gives both measures and the answer is right.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';
import { call, SOURCE_DIR, startServer } from './lib.mjs';

const require = createRequire(path.join(SOURCE_DIR, 'package.json'));
const { DuckDBInstance } = require('@duckdb/node-api');

const ROWS = 16384; // 8 row groups of 2048
const MAX = 96 * 1024;

test('tasks are merged up to the max by decoded bytes, and read their compressed chunks', async () => {
  const srv = await startServer();
  const duck = await (await DuckDBInstance.create(':memory:', { threads: '1' })).connect();
  try {
    const file = path.join(srv.dataDir, 'rep.parquet');
    await duck.run(`COPY (select ['alpha','bravo','charlie'][i % 3 + 1] as s, 7::BIGINT as k from range(${ROWS}) t(i))
      TO '${file}' (FORMAT parquet, ROW_GROUP_SIZE 2048, COMPRESSION zstd)`);
    let r = await call(srv.base, 'POST', '/v1/config', { json: { scan_tasks_min_size_bytes: 1, scan_tasks_max_size_bytes: MAX } });
    assert.equal(r.status, 200, r.text);
    const plan = { source: { dataset: 'rep' }, ops: [{ groupby: ['s'], agg: ['count(*) as n', 'sum(k) as t'] }, { sort: ['s'] }] };
    r = await call(srv.base, 'POST', '/v1/dataframes', { json: plan });
    assert.equal(r.status, 201, r.text);
    const ex = await call(srv.base, 'GET', `/v1/dataframes/${r.body.id}/explain`);
    const decisions = ex.body.decisions.map((d) => d.decision).join('\n');
    const m = /8 of 8 row groups \(([\d.]+) (B|KiB) of column chunks to read, about ([\d.]+) (KiB|MiB) decoded\) in (\d+) tasks/.exec(decisions);
    assert.ok(m, decisions);
    const read = Number(m[1]) * (m[2] === 'KiB' ? 1024 : 1);
    const decoded = Number(m[3]) * (m[4] === 'MiB' ? 1024 * 1024 : 1024);
    assert.ok(read < MAX, `the chunks (${read} B) fit in one task by their compressed bytes`);
    assert.ok(decoded > 2 * MAX, `decoded ${decoded} B`);
    // 2048 rows x (8 offsets + 8 int64) per group at least: <= 3 groups a task
    assert.ok(Number(m[5]) >= 3, decisions);
    assert.equal(ex.body.physical.stages[0].tasks, Number(m[5]));
    r = await call(srv.base, 'POST', '/v1/queries?wait=60', { json: { plan } });
    assert.equal(r.body.state, 'succeeded', r.text);
    r = await call(srv.base, 'GET', `/v1/queries/${r.body.id}/result`);
    const n = (i) => Math.floor((ROWS - 1 - i) / 3) + 1;
    assert.deepEqual(r.body.rows, [['alpha', n(0), 7 * n(0)], ['bravo', n(1), 7 * n(1)], ['charlie', n(2), 7 * n(2)]]);
  } finally {
    duck.closeSync?.();
    await srv.stop();
  }
});
