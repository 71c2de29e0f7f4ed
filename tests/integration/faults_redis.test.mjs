// faults_redis: a coordinator with --store redis:// under faults, each test
// with a redis-server of its own on a free loopback port. kill -9 between a
// config POST and the freeze keeps the pending config; kill -9 with a runner
// leaves a hold whose lease lapses (short --store-lease-ms), so Redis drops
// the entry by itself, and a new freeze and reset go 1 -> 0; Redis stopped
// and restarted mid-run answers 503 store-unavailable with Retry-After while
// it is down, and afterwards the runner has put its config back (without
// persistence) and nothing was lost; with no runner, /readyz is 503
// store-unavailable while Redis is down. Every process is stopped by its PID,
// also when an assertion fails.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { SAMPLE_PLAN, assertProblem, call, startServer, startWorker, tempRoot } from './lib.mjs';

const LEASE_MS = 900;
const DEADLINE_MS = 20000;

async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

function redisCli(port, ...args) {
  return execFileSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
}

// A redis-server on port (appendonly in dir when given, else no persistence).
async function startRedis(port, dir) {
  const persist = dir ? ['--appendonly', 'yes', '--dir', dir] : ['--appendonly', 'no'];
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...persist],
    { stdio: 'ignore' });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    try { if (redisCli(port, 'PING') === 'PONG') break; } catch { /* not up yet */ }
    if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not start`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    port, pid: child.pid, url: `redis://127.0.0.1:${port}/0`,
    async stop() { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); await exited; },
  };
}

async function kill9(srv) {
  process.kill(srv.pid, 'SIGKILL');
  const { signal } = await srv.exited;
  assert.equal(signal, 'SIGKILL');
}

// Stops what still runs, by PID (servers: SIGTERM and a clean exit; Redis: kill).
function cleanup(t, servers, redises, root) {
  t.after(async () => {
    for (const srv of servers) {
      let alive = true;
      try { process.kill(srv.pid, 0); } catch { alive = false; }
      if (alive) await srv.stop();
    }
    for (const r of redises) await r.stop();
    rmSync(root, { recursive: true, force: true });
  });
}

// Polls fn until it returns true; fails at the deadline with what.
async function until(fn, what) {
  const deadline = Date.now() + DEADLINE_MS;
  while (!(await fn())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function serve(root, redis, extra = {}) {
  return startServer({ root, args: ['--store', redis.url], env: { FRAMED_STORE_LEASE_MS: String(LEASE_MS) }, ...extra });
}

const sha = (text) => `sha256:${createHash('sha256').update(text).digest('hex')}`;

test('redis: kill -9 between a config POST and the freeze keeps the pending config', async (t) => {
  const root = tempRoot();
  const servers = [], redises = [];
  cleanup(t, servers, redises, root);
  const redis = await startRedis(await freePort());
  redises.push(redis);
  const srv = await serve(root, redis);
  servers.push(srv);
  assert.equal((await call(srv.base, 'POST', '/v1/config', { json: { shuffle_partitions: 14 } })).status, 200);
  await kill9(srv);
  const again = await serve(root, redis);
  servers.push(again);
  const after = await call(again.base, 'GET', '/v1/config');
  assert.equal(after.body.values.shuffle_partitions, 14);
  const df = await call(again.base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN });
  assert.equal(df.status, 201, df.text);
  assert.equal(JSON.parse(redisCli(redis.port, 'GET', `framed:config:${df.body.config_id}`)).shuffle_partitions, 14);
});

test('redis: kill -9 with a runner: its lease lapses and Redis drops the entry', async (t) => {
  const root = tempRoot();
  const servers = [], redises = [];
  cleanup(t, servers, redises, root);
  const redis = await startRedis(await freePort());
  redises.push(redis);
  const srv = await serve(root, redis);
  servers.push(srv);
  let r = await call(srv.base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN });
  assert.equal(r.status, 201, r.text);
  const id = r.body.config_id;
  const key = `framed:config:${id}`;
  assert.equal(redisCli(redis.port, 'ZCARD', `${key}:holds`), '1');
  assert.match(redisCli(redis.port, 'ZRANGE', `${key}:holds`, '0', '-1'), /^runner-[0-9a-f]{16}$/);
  // The live coordinator renews: the key's time to live goes back up.
  const first = Number(redisCli(redis.port, 'PTTL', key));
  assert.ok(first > 0 && first <= LEASE_MS, `PTTL ${first}`);
  let seen = first;
  await until(() => {
    const now = Number(redisCli(redis.port, 'PTTL', key));
    const renewed = now > seen;
    seen = Math.min(seen, now);
    return renewed;
  }, 'the lease is renewed');
  await kill9(srv);
  // Nobody renews now: Redis removes the bytes and the holds by itself.
  await until(() => redisCli(redis.port, 'EXISTS', key, `${key}:holds`) === '0', 'the dead lease lapses');
  const again = await serve(root, redis);
  servers.push(again);
  assert.equal((await call(again.base, 'GET', `/v1/configs/${id}`)).status, 404);
  r = await call(again.base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.config_id, id);
  assert.equal(redisCli(redis.port, 'ZCARD', `${key}:holds`), '1');
  r = await call(again.base, 'DELETE', '/v1/runner');
  assert.equal(r.body.config_released, true);
  assert.equal(redisCli(redis.port, 'EXISTS', key, `${key}:holds`), '0');
});

