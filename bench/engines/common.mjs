// Shared by the engine drivers: the question list, the file names, timing.
import { performance } from 'node:perf_hooks';

// Each question runs twice and the median is reported; when the two runs differ by more than 2x
// (this machine is shared: another job's burst can stall one run), a third run is added so the
// median of three drops the outlier.
export const RUNS = Number(process.env.RUNS) > 0 ? Math.min(Number(process.env.RUNS), 20) : 2; // RUNS=n: n runs a question

// N as "1e7" (db-benchmark's file names)
export function pretty(n) {
  let e = 0, m = n;
  while (m >= 10 && m % 10 === 0) { m /= 10; e++; }
  return m === 1 ? `1e${e}` : String(n);
}

export function files(n, dir) {
  const nn = pretty(n);
  const n1 = Math.max(1, Math.floor(n / 1e6)), n2 = Math.max(1, Math.floor(n / 1e3));
  return {
    G1: { name: `G1_${nn}_1e2_0_0`, path: `${dir}/G1_${nn}_1e2_0_0.csv` },
    x: { name: `J1_${nn}_NA_0_0`, path: `${dir}/J1_${nn}_NA_0_0.csv` },
    small: { name: `J1_${nn}_${pretty(n1)}_0_0`, path: `${dir}/J1_${nn}_${pretty(n1)}_0_0.csv` },
    medium: { name: `J1_${nn}_${pretty(n2)}_0_0`, path: `${dir}/J1_${nn}_${pretty(n2)}_0_0.csv` },
    big: { name: `J1_${nn}_${nn}_0_0`, path: `${dir}/J1_${nn}_${nn}_0_0.csv` },
  };
}

// Question ids and the result columns whose sums form the checksum (db-benchmark's chk).
export const QUESTIONS = [
  { id: 'q1', desc: 'sum v1 by id1', chk: ['v1'] },
  { id: 'q2', desc: 'sum v1 by id1:id2', chk: ['v1'] },
  { id: 'q3', desc: 'sum v1 mean v3 by id3', chk: ['v1', 'v3'] },
  { id: 'q4', desc: 'mean v1:v3 by id4', chk: ['v1', 'v2', 'v3'] },
  { id: 'q5', desc: 'sum v1:v3 by id6', chk: ['v1', 'v2', 'v3'] },
  { id: 'q6', desc: 'median v3 sd v3 by id4 id5', chk: ['median_v3', 'sd_v3'] },
  { id: 'q7', desc: 'max v1 - min v2 by id3', chk: ['range_v1_v2'] },
  { id: 'q8', desc: 'largest two v3 by id6', chk: ['largest2_v3'] },
  { id: 'q9', desc: 'regression v1 v2 by id2 id4', chk: ['r2'] },
  { id: 'q10', desc: 'sum v3 count by id1:id6', chk: ['v3', 'count'] },
  { id: 'j1', desc: 'small inner on int', chk: ['v1', 'v2'] },
  { id: 'j2', desc: 'medium inner on int', chk: ['v1', 'v2'] },
  { id: 'j3', desc: 'medium outer (left) on int', chk: ['v1', 'v2'] },
  { id: 'j4', desc: 'medium inner on factor (string)', chk: ['v1', 'v2'] },
  { id: 'j5', desc: 'big inner on int', chk: ['v1', 'v2'] },
];

export const now = () => performance.now() / 1000;

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// Runs fn RUNS times; fn returns { rows, chk } (untimed parts inside fn must be excluded by fn
// returning { t } itself) -> { times, rows, chk } or { error }.
export async function measure(id, fn) {
  const times = [];
  let last;
  try {
    for (let r = 0; r < RUNS; r++) {
      last = await fn(r);
      times.push(last.t);
    }
    if (Math.max(...times) > 2 * Math.min(...times) && Math.max(...times) > 0.05) {
      const keep = last;
      times.push((await fn(RUNS)).t);
      last = keep;
    }
  } catch (e) {
    return { error: String(e && e.message ? e.message : e).slice(0, 500), times };
  }
  return { times, t: median(times), rows: last.rows, chk: last.chk };
}

export function log(engine, msg) {
  process.stderr.write(`[${engine}] ${msg}\n`);
}

// framed's plan ops for the groupby questions (bench/engines/framed.mjs, bench/parquet.mjs).
export const GROUPBY_OPS = {
  q1: [{ groupby: ['id1'], agg: ['sum(v1) as v1'] }],
  q2: [{ groupby: ['id1', 'id2'], agg: ['sum(v1) as v1'] }],
  q3: [{ groupby: ['id3'], agg: ['sum(v1) as v1', 'avg(v3) as v3'] }],
  q4: [{ groupby: ['id4'], agg: ['avg(v1) as v1', 'avg(v2) as v2', 'avg(v3) as v3'] }],
  q5: [{ groupby: ['id6'], agg: ['sum(v1) as v1', 'sum(v2) as v2', 'sum(v3) as v3'] }],
  q6: [{ groupby: ['id4', 'id5'], agg: ['median(v3) as median_v3', 'stddev(v3) as sd_v3'] }],
  q7: [{ groupby: ['id3'], agg: ['max(v1) - min(v2) as range_v1_v2'] }],
  q8: [{ where: 'v3 is not null' }, { top_k: { by: ['id6'], sort: ['v3 desc'], k: 2 } },
    { select: ['id6', 'v3 as largest2_v3'] }],
  q9: [{ groupby: ['id2', 'id4'], agg: ['corr(v1, v2) * corr(v1, v2) as r2'] }],
  q10: [{ groupby: ['id1', 'id2', 'id3', 'id4', 'id5', 'id6'], agg: ['sum(v3) as v3', 'count(*) as count'] }],
};

// db-benchmark's SQL of the groupby questions over table t (bench/engines/duckdb.mjs with x,
// bench/parquet.mjs with read_parquet(...)).
export function groupbySql(t) {
  return {
    q1: `SELECT id1, sum(v1) AS v1 FROM ${t} GROUP BY id1`,
    q2: `SELECT id1, id2, sum(v1) AS v1 FROM ${t} GROUP BY id1, id2`,
    q3: `SELECT id3, sum(v1) AS v1, avg(v3) AS v3 FROM ${t} GROUP BY id3`,
    q4: `SELECT id4, avg(v1) AS v1, avg(v2) AS v2, avg(v3) AS v3 FROM ${t} GROUP BY id4`,
    q5: `SELECT id6, sum(v1) AS v1, sum(v2) AS v2, sum(v3) AS v3 FROM ${t} GROUP BY id6`,
    q6: `SELECT id4, id5, quantile_cont(v3, 0.5) AS median_v3, stddev(v3) AS sd_v3 FROM ${t} GROUP BY id4, id5`,
    q7: `SELECT id3, max(v1) - min(v2) AS range_v1_v2 FROM ${t} GROUP BY id3`,
    q8: `SELECT id6, v3 AS largest2_v3 FROM (SELECT id6, v3, row_number() OVER (PARTITION BY id6 ORDER BY v3 DESC) AS order_v3 FROM ${t} WHERE v3 IS NOT NULL) sub_query WHERE order_v3 <= 2`,
    q9: `SELECT id2, id4, pow(corr(v1, v2), 2) AS r2 FROM ${t} GROUP BY id2, id4`,
    q10: `SELECT id1, id2, id3, id4, id5, id6, sum(v3) AS v3, count(*) AS count FROM ${t} GROUP BY id1, id2, id3, id4, id5, id6`,
  };
}
