// cluster: a cluster of containers on host networking with distinct loopback
// ports: Redis (framed-redis, AOF on a volume), a coordinator with the remote
// runner and three workers (framed), all signed with one cluster secret. Only
// the coordinator has the data volume: workers read scan inputs from it over
// HTTP. FRAMED_CONTAINER_WORKER_DATA=1 mounts the data dir (read-only) on the
// workers too, to check this machinery where workers cannot read remotely.
// The containers are started by this test with podman run (podman-compose
// 1.0.3 puts host-network containers on a bridge network as well); they are
// the services of docker/compose.yaml with the same variables.
// Checks: the golden plans give the local runner's answers; a worker
// container killed mid-query does not change the answer; a Redis container
// restart loses no config (AOF, and the coordinator puts back what it holds);
// a runner reset has every worker drop the config.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { copyFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { call, startServer } from '../integration/lib.mjs';
import {
  assert, ensureImages, freePort, IMAGE, logs, podman, podmanStatus, PREFIX, REDIS_IMAGE, redisCli,
  removeContainers, removeDir, runContainer, sharedDir, SOURCE_DIR, waitHttp,
} from './lib.mjs';

const GOLDEN = path.join(SOURCE_DIR, 'tests', 'data', 'golden');
const SPREAD = { scan_tasks_max_size_bytes: 200, scan_tasks_min_size_bytes: 1, shuffle_partitions: 3, maintain_order: false };
const WORKER_DATA = process.env.FRAMED_CONTAINER_WORKER_DATA === '1';
const LEASE_MS = 6000; // renewed every 2 s: a Redis that lost the config gets it back quickly
const ready = ensureImages();
const canon = (rows) => rows.map((r) => JSON.stringify(r)).sort();

const cl = { names: [], dirs: [] };

let senders = 0;
function signed(method, target) { // a signed cluster call (the secret is shared)
  const ts = Math.floor(Date.now() / 1000);
  const sender = `container-test-${process.pid}-${senders++}`; // a new MAC each call: no replay
  const bodyHash = createHash('sha256').update('').digest('hex');
  const mac = createHmac('sha256', cl.secret).update(`${method}\n${target}\n${bodyHash}\n${ts}\n${sender}`).digest('hex');
  return { 'framed-sender': sender, 'framed-timestamp': String(ts), 'framed-signature': `v1=${mac}` };
}

async function workerInfo(w) {
  const r = await call(w.base, 'GET', '/v1/info', { headers: signed('GET', '/v1/info') });
  assert.equal(r.status, 200, r.text);
  return r.body;
}

// One worker's task and scan counters from /metrics.
async function workerCounters(w) {
  const r = await call(w.base, 'GET', '/metrics', { headers: signed('GET', '/metrics') });
  assert.equal(r.status, 200, r.text);
  const num = (re) => { const m = re.exec(r.text); assert.ok(m, `${w.name} /metrics has ${re}`); return Number(m[1]); };
  return {
    remoteScans: num(/^framed_worker_scan_tasks_total\{source="remote"\} (\d+)$/m),
    localScans: num(/^framed_worker_scan_tasks_total\{source="local"\} (\d+)$/m),
    rangeReads: num(/^framed_worker_range_reads_total (\d+)$/m),
    executions: num(/^framed_worker_task_executions_total (\d+)$/m),
  };
}

async function activeWorkers() {
  const r = await call(cl.base, 'GET', '/v1/workers');
  return r.status === 200 ? r.body.workers.filter((w) => w.state === 'active').length : 0;
}

async function startWorkerContainer(w) {
  const volumes = WORKER_DATA ? [`${cl.data}:/var/lib/framed/data:ro`] : [];
  await runContainer(w.name, IMAGE, {
    env: {
      FRAMED_LISTEN: '127.0.0.1', FRAMED_PORT: String(w.port), FRAMED_ADVERTISE_URL: w.base,
      FRAMED_COORDINATOR: cl.base, FRAMED_STORE: cl.store, FRAMED_CLUSTER_SECRET: cl.secret, FRAMED_THREADS: '2',
    },
    volumes, args: ['worker'],
  });
  await waitHttp(`${w.base}/livez`);
}

async function clusterLogs() {
  let s = '';
  for (const n of cl.names) s += `--- ${n}\n${await logs(n)}\n`;
  return s;
}

