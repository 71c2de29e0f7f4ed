// sql_dbbench: the db-benchmark groupby questions q1-q10 and join questions
// j1-j5 written in SQL, run through framed's SQL over HTTP and differentially
// against DuckDB on the same tables (tests/integration/dbgen.mjs: the
// groupby table G1 and the join tables x, small, medium, big). The SQL text
// is the same for both engines; it is db-benchmark's own (the duckdb
// solution's) except where that uses functions framed's expression language
// does not have: quantile_cont(v3, 0.5) is median(v3) and pow(corr, 2) is
// corr * corr, and a first test proves with DuckDB that these give the
// benchmark's answers. Rows compare as multisets, floats within 1e-9
// relative (1e-6 for stddev and r2). Everything runs on a server with the
// default config and on one whose config forces many scan tasks, 7 shuffle
// partitions and no broadcast joins. N defaults to 20000
// (FRAMED_SQL_DIFF_ROWS), small enough for ASan.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { groupbySql } from '../../bench/engines/common.mjs';
import { groupbyCsv, joinCsvs } from './dbgen.mjs';
import { call, startServer } from './lib.mjs';
import { assertSameAnswer, duckAnswer, duckConnect, framedAnswer } from './sql_lib.mjs';

const N = Number(process.env.FRAMED_SQL_DIFF_ROWS ?? 20000);
const LOOSE = 1e-6;

export const DBBENCH_SQL = {
  q1: 'SELECT id1, sum(v1) AS v1 FROM g1 GROUP BY id1',
  q2: 'SELECT id1, id2, sum(v1) AS v1 FROM g1 GROUP BY id1, id2',
  q3: 'SELECT id3, sum(v1) AS v1, avg(v3) AS v3 FROM g1 GROUP BY id3',
  q4: 'SELECT id4, avg(v1) AS v1, avg(v2) AS v2, avg(v3) AS v3 FROM g1 GROUP BY id4',
  q5: 'SELECT id6, sum(v1) AS v1, sum(v2) AS v2, sum(v3) AS v3 FROM g1 GROUP BY id6',
  q6: 'SELECT id4, id5, median(v3) AS median_v3, stddev(v3) AS sd_v3 FROM g1 GROUP BY id4, id5',
  q7: 'SELECT id3, max(v1) - min(v2) AS range_v1_v2 FROM g1 GROUP BY id3',
  q8: 'SELECT id6, v3 AS largest2_v3 FROM (SELECT id6, v3, row_number() OVER (PARTITION BY id6 ORDER BY v3 DESC) AS order_v3 FROM g1 WHERE v3 IS NOT NULL) sub_query WHERE order_v3 <= 2',
  q9: 'SELECT id2, id4, corr(v1, v2) * corr(v1, v2) AS r2 FROM g1 GROUP BY id2, id4',
  q10: 'SELECT id1, id2, id3, id4, id5, id6, sum(v3) AS v3, count(*) AS count FROM g1 GROUP BY id1, id2, id3, id4, id5, id6',
  j1: 'SELECT x.*, small.id4 AS small_id4, v2 FROM x JOIN small USING (id1)',
  j2: 'SELECT x.*, medium.id1 AS medium_id1, medium.id4 AS medium_id4, medium.id5 AS medium_id5, v2 FROM x JOIN medium USING (id2)',
  j3: 'SELECT x.*, medium.id1 AS medium_id1, medium.id4 AS medium_id4, medium.id5 AS medium_id5, v2 FROM x LEFT JOIN medium USING (id2)',
  j4: 'SELECT x.*, medium.id1 AS medium_id1, medium.id2 AS medium_id2, medium.id4 AS medium_id4, v2 FROM x JOIN medium USING (id5)',
  j5: 'SELECT x.*, big.id1 AS big_id1, big.id2 AS big_id2, big.id4 AS big_id4, big.id5 AS big_id5, big.id6 AS big_id6, v2 FROM x JOIN big USING (id3)',
};
const LOOSE_COLS = { q6: ['sd_v3'], q9: ['r2'] };

const FORCED_CONFIG = {
  scan_tasks_max_size_bytes: 65536,
  scan_tasks_min_size_bytes: 1,
  shuffle_partitions: 7,
  maintain_order: false,
  broadcast_join_size_bytes_threshold: 0,
};
// The column types framed infers from dbgen's files.
const COLS = {
  g1: { id1: 'VARCHAR', id2: 'VARCHAR', id3: 'VARCHAR', id4: 'BIGINT', id5: 'BIGINT', id6: 'BIGINT', v1: 'BIGINT', v2: 'BIGINT', v3: 'DOUBLE' },
  x: { id1: 'BIGINT', id2: 'BIGINT', id3: 'BIGINT', id4: 'VARCHAR', id5: 'VARCHAR', id6: 'VARCHAR', v1: 'DOUBLE' },
  small: { id1: 'BIGINT', id4: 'VARCHAR', v2: 'DOUBLE' },
  medium: { id1: 'BIGINT', id2: 'BIGINT', id4: 'VARCHAR', id5: 'VARCHAR', v2: 'DOUBLE' },
  big: { id1: 'BIGINT', id2: 'BIGINT', id3: 'BIGINT', id4: 'VARCHAR', id5: 'VARCHAR', id6: 'VARCHAR', v2: 'DOUBLE' },
};
const FRAMED_TYPE = { BIGINT: 'int64', DOUBLE: 'float64', VARCHAR: 'string' };

