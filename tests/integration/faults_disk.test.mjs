// faults_disk: a full disk during an upload. The server's file-size limit
// (RLIMIT_FSIZE, lowered with prlimit on the running process) makes the
// upload's writes fail with EFBIG (SIGXFSZ is ignored, so the process lives):
// the upload gets 507 insufficient-storage, nothing half-written stays in
// the data dir, the previous dataset of that name is intact and queryable,
// and the server keeps serving.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { assertProblem, call, startServer } from './lib.mjs';

const LIMIT = 64 * 1024;

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
