// cli: the command line itself: help, version, usage errors, and flags that
// win over their FRAMED_* variables.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { test } from 'node:test';
import { call, runToExit, startServer, tempRoot } from './lib.mjs';

test('--version and --help', async () => {
  let r = await runToExit(['--version']);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /^framed \d+\.\d+\.\d+/);
  r = await runToExit(['--help']);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /serve/);
  assert.match(r.stdout, /worker/);
  r = await runToExit(['serve', '--help']);
  assert.equal(r.code, 0);
  for (const flag of ['--listen', '--port', '--data-dir', '--state-dir', '--memory-limit',
    '--admin-token-file', '--max-body-bytes', '--max-upload-bytes', '--static-dir']) {
    assert.ok(r.stdout.includes(flag), flag);
  }
  assert.match(r.stdout, /FRAMED_MAX_BODY_BYTES/);
});

test('usage errors exit 2', async () => {
  assert.equal((await runToExit([])).code, 2);
  assert.equal((await runToExit(['frobnicate'])).code, 2);
  assert.equal((await runToExit(['serve', '--no-such-flag'])).code, 2);
  assert.equal((await runToExit(['serve', '--port', 'eighty'])).code, 2);
  assert.equal((await runToExit(['serve', '--memory-limit', '12Q'])).code, 2);
  assert.equal((await runToExit(['serve', '--runner', 'cloud'])).code, 2);
  const r = await runToExit(['serve'], { FRAMED_PORT: 'x' });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /FRAMED_PORT/);
  assert.equal((await runToExit(['worker'])).code, 2);
});

test('a flag wins over its variable; variables apply', async () => {
  const root = tempRoot();
  // FRAMED_PORT would fail (a privileged port); --port 0 from startServer wins.
  const srv = await startServer({
    root,
    env: { FRAMED_PORT: '1', FRAMED_MAX_BODY_BYTES: '64', FRAMED_MEMORY_LIMIT: '1G' },
  });
  try {
    assert.notEqual(srv.port, 1);
    const r = await call(srv.base, 'POST', '/v1/config', {
      json: { csv_null_values: ['a long enough value to pass sixty-four bytes of body'] },
    });
    assert.equal(r.status, 413, r.text);
  } finally {
    await srv.stop();
    rmSync(root, { recursive: true, force: true });
  }
});
