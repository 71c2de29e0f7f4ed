// faults_worker: faults between the coordinator and its workers. A worker
// that hangs (SIGSTOP) holding a dataframe's partitions: queries complete on
// the other worker, which is not blamed; when it wakes (SIGCONT) the
// coordinator tells it (and only it) to drop what it holds of the runner. Clock skew: requests signed with a
// timestamp within the allowed skew are served by a worker and a coordinator
// alike; beyond it, in either direction, a 401 that names the skew. A flood
// from a sender whose clock is ahead locks no in-sync sender out.
import assert from 'node:assert/strict';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { assertProblem, call, startServer, startWorker } from './lib.mjs';

const MAX_SKEW_S = 300; // FR_SIGN_MAX_SKEW_S, api/internal-protocol.md

// Polls fn until it returns something truthy; the deadline only bounds a hang.
async function waitFor(fn, what, timeoutMs = 60000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`waited in vain for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// The signature headers of api/internal-protocol.md, stamped skewS seconds
// off this machine's clock.
function signed(secret, method, target, body, skewS, sender = 'w-skewed') {
  const stamp = Math.floor(Date.now() / 1000) + skewS;
  const nonce = randomBytes(16).toString('hex');
  const bodyHash = createHash('sha256').update(body ?? '').digest('hex');
  const text = `${method}\n${target}\n${bodyHash}\n${stamp}\n${sender}\n${nonce}`;
  const mac = createHmac('sha256', secret).update(text).digest('hex');
  return {
    'framed-sender': sender, 'framed-timestamp': String(stamp), 'framed-nonce': nonce,
    'framed-signature': `v1=${mac}`,
  };
}

function bigCsv(dataDir, rows) {
  let s = 'k,v\n';
  for (let i = 0; i < rows; i++) s += `${i % 31},${i}\n`;
  writeFileSync(path.join(dataDir, 'big.csv'), s);
  const expect = new Map();
  for (let i = 0; i < rows; i++) expect.set(i % 31, (expect.get(i % 31) ?? 0) + i);
  return [...expect.entries()].map(([k, v]) => JSON.stringify([k, v])).sort();
}

const canon = (rows) => rows.map((r) => JSON.stringify(Array.isArray(r) ? r : Object.values(r))).sort();

// A worker's /v1/info (signed when it runs with a cluster secret).
async function workerInfo(w, secret) {
  const headers = secret ? signed(secret, 'GET', '/v1/info', '', 0, 'test') : {};
  const r = await call(w.base, 'GET', '/v1/info', { headers });
  assert.equal(r.status, 200, r.text);
  return r.body;
}

async function workersByUrl(coord) {
  const r = await call(coord.base, 'GET', '/v1/workers');
  return new Map(r.body.workers.map((w) => [w.url, w]));
}

// The hung worker holds half of a materialized dataframe's partitions. A
// query on the dataframe must not wait on it: every input fetch is bounded by
// the task's deadline, an input whose owner stopped beating is made again
// elsewhere by the task that made it, and the survivor (which timed out
// waiting on the victim) is neither blamed nor told to drop. Awake, the victim
// is told to drop the runner's config and partitions. (A worker hung past 60
// beats, forgotten by the registry, still owes its drop: test_registry.c.)
test('a worker that hangs holding a dataframe: queries complete without it; awake, only it drops', async () => {
  const coord = await startServer({ args: ['--runner', 'remote'] });
  const workers = [];
  let stopped = null;
  try {
    for (let i = 0; i < 2; i++) {
      workers.push(await startWorker(coord.base, { args: ['--threads', '2', '--data-dir', coord.dataDir] }));
    }
    await waitFor(async () => [...(await workersByUrl(coord)).values()].filter((w) => w.state === 'active').length === 2,
      'two active workers');
    const expect = bigCsv(coord.dataDir, 20000);
    const cfg = await call(coord.base, 'POST', '/v1/config', {
      json: { scan_tasks_max_size_bytes: 4096, scan_tasks_min_size_bytes: 1, task_timeout_ms: 2000 },
    });
    assert.equal(cfg.status, 200, cfg.text);
    let r = await call(coord.base, 'POST', '/v1/dataframes', { json: { source: { dataset: 'big' }, ops: [{ where: 'v >= 0' }] } });
    assert.equal(r.status, 201, r.text);
    const df = r.body.id;
    const configId = r.body.config_id;
    r = await call(coord.base, 'POST', '/v1/queries?wait=120', { json: { dataframe: df } });
    assert.equal(r.body.state, 'succeeded', r.text);
    const plan = { source: { dataframe: df }, ops: [{ groupby: ['k'], agg: ['sum(v) as s'] }] };
    // A second dataframe no query reads while the victim hangs: its answer
    // before the stop is the one expected after the victim dropped its share.
    r = await call(coord.base, 'POST', '/v1/dataframes', { json: { source: { dataset: 'big' }, ops: [{ where: 'v >= 5000' }] } });
    assert.equal(r.status, 201, r.text);
    const df2 = r.body.id;
    r = await call(coord.base, 'POST', '/v1/queries?wait=120', { json: { dataframe: df2 } });
    assert.equal(r.body.state, 'succeeded', r.text);
    const plan2 = { source: { dataframe: df2 }, ops: [{ groupby: ['k'], agg: ['sum(v) as s'] }] };
    r = await call(coord.base, 'POST', '/v1/queries?wait=120', { json: { plan: plan2 } });
    assert.equal(r.body.state, 'succeeded', r.text);
    const expect2 = canon((await call(coord.base, 'GET', `/v1/queries/${r.body.id}/result`)).body.rows);
    const [victim, survivor] = workers;
    const held = (await workerInfo(victim)).partitions;
    assert.ok(held > 0, 'the victim holds some of the dataframe');
    assert.ok((await workerInfo(survivor)).partitions > 0, 'the survivor holds the rest');

    // Stopped, it still accepts connections (the kernel does) and answers nothing.
    process.kill(victim.pid, 'SIGSTOP');
    stopped = victim;
    r = await call(coord.base, 'POST', '/v1/queries?wait=120', { json: { plan } });
    assert.equal(r.body.state, 'succeeded', r.text);
    let res = await call(coord.base, 'GET', `/v1/queries/${r.body.id}/result`);
    assert.deepEqual(canon(res.body.rows), expect);
    assert.notEqual((await workersByUrl(coord)).get(victim.base).state, 'active');
    assert.equal((await workersByUrl(coord)).get(survivor.base).state, 'active', 'the survivor is not blamed');
    // The dataframe now lives on the survivor: a second query needs no repair.
    r = await call(coord.base, 'POST', '/v1/queries?wait=120', { json: { plan } });
    assert.equal(r.body.state, 'succeeded', r.text);

    process.kill(victim.pid, 'SIGCONT');
    stopped = null;
    await waitFor(async () => (await workersByUrl(coord)).get(victim.base)?.state === 'active', 'the victim active again');
    const info = await waitFor(async () => {
      const i = await workerInfo(victim);
      return !i.config_ids.includes(configId) && i.partitions === 0 ? i : null;
    }, 'the woken worker to drop the runner\'s config and partitions');
    assert.deepEqual(info.config_ids, []);
    assert.ok(coord.stderr().includes(`worker ${victim.base} is back after hanging`), 'the coordinator logged it');
    assert.ok(!coord.stderr().includes(`worker ${survivor.base} is back after hanging`), 'the survivor was not told to drop');
    // The survivor keeps its config and the dataframe; the cluster still works.
    assert.ok((await workerInfo(survivor)).config_ids.includes(configId));
    r = await call(coord.base, 'POST', '/v1/queries?wait=120', { json: { plan } });
    assert.equal(r.body.state, 'succeeded', r.text);
    res = await call(coord.base, 'GET', `/v1/queries/${r.body.id}/result`);
    assert.deepEqual(canon(res.body.rows), expect);
    // The second dataframe's share on the victim went with its drop: made again.
    r = await call(coord.base, 'POST', '/v1/queries?wait=120', { json: { plan: plan2 } });
    assert.equal(r.body.state, 'succeeded', r.text);
    res = await call(coord.base, 'GET', `/v1/queries/${r.body.id}/result`);
    assert.deepEqual(canon(res.body.rows), expect2);
  } finally {
    if (stopped) process.kill(stopped.pid, 'SIGCONT');
    for (const w of workers) await w.stop();
    await coord.stop();
  }
});

// A TCP relay to 127.0.0.1:target that can cut the link as a network
// partition does: while cut, connections are taken and nothing is forwarded
// (calls time out, nothing reaches the other side, unlike a SIGSTOPped
// process whose kernel keeps the request for it to read when it wakes).
async function relay() {
  const live = new Set();
  let cut = false;
  const track = (sock) => { live.add(sock); sock.on('close', () => live.delete(sock)); sock.on('error', () => {}); };
  const srv = net.createServer((c) => {
    track(c);
    if (cut) return; // held, never forwarded
    const u = net.connect(r.target, '127.0.0.1');
    track(u);
    u.on('close', () => c.destroy());
    c.on('close', () => u.destroy());
    c.pipe(u);
    u.pipe(c);
  });
  await new Promise((res) => srv.listen(0, '127.0.0.1', res));
  const dropAll = () => { for (const sock of live) sock.destroy(); };
  const r = {
    target: 0,
    base: `http://127.0.0.1:${srv.address().port}`,
    cut() { cut = true; dropAll(); },
    heal() { cut = false; dropAll(); },
    close() { dropAll(); return new Promise((res) => srv.close(res)); },
  };
  return r;
}

