// bench/result_formats.mjs N DATADIR [RUNS]: how fast a big result leaves framed in each
// result format (issue 11: "the Arrow result of the 1e7-row q10 streams at least as fast as the
// CSV result"). One coordinator (local runner, 2 threads, data dir DATADIR) runs the db-benchmark
// groupby q10 (sum v3, count by id1..id6: about N result rows) once over the G1 CSV; then its
// result is fetched as CSV, NDJSON, JSON, Arrow IPC and Parquet (snappy, zstd), the formats
// taking turns, RUNS times each (default 3, after one warm-up round not counted). Time = from
// the request to the last body byte, the body counted and dropped as it arrives (the client
// keeps none of it). Prints a markdown table (medians) and writes
// bench/results/result-formats-<N>.{json,md}. Needs DATADIR/G1_<N>_1e2_0_0.csv (bench/datagen.c).
// A benchmark, not a test: run it once, not in a loop on a shared machine.
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { agent, call, machine, ok, ROOT, startCoordinator } from './cluster/procs.mjs';

const { files, pretty } = await import(new URL('./engines/common.mjs', import.meta.url));
const N = Math.round(Number(process.argv[2] || 1e7));
const DATA = process.argv[3] || join(ROOT, 'bench/data');
const RUNS = Number(process.argv[4] || 3);
const G1 = files(N, DATA).G1;
statSync(G1.path); // fails early when the table is missing
const PLAN = {
  source: { path: `${G1.name}.csv` },
  ops: [{ groupby: ['id1', 'id2', 'id3', 'id4', 'id5', 'id6'], agg: ['sum(v3) as v3', 'count(*) as count'] }],
};
const FORMATS = [
  ['CSV', 'format=csv'],
  ['NDJSON', 'format=ndjson'],
  ['JSON', 'format=json'],
  ['Arrow IPC', 'format=arrow'],
  ['Parquet (snappy)', 'format=parquet'],
  ['Parquet (zstd)', 'format=parquet&compression=zstd'],
];
const log = (m) => process.stderr.write(`[result_formats] ${m}\n`);
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

// GET base+path, counting the body's bytes as they arrive: {ms, bytes, type}.
function stream(base, path) {
  const u = new URL(base + path);
  const t0 = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const req = http.get({ host: u.hostname, port: u.port, path: u.pathname + u.search, agent }, (res) => {
      let bytes = 0;
      res.on('data', (c) => { bytes += c.length; });
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`${path} -> ${res.statusCode}`));
        else resolve({ ms: Number(process.hrtime.bigint() - t0) / 1e6, bytes, type: res.headers['content-type'] });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

const coord = await startCoordinator({ runner: 'local', dataDir: DATA, threads: 2 });
let out;
try {
  await ok(coord.base, 'POST', '/v1/config', { json: { maintain_order: false } });
  const t0 = Date.now();
  const q = await call(coord.base, 'POST', '/v1/queries?wait=300', { json: { plan: PLAN } });
  if (q.status >= 400 || q.body.state !== 'succeeded') throw new Error(`q10: ${q.text.slice(0, 400)}`);
  const rows = (await ok(coord.base, 'GET', `/v1/queries/${q.body.id}/result?limit=0`)).total_rows;
  log(`q10: ${rows} rows in ${q.body.elapsed_ms} ms (submit to answer ${Date.now() - t0} ms)`);
  const runs = Object.fromEntries(FORMATS.map(([name]) => [name, []]));
  const bytes = {};
  for (let round = 0; round <= RUNS; round++) {
    for (const [name, query] of FORMATS) {
      const r = await stream(coord.base, `/v1/queries/${q.body.id}/result?${query}`);
      bytes[name] = r.bytes;
      if (round > 0) runs[name].push(r.ms);
      log(`${round ? `run ${round}` : 'warm-up'} ${name}: ${r.ms.toFixed(0)} ms, ${r.bytes} bytes`);
    }
  }
  out = {
    n: N, rows, runs: RUNS, query_ms: q.body.elapsed_ms, machine: machine(),
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    formats: FORMATS.map(([name]) => ({ format: name, bytes: bytes[name], ms: runs[name], median_ms: median(runs[name]) })),
  };
} finally {
  await coord.stop();
}

const csv = out.formats[0].median_ms;
const md = [
  `### Result formats: q10 at N = ${pretty(N)} (${out.rows} result rows), ${RUNS} runs, medians`,
  '',
  `${out.machine.cpu}, ${out.machine.ncpu} cores, ${out.date}; framed local runner, 2 threads; the query itself took ${out.query_ms} ms (not counted).`,
  '',
  '| format | bytes | median time (s) | MB/s | rows/s | time vs CSV |',
  '|---|---:|---:|---:|---:|---:|',
  ...out.formats.map((f) => `| ${f.format} | ${f.bytes} | ${(f.median_ms / 1000).toFixed(3)} | ${(f.bytes / 1e6 / (f.median_ms / 1000)).toFixed(0)} | ${(out.rows / (f.median_ms / 1000) / 1e6).toFixed(2)} M | ${(f.median_ms / csv).toFixed(2)}x |`),
  '',
].join('\n');
process.stdout.write(`${md}\n`);
const RES = join(ROOT, 'bench/results');
mkdirSync(RES, { recursive: true });
writeFileSync(join(RES, `result-formats-${pretty(N)}.json`), `${JSON.stringify(out, null, 2)}\n`);
writeFileSync(join(RES, `result-formats-${pretty(N)}.md`), md);
