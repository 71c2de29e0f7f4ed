// bench/cluster/propagation.mjs [M]: the cost of config propagation. Starts a coordinator
// (--runner remote) and one worker on 127.0.0.1, freezes the config (a 1-row dataframe), then
// sends M tiny tasks (a 1-row inline-rows spec, no inputs) straight to the worker's
// POST /v1/tasks over one keep-alive connection, two ways:
//   (a) header:  Framed-Config-Id only; the worker resolves the ID in its cache (a hit);
//   (b) inline:  the same header plus "config_inline" (the canonical bytes of GET
//                /v1/configs/{id}) in the body; the worker verifies them (hash + parse +
//                canonical check) for every task and does not touch its cache.
// The two are interleaved in blocks of 50 after a warm-up, so drift of a shared machine hits both
// alike. Reports round-trip p50/p99/mean of each and the difference, the worker's own
// resolve_us (GET /v1/info) and its framed_worker_config_resolve_seconds histogram; checks that
// resolution on a hit stays under 50 us at p99, and that wrong inline bytes get 409
// config-integrity. Writes bench/cluster/results/propagation.{json,md}; exits 1 when the check
// fails. Every process is stopped by its PID.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, loadavg, machine, ok, pct, ROOT, startCoordinator, startWorker, waitWorkers } from './procs.mjs';

const M = Number(process.argv[2] || process.env.M || 5000);
const WARMUP = 300, BLOCK = 50, LIMIT_US = 50;
const OUT = join(ROOT, 'bench/cluster/results');

