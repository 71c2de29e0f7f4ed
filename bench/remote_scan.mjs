// bench/remote_scan.mjs N DATADIR [RUNS]: a scan with workers reading locally vs by HTTP Range
// from the coordinator (issue 9: "workers that need no shared filesystem"), side by side in one
// run. Two clusters on 127.0.0.1, each a coordinator (--runner remote, data dir DATADIR) and one
// worker (--threads 2): "local" gives the worker DATADIR and --data-source local; "remote" gives
// it an empty data dir of its own (auto: every scan task reads by range). The question is the
// db-benchmark groupby q1 (sum v1 by id1) straight over the G1 CSV (no dataframe: each run scans
// the file), config {"maintain_order": false}. The runs alternate local, remote, ... RUNS times
// each (default 3, a warm-up run each first, not counted); time = the query's elapsed_ms,
// throughput = file bytes / median time. The worker's /metrics confirm where it read
// (framed_worker_scan_bytes_total by source). Writes bench/results/remote-scan-<N>.{json,md}.
// Run by bench/remote_scan.sh, which builds framed (Release) and generates the file.
import { mkdtempSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, loadavg, machine, ok, ROOT, startCoordinator, startWorker, waitWorkers } from './cluster/procs.mjs';

const { files, pretty } = await import(new URL('./engines/common.mjs', import.meta.url));
const N = Math.round(Number(process.argv[2] || 1e7));
const DATA = process.argv[3] || join(ROOT, 'bench/data');
const RUNS = Number(process.argv[4] || 3);
const G1 = files(N, DATA).G1;
const SIZE = statSync(G1.path).size;
const PLAN = { source: { path: `${G1.name}.csv` }, ops: [{ groupby: ['id1'], agg: ['sum(v1) as v1'] }] };
const log = (m) => process.stderr.write(`[remote_scan] ${m}\n`);
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

async function cluster(kind) {
  const coord = await startCoordinator({ runner: 'remote', dataDir: DATA });
  const empty = mkdtempSync(join(tmpdir(), 'framed-rscan-'));
  mkdirSync(join(empty, 'data'));
  const worker = kind === 'local'
    ? await startWorker(coord.base, { threads: 2, dataDir: DATA, args: ['--data-source', 'local'] })
    : await startWorker(coord.base, { threads: 2, dataDir: join(empty, 'data') });
  await waitWorkers(coord.base, 1);
  await ok(coord.base, 'POST', '/v1/config', { json: { maintain_order: false } });
  return {
    kind, coord, worker,
    async stop() { await worker.stop(); await coord.stop(); rmSync(empty, { recursive: true, force: true }); },
  };
}

async function runOnce(c) {
  const r = await call(c.coord.base, 'POST', '/v1/queries?wait=300', { json: { plan: PLAN } });
  if (r.status >= 400 || r.body.state !== 'succeeded') throw new Error(`${c.kind}: ${r.text.slice(0, 400)}`);
  const res = await ok(c.coord.base, 'GET', `/v1/queries/${r.body.id}/result`);
  return { ms: r.body.elapsed_ms, rows: res.rows.length, sum: res.rows.reduce((a, row) => a + Number(row[1]), 0) };
}

async function scanBytes(c) {
  const r = await call(c.worker.base, 'GET', '/metrics');
  const num = (src) => Number((new RegExp(`^framed_worker_scan_bytes_total\\{source="${src}"\\} (\\d+)$`, 'm').exec(r.text) || [0, NaN])[1]);
  return { local: num('local'), remote: num('remote'),
    range_reads: Number((/^framed_worker_range_reads_total (\d+)$/m.exec(r.text) || [0, NaN])[1]) };
}

const load = { before: loadavg() };
const clusters = [await cluster('local'), await cluster('remote')];
const times = { local: [], remote: [] };
const checks = {};
try {
  for (const c of clusters) checks[c.kind] = await runOnce(c); // warm-up: page cache, config
  for (let i = 0; i < RUNS; i++) {
    for (const c of clusters) {
      const r = await runOnce(c);
      times[c.kind].push(r.ms);
      log(`${c.kind} run ${i + 1}: ${r.ms} ms`);
    }
  }
  load.after = loadavg();
  const metrics = {};
  for (const c of clusters) metrics[c.kind] = await scanBytes(c);
  const mbps = (k) => SIZE / 1e6 / (median(times[k]) / 1000);
  const out = {
    N, file: G1.name, bytes: SIZE, runs: RUNS, date: new Date().toISOString(), machine: machine(), load,
    times, median_ms: { local: median(times.local), remote: median(times.remote) },
    mb_per_s: { local: +mbps('local').toFixed(1), remote: +mbps('remote').toFixed(1) },
    ratio: +(mbps('remote') / mbps('local')).toFixed(3),
    best_ratio: +(Math.min(...times.local) / Math.min(...times.remote)).toFixed(3), checks, metrics,
  };
  if (checks.local.rows !== checks.remote.rows || Math.abs(checks.local.sum - checks.remote.sum) > 1e-6) {
    throw new Error(`local and remote answers differ: ${JSON.stringify(checks)}`);
  }
  const md = [
    `## Remote scan (workers without the data): N = ${pretty(N)}`,
    '',
    `- date: ${out.date}; file ${G1.name}.csv, ${(SIZE / 1e6).toFixed(0)} MB; q1 (sum v1 by id1) over the CSV, one worker --threads 2, config maintain_order false`,
    `- machine: ${out.machine.cpu}, ${out.machine.ncpu} cores, ${out.machine.mem_gib} GiB, Linux ${out.machine.kernel} (shared with other work)`,
    `- load average (1/5/15 min): before ${load.before}; after ${load.after}`,
    `- ${RUNS} runs each after a warm-up, alternating local and remote; time = the query's elapsed_ms`,
    '',
    '| worker reads | runs (ms) | median (ms) | MB/s | scan bytes by source (worker metrics) |',
    '|---|---|---:|---:|---|',
    `| local (--data-source local, the coordinator's data dir) | ${times.local.join(', ')} | ${out.median_ms.local} | ${out.mb_per_s.local} | local ${metrics.local.local}, remote ${metrics.local.remote} |`,
    `| remote (empty data dir: HTTP Range, 8 MiB blocks) | ${times.remote.join(', ')} | ${out.median_ms.remote} | ${out.mb_per_s.remote} | local ${metrics.remote.local}, remote ${metrics.remote.remote} (${metrics.remote.range_reads} range reads) |`,
    '',
    `remote / local throughput: **${out.ratio}** by the medians, ${out.best_ratio} by the best runs (the issue asks >= 0.5). Answers equal (${checks.local.rows} groups).`,
    '',
  ].join('\n');
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  writeFileSync(join(ROOT, `bench/results/remote-scan-${pretty(N)}.json`), JSON.stringify(out, null, 2) + '\n');
  writeFileSync(join(ROOT, `bench/results/remote-scan-${pretty(N)}.md`), md);
  process.stdout.write(md);
} finally {
  for (const c of clusters) await c.stop();
}
