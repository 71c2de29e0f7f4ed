// remote_data: workers that have no copy of the data. A coordinator with a
// data dir and workers with EMPTY data dirs of their own: scan tasks read
// their bytes by HTTP Range from the coordinator (GET
// /v1/internal/datasets), the golden plans give the local runner's answers,
// with and without a cluster secret; an upload while the runner is active is
// seen at once; the internal endpoint refuses what it must (unsigned, bad
// ranges, paths out of the data dir, FIFOs, another config); the worker's
// metrics and task answers say where the bytes came from.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import http from 'node:http';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { assertProblem, call, SOURCE_DIR, startServer, startWorker, tempRoot } from './lib.mjs';

const GOLDEN = path.join(SOURCE_DIR, 'tests', 'data', 'golden');
const SPREAD = { scan_tasks_max_size_bytes: 200, scan_tasks_min_size_bytes: 1, shuffle_partitions: 3, maintain_order: false };
const TRIPS_GROUPBY = { source: { dataset: 'trips' }, ops: [{ groupby: ['vendor'], agg: ['count(*) as n', 'sum(fare) as fare'] }] };

function copyInputs(dataDir) {
  for (const f of readdirSync(path.join(GOLDEN, 'inputs'))) copyFileSync(path.join(GOLDEN, 'inputs', f), path.join(dataDir, f));
}