// A worker cut off by a network partition through a runner's reset misses
// the release (DELETE /v1/configs/{id} times out and never reaches it): it
// owes the drop of that config. While it was cut, a query under that runner
// gave up its partitions (a drop owed too). When the link heals, under the
// next runner (another config), the answer to its heartbeat tells it to drop
// the released config and its partitions; the live runner's config and data
// are untouched. Before, the release was only logged (the old config and its
// partitions stayed on the worker for good), and the owed drop was settled by
// telling it to drop the live runner's config instead.
test('a worker cut off through a reset drops the released config when back; the next runner keeps its own', async () => {
  // signed (a cluster secret): the drop comes in a heartbeat answer the worker verifies
  const env = { FRAMED_CLUSTER_SECRET: randomBytes(24).toString('hex') };
  const coord = await startServer({ args: ['--runner', 'remote'], env });
  const workers = [];
  const toWorker = await relay(); // the coordinator and the survivor reach the victim here
  const toCoord = await relay(); // and the victim reaches the coordinator here
  toCoord.target = Number(new URL(coord.base).port);
  try {
    workers.push(await startWorker(toCoord.base, {
      args: ['--threads', '2', '--data-dir', coord.dataDir, '--advertise-url', toWorker.base], env,
    }));
    toWorker.target = workers[0].port;
    workers.push(await startWorker(coord.base, { args: ['--threads', '2', '--data-dir', coord.dataDir], env }));
    const infoOf = (w) => workerInfo(w, env.FRAMED_CLUSTER_SECRET);
    await waitFor(async () => [...(await workersByUrl(coord)).values()].filter((w) => w.state === 'active').length === 2,
      'two active workers');
    const expect = bigCsv(coord.dataDir, 20000);
    const materialize = async (taskTimeoutMs) => {
      const cfg = await call(coord.base, 'POST', '/v1/config', {
        json: { scan_tasks_max_size_bytes: 4096, scan_tasks_min_size_bytes: 1, task_timeout_ms: taskTimeoutMs },
      });
      assert.equal(cfg.status, 200, cfg.text);
      let r = await call(coord.base, 'POST', '/v1/dataframes', { json: { source: { dataset: 'big' }, ops: [{ where: 'v >= 0' }] } });
      assert.equal(r.status, 201, r.text);
      const df = { id: r.body.id, configId: r.body.config_id };
      r = await call(coord.base, 'POST', '/v1/queries?wait=120', { json: { dataframe: df.id } });
      assert.equal(r.body.state, 'succeeded', r.text);
      return df;
    };
    const grouped = async (df) => {
      const r = await call(coord.base, 'POST', '/v1/queries?wait=120', {
        json: { plan: { source: { dataframe: df.id }, ops: [{ groupby: ['k'], agg: ['sum(v) as s'] }] } },
      });
      assert.equal(r.body.state, 'succeeded', r.text);
      return canon((await call(coord.base, 'GET', `/v1/queries/${r.body.id}/result`)).body.rows);
    };
    const a = await materialize(2000);
    const [victim, survivor] = workers;
    let info = await infoOf(victim);
    assert.ok(info.partitions > 0 && info.config_ids.includes(a.configId), JSON.stringify(info));

    toWorker.cut();
    toCoord.cut();
    await waitFor(async () => (await workersByUrl(coord)).get(toWorker.base)?.state !== 'active', 'the victim suspect');
    assert.deepEqual(await grouped(a), expect); // its share of A is given up: a drop of A owed
    let r = await call(coord.base, 'DELETE', '/v1/runner');
    assert.equal(r.status, 200, r.text);
    // its release timed out, or (a slow machine) it was gone already and not called
    assert.ok(coord.stderr().includes(`worker ${toWorker.base} did not confirm dropping config ${a.configId}`)
      || coord.stderr().includes(`gone workers are not told to drop config ${a.configId} now`),
    'the release did not reach the cut-off worker');
    assert.equal((await infoOf(survivor)).config_ids.includes(a.configId), false, 'the survivor dropped A');
    const b = await materialize(2500);
    assert.notEqual(b.configId, a.configId);
    assert.deepEqual(await grouped(b), expect);
    info = await infoOf(victim);
    assert.ok(info.config_ids.includes(a.configId) && info.partitions > 0, 'nothing reached the victim');

    toWorker.heal();
    toCoord.heal();
    info = await waitFor(async () => {
      const i = await infoOf(victim);
      return !i.config_ids.includes(a.configId) && i.partitions === 0 ? i : null;
    }, 'the healed worker to drop the released config and its partitions', 20000);
    assert.ok(coord.stderr().includes(`config ${a.configId}, released while it was away`), 'the coordinator logged it');
    assert.ok(victim.stderr().includes(`the coordinator released config ${a.configId} while this worker was away`),
      'the worker logged it');
    assert.ok(!victim.stderr().includes('not signed for this request'), 'the answers were signed');
    // Runner B's config and data stay where they are, and its answers hold.
    info = await infoOf(survivor);
    assert.ok(info.config_ids.includes(b.configId) && info.partitions > 0, JSON.stringify(info));
    assert.ok(!coord.stderr().includes(`drops config ${b.configId}`), 'nobody was told to drop B');
    assert.deepEqual(await grouped(b), expect);
  } finally {
    for (const w of workers) await w.stop();
    await coord.stop();
    await toWorker.close();
    await toCoord.close();
  }
});