test('redis: tampered bytes are never served; the runner\'s bytes are, and Redis is repaired', async (t) => {
  const root = tempRoot();
  const servers = [], redises = [];
  cleanup(t, servers, redises, root);
  const redis = await startRedis(await freePort());
  redises.push(redis);
  const srv = await serve(root, redis);
  servers.push(srv);
  let r = await call(srv.base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN });
  const id = r.body.config_id;
  const key = `framed:config:${id}`;
  const good = redisCli(redis.port, 'GET', key);
  redisCli(redis.port, 'SET', key, good.replace('"shuffle_partitions":8', '"shuffle_partitions":9'), 'KEEPTTL');
  r = await call(srv.base, 'GET', `/v1/configs/${id}`);
  assert.equal(r.status, 200);
  assert.equal(sha(r.text), id, 'the body hashes to the ID');
  assert.equal(r.headers.get('etag'), `"${id}"`);
  assert.equal(redisCli(redis.port, 'GET', key), good, 'the store was repaired');
  assert.ok(srv.logLines().some((l) => l.level === 'error' && /CORRUPTION/.test(l.msg) && l.msg.includes(id)));
  const m = await call(srv.base, 'GET', '/metrics');
  assert.match(m.text, /\nframed_store_corruptions_total 1\n/);
  const ready = await call(srv.base, 'GET', '/readyz');
  assert.equal(ready.status, 200);
  assert.match(ready.text, /^ready\nstore: 1 corrupt entry found/);
  // An ID no runner here holds, with bytes that do not hash to it: 500.
  const other = sha('{"other":true}');
  redisCli(redis.port, 'SET', `framed:config:${other}`, '{"other":false}');
  r = await call(srv.base, 'GET', `/v1/configs/${other}`);
  assertProblem(r, 500, 'config-integrity');
  assert.ok(!r.text.includes('"other":false'));
});

test('redis: stopped and restarted mid-run: 503 store-unavailable, then recovery with nothing lost', async (t) => {
  const root = tempRoot();
  const servers = [], redises = [];
  cleanup(t, servers, redises, root);
  const port = await freePort();
  let redis = await startRedis(port); // no persistence: the runner must put its config back
  redises.push(redis);
  const srv = await serve(root, redis);
  servers.push(srv);
  assert.equal((await call(srv.base, 'POST', '/v1/config', { json: { shuffle_partitions: 11 } })).status, 200);
  let r = await call(srv.base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN });
  assert.equal(r.status, 201, r.text);
  const id = r.body.config_id;
  const key = `framed:config:${id}`;
  await redis.stop();

  // Down: what needs the store gets 503 with Retry-After; the runner's own config still answers.
  r = await call(srv.base, 'GET', `/v1/configs/${sha('{"x":1}')}`);
  assertProblem(r, 503, 'store-unavailable');
  assert.ok(Number(r.headers.get('retry-after')) > 0);
  r = await call(srv.base, 'GET', `/v1/configs/${id}`);
  assert.equal(r.status, 200);
  assert.equal(sha(r.text), id);
  r = await call(srv.base, 'POST', '/v1/queries?wait=30', { json: { plan: SAMPLE_PLAN } });
  assert.equal(r.body.state, 'succeeded', r.text);
  const ready = await call(srv.base, 'GET', '/readyz');
  assert.equal(ready.status, 200, 'a runner whose config is in memory still serves');
  assert.match(ready.text, /store: unavailable/);

  // Back, empty: the renewal puts the config back.
  redis = await startRedis(port);
  redises.push(redis);
  await until(() => redisCli(port, 'EXISTS', key) === '1', 'the runner re-puts its config');
  assert.equal(sha(redisCli(port, 'GET', key)), id);
  assert.equal(JSON.parse(redisCli(port, 'GET', key)).shuffle_partitions, 11);
  assert.equal(redisCli(port, 'ZCARD', `${key}:holds`), '1');
  const m = await call(srv.base, 'GET', '/metrics');
  assert.match(m.text, /\nframed_store_restores_total [1-9]/);
  assert.match(m.text, /\nframed_store_up 1\n/);
  r = await call(srv.base, 'DELETE', '/v1/runner');
  assert.equal(r.body.config_released, true);
  assert.equal(redisCli(port, 'EXISTS', key), '0');
});

