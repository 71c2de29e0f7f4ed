// Polars (nodejs-polars), POLARS_MAX_THREADS=2 (set by bench.mjs before the process starts):
// pl.readCSV into memory (timed as "load"), then each question eagerly (the result is a
// materialized DataFrame). String keys stay strings (no categorical cast).
// Usage: POLARS_MAX_THREADS=2 node bench/engines/polars.mjs N DATADIR  -> JSON on stdout
import pl from 'nodejs-polars';
import { createRequire } from 'node:module';
import { QUESTIONS, files, measure, now, log } from './common.mjs';

const N = Number(process.argv[2]), DIR = process.argv[3];
const F = files(N, DIR);
const require = createRequire(import.meta.url);
const version = require('nodejs-polars/package.json').version;
const out = { engine: 'polars', version, threads: Number(process.env.POLARS_MAX_THREADS || 0), load: {}, q: {} };

function load(path) {
  const t0 = now();
  const df = pl.readCSV(path, { inferSchemaLength: 10000 });
  return [df, now() - t0];
}
const c = pl.col;
let [x, tg] = load(F.G1.path);
out.load.G1 = tg;
log('polars', `load G1 ${tg.toFixed(2)} s`);
out.load.join = 0;
const J = {};
for (const k of ['x', 'small', 'medium', 'big']) {
  const [df, t] = load(F[k].path);
  J[k] = df;
  out.load.join += t;
}
log('polars', `load join tables ${out.load.join.toFixed(2)} s`);

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

for (const q of QUESTIONS) {
  out.q[q.id] = await measure(q.id, async () => {
    const t0 = now();
    const ans = Q[q.id]();
    const t = now() - t0;
    const chk = q.chk.map((col) => Number(ans.getColumn(col).cast(pl.Float64).sum()));
    return { t, rows: ans.height, chk };
  });
  log('polars', `${q.id} ${JSON.stringify(out.q[q.id])}`);
}
process.stdout.write(JSON.stringify(out) + '\n');