test('clock skew within the allowed age works; beyond it, a 401 that names the skew', async () => {
  const secret = randomBytes(24).toString('hex');
  const env = { FRAMED_CLUSTER_SECRET: secret };
  const coord = await startServer({ args: ['--runner', 'remote'], env });
  const worker = await startWorker(coord.base, { env });
  try {
    const within = MAX_SKEW_S - 60;
    const beyond = MAX_SKEW_S + 60;
    for (const skew of [within, -within]) {
      const r = await call(worker.base, 'GET', '/v1/info', { headers: signed(secret, 'GET', '/v1/info', '', skew) });
      assert.equal(r.status, 200, `a worker takes a request ${skew} s off: ${r.text}`);
      const announce = JSON.stringify({ id: `w-skew${skew < 0 ? 'm' : 'p'}`, url: 'http://127.0.0.1:9', threads: 1, running_tasks: 0, config_ids: [] });
      const a = await call(coord.base, 'POST', '/v1/workers', {
        body: announce, headers: { 'content-type': 'application/json', ...signed(secret, 'POST', '/v1/workers', announce, skew) },
      });
      assert.equal(a.status, 200, `a coordinator takes an announce ${skew} s off: ${a.text}`);
    }
    for (const [skew, word] of [[beyond, 'ahead of'], [-beyond, 'behind']]) {
      const r = await call(worker.base, 'GET', '/v1/info', { headers: signed(secret, 'GET', '/v1/info', '', skew) });
      assertProblem(r, 401, 'unauthorized');
      assert.match(r.body.detail, /clock skew/);
      assert.match(r.body.detail, new RegExp(`${word} this clock`));
      assert.match(r.body.detail, new RegExp(`at most ${MAX_SKEW_S} s`));
      const announce = JSON.stringify({ id: 'w-far', url: 'http://127.0.0.1:9', threads: 1, running_tasks: 0, config_ids: [] });
      const a = await call(coord.base, 'POST', '/v1/workers', {
        body: announce, headers: { 'content-type': 'application/json', ...signed(secret, 'POST', '/v1/workers', announce, skew) },
      });
      assertProblem(a, 401, 'unauthorized');
      assert.match(a.body.detail, /clock skew/);
    }
    // More signed requests from the skewed sender than the old 16384-slot
    // replay ring held lock no in-sync sender out (they once got 401 "older
    // than the replay cache remembers" until the real clock caught up).
    const OLD_RING = 16384;
    let sent = 0;
    const flood = async () => {
      while (sent < OLD_RING + 200) {
        sent++;
        const r = await call(worker.base, 'GET', '/v1/info', { headers: signed(secret, 'GET', '/v1/info', '', within) });
        assert.equal(r.status, 200, `a skewed request is served: ${r.text}`);
      }
    };
    await Promise.all(Array.from({ length: 16 }, flood));
    const fresh = signed(secret, 'GET', '/v1/info', '', 0, 'w-in-sync');
    let r = await call(worker.base, 'GET', '/v1/info', { headers: fresh });
    assert.equal(r.status, 200, `an in-sync request after the skewed flood: ${r.text}`);
    r = await call(worker.base, 'GET', '/v1/info', { headers: fresh });
    assertProblem(r, 401, 'unauthorized');
    assert.match(r.body.detail, /replay/, 'the same request again is still a replay');
    // The real worker, its clock in sync, is part of the cluster all along.
    assertProblem(await call(worker.base, 'GET', '/v1/info'), 401, 'unauthorized');
    const listed = await waitFor(async () => (await workersByUrl(coord)).get(worker.base), 'the worker listed');
    assert.equal(listed.state, 'active');
  } finally {
    await worker.stop();
    await coord.stop();
  }
});