test('redis: down with no runner: /readyz is 503 store-unavailable (no freeze could work); back, 200', async (t) => {
  const root = tempRoot();
  const servers = [], redises = [];
  cleanup(t, servers, redises, root);
  const port = await freePort();
  let redis = await startRedis(port);
  redises.push(redis);
  const srv = await serve(root, redis);
  servers.push(srv);
  assert.equal((await call(srv.base, 'GET', '/readyz')).status, 200);
  await redis.stop();
  let r = await call(srv.base, 'GET', '/readyz');
  assertProblem(r, 503, 'store-unavailable');
  assert.ok(Number(r.headers.get('retry-after')) > 0);
  assert.match(r.body.detail, /config store cannot be reached/);
  assert.match(r.body.detail, /Redis/);
  // what readyz promises: the freeze fails the same way
  assertProblem(await call(srv.base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN }), 503, 'store-unavailable');
  redis = await startRedis(port);
  redises.push(redis);
  r = await call(srv.base, 'GET', '/readyz');
  assert.equal(r.status, 200, r.text);
  assert.equal(r.text, 'ready\n');
  assert.equal((await call(srv.base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN })).status, 201);
});

test('redis: down at the freeze: 503 store-unavailable with Retry-After; after a restart (AOF) the freeze works', async (t) => {
  const root = tempRoot();
  const servers = [], redises = [];
  cleanup(t, servers, redises, root);
  const port = await freePort();
  const dir = path.join(root, 'redis');
  execFileSync('mkdir', ['-p', dir]);
  let redis = await startRedis(port, dir);
  redises.push(redis);
  const srv = await serve(root, redis);
  servers.push(srv);
  assert.equal((await call(srv.base, 'POST', '/v1/config', { json: { shuffle_partitions: 21 } })).status, 200);
  let r = await call(srv.base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN });
  const id = r.body.config_id;
  // A reset while Redis is down says the release failed, and why.
  await redis.stop();
  r = await call(srv.base, 'DELETE', '/v1/runner');
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.config_released, false);
  assert.ok(srv.logLines().some((l) => /releasing config .* failed: .*Redis/.test(l.msg)));
  r = await call(srv.base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN });
  assertProblem(r, 503, 'store-unavailable');
  assert.ok(Number(r.headers.get('retry-after')) > 0);
  assert.equal((await call(srv.base, 'GET', '/v1/runner')).body.state, 'none');

  redis = await startRedis(port, dir);
  redises.push(redis);
  r = await call(srv.base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.config_id, id, 'the same config: nothing was lost');
  assert.equal(JSON.parse(redisCli(port, 'GET', `framed:config:${id}`)).shuffle_partitions, 21);
  // The hold the failed release left lapses; the live runner's stays.
  await until(() => redisCli(port, 'ZCARD', `framed:config:${id}:holds`) === '1', 'the stale hold lapses');
  r = await call(srv.base, 'DELETE', '/v1/runner');
  assert.equal(r.body.config_released, true);
  assert.equal(redisCli(port, 'EXISTS', `framed:config:${id}`), '0');
});

