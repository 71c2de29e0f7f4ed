// DuckDB (@duckdb/node-api), 2 threads, in-memory tables: each CSV is loaded once with
// CREATE TABLE AS read_csv (timed as "load"), then each question runs as
// CREATE OR REPLACE TABLE ans AS SELECT ... (the result materialized); rows and checksum are read
// from ans afterwards, untimed.
// Usage: node bench/engines/duckdb.mjs N DATADIR  -> JSON on stdout
import { DuckDBInstance } from '@duckdb/node-api';
import { QUESTIONS, files, groupbySql, measure, now, log } from './common.mjs';

const N = Number(process.argv[2]), DIR = process.argv[3];
const F = files(N, DIR);
const SQL = {
  ...groupbySql('x'),
  j1: 'SELECT jx.*, small.id4 AS small_id4, v2 FROM jx JOIN small USING (id1)',
  j2: 'SELECT jx.*, medium.id1 AS medium_id1, medium.id4 AS medium_id4, medium.id5 AS medium_id5, v2 FROM jx JOIN medium USING (id2)',
  j3: 'SELECT jx.*, medium.id1 AS medium_id1, medium.id4 AS medium_id4, medium.id5 AS medium_id5, v2 FROM jx LEFT JOIN medium USING (id2)',
  j4: 'SELECT jx.*, medium.id1 AS medium_id1, medium.id2 AS medium_id2, medium.id4 AS medium_id4, v2 FROM jx JOIN medium USING (id5)',
  j5: 'SELECT jx.*, big.id1 AS big_id1, big.id2 AS big_id2, big.id4 AS big_id4, big.id5 AS big_id5, big.id6 AS big_id6, v2 FROM jx JOIN big USING (id3)',
};

const inst = await DuckDBInstance.create(':memory:', { threads: '2' });
const con = await inst.connect();
const one = async (sql) => (await con.runAndReadAll(sql)).getRows()[0];
const version = String((await one('SELECT version()'))[0]);
const out = { engine: 'duckdb', version, threads: 2, load: {}, q: {} };

async function load(table, path) {
  const t0 = now();
  await con.run(`CREATE TABLE ${table} AS SELECT * FROM read_csv('${path}')`);
  return now() - t0;
}
out.load.G1 = await load('x', F.G1.path);
log('duckdb', `load G1 ${out.load.G1.toFixed(2)} s`);
out.load.join = 0;
for (const [t, k] of [['jx', 'x'], ['small', 'small'], ['medium', 'medium'], ['big', 'big']])
  out.load.join += await load(t, F[k].path);
log('duckdb', `load join tables ${out.load.join.toFixed(2)} s`);

for (const q of QUESTIONS) {
  out.q[q.id] = await measure(q.id, async () => {
    const t0 = now();
    await con.run(`CREATE OR REPLACE TABLE ans AS ${SQL[q.id]}`);
    const t = now() - t0;
    const row = await one(`SELECT count(*), ${q.chk.map((c) => `sum(${c})::DOUBLE`).join(', ')} FROM ans`);
    await con.run('DROP TABLE ans');
    return { t, rows: Number(row[0]), chk: row.slice(1).map(Number) };
  });
  log('duckdb', `${q.id} ${JSON.stringify(out.q[q.id])}`);
}
process.stdout.write(JSON.stringify(out) + '\n');
