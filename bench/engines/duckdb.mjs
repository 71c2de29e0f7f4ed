// DuckDB (@duckdb/node-api), 2 threads, in-memory tables: each CSV is loaded with
// CREATE OR REPLACE TABLE AS read_csv (timed as "load"), then each question runs as
// CREATE OR REPLACE TABLE ans AS SELECT ... (the result materialized); rows and checksum are read
// from ans afterwards, untimed.
// As a module: open(N, DIR) -> an engine driver (bench/engines/worker.mjs, bench/onerun.mjs).
// As a script: node bench/engines/duckdb.mjs N DATADIR  -> JSON on stdout (bench/bench.mjs)
import { DuckDBInstance } from '@duckdb/node-api';
import { pathToFileURL } from 'node:url';
import { QUESTIONS, files, groupbySql, measure, now, log } from './common.mjs';

const SQL = {
  ...groupbySql('x'),
  j1: 'SELECT jx.*, small.id4 AS small_id4, v2 FROM jx JOIN small USING (id1)',
  j2: 'SELECT jx.*, medium.id1 AS medium_id1, medium.id4 AS medium_id4, medium.id5 AS medium_id5, v2 FROM jx JOIN medium USING (id2)',
  j3: 'SELECT jx.*, medium.id1 AS medium_id1, medium.id4 AS medium_id4, medium.id5 AS medium_id5, v2 FROM jx LEFT JOIN medium USING (id2)',
  j4: 'SELECT jx.*, medium.id1 AS medium_id1, medium.id2 AS medium_id2, medium.id4 AS medium_id4, v2 FROM jx JOIN medium USING (id5)',
  j5: 'SELECT jx.*, big.id1 AS big_id1, big.id2 AS big_id2, big.id4 AS big_id4, big.id5 AS big_id5, big.id6 AS big_id6, v2 FROM jx JOIN big USING (id3)',
};

// The driver: load('G1' | 'join') -> { t }; run(id) -> { t, rows } (ans kept);
// checksum(id) -> { rows, chk } of the last run's ans; drop() frees ans.
export async function open(N, DIR) {
  const F = files(N, DIR);
  const inst = await DuckDBInstance.create(':memory:', { threads: '2' });
  const con = await inst.connect();
  const one = async (sql) => (await con.runAndReadAll(sql)).getRows()[0];
  const version = String((await one('SELECT version()'))[0]);
  const loadTable = async (table, path) => {
    const t0 = now();
    await con.run(`CREATE OR REPLACE TABLE ${table} AS SELECT * FROM read_csv('${path}')`);
    return now() - t0;
  };
  const chkOf = {};
  for (const q of QUESTIONS) chkOf[q.id] = q.chk;
  return {
    engine: 'duckdb', version, threads: 2,
    async load(which) {
      if (which === 'G1') return { t: await loadTable('x', F.G1.path) };
      let t = 0;
      for (const [tab, k] of [['jx', 'x'], ['small', 'small'], ['medium', 'medium'], ['big', 'big']])
        t += await loadTable(tab, F[k].path);
      return { t };
    },
    async run(id) {
      const t0 = now();
      await con.run(`CREATE OR REPLACE TABLE ans AS ${SQL[id]}`);
      const t = now() - t0;
      const row = await one('SELECT count(*) FROM ans');
      return { t, rows: Number(row[0]) };
    },
    async checksum(id) {
      const row = await one(`SELECT count(*), ${chkOf[id].map((c) => `sum(${c})::DOUBLE`).join(', ')} FROM ans`);
      return { rows: Number(row[0]), chk: row.slice(1).map(Number) };
    },
    async drop() { await con.run('DROP TABLE IF EXISTS ans'); },
    async close() { con.closeSync?.(); },
  };
}

async function main() {
  const N = Number(process.argv[2]), DIR = process.argv[3];
  const d = await open(N, DIR);
  const out = { engine: 'duckdb', version: d.version, threads: 2, load: {}, q: {} };
  out.load.G1 = (await d.load('G1')).t;
  log('duckdb', `load G1 ${out.load.G1.toFixed(2)} s`);
  out.load.join = (await d.load('join')).t;
  log('duckdb', `load join tables ${out.load.join.toFixed(2)} s`);
  for (const q of QUESTIONS) {
    out.q[q.id] = await measure(q.id, async () => {
      const { t } = await d.run(q.id);
      const c = await d.checksum(q.id);
      await d.drop();
      return { t, ...c };
    });
    log('duckdb', `${q.id} ${JSON.stringify(out.q[q.id])}`);
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}
if (import.meta.url === pathToFileURL(process.argv[1]).href) await main();