test('redis: a cluster survives a Redis restart that lost the key: the coordinator puts it back', async (t) => {
  const root = tempRoot();
  const servers = [], redises = [];
  cleanup(t, servers, redises, root);
  const port = await freePort();
  let redis = await startRedis(port); // no persistence
  redises.push(redis);
  const coord = await serve(root, redis, { args: ['--store', redis.url, '--runner', 'remote'] });
  servers.push(coord);
  const worker = await startWorker(coord.base, { args: ['--threads', '1', '--data-dir', coord.dataDir, '--store', redis.url] });
  servers.push(worker);
  // A worker is ready before its first announce lands: a query before it would
  // rightly get 503 no-workers.
  await until(async () => (await call(coord.base, 'GET', '/v1/workers')).body.workers
    .some((w) => w.state === 'active'), 'the worker announced');
  let r = await call(coord.base, 'POST', '/v1/queries?wait=30', { json: { plan: SAMPLE_PLAN } });
  assert.equal(r.body.state, 'succeeded', r.text);
  const id = r.body.config_id;
  await redis.stop();
  redis = await startRedis(port); // empty
  redises.push(redis);
  // The worker forgets the config, so it must resolve it from Redis again.
  r = await call(worker.base, 'DELETE', `/v1/configs/${id}`, { headers: { 'framed-config-id': id } });
  assert.equal(r.status, 200, r.text);
  await until(() => redisCli(port, 'EXISTS', `framed:config:${id}`) === '1', 'the coordinator re-puts its config');
  r = await call(coord.base, 'POST', '/v1/queries?wait=30', { json: { plan: SAMPLE_PLAN } });
  assert.equal(r.body.state, 'succeeded', r.text);
  assert.deepEqual(r.body.task_config_ids, [id]);
});

// A freeze's store hold hangs (Redis stopped with SIGSTOP): the context is
// "freezing", not locked, so other requests answer meanwhile; a config change
// after the snapshot gets 409 (I2); on SIGCONT the one freeze completes.
test('redis: a freeze hung on a stopped Redis stalls no other request; SIGCONT completes it', async (t) => {
  const root = tempRoot();
  const servers = [], redises = [];
  cleanup(t, servers, redises, root);
  const redis = await startRedis(await freePort());
  redises.push(redis);
  let stopped = false;
  t.after(() => { if (stopped) process.kill(redis.pid, 'SIGCONT'); });
  const srv = await serve(root, redis);
  servers.push(srv);
  assert.equal((await call(srv.base, 'POST', '/v1/config', { json: { shuffle_partitions: 12 } })).status, 200);
  process.kill(redis.pid, 'SIGSTOP');
  stopped = true;
  let settled = false;
  const freeze = call(srv.base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN })
    .finally(() => { settled = true; });
  // GET /v1/config answers while the freeze is pending and shows the snapshot.
  let frozen = null;
  await until(async () => {
    const c = await call(srv.base, 'GET', '/v1/config');
    assert.equal(c.status, 200, c.text);
    assert.equal(settled, false, 'the freeze ended before GET /v1/config showed it under way');
    if (c.body.locked) frozen = c.body;
    return frozen !== null;
  }, 'GET /v1/config shows the freeze under way');
  assert.equal(frozen.values.shuffle_partitions, 12);
  assert.match(frozen.config_id, /^sha256:[0-9a-f]{64}$/);
  const runner = await call(srv.base, 'GET', '/v1/runner');
  assert.equal(runner.status, 200, runner.text);
  assert.equal(runner.body.state, 'none');
  assert.equal((await call(srv.base, 'GET', '/livez')).status, 200);
  assert.equal((await call(srv.base, 'GET', '/metrics')).status, 200);
  const late = await call(srv.base, 'POST', '/v1/config', { json: { shuffle_partitions: 13 } });
  assertProblem(late, 409, 'config-locked');
  // A second first request waits for the same freeze.
  const second = call(srv.base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN });
  assert.equal(settled, false, 'every call above answered while the freeze was pending');
  process.kill(redis.pid, 'SIGCONT');
  stopped = false;
  const [a, b] = [await freeze, await second];
  assert.equal(a.status, 201, a.text);
  assert.equal(b.status, 201, b.text);
  assert.equal(a.body.config_id, frozen.config_id);
  assert.equal(b.body.config_id, frozen.config_id);
  const after = await call(srv.base, 'GET', '/v1/runner');
  assert.equal(after.body.state, 'active');
  assert.equal(after.body.config_id, frozen.config_id);
  assert.equal(redisCli(redis.port, 'ZCARD', `framed:config:${frozen.config_id}:holds`), '1', 'one runner, one hold');
  assert.equal(JSON.parse(redisCli(redis.port, 'GET', `framed:config:${frozen.config_id}`)).shuffle_partitions, 12);
});

