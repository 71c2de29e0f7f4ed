// cluster: a coordinator with the remote runner and three `framed worker`
// processes on 127.0.0.1 prove the invariants across processes: the golden
// plans give the local runner's answers (I1: every task reports the one
// config ID, fetched once per worker), tampered config bytes are refused
// (I3), a killed worker does not change a query's answer, teardown releases
// the config everywhere (I4), the same with Redis as the store, and with a
// cluster secret unsigned or replayed calls are refused.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { copyFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { call, SOURCE_DIR, startServer, startWorker } from './lib.mjs';

const GOLDEN = path.join(SOURCE_DIR, 'tests', 'data', 'golden');
const SPREAD = { scan_tasks_max_size_bytes: 200, scan_tasks_min_size_bytes: 1, shuffle_partitions: 3, maintain_order: false };

function copyInputs(dataDir) {
  for (const f of readdirSync(path.join(GOLDEN, 'inputs'))) copyFileSync(path.join(GOLDEN, 'inputs', f), path.join(dataDir, f));
}

async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

// The Redis that scripts/test.sh started (FRAMED_TEST_REDIS_URL), else one of
// our own on a free port, stopped by its PID.
async function startRedis() {
  const given = process.env.FRAMED_TEST_REDIS_URL;
  if (given) {
    const port = Number(/:(\d+)/.exec(given.replace('redis://', ''))[1]);
    return { port, url: given, async stop() {} };
  }
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  for (let i = 0; i < 100; i++) {
    try { if (redisCli(port, 'PING') === 'PONG') break; } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { port, url: `redis://127.0.0.1:${port}/0`, async stop() { child.kill('SIGTERM'); await exited; } };
}

function redisCli(port, ...args) {
  return execFileSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8' }).trim();
}

async function startCluster({ nworkers = 3, store, env = {}, coordArgs = [] } = {}) {
  const extra = store ? ['--store', store] : [];
  const coord = await startServer({ args: ['--runner', 'remote', ...extra, ...coordArgs], env });
  const workers = [];
  for (let i = 0; i < nworkers; i++) {
    workers.push(await startWorker(coord.base, { args: ['--threads', '2', '--data-dir', coord.dataDir, ...extra], env }));
  }
  for (let i = 0; i < 100; i++) {
    const r = await call(coord.base, 'GET', '/v1/workers');
    if (r.status === 200 && r.body.workers.filter((w) => w.state === 'active').length === nworkers) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  return {
    coord, workers,
    async stop() { for (const w of workers) if (!w.killed) await w.stop(); await coord.stop(); },
  };
}

async function runPlan(base, plan) {
  const r = await call(base, 'POST', '/v1/queries?wait=120', { json: { plan } });
  assert.ok(r.status === 200 || r.status === 202, r.text);
  if (r.body.state !== 'succeeded') return { query: r.body, rows: null };
  const res = await call(base, 'GET', `/v1/queries/${r.body.id}/result`);
  return { query: r.body, rows: res.body.rows, columns: res.body.columns };
}

const canon = (rows) => rows.map((r) => JSON.stringify(r)).sort();

async function workerInfo(w) {
  return (await call(w.base, 'GET', '/v1/info')).body;
}

test('golden plans give the local runner\'s answers on three workers; one config, fetched once', async () => {
  const cluster = await startCluster();
  const local = await startServer();
  try {
    copyInputs(cluster.coord.dataDir);
    copyInputs(local.dataDir);
    // Plans with integers beyond 2^53 cannot pass through JavaScript numbers
    // unchanged; the C golden test runs those.
    const cases = readdirSync(GOLDEN).filter((f) => f.endsWith('.json'))
      .map((f) => [f, readFileSync(path.join(GOLDEN, f), 'utf8')])
      .filter(([, text]) => !/\d{16,}/.test(JSON.stringify(JSON.parse(text).plan)))
      .map(([f, text]) => ({ name: f, ...JSON.parse(text) }))
      .filter((c) => !c.expect_error);
    const groups = new Map();
    for (const c of cases) {
      const key = JSON.stringify({ ...SPREAD, ...(c.config ?? {}) });
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(c);
    }
    let compared = 0;
    const tasksByWorker = new Map();
    for (const [key, group] of groups) {
      for (const srv of [cluster.coord, local]) {
        const r = await call(srv.base, 'POST', '/v1/config', { json: JSON.parse(key) });
        assert.equal(r.status, 200, r.text);
      }
      let configId = null;
      for (const c of group) {
        const remote = await runPlan(cluster.coord.base, c.plan);
        const mine = await runPlan(local.base, c.plan);
        assert.equal(remote.query.state, mine.query.state, `${c.name}: ${JSON.stringify(remote.query.error)}`);
        if (!mine.rows) continue;
        configId ??= remote.query.config_id;
        assert.deepEqual(remote.query.task_config_ids, [configId], `${c.name}: I1, every task ran with the runner's config`);
        assert.deepEqual(remote.columns, mine.columns, c.name);
        const ordered = c.expect?.ordered;
        assert.deepEqual(ordered ? remote.rows : canon(remote.rows), ordered ? mine.rows : canon(mine.rows), c.name);
        compared++;
      }
      if (configId) { // each worker resolved the config from the store once, then from its cache
        for (const w of cluster.workers) {
          const info = await workerInfo(w);
          const stats = info.configs?.[configId];
          if (!stats) continue;
          assert.equal(stats.fetches, 1, `worker ${w.base} fetched ${configId} ${stats.fetches} times`);
          tasksByWorker.set(w.base, (tasksByWorker.get(w.base) ?? 0) + stats.tasks);
        }
      }
      for (const srv of [cluster.coord, local]) await call(srv.base, 'DELETE', '/v1/runner');
    }
    assert.ok(compared > 100, `only ${compared} golden plans compared`);
    assert.equal([...tasksByWorker.values()].filter((n) => n > 0).length, 3, 'every worker ran tasks');
  } finally {
    await cluster.stop();
    await local.stop();
  }
});

function bigCsv(dataDir, rows) {
  let s = 'k,v\n';
  for (let i = 0; i < rows; i++) s += `${i % 97},${i}\n`;
  writeFileSync(path.join(dataDir, 'big.csv'), s);
  const expect = new Map();
  for (let i = 0; i < rows; i++) expect.set(i % 97, (expect.get(i % 97) ?? 0) + i);
  return [...expect.entries()].map(([k, v]) => [k, v]);
}

test('kill -9 of a worker mid-query: the query still gives the right answer', async () => {
  const cluster = await startCluster();
  try {
    const expect = bigCsv(cluster.coord.dataDir, 300000);
    await call(cluster.coord.base, 'POST', '/v1/config', { json: { scan_tasks_max_size_bytes: 65536, scan_tasks_min_size_bytes: 1, shuffle_partitions: 6, maintain_order: false } });
    const plan = { source: { dataset: 'big' }, ops: [{ groupby: ['k'], agg: ['sum(v) as s'] }] };
    const victim = cluster.workers[1];
    // The kill must land mid-query: a result already on the victim when it
    // dies is lost with it (result_stream.test.mjs). The victim is frozen
    // first; a query that got past its last stage meanwhile is let go and
    // another one tried.
    let r, id, midQuery = false;
    for (let attempt = 0; attempt < 10 && !midQuery; attempt++) {
      r = await call(cluster.coord.base, 'POST', '/v1/queries', { json: { plan } });
      assert.equal(r.status, 202, r.text);
      id = r.body.id;
      for (let i = 0; i < 200; i++) { // wait until the query is under way
        r = await call(cluster.coord.base, 'GET', `/v1/queries/${id}`);
        if (r.body.progress.tasks_done > 0 || r.body.state !== 'running') break;
        await new Promise((res) => setTimeout(res, 5));
      }
      process.kill(victim.pid, 'SIGSTOP');
      const st = await call(cluster.coord.base, 'GET', `/v1/queries/${id}/stages`);
      const stages = st.body.stages;
      midQuery = st.body.state === 'running' && stages.length > 1 &&
        !stages[stages.length - 1].tasks.some((t) => t.worker_url === victim.base && t.state === 'ok');
      if (!midQuery) {
        process.kill(victim.pid, 'SIGCONT');
        for (let i = 0; i < 600; i++) {
          r = await call(cluster.coord.base, 'GET', `/v1/queries/${id}`);
          if (!['queued', 'running'].includes(r.body.state)) break;
          await new Promise((res) => setTimeout(res, 50));
        }
      }
    }
    assert.ok(midQuery, 'a kill landed mid-query in 10 tries');
    process.kill(victim.pid, 'SIGKILL');
    victim.killed = true;
    await victim.exited;
    for (let i = 0; i < 600; i++) {
      r = await call(cluster.coord.base, 'GET', `/v1/queries/${id}`);
      if (!['queued', 'running'].includes(r.body.state)) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.equal(r.body.state, 'succeeded', JSON.stringify(r.body));
    const res = await call(cluster.coord.base, 'GET', `/v1/queries/${id}/result`);
    assert.deepEqual(canon(res.body.rows), canon(expect));
    // A later query runs on the two workers left.
    const again = await runPlan(cluster.coord.base, plan);
    assert.equal(again.query.state, 'succeeded', JSON.stringify(again.query));
    assert.deepEqual(canon(again.rows), canon(expect));
  } finally {
    await cluster.stop();
  }
});

test('teardown: workers drop the config, the store releases it, a new config gets a new ID', async () => {
  const cluster = await startCluster();
  try {
    copyInputs(cluster.coord.dataDir);
    let r = await call(cluster.coord.base, 'POST', '/v1/dataframes', { json: { source: { dataset: 'trips' }, ops: [{ where: 'fare > 10' }] } });
    assert.equal(r.status, 201, r.text);
    const first = r.body.config_id;
    const held = [];
    for (const w of cluster.workers) if ((await workerInfo(w)).config_ids.includes(first)) held.push(w);
    assert.ok(held.length > 0, 'some worker ran the preview');
    r = await call(cluster.coord.base, 'DELETE', '/v1/runner');
    assert.equal(r.status, 200, r.text);
    for (const w of cluster.workers) assert.ok(!(await workerInfo(w)).config_ids.includes(first), 'the worker dropped the config');
    assert.equal((await call(cluster.coord.base, 'GET', `/v1/configs/${first}`)).status, 404);
    await call(cluster.coord.base, 'POST', '/v1/config', { json: { num_preview_rows: 3 } });
    r = await call(cluster.coord.base, 'POST', '/v1/dataframes', { json: { source: { dataset: 'trips' } } });
    assert.equal(r.status, 201, r.text);
    assert.notEqual(r.body.config_id, first);
    assert.equal(r.body.preview.length, 3);
    const workers = (await call(cluster.coord.base, 'GET', '/v1/workers')).body.workers;
    assert.equal(workers.length, 3);
    assert.ok(workers.every((w) => w.state === 'active' && typeof w.last_heartbeat === 'string'));
  } finally {
    await cluster.stop();
  }
});

test('Redis store: lifecycle, workers resolve from Redis, tampered bytes are refused and no task runs', async () => {
  const redis = await startRedis();
  // A lease long enough that no renewal repairs the tampered bytes during the test.
  const cluster = await startCluster({ store: redis.url, coordArgs: ['--store-lease-ms', '3600000'] });
  try {
    copyInputs(cluster.coord.dataDir);
    let r = await call(cluster.coord.base, 'POST', '/v1/dataframes', { json: { source: { dataset: 'trips' }, ops: [{ where: 'fare > 10' }] } });
    assert.equal(r.status, 201, r.text);
    const id = r.body.config_id;
    const bytes = redisCli(redis.port, 'GET', `framed:config:${id}`);
    assert.equal(`sha256:${createHash('sha256').update(bytes).digest('hex')}`, id, 'Redis holds the canonical bytes');
    assert.equal(redisCli(redis.port, 'ZCARD', `framed:config:${id}:holds`), '1', 'one hold: the runner');
    const q = await runPlan(cluster.coord.base, { source: { dataset: 'trips' }, ops: [{ agg: ['count(*) as n'] }] });
    assert.equal(q.query.state, 'succeeded');
    assert.deepEqual(q.query.task_config_ids, [id]);
    // Tamper: the workers forget the config, then its bytes change in Redis.
    const before = {};
    for (const w of cluster.workers) {
      const d = await call(w.base, 'DELETE', `/v1/configs/${id}`, { headers: { 'framed-config-id': id } });
      assert.ok(d.status === 200 || d.status === 404, d.text);
      before[w.base] = (await workerInfo(w)).configs?.[id]?.tasks ?? 0;
    }
    redisCli(redis.port, 'SET', `framed:config:${id}`, bytes.replace('"shuffle_partitions":8', '"shuffle_partitions":9'));
    const bad = await runPlan(cluster.coord.base, { source: { dataset: 'trips' }, ops: [{ agg: ['count(*) as n'] }] });
    assert.equal(bad.query.state, 'failed');
    assert.equal(bad.query.error.kind, 'config-integrity', JSON.stringify(bad.query.error));
    for (const w of cluster.workers) {
      const info = await workerInfo(w);
      assert.equal(info.configs?.[id]?.tasks ?? 0, before[w.base], 'no task ran with the tampered config');
      assert.ok(!info.config_ids.includes(id), 'nothing was cached');
    }
    redisCli(redis.port, 'SET', `framed:config:${id}`, bytes);
    r = await call(cluster.coord.base, 'DELETE', '/v1/runner');
    assert.equal(r.status, 200, r.text);
    assert.equal(redisCli(redis.port, 'EXISTS', `framed:config:${id}`), '0', 'released from Redis at teardown');
  } finally {
    await cluster.stop();
    await redis.stop();
  }
});

function sign(secret, method, target, body, sender, ts) {
  const bodyHash = createHash('sha256').update(body ?? '').digest('hex');
  const mac = createHmac('sha256', secret).update(`${method}\n${target}\n${bodyHash}\n${ts}\n${sender}`).digest('hex');
  return { 'framed-sender': sender, 'framed-timestamp': String(ts), 'framed-signature': `v1=${mac}` };
}

test('cluster secret: the cluster works signed; other secrets and replays are refused', async () => {
  const env = { FRAMED_CLUSTER_SECRET: 'correct horse battery staple' };
  const cluster = await startCluster({ env });
  try {
    copyInputs(cluster.coord.dataDir);
    const q = await runPlan(cluster.coord.base, { source: { dataset: 'trips' }, ops: [{ groupby: ['vendor'], agg: ['count(*) as n'] }] });
    assert.equal(q.query.state, 'succeeded', JSON.stringify(q.query));
    const id = q.query.config_id;
    const w = cluster.workers[0].base;
    const now = Math.floor(Date.now() / 1000);
    let r = await call(w, 'GET', '/v1/info');
    assert.equal(r.status, 401, 'unsigned');
    r = await call(w, 'GET', '/v1/info', { headers: sign('another secret', 'GET', '/v1/info', '', 'test', now) });
    assert.equal(r.status, 401, 'signed with another secret');
    r = await call(w, 'GET', '/v1/info', { headers: sign(env.FRAMED_CLUSTER_SECRET, 'GET', '/v1/info', '', 'test', now - 400) });
    assert.equal(r.status, 401, 'replayed after the allowed age');
    r = await call(w, 'GET', '/v1/info', { headers: sign(env.FRAMED_CLUSTER_SECRET, 'GET', '/v1/info', '', 'test', now) });
    assert.equal(r.status, 200, r.text);
    // the workers that ran a task hold the config (a small query may run on one of them only)
    const held = [r.body.config_ids.includes(id)];
    for (const other of cluster.workers.slice(1)) {
      const o = await call(other.base, 'GET', '/v1/info', { headers: sign(env.FRAMED_CLUSTER_SECRET, 'GET', '/v1/info', '', 'test', now) });
      assert.equal(o.status, 200, o.text);
      held.push(o.body.config_ids.includes(id));
    }
    assert.ok(held.some(Boolean), `no worker holds ${id}`);
    r = await call(cluster.coord.base, 'POST', '/v1/workers', { json: { id: 'w-fake', url: 'http://127.0.0.1:1', threads: 1 } });
    assert.equal(r.status, 401, 'an unsigned announce is refused');
  } finally {
    await cluster.stop();
  }
});

test('a worker answering for another config is not believed: the query fails with config-mismatch', async () => {
  const coord = await startServer({ args: ['--runner', 'remote'] });
  const http = await import('node:http');
  let seen = null;
  const fake = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      if (req.url === '/v1/tasks') seen = req.headers['framed-config-id'];
      const other = `sha256:${'0'.repeat(64)}`;
      res.writeHead(200, { 'content-type': 'application/json', 'framed-config-id': other });
      res.end(JSON.stringify({ config_id: other, outputs: [{ id: 'p-fake', rows: 0, bytes: 0 }], null_errors: 0 }));
    });
  });
  await new Promise((r) => fake.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${fake.address().port}`;
  try {
    let r = await call(coord.base, 'POST', '/v1/workers', { json: { id: 'w-fake', url, threads: 1, running_tasks: 0, config_ids: [] } });
    assert.equal(r.status, 200, r.text);
    r = await call(coord.base, 'POST', '/v1/dataframes', { json: { source: { rows: [{ a: 1 }] } } });
    assert.ok(r.status >= 400, r.text);
    assert.equal(r.body.type, 'https://framed.dev/problems/config-mismatch', r.text);
    const cfg = await call(coord.base, 'GET', '/v1/config');
    assert.equal(seen, cfg.body.config_id, 'the task carried the runner\'s config ID');
  } finally {
    fake.close();
    await coord.stop();
  }
});

test('a remote coordinator with no workers says so at once (503 no-workers, Retry-After); /metrics counts workers by state', async () => {
  const coord = await startServer({ args: ['--runner', 'remote'] });
  let worker;
  try {
    const gauges = async () => {
      const m = await call(coord.base, 'GET', '/metrics');
      return Object.fromEntries([...m.text.matchAll(/^framed_workers\{state="(\w+)"\} (\d+)$/gm)].map((x) => [x[1], Number(x[2])]));
    };
    assert.deepEqual(await gauges(), { active: 0, suspect: 0, gone: 0 });
    const plan = { source: { rows: [{ a: 1 }, { a: 2 }] }, ops: [{ where: 'a > 1' }] };
    for (const [method, url, json] of [['POST', '/v1/queries?wait=30', { plan }], ['POST', '/v1/dataframes', plan]]) {
      const r = await call(coord.base, method, url, { json });
      assert.equal(r.status, 503, `${url}: ${r.text}`);
      assert.equal(r.body.type, 'https://framed.dev/problems/no-workers');
      assert.match(r.headers.get('retry-after') ?? '', /^\d+$/);
      assert.match(r.body.detail, /framed worker --coordinator/);
    }
    worker = await startWorker(coord.base, { args: ['--log-level', 'debug'] });
    for (let i = 0; i < 100 && (await gauges()).active !== 1; i++) await new Promise((res) => setTimeout(res, 100));
    assert.deepEqual(await gauges(), { active: 1, suspect: 0, gone: 0 });
    const r = await call(coord.base, 'POST', '/v1/queries?wait=30', { json: { plan } });
    assert.equal(r.body.state, 'succeeded', r.text);
    // Defect 18: the worker logs the coordinator's request and query IDs of its tasks...
    const requestId = r.headers.get('x-request-id');
    const traced = worker.logLines().filter((l) => /^task /.test(l.msg ?? ''));
    assert.ok(traced.some((l) => l.msg.includes(`query ${r.body.id}`) && l.msg.includes(`request ${requestId}`)),
      `a task line names the query and the request: ${JSON.stringify(traced)}`);
    // A client's request ID as long as the edge accepts (128) reaches the worker whole.
    const longId = 'r'.repeat(128);
    const r2 = await call(coord.base, 'POST', '/v1/queries?wait=30', { json: { plan }, headers: { 'x-request-id': longId } });
    assert.equal(r2.body.state, 'succeeded', r2.text);
    assert.equal(r2.headers.get('x-request-id'), longId);
    assert.ok(worker.logLines().some((l) => /^task /.test(l.msg ?? '') && l.msg.includes(`query ${r2.body.id}`)
      && l.msg.includes(`(request ${longId})`)), 'the worker logs the whole 128-character request ID');
    // The coordinator's fetch of the result carries them too (logged at debug).
    await call(coord.base, 'GET', `/v1/queries/${r.body.id}/result`);
    assert.ok(worker.logLines().some((l) => l.level === 'debug' && /^GET \/v1\/partitions\//.test(l.msg)
      && l.msg.includes(`request ${requestId} query ${r.body.id}`)), 'the partition fetch is traced');
    assert.ok(worker.logLines().some((l) => l.level === 'debug' && /^heartbeat to /.test(l.msg)), 'beats at debug');
    // ...and heartbeats are routine: the coordinator access-logs them at debug only.
    assert.ok(!coord.logLines().some((l) => l.msg === 'request' && l.path === '/v1/workers'), 'no heartbeat at info');
    // A bad tracing ID is refused, bounded and printable.
    const bad = await call(worker.base, 'POST', '/v1/tasks', {
      json: {}, headers: { 'framed-config-id': r.body.config_id, 'framed-request-id': 'x'.repeat(129) },
    });
    assert.equal(bad.status, 400, bad.text);
    assert.equal(bad.body.type, 'https://framed.dev/problems/invalid-parameter');
  } finally {
    await worker?.stop();
    await coord.stop();
  }
});

// The signature headers of api/internal-protocol.md, with a nonce.
function signNonce(secret, method, target, body, sender) {
  const stamp = Math.floor(Date.now() / 1000);
  const nonce = randomBytes(16).toString('hex');
  const bodyHash = createHash('sha256').update(body ?? '').digest('hex');
  const mac = createHmac('sha256', secret).update(`${method}\n${target}\n${bodyHash}\n${stamp}\n${sender}\n${nonce}`).digest('hex');
  return { 'framed-sender': sender, 'framed-timestamp': String(stamp), 'framed-nonce': nonce, 'framed-signature': `v1=${mac}` };
}

async function waitFor(fn, what, timeoutMs = 60000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`waited in vain for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('a worker that refuses the coordinator\'s signature (401) is a worker fault: its tasks run elsewhere', async () => {
  const secret = randomBytes(24).toString('hex');
  const coord = await startServer({ args: ['--runner', 'remote'], env: { FRAMED_CLUSTER_SECRET: secret } });
  const good = await startWorker(coord.base, { args: ['--threads', '2', '--data-dir', coord.dataDir], env: { FRAMED_CLUSTER_SECRET: secret } });
  // Another secret: its own announces are refused, so the test announces it.
  const bad = await startWorker(coord.base, { args: ['--threads', '2', '--data-dir', coord.dataDir], env: { FRAMED_CLUSTER_SECRET: randomBytes(24).toString('hex') } });
  try {
    copyInputs(coord.dataDir);
    const cfg = await call(coord.base, 'POST', '/v1/config', { json: SPREAD });
    assert.equal(cfg.status, 200, cfg.text);
    const body = JSON.stringify({ id: 'w-other-secret', url: bad.base, threads: 2, running_tasks: 0, config_ids: [] });
    const a = await call(coord.base, 'POST', '/v1/workers', {
      body, headers: { 'content-type': 'application/json', ...signNonce(secret, 'POST', '/v1/workers', body, 'w-other-secret') },
    });
    assert.equal(a.status, 200, a.text);
    const q = await runPlan(coord.base, { source: { dataset: 'trips' }, ops: [{ groupby: ['vendor'], agg: ['count(*) as n'] }] });
    assert.equal(q.query.state, 'succeeded', JSON.stringify(q.query));
    assert.ok(coord.stderr().includes(`worker ${bad.base} refused the coordinator's signature`), 'the 401 was logged');
    assert.match(coord.stderr(), /refused the coordinator's signature: [^"]*signature/, 'with the worker\'s detail');
    const ws = (await call(coord.base, 'GET', '/v1/workers')).body.workers;
    assert.notEqual(ws.find((w) => w.url === bad.base).state, 'active', 'the refusing worker is suspect');
  } finally {
    await bad.stop();
    await good.stop();
    await coord.stop();
  }
});

// A relay in front of a real worker that the coordinator calls in the worker's place (as a peer
// that took over its address would): it forwards every call, and in mode 'strip' removes the
// signature from task answers, in 'other' signs them under another secret, in 'pass' leaves them.
async function startRelay() {
  const http = await import('node:http');
  const relay = { mode: 'pass', answers: 0, target: null };
  const server = http.createServer((req, res) => {
    if (!relay.target) { res.writeHead(503); res.end(); return; }
    const fwd = http.request(`${relay.target}${req.url}`, { method: req.method, headers: req.headers }, (up) => {
      const headers = { ...up.headers };
      if (req.url === '/v1/tasks' && up.statusCode === 200) {
        relay.answers++;
        if (relay.mode !== 'pass') delete headers['framed-answer-signature'];
        if (relay.mode === 'other') headers['framed-answer-signature'] = `v1=${createHmac('sha256', 'another secret').update('x').digest('hex')}`;
      }
      res.writeHead(up.statusCode, headers);
      up.pipe(res);
    });
    fwd.on('error', () => res.destroy());
    req.pipe(fwd);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  relay.url = `http://127.0.0.1:${server.address().port}`;
  relay.close = () => { server.closeAllConnections(); server.close(); };
  return relay;
}

test('under a cluster secret a task answer not signed for its call is not taken: the task runs elsewhere', async () => {
  const secret = randomBytes(24).toString('hex');
  const env = { FRAMED_CLUSTER_SECRET: secret };
  const local = await startServer();
  const coord = await startServer({ args: ['--runner', 'remote'], env });
  const relay = await startRelay();
  const good = await startWorker(coord.base, { args: ['--threads', '1', '--data-dir', coord.dataDir], env });
  // The other worker is reached through the relay: it announces the relay's address.
  const relayed = await startWorker(coord.base, { args: ['--threads', '1', '--data-dir', coord.dataDir, '--advertise-url', relay.url], env });
  relay.target = relayed.base;
  try {
    let csv = 'k,v\n';
    for (let i = 0; i < 20000; i++) csv += `${i % 7},${i}\n`;
    for (const s of [local, coord]) {
      // a file a mode: where a file is read is learned from the answers taken
      for (const mode of ['strip', 'other', 'pass']) writeFileSync(path.join(s.dataDir, `kv_${mode}.csv`), csv);
      const cfg = { scan_tasks_max_size_bytes: 4096, scan_tasks_min_size_bytes: 1, shuffle_partitions: 4, maintain_order: false };
      assert.equal((await call(s.base, 'POST', '/v1/config', { json: cfg })).status, 200);
    }
    for (let i = 0; i < 100; i++) {
      const ws = (await call(coord.base, 'GET', '/v1/workers')).body.workers;
      if (ws.filter((w) => w.state === 'active').length === 2) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    const plan = (mode) => ({ source: { dataset: `kv_${mode}` }, ops: [{ groupby: ['k'], agg: ['count(*) as n', 'sum(v) as s'] }] });
    const want = await runPlan(local.base, plan('pass'));
    assert.equal(want.query.state, 'succeeded', JSON.stringify(want.query));
    const refusal = /answered task \d+ of stage \d+ of query \S+ without a valid Framed-Answer-Signature/;
    for (const mode of ['strip', 'other', 'pass']) {
      relay.mode = mode;
      const answers = relay.answers;
      const logged = coord.logLines().length;
      const q = await runPlan(coord.base, plan(mode));
      assert.equal(q.query.state, 'succeeded', `${mode}: ${JSON.stringify(q.query)}`);
      assert.deepEqual(canon(q.rows), canon(want.rows), `${mode}: the local runner's rows`);
      assert.ok(relay.answers > answers, `${mode}: the relayed worker answered tasks`);
      const refused = coord.logLines().slice(logged).filter((l) => refusal.test(l.msg ?? ''));
      if (mode === 'pass') {
        assert.equal(refused.length, 0, `its own signed answers are taken: ${JSON.stringify(refused)}`);
      } else {
        assert.ok(refused.length > 0, `${mode}: the answers through the relay were refused`);
        assert.ok(refused.every((l) => l.msg.startsWith(`worker ${relay.url} `)), 'the refusals name the relay');
      }
    }
  } finally {
    relay.close();
    await relayed.stop();
    await good.stop();
    await coord.stop();
    await local.stop();
  }
});

test('a reset stays draining until the hung workers were told to drop (told all at once)', async () => {
  const cluster = await startCluster({ nworkers: 2 });
  const stopped = [];
  try {
    copyInputs(cluster.coord.dataDir);
    const q = await runPlan(cluster.coord.base, { source: { dataset: 'trips' }, ops: [{ agg: ['count(*) as n'] }] });
    assert.equal(q.query.state, 'succeeded', JSON.stringify(q.query));
    for (const w of cluster.workers) { process.kill(w.pid, 'SIGSTOP'); stopped.push(w); }
    let settled = false;
    const reset = call(cluster.coord.base, 'DELETE', '/v1/runner').then((r) => { settled = true; return r; });
    // While the hung workers are told to drop, the runner is still draining.
    const seen = await waitFor(async () => {
      const s = (await call(cluster.coord.base, 'GET', '/v1/runner')).body.state;
      return s !== 'active' ? { state: s, pending: !settled } : null;
    }, 'the reset to start');
    assert.ok(seen.pending, 'the reset was still releasing');
    assert.equal(seen.state, 'draining');
    const r = await call(cluster.coord.base, 'POST', '/v1/queries', { json: { plan: { source: { dataset: 'trips' } } } });
    if (settled) { // say why the reset did not wait for the hung workers
      const done = await reset;
      const logs = cluster.coord.logLines().filter((l) => /worker|reset|config/.test(l.msg ?? ''));
      assert.fail(`the reset ended before the hung workers were told (${done.status} ${done.text}); ` +
        `the coordinator logged: ${JSON.stringify(logs.slice(-20))}`);
    }
    assert.equal(r.status, 503, r.text);
    assert.equal(r.body.type.split('/').pop(), 'runner-draining');
    assert.ok(r.headers.get('retry-after'), 'with Retry-After');
    const done = await reset;
    assert.equal(done.status, 200, done.text);
    assert.equal((await call(cluster.coord.base, 'GET', '/v1/runner')).body.state, 'none');
  } finally {
    for (const w of stopped) process.kill(w.pid, 'SIGCONT');
    await cluster.stop();
  }
});
