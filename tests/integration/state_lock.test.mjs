// state_lock: one server per --state-dir. The first holds an flock on
// state/framed.lock with its PID inside; a second one refuses to start (exit
// code 1, naming that PID) before it reads or writes anything there; once the
// first is gone, even by kill -9, a new one starts.
import assert from 'node:assert/strict';
import { readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { call, runToExit, startServer, tempRoot } from './lib.mjs';

function serveArgs(root) {
  return ['serve', '--port', '0', '--data-dir', path.join(root, 'data'), '--state-dir', path.join(root, 'state')];
}

test('a second server on the same state dir refuses to start, naming the holder', async () => {
  const root = tempRoot();
  const first = await startServer({ root });
  try {
    assert.equal(readFileSync(path.join(first.stateDir, 'framed.lock'), 'utf8').trim(), String(first.pid));
    const r = await call(first.base, 'POST', '/v1/config', { json: { shuffle_partitions: 5 } });
    assert.equal(r.status, 200, r.text);
    const before = statSync(path.join(first.stateDir, 'config.json')).mtimeMs;
    // A pending config in the environment would be written at start: the lock comes first.
    const second = await runToExit(serveArgs(root), { FRAMED_CONFIG_SHUFFLE_PARTITIONS: '7' });
    assert.equal(second.code, 1, second.stderr);
    assert.equal(second.listened, false);
    assert.match(second.stderr, new RegExp(`in use by another framed server \\(PID ${first.pid}\\b`));
    assert.equal(statSync(path.join(first.stateDir, 'config.json')).mtimeMs, before);
    assert.equal((await call(first.base, 'GET', '/v1/config')).body.values.shuffle_partitions, 5);
  } finally {
    await first.stop();
  }
  // A clean stop frees it.
  const again = await startServer({ root });
  await again.stop();
  rmSync(root, { recursive: true, force: true });
});

test('after kill -9 of the holder a new server starts on the state dir', async () => {
  const root = tempRoot();
  const first = await startServer({ root });
  process.kill(first.pid, 'SIGKILL');
  const { signal } = await first.exited;
  assert.equal(signal, 'SIGKILL');
  const next = await startServer({ root });
  try {
    assert.equal(readFileSync(path.join(next.stateDir, 'framed.lock'), 'utf8').trim(), String(next.pid));
    assert.equal((await call(next.base, 'GET', '/readyz')).status, 200);
  } finally {
    await next.stop();
    rmSync(root, { recursive: true, force: true });
  }
});