test('redis: a freeze that fails on a hung Redis returns to setup and fails its waiters the same way', async (t) => {
  const root = tempRoot();
  const servers = [], redises = [];
  cleanup(t, servers, redises, root);
  const redis = await startRedis(await freePort());
  redises.push(redis);
  let stopped = false;
  t.after(() => { if (stopped) process.kill(redis.pid, 'SIGCONT'); });
  const srv = await serve(root, redis);
  servers.push(srv);
  process.kill(redis.pid, 'SIGSTOP');
  stopped = true;
  const first = call(srv.base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN });
  await until(async () => (await call(srv.base, 'GET', '/v1/config')).body.locked === true, 'the freeze is under way');
  const second = call(srv.base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN });
  // The store's command timeout ends the hold: both fail, nothing is frozen.
  for (const r of [await first, await second]) {
    assertProblem(r, 503, 'store-unavailable');
    assert.ok(Number(r.headers.get('retry-after')) > 0);
  }
  process.kill(redis.pid, 'SIGCONT');
  stopped = false;
  const c = await call(srv.base, 'GET', '/v1/config');
  assert.equal(c.body.locked, false);
  assert.equal((await call(srv.base, 'GET', '/v1/runner')).body.state, 'none');
  assert.equal((await call(srv.base, 'POST', '/v1/config', { json: { shuffle_partitions: 15 } })).status, 200);
  const r = await call(srv.base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN });
  assert.equal(r.status, 201, r.text);
  assert.equal(JSON.parse(redisCli(redis.port, 'GET', `framed:config:${r.body.config_id}`)).shuffle_partitions, 15);
});

// Item 3 end to end, with the lease renewal out of the way (a long lease):
// the key is gone from Redis and the workers have forgotten the config, so a
// worker answers config-not-found; the coordinator puts its bytes back and
// sends the task again, and the query runs with the same config.
test('redis: two workers, the key deleted from Redis: a worker\'s config-not-found makes the coordinator re-put it', async (t) => {
  const root = tempRoot();
  const servers = [], redises = [];
  cleanup(t, servers, redises, root);
  const redis = await startRedis(await freePort());
  redises.push(redis);
  const coord = await startServer({
    root, args: ['--store', redis.url, '--runner', 'remote'], env: { FRAMED_STORE_LEASE_MS: '600000' },
  });
  servers.push(coord);
  const workers = [];
  for (let i = 0; i < 2; i++) {
    const w = await startWorker(coord.base, { args: ['--threads', '1', '--data-dir', coord.dataDir, '--store', redis.url] });
    servers.push(w);
    workers.push(w);
  }
  await until(async () => (await call(coord.base, 'GET', '/v1/workers')).body.workers.length === 2, 'both workers announced');
  let r = await call(coord.base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN });
  assert.equal(r.status, 201, r.text);
  const id = r.body.config_id;
  const key = `framed:config:${id}`;
  const bytes = redisCli(redis.port, 'GET', key);
  assert.equal(sha(bytes), id);
  const restores = async () => Number(/\nframed_store_restores_total (\d+)\n/.exec((await call(coord.base, 'GET', '/metrics')).text)[1]);
  const before = await restores();
  assert.equal(redisCli(redis.port, 'DEL', key), '1');
  for (const w of workers) {
    r = await call(w.base, 'DELETE', `/v1/configs/${id}`, { headers: { 'framed-config-id': id } });
    assert.equal(r.status, 200, r.text);
  }
  assert.equal(redisCli(redis.port, 'EXISTS', key), '0', 'nothing put it back before the query');
  r = await call(coord.base, 'POST', '/v1/queries?wait=60', { json: { plan: SAMPLE_PLAN } });
  assert.equal(r.body.state, 'succeeded', r.text);
  assert.equal(r.body.config_id, id);
  assert.deepEqual(r.body.task_config_ids, [id]);
  assert.equal(redisCli(redis.port, 'GET', key), bytes, 'the store holds the bytes again');
  assert.ok((await restores()) > before, 'framed_store_restores_total went up');
  assert.ok(coord.logLines().some((l) => /the store lost config .* put back, task/.test(l.msg)), 'the re-put and retry are logged');
});
