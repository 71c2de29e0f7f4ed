// auth: with an admin token, state-changing requests need it as a bearer
// token (401 otherwise); reads stay open; the token never shows up in the
// server's log or in any response.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { assertProblem, call, SAMPLE_PLAN, startServer, tempRoot } from './lib.mjs';

function recorder(base) {
  const texts = [];
  return {
    texts,
    async call(method, urlPath, opts) {
      const r = await call(base, method, urlPath, opts);
      texts.push(r.text, JSON.stringify([...r.headers]));
      return r;
    },
  };
}

test('the admin token guards state changes only', async () => {
  const token = randomBytes(16).toString('hex');
  const srv = await startServer({ env: { FRAMED_ADMIN_TOKEN: token } });
  const api = recorder(srv.base);
  const bearer = (t) => ({ authorization: `Bearer ${t}` });
  try {
    let r = await api.call('POST', '/v1/config', { json: { shuffle_partitions: 3 } });
    assertProblem(r, 401, 'unauthorized');
    assert.match(r.headers.get('www-authenticate'), /^Bearer/);
    for (const headers of [bearer('wrong'), bearer(`${token}x`), bearer(token.slice(1)),
      { authorization: `Basic ${token}` }, { authorization: token }]) {
      r = await api.call('POST', '/v1/config', { json: { shuffle_partitions: 3 }, headers });
      assertProblem(r, 401, 'unauthorized');
    }
    assert.equal((await api.call('GET', '/v1/config')).body.values.shuffle_partitions, 8);

    r = await api.call('POST', '/v1/config', { json: { shuffle_partitions: 3 }, headers: bearer(token) });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.values.shuffle_partitions, 3);

    for (const p of ['/v1/config', '/v1/runner', '/v1/info', '/metrics', '/v1/datasets', '/livez']) {
      assert.equal((await api.call('GET', p)).status, 200, p);
    }
    // Dataframes are not admin operations.
    r = await api.call('POST', '/v1/dataframes', { json: SAMPLE_PLAN });
    assert.equal(r.status, 201, r.text);

    assertProblem(await api.call('DELETE', '/v1/runner'), 401, 'unauthorized');
    assertProblem(await api.call('PUT', '/v1/datasets/t', {
      body: 'a,b\n1,2\n', headers: { 'content-type': 'text/csv' },
    }), 401, 'unauthorized');
    assertProblem(await api.call('DELETE', '/v1/datasets/t'), 401, 'unauthorized');
    r = await api.call('DELETE', '/v1/runner', { headers: bearer(token) });
    assert.equal(r.status, 200, r.text);
  } finally {
    await srv.stop();
  }
  assert.ok(!srv.stderr().includes(token), 'the token is in the server log');
  for (const text of api.texts) assert.ok(!text.includes(token), 'the token is in a response');
});

test('--admin-token-file is read and trimmed', async () => {
  const token = randomBytes(16).toString('hex');
  const root = tempRoot();
  const file = path.join(root, 'token');
  writeFileSync(file, `${token}\n`);
  const srv = await startServer({ args: ['--admin-token-file', file] });
  try {
    let r = await call(srv.base, 'POST', '/v1/config', { json: { shuffle_partitions: 3 } });
    assertProblem(r, 401, 'unauthorized');
    r = await call(srv.base, 'POST', '/v1/config', {
      json: { shuffle_partitions: 3 }, headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(r.status, 200, r.text);
  } finally {
    await srv.stop();
    rmSync(root, { recursive: true, force: true });
  }
  assert.ok(!srv.stderr().includes(token));
});