// A coordinator with the remote runner and workers, each with a data dir of
// its own (empty unless a test fills it).
async function startCluster({ nworkers = 2, env = {}, workerArgs = [] } = {}) {
  const coord = await startServer({ args: ['--runner', 'remote'], env });
  const roots = [];
  const workers = [];
  for (let i = 0; i < nworkers; i++) {
    const root = tempRoot();
    const dataDir = path.join(root, 'data');
    mkdirSync(dataDir, { recursive: true });
    roots.push(root);
    const w = await startWorker(coord.base, { args: ['--threads', '2', '--data-dir', dataDir, ...workerArgs], env });
    w.dataDir = dataDir;
    workers.push(w);
  }
  for (let i = 0; i < 100; i++) {
    const r = await call(coord.base, 'GET', '/v1/workers');
    if (r.status === 200 && r.body.workers.filter((w) => w.state === 'active').length === nworkers) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  return {
    coord, workers,
    async stop() {
      for (const w of workers) await w.stop();
      await coord.stop();
      for (const r of roots) rmSync(r, { recursive: true, force: true });
    },
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

// framed_worker_scan_* and range reads of one worker's /metrics.
async function scanMetrics(w, headers = {}) {
  const r = await call(w.base, 'GET', '/metrics', { headers });
  assert.equal(r.status, 200, r.text);
  const num = (re) => { const m = re.exec(r.text); return m ? Number(m[1]) : NaN; };
  return {
    remoteTasks: num(/^framed_worker_scan_tasks_total\{source="remote"\} (\d+)$/m),
    localTasks: num(/^framed_worker_scan_tasks_total\{source="local"\} (\d+)$/m),
    remoteBytes: num(/^framed_worker_scan_bytes_total\{source="remote"\} (\d+)$/m),
    localBytes: num(/^framed_worker_scan_bytes_total\{source="local"\} (\d+)$/m),
    rangeReads: num(/^framed_worker_range_reads_total (\d+)$/m),
  };
}

async function golden(cluster, local) {
  const cases = readdirSync(GOLDEN).filter((f) => f.endsWith('.json'))
    .map((f) => [f, readFileSync(path.join(GOLDEN, f), 'utf8')])
    .filter(([, text]) => !/\d{16,}/.test(JSON.stringify(JSON.parse(text).plan)))
    .map(([f, text]) => ({ name: f, ...JSON.parse(text) }))
    .filter((c) => !c.expect_error && JSON.stringify(c.plan).includes('"dataset"'));
  const groups = new Map();
  for (const c of cases) {
    const key = JSON.stringify({ ...SPREAD, ...(c.config ?? {}) });
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(c);
  }
  let compared = 0;
  for (const [key, group] of groups) {
    for (const srv of [cluster.coord, local]) {
      const r = await call(srv.base, 'POST', '/v1/config', { json: JSON.parse(key) });
      assert.equal(r.status, 200, r.text);
    }
    for (const c of group) {
      const remote = await runPlan(cluster.coord.base, c.plan);
      const mine = await runPlan(local.base, c.plan);
      assert.equal(remote.query.state, mine.query.state, `${c.name}: ${JSON.stringify(remote.query.error)}`);
      if (!mine.rows) continue;
      assert.deepEqual(remote.columns, mine.columns, c.name);
      assert.deepEqual(canon(remote.rows), canon(mine.rows), c.name);
      compared++;
    }
    for (const srv of [cluster.coord, local]) {
      const r = await call(srv.base, 'DELETE', '/v1/runner?force=true');
      assert.ok(r.status === 200 || r.status === 404, r.text);
    }
  }
  return compared;
}

test('workers with an empty data dir read by range and give the local runner\'s answers', async () => {
  const cluster = await startCluster();
  const local = await startServer();
  try {
    copyInputs(cluster.coord.dataDir);
    copyInputs(local.dataDir);
    const compared = await golden(cluster, local);
    assert.ok(compared >= 20, `only ${compared} golden plans over datasets compared`);
    let remoteBytes = 0, remoteTasks = 0;
    for (const w of cluster.workers) {
      const m = await scanMetrics(w);
      assert.equal(m.localTasks, 0, 'a worker without the data read nothing locally');
      assert.equal(m.localBytes, 0);
      remoteBytes += m.remoteBytes;
      remoteTasks += m.remoteTasks;
      assert.ok(m.rangeReads >= m.remoteTasks, 'at least one range read per remote scan task');
    }
    assert.ok(remoteTasks > 20, `${remoteTasks} remote scan tasks`);
    assert.ok(remoteBytes > 1000, `${remoteBytes} remote scan bytes`);
  } finally {
    await cluster.stop();
    await local.stop();
  }
});

test('an upload while the runner is active is read by the workers at once; explain names the read', async () => {
  const cluster = await startCluster();
  try {
    const put = (text) => call(cluster.coord.base, 'PUT', '/v1/datasets/sales', { body: text, headers: { 'content-type': 'text/csv' } });
    let r = await put('k,v\na,1\nb,2\na,3\n');
    assert.equal(r.status, 201, r.text);
    const plan = { source: { dataset: 'sales' }, ops: [{ groupby: ['k'], agg: ['sum(v) as s'] }] };
    let q = await runPlan(cluster.coord.base, plan);
    assert.equal(q.query.state, 'succeeded', JSON.stringify(q.query.error));
    assert.deepEqual(canon(q.rows), canon([['a', 4], ['b', 2]]));
    const runner = await call(cluster.coord.base, 'GET', '/v1/runner');
    assert.equal(runner.body.state, 'active');
    r = await put('k,v\na,10\nc,5\nc,6\nb,1\n'); // same name, new size and mtime
    assert.ok(r.status === 200 || r.status === 201, r.text);
    q = await runPlan(cluster.coord.base, plan);
    assert.equal(q.query.state, 'succeeded', JSON.stringify(q.query.error));
    assert.deepEqual(canon(q.rows), canon([['a', 10], ['b', 1], ['c', 11]]));
    assert.equal((await call(cluster.coord.base, 'GET', '/v1/runner')).body.config_id, runner.body.config_id, 'no restart, same runner');
    const df = await call(cluster.coord.base, 'POST', '/v1/dataframes', { json: plan });
    assert.equal(df.status, 201, df.text);
    const ex = await call(cluster.coord.base, 'GET', `/v1/dataframes/${df.body.id}/explain`);
    assert.equal(ex.status, 200, ex.text);
    assert.match(ex.text, /by range from the coordinator/);
  } finally {
    await cluster.stop();
  }
});

test('auto reads a local copy only when it is the coordinator\'s version; remote and local force the choice', async () => {
  const cluster = await startCluster({ nworkers: 1 });
  const forced = await startWorker(cluster.coord.base, { args: ['--threads', '1', '--data-dir', cluster.coord.dataDir, '--data-source', 'remote'] });
  try {
    copyInputs(cluster.coord.dataDir);
    // the worker holds another version of trips.csv: same name, other bytes
    writeFileSync(path.join(cluster.workers[0].dataDir, 'trips.csv'), 'id,vendor,fare,tip,pickup,note\n1,ZZZ,1,1,2024-01-01,x\n');
    copyFileSync(path.join(GOLDEN, 'inputs', 'groups.csv'), path.join(cluster.workers[0].dataDir, 'groups.csv'));
    const before = await scanMetrics(cluster.workers[0]);
    const q = await runPlan(cluster.coord.base, TRIPS_GROUPBY);
    assert.equal(q.query.state, 'succeeded', JSON.stringify(q.query.error));
    assert.ok(q.rows.length > 1 && !q.rows.some((r) => r[0] === 'ZZZ'), 'the stale local copy was not read');
    const after = await scanMetrics(cluster.workers[0]);
    const f = await scanMetrics(forced);
    assert.equal(after.localTasks, before.localTasks, 'a copy of another size is not read locally');
    assert.ok(f.remoteTasks + after.remoteTasks > before.remoteTasks, 'trips.csv was read by range');
    assert.equal(f.localTasks, 0, '--data-source remote never reads locally, even with the file at hand');
    await forced.stop();
    const local = await startWorker(cluster.coord.base, { args: ['--threads', '1', '--data-dir', cluster.workers[0].dataDir, '--data-source', 'local'] });
    try {
      await cluster.workers[0].stop();
      cluster.workers.splice(0, 1);
      // --data-source local: the worker reads its own copy, whatever its version (the operator's choice)
      for (let i = 0; i < 50; i++) {
        const ws = await call(cluster.coord.base, 'GET', '/v1/workers');
        if (ws.body.workers.filter((w) => w.state === 'active').length === 1) break;
        await new Promise((res) => setTimeout(res, 100));
      }
      const q2 = await runPlan(cluster.coord.base, { source: { dataset: 'groups' }, ops: [{ agg: ['count(*) as n'] }] });
      assert.equal(q2.query.state, 'succeeded', JSON.stringify(q2.query.error));
      const m = await scanMetrics(local);
      assert.ok(m.localTasks > 0 && m.remoteTasks === 0, JSON.stringify(m));
    } finally {
      await local.stop();
    }
  } finally {
    await cluster.stop();
  }
});

// The runner's config ID: a query freezes it.
async function activeConfig(base) {
  const q = await runPlan(base, TRIPS_GROUPBY);
  assert.equal(q.query.state, 'succeeded', JSON.stringify(q.query.error));
  return q.query.config_id;
}

test('the internal dataset endpoint: ranges, 416, path escapes, FIFOs, config IDs', async () => {
  const cluster = await startCluster({ nworkers: 1 });
  try {
    copyInputs(cluster.coord.dataDir);
    const id = await activeConfig(cluster.coord.base);
    const file = readFileSync(path.join(cluster.coord.dataDir, 'trips.csv'));
    const size = file.length;
    const get = (p, headers = {}) => call(cluster.coord.base, 'GET', `/v1/internal/datasets?path=${p}`, { headers: { 'framed-config-id': id, ...headers } });
    let r = await get('trips.csv', { range: 'bytes=10-19' });
    assert.equal(r.status, 206, r.text);
    assert.equal(r.text, file.subarray(10, 20).toString());
    assert.equal(r.headers.get('content-range'), `bytes 10-19/${size}`);
    assert.equal(r.headers.get('framed-config-id'), id);
    const etag = r.headers.get('etag');
    assert.match(etag, /^"[0-9a-f]+-[0-9a-f]+"$/);
    r = await get('trips.csv', { range: 'bytes=-5' });
    assert.equal(r.status, 206);
    assert.equal(r.text, file.subarray(size - 5).toString());
    r = await get('trips.csv', { range: `bytes=${size - 3}-` });
    assert.equal(r.status, 206);
    assert.equal(r.headers.get('content-range'), `bytes ${size - 3}-${size - 1}/${size}`);
    r = await get('trips.csv', { range: `bytes=0-${size * 10}` });
    assert.equal(r.status, 206, 'an end past the file is cut to it');
    assert.equal(r.text, file.toString());
    r = await get('trips.csv');
    assert.equal(r.status, 200, 'no Range: the whole file');
    assert.equal(r.text, file.toString());
    assert.equal(r.headers.get('accept-ranges'), 'bytes');
    for (const bad of [`bytes=${size}-`, `bytes=${size + 100}-${size + 200}`, 'bytes=-0', 'bytes=5-2', 'bytes=abc', 'bytes=0-1,5-6', 'bytes=--1']) {
      r = await get('trips.csv', { range: bad });
      assertProblem(r, 416, 'range-not-satisfiable');
      assert.equal(r.headers.get('content-range'), `bytes */${size}`, bad);
    }
    r = await get('trips.csv', { range: 'items=0-1' });
    assert.equal(r.status, 200, 'another range unit is ignored (RFC 9110 14.2)');
    r = await get('trips.csv', { range: 'bytes=0-3', 'if-range': '"0-0"' });
    assert.equal(r.status, 200, 'If-Range of another version: the whole file');
    r = await get('trips.csv', { range: 'bytes=0-3', 'if-range': etag });
    assert.equal(r.status, 206, 'If-Range of this version: the range');
    assertProblem(await get('trips.csv', { range: 'bytes=0-3', 'if-match': '"1-2"' }), 412, 'precondition-failed');
    assert.equal((await get('trips.csv', { range: 'bytes=0-3', 'if-match': etag })).status, 206);
    // paths
    const outside = path.join(cluster.coord.root, 'secret.txt');
    writeFileSync(outside, 'top secret');
    symlinkSync(outside, path.join(cluster.coord.dataDir, 'link.csv'));
    execFileSync('mkfifo', [path.join(cluster.coord.dataDir, 'fifo.csv')]);
    mkdirSync(path.join(cluster.coord.dataDir, 'sub'));
    copyFileSync(path.join(GOLDEN, 'inputs', 'groups.csv'), path.join(cluster.coord.dataDir, 'sub', 'g.csv'));
    assert.equal((await get('sub%2Fg.csv', { range: 'bytes=0-1' })).status, 206, 'a file in a subdirectory');
    assertProblem(await get('..%2Fsecret.txt'), 400, 'invalid-parameter');
    assertProblem(await get('sub%2F..%2F..%2Fsecret.txt'), 400, 'invalid-parameter');
    assertProblem(await get('link.csv'), 400, 'invalid-parameter');
    assertProblem(await get(encodeURIComponent(outside)), 400, 'invalid-parameter');
    assertProblem(await get('trips.csv%00.txt'), 400, 'invalid-parameter');
    assertProblem(await get('fifo.csv'), 404, 'dataset-not-found');
    assertProblem(await get('sub'), 404, 'dataset-not-found');
    assertProblem(await get('nope.csv'), 404, 'dataset-not-found');
    assertProblem(await get('framed.lock'), 400, 'invalid-parameter');
    assertProblem(await call(cluster.coord.base, 'GET', '/v1/internal/datasets'), 400, 'missing-config-id');
    assertProblem(await call(cluster.coord.base, 'GET', '/v1/internal/datasets?path=trips.csv'), 400, 'missing-config-id');
    assertProblem(await get('trips.csv', { 'framed-config-id': `sha256:${'0'.repeat(64)}` }), 409, 'config-mismatch');
    assertProblem(await get('trips.csv', { 'framed-config-id': 'sha256:nothex' }), 400, 'missing-config-id');
    // the worker reported where it read
    const m = await scanMetrics(cluster.workers[0]);
    assert.ok(m.remoteBytes > 0 && m.localTasks === 0, JSON.stringify(m));
    const reset = await call(cluster.coord.base, 'DELETE', '/v1/runner?force=true');
    assert.equal(reset.status, 200, reset.text);
    assertProblem(await get('trips.csv'), 409, 'config-mismatch');
  } finally {
    await cluster.stop();
  }
});

test('a worker checks the coordinator\'s bytes: another size or version fails the task with 409 dataset-changed', async () => {
  const cluster = await startCluster({ nworkers: 1 });
  try {
    copyInputs(cluster.coord.dataDir);
    const id = await activeConfig(cluster.coord.base);
    const text = 'k,v\na,1\nb,2\na,3\n';
    const file = path.join(cluster.coord.dataDir, 'kv.csv');
    writeFileSync(file, text);
    const st = statSync(file, { bigint: true });
    // mtime_ns does not fit a JavaScript number: the body is written by hand
    const task = (p, size, mtime) => `{"query_id":"q-rd","stage":0,"task":0,"attempt":0,"inputs":[],"spec":{"stage":0,"task":0,"core":null,"pipeline":[],"sink":null,"nbuckets":1,"input":{"kind":"file","path":"${p}","format":"csv","display":"kv","options":{"delimiter":",","header":true,"on_error_null":false,"hints":[]},"schema":[["k","string"],["v","int64"]],"columns":null,"range":[4,${text.length},2],"max_rows":0,"size":${size},"mtime_ns":${mtime}}}}`;
    const post = (body) => call(cluster.workers[0].base, 'POST', '/v1/tasks', {
      body, headers: { 'framed-config-id': id, 'content-type': 'application/json' },
    });
    let r = await post(task('kv.csv', st.size, st.mtimeNs));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.outputs[0].rows, 3);
    assert.deepEqual(r.body.scan, { source: 'remote', bytes: text.length - 4 });
    r = await post(task('kv.csv', st.size + 1n, st.mtimeNs));
    assertProblem(r, 409, 'dataset-changed');
    assert.match(r.body.detail, /kv\.csv changed on the coordinator/, 'the entity tag holds the size');
    r = await post(task('kv.csv', st.size, st.mtimeNs + 1n));
    assertProblem(r, 409, 'dataset-changed');
    assert.match(r.body.detail, /changed on the coordinator while the task read it/);
    assertProblem(await post(task('gone.csv', 10n, 1n)), 404, 'dataset-not-found');
    assertProblem(await post(task('../x.csv', 10n, 1n)), 400, 'invalid-task');
    assertProblem(await post(task('.hidden.csv', 10n, 1n)), 400, 'invalid-parameter'); // the coordinator refuses it
  } finally {
    await cluster.stop();
  }
});

function sign(secret, method, target, sender) {
  const ts = Math.floor(Date.now() / 1000);
  const nonce = randomBytes(16).toString('hex');
  const bodyHash = createHash('sha256').update('').digest('hex');
  const mac = createHmac('sha256', secret).update(`${method}\n${target}\n${bodyHash}\n${ts}\n${sender}\n${nonce}`).digest('hex');
  return { 'framed-sender': sender, 'framed-timestamp': String(ts), 'framed-nonce': nonce, 'framed-signature': `v1=${mac}` };
}

test('with a cluster secret: the golden plans again, signed range reads; unsigned reads are refused', async () => {
  const env = { FRAMED_CLUSTER_SECRET: 'correct horse battery staple' };
  const cluster = await startCluster({ env });
  const local = await startServer();
  try {
    copyInputs(cluster.coord.dataDir);
    copyInputs(local.dataDir);
    const compared = await golden(cluster, local);
    assert.ok(compared >= 20, `only ${compared} golden plans over datasets compared`);
    const id = await activeConfig(cluster.coord.base);
    const want = await runPlan(local.base, TRIPS_GROUPBY);
    const got = await runPlan(cluster.coord.base, TRIPS_GROUPBY);
    assert.deepEqual(canon(got.rows), canon(want.rows));
    const target = '/v1/internal/datasets?path=trips.csv';
    const h = { 'framed-config-id': id, range: 'bytes=0-1' };
    assertProblem(await call(cluster.coord.base, 'GET', target, { headers: h }), 401, 'unauthorized');
    assertProblem(await call(cluster.coord.base, 'GET', target, { headers: { ...h, ...sign('another secret', 'GET', target, 'test') } }), 401, 'unauthorized');
    const ok = await call(cluster.coord.base, 'GET', target, { headers: { ...h, ...sign(env.FRAMED_CLUSTER_SECRET, 'GET', target, 'test') } });
    assert.equal(ok.status, 206, ok.text);
    assert.equal(ok.text, 'id');
    let bytes = 0;
    for (const w of cluster.workers) {
      const m = await scanMetrics(w, sign(env.FRAMED_CLUSTER_SECRET, 'GET', '/metrics', 'test'));
      assert.equal(m.localTasks, 0);
      bytes += m.remoteBytes;
    }
    assert.ok(bytes > 0, 'the workers read remote bytes');
  } finally {
    await cluster.stop();
    await local.stop();
  }
});

// A proxy in front of the coordinator that passes every call through, and
// after hang() answers no range read: the worker's read waits there. hung
// resolves at the first range read it holds.
async function hangingProxy(coordPort) {
  let seen;
  let hanging = false;
  const hung = new Promise((res) => { seen = res; });
  const held = [];
  const server = http.createServer((req, res) => {
    if (hanging && req.url.startsWith('/v1/internal/datasets')) {
      held.push(res);
      seen();
      return; // accepted, never answered
    }
    const headers = { ...req.headers };
    delete headers.host;
    const up = http.request({ host: '127.0.0.1', port: coordPort, method: req.method, path: req.url, headers }, (ur) => {
      res.writeHead(ur.statusCode, ur.headers);
      ur.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    base: `http://127.0.0.1:${server.address().port}`, hung,
    hang() { hanging = true; },
    close() { for (const r of held) r.destroy(); server.closeAllConnections(); server.close(); },
  };
}

test('SIGTERM stops a worker whose range read the coordinator never answers', { timeout: 120000 }, async () => {
  const coord = await startServer({ args: ['--runner', 'remote'] });
  const proxy = await hangingProxy(coord.port);
  const root = tempRoot();
  let w;
  try {
    copyInputs(coord.dataDir);
    const dataDir = path.join(root, 'data');
    mkdirSync(dataDir, { recursive: true });
    w = await startWorker(proxy.base, { args: ['--threads', '2', '--data-dir', dataDir, '--data-source', 'remote'] });
    for (let i = 0; i < 100; i++) {
      const r = await call(coord.base, 'GET', '/v1/workers');
      if (r.body?.workers?.some((x) => x.state === 'active')) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    const id = await activeConfig(coord.base); // read through the proxy, still passing
    proxy.hang();
    const file = path.join(coord.dataDir, 'kv.csv');
    writeFileSync(file, 'k,v\na,1\nb,2\n');
    const st = statSync(file, { bigint: true });
    const body = `{"query_id":"q-hang","stage":0,"task":0,"attempt":0,"inputs":[],"spec":{"stage":0,"task":0,"core":null,"pipeline":[],"sink":null,"nbuckets":1,"input":{"kind":"file","path":"kv.csv","format":"csv","display":"kv","options":{"delimiter":",","header":true,"on_error_null":false,"hints":[]},"schema":[["k","string"],["v","int64"]],"columns":null,"range":[4,${st.size},2],"max_rows":0,"size":${st.size},"mtime_ns":${st.mtimeNs}}}}`;
    const task = call(w.base, 'POST', '/v1/tasks', { body, headers: { 'framed-config-id': id, 'content-type': 'application/json' } })
      .catch((e) => ({ status: 0, text: String(e) }));
    await proxy.hung; // the worker's read of kv.csv waits on the proxy now
    // Old code: the drain waits on the read (3 tries of 60 s): SIGKILLed at
    // the test's bound. Now the read gives up at once and the worker exits 0.
    let timer;
    const bound = new Promise((_, rej) => { timer = setTimeout(() => rej(new Error('the worker did not exit within 15 s of SIGTERM')), 15000); });
    await Promise.race([w.stop(), bound]).finally(() => clearTimeout(timer));
    const r = await task;
    assert.notEqual(r.status, 200, r.text); // the task failed (503) or its connection closed
  } finally {
    if (w && w.pid) try { process.kill(w.pid, 'SIGKILL'); } catch { /* exited */ }
    proxy.close();
    await coord.stop();
    rmSync(root, { recursive: true, force: true });
  }
});

test('a file cut short while a range of it is served: the connection ends at once, not after a stall', { timeout: 120000 }, async () => {
  const cluster = await startCluster({ nworkers: 1 });
  try {
    copyInputs(cluster.coord.dataDir);
    const id = await activeConfig(cluster.coord.base);
    const file = path.join(cluster.coord.dataDir, 'cut.csv');
    const size = 64 << 20; // far more than the socket buffers hold
    writeFileSync(file, Buffer.alloc(size, 'a'));
    const url = new URL(`${cluster.coord.base}/v1/internal/datasets?path=cut.csv`);
    let got = 0;
    let timer;
    const outcome = await new Promise((resolve, reject) => {
      timer = setTimeout(() => reject(new Error('the response neither ended nor failed within 15 s of the cut')), 60000);
      const req = http.get(url, { headers: { 'framed-config-id': id, range: `bytes=0-${size - 1}` } }, (res) => {
        assert.equal(res.statusCode, 206);
        let cut = false;
        res.on('data', (c) => {
          got += c.length;
          if (cut) return;
          cut = true;
          res.pause(); // the coordinator blocks on a full socket, mid-range
          setTimeout(() => {
            writeFileSync(file, 'k\n1\n'); // truncated (the same inode)
            clearTimeout(timer);
            timer = setTimeout(() => reject(new Error('the response neither ended nor failed within 15 s of the cut')), 15000);
            res.resume();
          }, 200);
        });
        res.on('end', () => resolve(res.complete ? 'complete' : 'cut'));
        res.on('aborted', () => resolve('cut'));
        res.on('error', () => resolve('cut'));
      });
      req.on('error', () => resolve('cut'));
    }).finally(() => clearTimeout(timer));
    assert.equal(outcome, 'cut');
    assert.ok(got < size, `${got} of ${size} bytes arrived`);
    // The coordinator still serves: the next read of the file answers.
    const r = await call(cluster.coord.base, 'GET', '/v1/internal/datasets?path=cut.csv', { headers: { 'framed-config-id': id, range: 'bytes=0-1' } });
    assert.equal(r.status, 206, r.text);
    assert.equal(r.text, 'k\n');
  } finally {
    await cluster.stop();
  }
});

test('a file swapped for a symlink out of the data dir between resolution and open is not served', { timeout: 120000 }, async () => {
  const cluster = await startCluster({ nworkers: 1 });
  const outside = tempRoot();
  let swapper;
  try {
    copyInputs(cluster.coord.dataDir);
    const id = await activeConfig(cluster.coord.base);
    const dir = cluster.coord.dataDir;
    writeFileSync(path.join(outside, 'secret.csv'), 'SECRET-OUTSIDE\n');
    writeFileSync(path.join(dir, 'real.csv'), 'inside-the-dir\n');
    writeFileSync(path.join(dir, 'swap.csv'), 'inside-the-dir\n');
    // swap.csv is a regular file and a symlink to the secret by turns, as fast as it goes
    const loop = `const fs = require('fs'); process.chdir(${JSON.stringify(dir)});
      for (;;) { fs.linkSync('real.csv', 't1'); fs.renameSync('t1', 'swap.csv');
                 fs.symlinkSync(${JSON.stringify(path.join(outside, 'secret.csv'))}, 't2'); fs.renameSync('t2', 'swap.csv'); }`;
    swapper = spawn(process.execPath, ['-e', loop], { stdio: 'ignore' });
    let served = 0;
    let leaked = 0;
    for (let i = 0; i < 3000; i++) {
      const r = await call(cluster.coord.base, 'GET', '/v1/internal/datasets?path=swap.csv', { headers: { 'framed-config-id': id, range: 'bytes=0-13' } });
      if (r.status === 206) {
        served++;
        if (r.text.startsWith('SECRET')) leaked++;
      } else {
        assert.ok([400, 404].includes(r.status), r.text); // outside the data dir, or not a regular file now
      }
    }
    assert.equal(leaked, 0, `${leaked} of ${served} answers held the file outside the data dir`);
    assert.ok(served > 0, 'some reads found the regular file');
  } finally {
    if (swapper) swapper.kill('SIGKILL');
    await cluster.stop();
    rmSync(outside, { recursive: true, force: true });
  }
});
