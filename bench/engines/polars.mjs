// Polars (nodejs-polars), POLARS_MAX_THREADS=2 (set by the caller before the process starts:
// Polars reads it once): pl.readCSV into memory (timed as "load"), then each question eagerly
// (the result is a materialized DataFrame). String keys stay strings (no categorical cast).
// As a module: open(N, DIR) -> an engine driver (bench/engines/worker.mjs, bench/onerun.mjs).
// As a script: POLARS_MAX_THREADS=2 node bench/engines/polars.mjs N DATADIR  -> JSON on stdout
import pl from 'nodejs-polars';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { QUESTIONS, files, measure, now, log } from './common.mjs';

const c = pl.col;
const require = createRequire(import.meta.url);

// The driver: load('G1' | 'join') -> { t }; run(id) -> { t, rows } (the answer kept);
// checksum(id) -> { rows, chk } of the last answer; drop() frees it.
export async function open(N, DIR) {
  const F = files(N, DIR);
  const read = (path) => pl.readCSV(path, { inferSchemaLength: 10000 });
  let x = null, ans = null;
  const J = {};
  const Q = {
    q1: () => x.groupBy('id1').agg(c('v1').sum()),
    q2: () => x.groupBy(['id1', 'id2']).agg(c('v1').sum()),
    q3: () => x.groupBy('id3').agg(c('v1').sum(), c('v3').mean()),
    q4: () => x.groupBy('id4').agg(c('v1').mean(), c('v2').mean(), c('v3').mean()),
    q5: () => x.groupBy('id6').agg(c('v1').sum(), c('v2').sum(), c('v3').sum()),
    q6: () => x.groupBy(['id4', 'id5']).agg(c('v3').median().alias('median_v3'), c('v3').std().alias('sd_v3')),
    q7: () => x.groupBy('id3').agg(c('v1').max().sub(c('v2').min()).alias('range_v1_v2')),
    q8: () => x.groupBy('id6').agg(c('v3').sort({ descending: true }).head(2).alias('largest2_v3')).explode('largest2_v3'),
    q9: () => x.groupBy(['id2', 'id4']).agg(pl.pearsonCorr('v1', 'v2').pow(2).alias('r2')),
    q10: () => x.groupBy(['id1', 'id2', 'id3', 'id4', 'id5', 'id6']).agg(c('v3').sum(), pl.count('v1').alias('count')),
    j1: () => J.x.join(J.small, { on: 'id1' }),
    j2: () => J.x.join(J.medium, { on: 'id2' }),
    j3: () => J.x.join(J.medium, { on: 'id2', how: 'left' }),
    j4: () => J.x.join(J.medium, { on: 'id5' }),
    j5: () => J.x.join(J.big, { on: 'id3' }),
  };
  const chkOf = {};
  for (const q of QUESTIONS) chkOf[q.id] = q.chk;
  return {
    engine: 'polars', version: require('nodejs-polars/package.json').version,
    threads: Number(process.env.POLARS_MAX_THREADS || 0),
    async load(which) {
      // free every table of the last load first (the groupby table before the join tables
      // and back): a repetition of the one-run bench loads both, and Polars' native memory
      // goes only when the JS objects are collected (worker.mjs runs with --expose-gc)
      x = null;
      ans = null;
      for (const k of Object.keys(J)) J[k] = null;
      if (globalThis.gc) globalThis.gc();
      const t0 = now();
      if (which === 'G1') {
        x = read(F.G1.path);
      } else {
        for (const k of ['x', 'small', 'medium', 'big']) J[k] = read(F[k].path);
      }
      return { t: now() - t0 };
    },
    async run(id) {
      ans = null;
      const t0 = now();
      ans = Q[id]();
      return { t: now() - t0, rows: ans.height };
    },
    async checksum(id) {
      return { rows: ans.height, chk: chkOf[id].map((col) => Number(ans.getColumn(col).cast(pl.Float64).sum())) };
    },
    async drop() { ans = null; },
    async close() {},
  };
}

async function main() {
  const N = Number(process.argv[2]), DIR = process.argv[3];
  const d = await open(N, DIR);
  const out = { engine: 'polars', version: d.version, threads: d.threads, load: {}, q: {} };
  out.load.G1 = (await d.load('G1')).t;
  log('polars', `load G1 ${out.load.G1.toFixed(2)} s`);
  out.load.join = (await d.load('join')).t;
  log('polars', `load join tables ${out.load.join.toFixed(2)} s`);
  for (const q of QUESTIONS) {
    out.q[q.id] = await measure(q.id, async () => {
      const { t } = await d.run(q.id);
      return { t, ...(await d.checksum(q.id)) };
    });
    log('polars', `${q.id} ${JSON.stringify(out.q[q.id])}`);
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}
if (import.meta.url === pathToFileURL(process.argv[1]).href) await main();
