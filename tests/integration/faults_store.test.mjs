// faults_store: kill -9 of a coordinator with the embedded store. Killed
// between a config POST and the freeze, the pending config survives; killed
// while a runner holds its config, the next start on the same state dir
// drops the dead incarnation's hold and removes the entry (I4), and a new
// freeze and reset go 1 -> 0. Every process is stopped by its PID, also when
// an assertion fails.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { SAMPLE_PLAN, call, runToExit, startServer, tempRoot } from './lib.mjs';

// kill -9 by PID and wait for the exit.
async function kill9(srv) {
  process.kill(srv.pid, 'SIGKILL');
  const { signal } = await srv.exited;
  assert.equal(signal, 'SIGKILL');
}

// Stops what is still running, by PID: after a failure too.
async function stopAll(servers) {
  for (const srv of servers) {
    try { process.kill(srv.pid, 0); } catch { continue; } // gone already
    await srv.stop();
  }
}

// The store's files: <hex>.json and <hex>.holds per entry.
function storeFiles(stateDir) {
  const dir = path.join(stateDir, 'store');
  return existsSync(dir) ? readdirSync(dir).filter((f) => /^[0-9a-f]{64}\.(json|holds|count)$/.test(f)) : [];
}

test('embedded: kill -9 between a config POST and the freeze keeps the pending config', async (t) => {
  const root = tempRoot();
  const servers = [];
  t.after(async () => { await stopAll(servers); rmSync(root, { recursive: true, force: true }); });
  const srv = await startServer({ root });
  servers.push(srv);
  const r = await call(srv.base, 'POST', '/v1/config', { json: { shuffle_partitions: 13, nulls_first: true } });
  assert.equal(r.status, 200, r.text);
  await kill9(srv);

  const again = await startServer({ root });
  servers.push(again);
  const after = await call(again.base, 'GET', '/v1/config');
  assert.equal(after.body.locked, false);
  assert.equal(after.body.values.shuffle_partitions, 13);
  assert.equal(after.body.values.nulls_first, true);
  // The freeze takes it.
  const df = await call(again.base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN });
  assert.equal(df.status, 201, df.text);
  const bytes = await call(again.base, 'GET', `/v1/configs/${df.body.config_id}`);
  assert.equal(bytes.status, 200);
  assert.equal(JSON.parse(bytes.text).shuffle_partitions, 13);
});

test('embedded: kill -9 with a runner: the next start reclaims the hold', async (t) => {
  const root = tempRoot();
  const servers = [];
  t.after(async () => { await stopAll(servers); rmSync(root, { recursive: true, force: true }); });
  const srv = await startServer({ root });
  servers.push(srv);
  let r = await call(srv.base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN });
  assert.equal(r.status, 201, r.text);
  const id = r.body.config_id;
  const hex = id.slice('sha256:'.length);
  assert.equal((await call(srv.base, 'GET', `/v1/configs/${id}`)).status, 200);
  // One entry, held once, by the runner.
  assert.deepEqual(storeFiles(srv.stateDir).sort(), [`${hex}.holds`, `${hex}.json`]);
  const holders = readFileSync(path.join(srv.stateDir, 'store', `${hex}.holds`), 'utf8').trim().split('\n');
  assert.equal(holders.length, 1);
  assert.match(holders[0], /^runner-[0-9a-f]{16}$/);
  await kill9(srv);
  assert.equal(storeFiles(srv.stateDir).length, 2, 'a kill -9 leaves the hold on disk');

  const again = await startServer({ root });
  servers.push(again);
  assert.equal(storeFiles(again.stateDir).length, 0, 'the dead hold is dropped at start');
  assert.ok(again.logLines().some((l) => /dead incarnation/.test(l.msg) && l.msg.includes(holders[0])),
    'the reclaim is logged with the holder');
  r = await call(again.base, 'GET', '/v1/runner');
  assert.equal(r.body.state, 'none');
  r = await call(again.base, 'GET', `/v1/configs/${id}`);
  assert.equal(r.status, 404, 'no runner, no entry (I4)');
  // A new freeze and reset: 1 -> 0.
  r = await call(again.base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.config_id, id);
  const held = readFileSync(path.join(again.stateDir, 'store', `${hex}.holds`), 'utf8').trim().split('\n');
  assert.equal(held.length, 1);
  assert.notEqual(held[0], holders[0]);
  r = await call(again.base, 'DELETE', '/v1/runner');
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.config_released, true);
  assert.equal(storeFiles(again.stateDir).length, 0);
  assert.equal((await call(again.base, 'GET', `/v1/configs/${id}`)).status, 404);
});

test('a store lease out of bounds stops the start and names the flag', async (t) => {
  const root = tempRoot();
  t.after(() => rmSync(root, { recursive: true, force: true }));
  for (const ms of ['5', '999999999']) {
    const res = await runToExit(['serve', '--port', '0', '--data-dir', path.join(root, 'data'),
      '--state-dir', path.join(root, 'state'), '--store-lease-ms', ms]);
    assert.notEqual(res.code, 0);
    assert.equal(res.listened, false);
    assert.match(res.stderr, /--store-lease-ms/);
  }
});