let duck;
const files = {};
const expected = new Map();

before(async () => {
  files['g1.csv'] = groupbyCsv(N, 100, 1);
  const j = joinCsvs(N, 2);
  for (const k of ['x', 'small', 'medium', 'big']) files[`${k}.csv`] = j[k];
  duck = await duckConnect();
  // DuckDB reads the CSV text through a temp table per file (same bytes as framed's files).
  const dir = mkdtempSync(path.join(tmpdir(), 'framed-sqldiff-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  for (const [t, cols] of Object.entries(COLS)) {
    const spec = `{${Object.entries(cols).map(([c, ty]) => `'${c}': '${ty}'`).join(', ')}}`;
    await duck.con.run(`create table ${t} as select * from read_csv('${path.join(dir, `${t}.csv`)}', header=true, nullstr='', auto_detect=false, columns=${spec})`);
  }
  rmSync(dir, { recursive: true, force: true });
  for (const [q, sql] of Object.entries(DBBENCH_SQL)) expected.set(q, await duckAnswer(duck.con, sql));
});

after(() => {
  duck?.con?.closeSync?.();
});

test('the SQL asks the benchmark\'s questions: DuckDB answers it as db-benchmark\'s own SQL', async () => {
  const theirs = groupbySql('g1');
  for (const q of ['q6', 'q9']) {
    const a = await duckAnswer(duck.con, theirs[q]);
    assertSameAnswer(expected.get(q), a, { tol: LOOSE, what: `${q}: ours vs db-benchmark's` });
  }
  for (const q of ['q1', 'q2', 'q3', 'q4', 'q5', 'q7', 'q8', 'q10']) {
    assert.equal(DBBENCH_SQL[q].replace(/\s+/g, ' '), theirs[q].replace(/\bx\b/g, 'g1').replace(/\s+/g, ' '), q);
  }
  for (const q of ['j1', 'j2', 'j3', 'j4', 'j5']) assert.ok(expected.get(q).rows.length > 0.8 * N, `${q}: ${expected.get(q).rows.length} rows`);
});

for (const [label, config] of [['default config', null], ['many tasks and shuffles', FORCED_CONFIG]]) {
  test(`framed's SQL agrees with DuckDB: ${label}`, async (t) => {
    const srv = await startServer();
    try {
      mkdirSync(srv.dataDir, { recursive: true });
      for (const [name, text] of Object.entries(files)) writeFileSync(path.join(srv.dataDir, name), text);
      for (const [tbl, cols] of Object.entries(COLS)) {
        const r = await call(srv.base, 'GET', `/v1/datasets/${tbl}`);
        assert.equal(r.status, 200, r.text);
        assert.deepEqual(r.body.schema.map((c) => [c.name, c.type]), Object.entries(cols).map(([c, ty]) => [c, FRAMED_TYPE[ty]]), tbl);
      }
      if (config) {
        const r = await call(srv.base, 'POST', '/v1/config', { json: config });
        assert.equal(r.status, 200, r.text);
      }
      for (const [q, sql] of Object.entries(DBBENCH_SQL)) {
        await t.test(q, async () => {
          const t0 = Date.now();
          const got = await framedAnswer(srv.base, sql);
          const want = expected.get(q);
          // Per-column tolerances: the loose columns compared on their own.
          const loose = LOOSE_COLS[q] ?? [];
          if (loose.length === 0) {
            assertSameAnswer(got, want, { what: `${q} ${sql}` });
          } else {
            assertSameAnswer(got, want, { tol: LOOSE, what: `${q} ${sql}` });
            const idx = want.columns.map((c, i) => (loose.includes(c.name) ? -1 : i)).filter((i) => i >= 0);
            const strict = (a) => ({ columns: idx.map((i) => a.columns[i]), rows: a.rows.map((r) => idx.map((i) => r[i])) });
            assertSameAnswer(strict(got), strict(want), { what: `${q} (exact columns) ${sql}` });
          }
          t.diagnostic(`${q}: ${got.rows.length} rows in ${Date.now() - t0} ms`);
        });
      }
      const runner = await call(srv.base, 'GET', '/v1/runner');
      assert.equal(runner.status, 200, runner.text);
      const frozen = await call(srv.base, 'GET', `/v1/configs/${encodeURIComponent(runner.body.config_id)}`);
      assert.equal(frozen.status, 200, frozen.text);
      const values = frozen.body.values ?? frozen.body;
      for (const [k, v] of Object.entries(config ?? {})) assert.equal(values[k], v, `frozen ${k}`);
    } finally {
      await srv.stop();
    }
  });
}
