// faults_disk: a full disk during an upload. The server's file-size limit
// (RLIMIT_FSIZE, lowered with prlimit on the running process) makes the
// upload's writes fail with EFBIG (SIGXFSZ is ignored, so the process lives):
// the upload gets 507 insufficient-storage, nothing half-written stays in
// the data dir, the previous dataset of that name is intact and queryable,
// and the server keeps serving. The same with a really full disk (ENOSPC):
// the server runs in a user and mount namespace of its own (unshare -rm) with
// its data dir on a 256 KiB tmpfs, seen from here through /proc/PID/root.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { assertProblem, BIN, call, markFramedOrigin, startServer, tempRoot } from './lib.mjs';

const LIMIT = 64 * 1024;

// How this machine gives a process a mount namespace of its own: as root a
// plain one (`unshare -m`), or, inside a chroot, where the root is no mount
// point and its propagation cannot be changed, one that leaves propagation
// as it is; without root, a user namespace too (`unshare -rm`). The first
// that runs `true` is used; if none does, the last one's error fails the test.
function unshareArgs() {
  const tries = process.getuid() === 0
    ? [['-m'], ['-m', '--propagation', 'unchanged'], ['-rm']]
    : [['-rm']];
  for (const args of tries) {
    try {
      execFileSync('unshare', [...args, 'true'], { stdio: 'ignore' });
      return args;
    } catch { /* try the next way */ }
  }
  return tries[tries.length - 1];
}

function bigCsv(bytes) {
  const lines = ['a,b'];
  let n = 4;
  for (let i = 0; n < bytes; i++) {
    const line = `${i},${'x'.repeat(50)}`;
    lines.push(line);
    n += line.length + 1;
  }
  return `${lines.join('\n')}\n`;
}

async function put(base, name, body, type = 'text/csv') {
  return call(base, 'PUT', `/v1/datasets/${name}`, { body, headers: { 'content-type': type } });
}

test('an upload past the disk space gets 507 and leaves the previous dataset intact', async () => {
  const srv = await startServer();
  try {
    const v1 = 'a,b\n1,x\n2,y\n3,z\n';
    let r = await put(srv.base, 't', v1);
    assert.equal(r.status, 201, r.text);
    execFileSync('prlimit', ['--pid', String(srv.pid), `--fsize=${LIMIT}:${LIMIT}`]);

    for (const [name, body, type] of [['t', bigCsv(4 * LIMIT), 'text/csv'],
      ['fresh', bigCsv(2 * LIMIT), 'text/csv'],
      ['t', `${'{"a":1,"b":"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"}\n'.repeat(4000)}`, 'application/x-ndjson']]) {
      r = await put(srv.base, name, body, type);
      assertProblem(r, 507, 'insufficient-storage');
      assert.equal(r.body.type, 'https://framed.dev/problems/insufficient-storage');
      assert.equal(r.body.title, 'Insufficient storage'); // a full disk is not the memory budget
      assert.match(r.body.detail, /File too large/);
    }

    // Nothing half-written: only the first upload's file is in the data dir.
    assert.deepEqual(readdirSync(srv.dataDir), ['t.csv']);
    assert.equal(readFileSync(path.join(srv.dataDir, 't.csv'), 'utf8'), v1);
    assertProblem(await call(srv.base, 'GET', '/v1/datasets/fresh'), 404, 'dataset-not-found');
    r = await call(srv.base, 'GET', '/v1/datasets/t');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.bytes, v1.length, r.text);
    r = await call(srv.base, 'POST', '/v1/queries?wait=60', {
      json: { plan: { source: { dataset: 't' }, ops: [{ where: 'a > 1' }] } },
    });
    assert.equal(r.body.state, 'succeeded', r.text);
    const res = await call(srv.base, 'GET', `/v1/queries/${r.body.id}/result`);
    assert.equal(res.body.rows.length, 2, res.text);

    // A small upload still fits under the limit: the server kept running.
    r = await put(srv.base, 'small', 'a\n1\n');
    assert.equal(r.status, 201, r.text);
    assert.equal((await call(srv.base, 'GET', '/livez')).status, 200);
    assert.ok(srv.logLines().some((l) => l.level === 'warn' && /File too large/.test(l.msg)), srv.stderr());
  } finally {
    await srv.stop();
  }
});

// `framed serve` with its data dir on a small tmpfs mounted in a namespace of
// its own; resolves once it listens. stop() asserts a clean exit.
async function startOnTmpfs(root) {
  const dataDir = path.join(root, 'data');
  mkdirSync(dataDir);
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('FRAMED_')));
  const child = spawn('unshare', [...unshareArgs(), 'sh', '-c', 'mount -t tmpfs -o size=256k tmpfs "$0" && exec "$@"',
    dataDir, BIN, 'serve', '--port', '0', '--data-dir', dataDir, '--state-dir', path.join(root, 'state')],
  { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const port = await new Promise((resolve, reject) => {
    child.stderr.on('data', (d) => {
      stderr += d;
      const m = /"msg":"listening"[^\n]*"port":(\d+)/.exec(stderr);
      if (m) resolve(Number(m[1]));
    });
    exited.then((e) => reject(new Error(`exited ${JSON.stringify(e)} before listening (needs unshare -m or -rm): ${stderr}`)));
  });
  markFramedOrigin(`http://127.0.0.1:${port}`, true); // its answers are checked against the contract
  return {
    base: `http://127.0.0.1:${port}`,
    // The data dir as the server sees it (its mount namespace).
    dataDir: `/proc/${child.pid}/root${dataDir}`,
    stderr: () => stderr,
    async stop() {
      child.kill('SIGTERM');
      const { code, signal } = await exited;
      assert.equal(signal, null, stderr);
      assert.equal(code, 0, stderr);
      // The tmpfs lived in the server's namespace only: none is left here.
      const mounts = readFileSync('/proc/self/mountinfo', 'utf8').split('\n');
      const leaked = mounts.some((l) => l.split(' ')[4] === dataDir);
      if (leaked) execFileSync('umount', [dataDir]);
      assert.equal(leaked, false, `the tmpfs on ${dataDir} leaked into the test's mount namespace`);
    },
  };
}

test('an upload that fills the disk (ENOSPC) gets 507 and leaves the previous dataset intact', async () => {
  const root = tempRoot();
  const srv = await startOnTmpfs(root);
  try {
    const v1 = 'a,b\n1,x\n2,y\n3,z\n';
    let r = await put(srv.base, 't', v1);
    assert.equal(r.status, 201, r.text);
    r = await put(srv.base, 't', bigCsv(1024 * 1024));
    assertProblem(r, 507, 'insufficient-storage');
    assert.equal(r.body.type, 'https://framed.dev/problems/insufficient-storage');
    assert.equal(r.body.title, 'Insufficient storage');
    assert.match(r.body.detail, /No space left on device/);
    assert.deepEqual(readdirSync(srv.dataDir), ['t.csv']);
    assert.equal(readFileSync(path.join(srv.dataDir, 't.csv'), 'utf8'), v1);
    r = await call(srv.base, 'POST', '/v1/queries?wait=60', {
      json: { plan: { source: { dataset: 't' }, ops: [{ where: 'a > 1' }] } },
    });
    assert.equal(r.body.state, 'succeeded', r.text);
    // The space came back: the next upload fits.
    r = await put(srv.base, 't', bigCsv(64 * 1024));
    assert.equal(r.status, 200, r.text);
  } finally {
    await srv.stop();
    rmSync(root, { recursive: true, force: true });
  }
});
