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

// Every flag line of a role's --help names its variable (a secret's also
// its plain variable), and every long option of the help is accepted.
test('--help lists every flag with its variable', async () => {
  for (const role of ['serve', 'worker']) {
    const r = await runToExit([role, '--help']);
    assert.equal(r.code, 0);
    const lines = r.stdout.split('\n').filter((l) => /^ {2}--/.test(l));
    assert.ok(lines.length >= (role === 'serve' ? 22 : 10), r.stdout);
    for (const line of lines) {
      const flag = /^ {2}--([a-z-]+)/.exec(line)[1];
      const env = `FRAMED_${flag.toUpperCase().replaceAll('-', '_')}`;
      assert.ok(line.includes(`[${env}`), line);
      if (flag.endsWith('-file')) assert.ok(line.includes(env.replace(/_FILE$/, ']')), line);
    }
    assert.ok(lines.some((l) => l.includes('--cluster-secret-file')), `${role}: --cluster-secret-file`);
  }
});

test('--log-level debug logs the effective options and where each secret came from, never a secret', async () => {
  const token = 'debug-should-not-show-this';
  const srv = await startServer({ args: ['--log-level', 'debug'], env: { FRAMED_ADMIN_TOKEN: token } });
  await srv.stop();
  const debug = srv.logLines().filter((l) => l.level === 'debug').map((l) => l.msg);
  const opts = debug.find((m) => m.startsWith('serve options: '));
  assert.ok(opts, srv.stderr());
  for (const part of ['--port=0', `--state-dir=${srv.stateDir}`, '--runner=local', '--admin-token-file=(none)']) {
    assert.ok(opts.includes(part), `${part} in ${opts}`);
  }
  assert.ok(debug.includes('admin token: from FRAMED_ADMIN_TOKEN'), debug.join('\n'));
  assert.ok(debug.includes('cluster secret: none'), debug.join('\n'));
  assert.ok(debug.some((m) => m.startsWith(`state dir ${srv.stateDir} locked`)), debug.join('\n'));
  assert.ok(!srv.stderr().includes(token));
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