const coord = await startCoordinator({ runner: 'remote' });
let worker;
try {
  worker = await startWorker(coord.base, { threads: 2 });
  await waitWorkers(coord.base, 1);
  const load0 = loadavg();
  // Freeze: the first dataframe request creates the runner.
  const df = await ok(coord.base, 'POST', '/v1/dataframes', { json: { source: { rows: [{ a: 1 }] } } });
  const cfg = await ok(coord.base, 'GET', '/v1/config');
  const id = cfg.config_id;
  if (!cfg.locked || id !== df.config_id) throw new Error(`config not frozen: ${JSON.stringify(cfg)}`);
  const bytesResp = await call(coord.base, 'GET', `/v1/configs/${id}`);
  if (bytesResp.status !== 200) throw new Error(`GET /v1/configs/${id} -> ${bytesResp.status}`);
  const canonical = bytesResp.text;

  const spec = { stage: 0, task: 0, input: { kind: 'rows', rows: [{ a: 1 }], hints: [] }, core: null,
    pipeline: [], sink: null, nbuckets: 1 };
  const base = { query_id: 'q-propagation', stage: 0, task: 0, attempt: 0, spec, inputs: [] };
  const bodyA = JSON.stringify(base);
  const bodyB = JSON.stringify({ ...base, config_inline: canonical });
  const headers = { 'framed-config-id': id };

  async function once(body) {
    const t0 = process.hrtime.bigint();
    const r = await call(worker.base, 'POST', '/v1/tasks', { raw: body, headers });
    const us = Number(process.hrtime.bigint() - t0) / 1000;
    if (r.status !== 200) throw new Error(`task -> ${r.status}: ${r.text.slice(0, 300)}`);
    if (r.body.config_id !== id || r.headers['framed-config-id'] !== id) throw new Error('config ID not echoed');
    return us;
  }
  for (let i = 0; i < WARMUP; i++) { await once(bodyA); await once(bodyB); }
  // The worker's percentiles cover its last 4096 resolutions of each kind: with M >= 4096 only
  // measured tasks; with fewer, some of the warm-up too.
  const a = [], b = [];
  for (let done = 0; done < M; done += BLOCK) {
    const n = Math.min(BLOCK, M - done);
    for (let i = 0; i < n; i++) a.push(await once(bodyA));
    for (let i = 0; i < n; i++) b.push(await once(bodyB));
  }
  // Wrong inline bytes: refused, the task never runs.
  const bad = canonical.replace(/\d/, (d) => String((Number(d) + 1) % 10));
  const refused = await call(worker.base, 'POST', '/v1/tasks',
    { raw: JSON.stringify({ ...base, config_inline: bad }), headers });
  const info = await ok(worker.base, 'GET', '/v1/info');
  const metrics = (await call(worker.base, 'GET', '/metrics')).text
    .split('\n').filter((l) => l.startsWith('framed_worker_config_resolve_seconds')).join('\n');

  const stats = (xs) => {
    const s = [...xs].sort((x, y) => x - y);
    return { n: s.length, p50: pct(s, 50), p99: pct(s, 99), mean: s.reduce((x, y) => x + y, 0) / s.length, max: s[s.length - 1],
      over_1ms: s.filter((x) => x > 1000).length / s.length };
  };
  const A = stats(a), B = stats(b);
  const r = info.resolve_us;
  const res = {
    date: new Date().toISOString(), machine: machine(), version: info.version, loadavg_before: load0,
    loadavg_after: loadavg(), M, warmup: WARMUP, config_id: id, config_bytes: Buffer.byteLength(canonical),
    body_bytes: { header: Buffer.byteLength(bodyA), inline: Buffer.byteLength(bodyB) },
    round_trip_us: { header: A, inline: B,
      diff: { p50: B.p50 - A.p50, p99: B.p99 - A.p99, mean: B.mean - A.mean } },
    worker_resolve_us: r,
    refused: { status: refused.status, type: refused.body && refused.body.type },
    metrics,
  };
  const f = (x) => (x === null || x === undefined ? '-' : Number(x).toFixed(1));
  const pass = r.hit_p99 !== null && r.hit_p99 < LIMIT_US;
  const refusedOk = refused.status === 409 && /config-integrity/.test(String(res.refused.type));
  const md = [
    `### Config propagation: header + cached config vs the config in the body`,
    '',
    `- date: ${res.date}; framed ${res.version}; ${res.machine.cpu}, ${res.machine.ncpu} cores, ${res.machine.mem_gib} GiB, Linux ${res.machine.kernel}, Node ${res.machine.node}`,
    `- load average before ${res.loadavg_before}, after ${res.loadavg_after}`,
    `- ${M} tasks each way after ${WARMUP} warm-up each, interleaved in blocks of ${BLOCK}, one keep-alive connection, straight to the worker (\`POST /v1/tasks\`, a 1-row inline-rows spec, no inputs; the output partition stays on the worker); config ${res.config_bytes} bytes canonical; bodies ${res.body_bytes.header} vs ${res.body_bytes.inline} bytes`,
    '',
    '| microseconds | p50 | p99 | mean | max | share > 1 ms |',
    '|---|---:|---:|---:|---:|---:|',
    `| (a) round trip, header + cached config | ${f(A.p50)} | ${f(A.p99)} | ${f(A.mean)} | ${f(A.max)} | ${(100 * A.over_1ms).toFixed(1)}% |`,
    `| (b) round trip, config_inline in the body | ${f(B.p50)} | ${f(B.p99)} | ${f(B.mean)} | ${f(B.max)} | ${(100 * B.over_1ms).toFixed(1)}% |`,
    `| (b) - (a) | ${f(res.round_trip_us.diff.p50)} | ${f(res.round_trip_us.diff.p99)} | ${f(res.round_trip_us.diff.mean)} | | |`,
    `| worker: resolve on a cache hit (last ${r.window}) | ${f(r.hit_p50)} | ${f(r.hit_p99)} | | | |`,
    `| worker: verify inline bytes (last ${r.window}) | ${f(r.inline_p50)} | ${f(r.inline_p99)} | | | |`,
    `| worker: the store fetch (${r.fetches}) | ${f(r.fetch_p50)} | ${f(r.fetch_p99)} | | | |`,
    '',
    `- resolution on a cache hit: p99 ${f(r.hit_p99)} us, ${pass ? 'under' : '**over**'} the ${LIMIT_US} us limit (${r.hits} hits)`,
    `- wrong inline bytes: ${refused.status} ${res.refused.type} (${refusedOk ? 'refused as specified' : '**not refused as specified**'})`,
    '',
  ].join('\n');
  mkdirSync(OUT, { recursive: true });
  writeFileSync(join(OUT, 'propagation.json'), JSON.stringify(res, null, 1) + '\n');
  writeFileSync(join(OUT, 'propagation.md'), md);
  process.stdout.write(md);
  process.exitCode = pass && refusedOk ? 0 : 1;
} finally {
  if (worker) await worker.stop();
  await coord.stop();
}