before(async () => {
  if (!ready) return;
  console.log(`# cluster of containers; workers ${WORKER_DATA ? 'WITH' : 'without'} the data volume`);
  cl.secret = randomBytes(32).toString('hex');
  cl.data = sharedDir('cdata');
  cl.state = sharedDir('cstate');
  cl.redisDir = sharedDir('credis');
  cl.dirs.push(cl.data, cl.state, cl.redisDir);
  cl.redisPort = await freePort();
  cl.store = `redis://127.0.0.1:${cl.redisPort}/0`;
  cl.redis = `${PREFIX}-c-redis`;
  cl.coord = `${PREFIX}-c-coordinator`;
  const port = await freePort();
  cl.base = `http://127.0.0.1:${port}`;
  cl.workers = [];
  for (let i = 1; i <= 3; i++) {
    const p = await freePort();
    cl.workers.push({ name: `${PREFIX}-c-worker-${i}`, port: p, base: `http://127.0.0.1:${p}` });
  }
  cl.names.push(cl.redis, cl.coord, ...cl.workers.map((w) => w.name));

  const t0 = Date.now();
  await runContainer(cl.redis, REDIS_IMAGE, { env: { REDIS_PORT: String(cl.redisPort) }, volumes: [`${cl.redisDir}:/data`], args: ['--bind', '127.0.0.1'] });
  for (let i = 0; i < 100 && await podmanStatus('exec', cl.redis, 'redis-cli', '-p', String(cl.redisPort), 'ping') !== 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  await runContainer(cl.coord, IMAGE, {
    env: {
      FRAMED_LISTEN: '127.0.0.1', FRAMED_PORT: String(port), FRAMED_STORE: cl.store,
      FRAMED_STORE_LEASE_MS: String(LEASE_MS), FRAMED_CLUSTER_SECRET: cl.secret,
    },
    volumes: [`${cl.data}:/var/lib/framed/data`, `${cl.state}:/var/lib/framed/state`],
    args: ['serve', '--runner', 'remote'],
  });
  await waitHttp(`${cl.base}/livez`);
  for (const w of cl.workers) await startWorkerContainer(w);
  for (let i = 0; i < 300 && await activeWorkers() < 3; i++) await new Promise((r) => setTimeout(r, 100));
  assert.equal(await activeWorkers(), 3, `three active workers:\n${await clusterLogs()}`);
  console.log(`# cluster up in ${Date.now() - t0} ms`);
  cl.local = await startServer();
  for (const f of readdirSync(path.join(GOLDEN, 'inputs'))) { // the coordinator's data volume only
    copyFileSync(path.join(GOLDEN, 'inputs', f), path.join(cl.data, f));
    copyFileSync(path.join(GOLDEN, 'inputs', f), path.join(cl.local.dataDir, f));
  }
});

after(async () => {
  if (!ready) return;
  if (cl.local) await cl.local.stop();
  await removeContainers(...cl.names);
  for (const d of cl.dirs) removeDir(d);
});

async function runPlan(base, plan) {
  const r = await call(base, 'POST', '/v1/queries?wait=120', { json: { plan } });
  assert.ok(r.status === 200 || r.status === 202, r.text);
  if (r.body.state !== 'succeeded') return { query: r.body, rows: null };
  const res = await call(base, 'GET', `/v1/queries/${r.body.id}/result`);
  return { query: r.body, rows: res.body.rows, columns: res.body.columns };
}

test('golden plans on the cluster of containers give the local runner\'s answers', { skip: !ready }, async () => {
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
  let scans = 0;
  for (const [key, group] of groups) {
    for (const base of [cl.base, cl.local.base]) {
      const r = await call(base, 'POST', '/v1/config', { json: JSON.parse(key) });
      assert.equal(r.status, 200, r.text);
    }
    for (const c of group) {
      const remote = await runPlan(cl.base, c.plan);
      const mine = await runPlan(cl.local.base, c.plan);
      assert.equal(remote.query.state, mine.query.state, `${c.name}: ${JSON.stringify(remote.query.error)}`);
      if (!mine.rows) continue;
      assert.equal(remote.query.task_config_ids.length, 1, `${c.name}: one config for every task`);
      assert.deepEqual(remote.columns, mine.columns, c.name);
      const ordered = c.expect?.ordered;
      assert.deepEqual(ordered ? remote.rows : canon(remote.rows), ordered ? mine.rows : canon(mine.rows), c.name);
      if (c.plan.source?.path || c.plan.source?.dataset) scans++;
      compared++;
    }
    for (const base of [cl.base, cl.local.base]) await call(base, 'DELETE', '/v1/runner');
  }
  assert.ok(compared > 100, `only ${compared} golden plans compared`);
  assert.ok(scans > 50, `only ${scans} plans scanned files`);
  // Without a data volume every scan task a worker ran read by range from the
  // coordinator (counters since the worker's start: no reset clears them).
  let remote = 0;
  let local = 0;
  let ranges = 0;
  for (const w of cl.workers) {
    const m = await workerCounters(w);
    if (!WORKER_DATA) assert.equal(m.localScans, 0, `${w.name} has no data volume: it read no file locally`);
    remote += m.remoteScans;
    local += m.localScans;
    ranges += m.rangeReads;
  }
  if (WORKER_DATA) {
    assert.ok(local > 0, 'the workers with the data volume served scan tasks from it');
  } else {
    assert.ok(remote > 0, 'the workers without the data served scan tasks (source="remote")');
    assert.ok(ranges > 0, 'they read by range from the coordinator');
  }
  console.log(`# ${compared} golden plans compared (${scans} scanning files); ${remote} remote scan tasks, ${ranges} range reads`);
});

test('Redis container restart: no config lost (AOF), the coordinator puts back what it holds', { skip: !ready }, async () => {
  await call(cl.base, 'DELETE', '/v1/runner?force=true'); // whatever an earlier test left
  let r = await call(cl.base, 'POST', '/v1/dataframes', { json: { source: { dataset: 'trips' }, ops: [{ where: 'fare > 10' }] } });
  assert.equal(r.status, 201, r.text);
  const id = r.body.config_id;
  const key = `framed:config:${id}`;
  assert.equal(await redisCli(cl.redis, cl.redisPort, 'EXISTS', key), '1');
  await podman('restart', '-t', '10', cl.redis);
  for (let i = 0; i < 100 && await podmanStatus('exec', cl.redis, 'redis-cli', '-p', String(cl.redisPort), 'ping') !== 0; i++) {
    await new Promise((res) => setTimeout(res, 100));
  }
  // The AOF in the volume holds the config: it is back before any renewal.
  const aof = readdirSync(path.join(cl.redisDir, 'appendonlydir')).map((f) => readFileSync(path.join(cl.redisDir, 'appendonlydir', f), 'latin1')).join('');
  assert.ok(aof.includes(key), 'the AOF holds the frozen config');
  assert.equal(await redisCli(cl.redis, cl.redisPort, 'EXISTS', key), '1', 'the config survived the restart');
  // Lost anyway (a flush): the coordinator's lease renewal puts it back.
  await redisCli(cl.redis, cl.redisPort, 'DEL', key);
  let back = '0';
  for (let i = 0; i < 100 && back !== '1'; i++) {
    await new Promise((res) => setTimeout(res, 100));
    back = await redisCli(cl.redis, cl.redisPort, 'EXISTS', key);
  }
  assert.equal(back, '1', `the coordinator put the config back within ${LEASE_MS} ms`);
  // Queries still run, every task under that config.
  const q = await runPlan(cl.base, { source: { dataset: 'trips' }, ops: [{ groupby: ['vendor'], agg: ['count(*) as n'] }] });
  assert.equal(q.query.state, 'succeeded', `${JSON.stringify(q.query)}\n${await clusterLogs()}`);
  assert.deepEqual(q.query.task_config_ids, [id]);
  cl.heldId = id;
});

test('runner reset: every worker drops the config, the store releases it', { skip: !ready }, async () => {
  const id = cl.heldId;
  assert.ok(id, 'the previous test froze a config');
  const held = [];
  for (const w of cl.workers) if ((await workerInfo(w)).config_ids.includes(id)) held.push(w.name);
  assert.ok(held.length > 0, 'some worker holds the config');
  const r = await call(cl.base, 'DELETE', '/v1/runner');
  assert.equal(r.status, 200, r.text);
  for (const w of cl.workers) assert.ok(!(await workerInfo(w)).config_ids.includes(id), `${w.name} dropped the config`);
  assert.equal(await redisCli(cl.redis, cl.redisPort, 'EXISTS', `framed:config:${id}`), '0', 'released from Redis');
});

test('a worker container killed mid-query: the query still gives the right answer', { skip: !ready }, async () => {
  let s = 'k,v\n';
  const expect = new Map();
  for (let i = 0; i < 1500000; i++) { s += `${i % 97},${i}\n`; expect.set(i % 97, (expect.get(i % 97) ?? 0) + i); }
  writeFileSync(path.join(cl.data, 'big.csv'), s);
  const want = canon([...expect.entries()].map(([k, v]) => [k, v]));
  await call(cl.base, 'DELETE', '/v1/runner?force=true'); // whatever an earlier test left
  let r = await call(cl.base, 'POST', '/v1/config', { json: { scan_tasks_max_size_bytes: 32768, scan_tasks_min_size_bytes: 1, shuffle_partitions: 6, maintain_order: false } });
  assert.equal(r.status, 200, r.text);
  const plan = { source: { dataset: 'big' }, ops: [{ groupby: ['k'], agg: ['sum(v) as s'] }] };
  const victim = cl.workers[1];
  // The kill must land mid-query: a result already on the victim when it
  // dies goes with it (results stay on the workers until read). The victim
  // is frozen first (SIGSTOP); a query past its last stage by then is let go
  // and another one tried. The signal goes straight to the container's
  // process (framed is its PID 1), not through `podman kill`, whose own
  // start takes longer than the whole query may.
  const victimPid = Number(await podman('inspect', '-f', '{{.State.Pid}}', victim.name));
  const signal = async (sig) => {
    try {
      if (!(victimPid > 1)) throw new Error('no pid'); // never 0: that is this test's own group
      process.kill(victimPid, `SIG${sig}`);
    } catch {
      await podman('kill', '-s', sig, victim.name); // another user's container
    }
  };
  let id, ran = 0, midQuery = false;
  for (let attempt = 0; attempt < 10 && !midQuery; attempt++) {
    r = await call(cl.base, 'POST', '/v1/queries', { json: { plan } });
    assert.equal(r.status, 202, r.text);
    id = r.body.id;
    for (let i = 0; i < 400; i++) { // until under way (the status alone: it is fast to ask)
      r = await call(cl.base, 'GET', `/v1/queries/${id}`);
      if (r.body.progress.tasks_done > 0 || r.body.state !== 'running') break;
      await new Promise((res) => setTimeout(res, 2));
    }
    await signal('STOP');
    const st = await call(cl.base, 'GET', `/v1/queries/${id}/stages`);
    ran = st.body.stages[0].tasks.filter((t) => t.worker_url === victim.base && t.state === 'ok').length;
    const stages = st.body.stages;
    midQuery = ran > 0 && st.body.state === 'running' && stages.length > 1 &&
      !stages[stages.length - 1].tasks.some((t) => t.worker_url === victim.base && t.state === 'ok');
    if (!midQuery) {
      console.log(`# try ${attempt}: ran ${ran}, stages ${st.status} ${st.body?.state}, ${stages?.length} stages, last on ${JSON.stringify(stages?.[stages.length - 1]?.tasks?.map((t) => t.worker_url))}`);
      await signal('CONT');
      for (let i = 0; i < 600; i++) {
        r = await call(cl.base, 'GET', `/v1/queries/${id}`);
        if (!['queued', 'running'].includes(r.body.state)) break;
        await new Promise((res) => setTimeout(res, 50));
      }
    }
  }
  assert.ok(midQuery, `${victim.name} ran scan tasks of a query and was stopped mid-query, in 10 tries`);
  await podman('kill', '-s', 'KILL', victim.name);
  console.log(`# ${victim.name} killed with the query ${r.body.state}, ${r.body.progress.tasks_done} tasks done`);
  for (let i = 0; i < 1200; i++) {
    r = await call(cl.base, 'GET', `/v1/queries/${id}`);
    if (!['queued', 'running'].includes(r.body.state)) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  assert.equal(r.body.state, 'succeeded', `${JSON.stringify(r.body)}\n${await clusterLogs()}`);
  const res = await call(cl.base, 'GET', `/v1/queries/${id}/result`);
  assert.equal(res.status, 200, `${res.text}\n${await clusterLogs()}`);
  assert.deepEqual(canon(res.body.rows), want);
  const again = await runPlan(cl.base, plan);
  assert.equal(again.query.state, 'succeeded', JSON.stringify(again.query));
  assert.deepEqual(canon(again.rows), want);
  await call(cl.base, 'DELETE', '/v1/runner');
});
