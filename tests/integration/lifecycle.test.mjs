// lifecycle: the config's whole life through the API: set it, freeze it with
// the first dataframe, see it locked (409 naming the ID), run a query under
// it, read its bytes from the store by ID, tear the runner down, unlock.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { assertProblem, call, SAMPLE_PLAN, startServer } from './lib.mjs';

test('set, freeze, locked, query, store, teardown', async () => {
  const srv = await startServer();
  try {
    let r = await call(srv.base, 'POST', '/v1/config', { json: { shuffle_partitions: 4 } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.locked, false);
    assert.equal(r.body.values.shuffle_partitions, 4);

    r = await call(srv.base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN });
    assert.equal(r.status, 201, r.text);
    const df = r.body;
    assert.match(df.config_id, /^sha256:[0-9a-f]{64}$/);
    assert.equal(r.headers.get('location'), `/v1/dataframes/${df.id}`);
    const configId = df.config_id;

    r = await call(srv.base, 'POST', '/v1/config', { json: { shuffle_partitions: 8 } });
    assertProblem(r, 409, 'config-locked');
    assert.equal(r.body.config_id, configId);

    r = await call(srv.base, 'GET', '/v1/config');
    assert.equal(r.status, 200);
    assert.equal(r.body.locked, true);
    assert.equal(r.body.config_id, configId);
    assert.equal(r.body.values.shuffle_partitions, 4, 'the rejected POST changed nothing');

    r = await call(srv.base, 'POST', '/v1/queries?wait=30', { json: { dataframe: df.id } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.state, 'succeeded', r.text);
    assert.equal(r.headers.get('location'), `/v1/queries/${r.body.id}`);
    const queryId = r.body.id;

    r = await call(srv.base, 'GET', `/v1/queries/${queryId}`);
    assert.equal(r.status, 200);
    const cfg = await call(srv.base, 'GET', '/v1/config');
    assert.equal(r.body.config_id, cfg.body.config_id);

    // The store: bytes that hash to their ID, cached forever under ETag = ID.
    const res = await fetch(`${srv.base}/v1/configs/${configId}`);
    assert.equal(res.status, 200);
    const bytes = Buffer.from(await res.arrayBuffer());
    assert.equal(`sha256:${createHash('sha256').update(bytes).digest('hex')}`, configId);
    assert.equal(res.headers.get('etag'), `"${configId}"`);
    assert.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.equal(JSON.parse(bytes.toString('utf8')).shuffle_partitions, 4);
    r = await call(srv.base, 'GET', `/v1/configs/${configId}`, {
      headers: { 'if-none-match': `"${configId}"` },
    });
    assert.equal(r.status, 304);
    assert.equal(r.headers.get('etag'), `"${configId}"`);

    // The result in each format.
    r = await call(srv.base, 'GET', `/v1/queries/${queryId}/result`);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.columns.map((c) => c.name), ['a', 'b']);
    assert.deepEqual(r.body.rows, [[2, 'y']]);
    assert.equal(r.body.total_rows, 1);
    r = await call(srv.base, 'GET', `/v1/queries/${queryId}/result`, {
      headers: { accept: 'text/csv' },
    });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /^text\/csv/);
    assert.deepEqual(r.text.split(/\r?\n/).filter((l) => l), ['a,b', '2,y']);
    r = await call(srv.base, 'GET', `/v1/queries/${queryId}/result?format=ndjson`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.text.trim().split('\n').map((l) => JSON.parse(l)), [{ a: 2, b: 'y' }]);

    // Teardown releases the config and unlocks.
    r = await call(srv.base, 'DELETE', '/v1/runner');
    assert.equal(r.status, 200, r.text);
    r = await call(srv.base, 'GET', '/v1/runner');
    assert.equal(r.body.state, 'none');
    r = await call(srv.base, 'POST', '/v1/config', { json: { shuffle_partitions: 8 } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.locked, false);
    assert.equal(r.body.values.shuffle_partitions, 8);
    r = await call(srv.base, 'GET', `/v1/configs/${configId}`);
    assertProblem(r, 404, 'config-not-found');
    r = await call(srv.base, 'DELETE', '/v1/runner');
    assertProblem(r, 404, 'no-runner');
  } finally {
    await srv.stop();
  }
});
