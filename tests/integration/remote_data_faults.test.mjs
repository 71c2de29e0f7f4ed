// remote_data_faults: a worker that reads a dataset by range from the
// coordinator and finds the file changed under it (the ETag moves between
// blocks) answers 409 dataset-changed. That is no fault of the worker, and
// a retry would read the same new file: the coordinator fails the query
// with dataset-changed and the worker's detail (not worker-lost, no
// retries), the worker stays active. A proxy between the worker and the
// coordinator passes everything through but rewrites the ETag of every
// range answer after the first.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { test } from 'node:test';
import { call, startServer, startWorker } from './lib.mjs';

function etagProxy(upstreamPort) {
  let ranges = 0;
  const proxy = http.createServer((req, res) => {
    const data = req.url.startsWith('/v1/internal/datasets');
    const n = data ? ++ranges : 0;
    const headers = { ...req.headers };
    delete headers.host;
    const up = http.request({ host: '127.0.0.1', port: upstreamPort, method: req.method,
      path: req.url, headers }, (ur) => {
      const chunks = [];
      ur.on('data', (c) => chunks.push(c));
      ur.on('end', () => {
        const body = Buffer.concat(chunks);
        const h = { ...ur.headers };
        delete h['transfer-encoding'];
        if (data && ur.statusCode === 206 && n > 1) h.etag = `"changed-${n}"`;
        h['content-length'] = body.length;
        res.writeHead(ur.statusCode, h);
        res.end(body);
      });
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  return new Promise((resolve) => proxy.listen(0, '127.0.0.1', () => resolve({
    proxy, base: `http://127.0.0.1:${proxy.address().port}`, ranges: () => ranges,
  })));
}

async function waitActive(base) {
  for (let i = 0; i < 100; i++) {
    const r = await call(base, 'GET', '/v1/workers');
    if (r.body.workers?.some((w) => w.state === 'active')) return r.body.workers;
    await new Promise((r2) => setTimeout(r2, 100));
  }
  throw new Error('no worker became active');
}

test('a file that changes under a range read: not retried, the worker stays active, the query says dataset-changed', async () => {
  const coord = await startServer({ args: ['--runner', 'remote'] });
  const px = await etagProxy(coord.port);
  const worker = await startWorker(px.base, { args: ['--threads', '2', '--data-source', 'remote'] });
  try {
    await waitActive(coord.base);
    // About 20 MB: more than two of the worker's 8 MiB range blocks, so a
    // task's later block comes back with another ETag than its first.
    const rows = [];
    for (let i = 0; i < 2_500_000; i++) rows.push(`${i % 7},${i}`);
    writeFileSync(path.join(coord.dataDir, 'kv.csv'), `k,v\n${rows.join('\n')}\n`);
    let r = await call(coord.base, 'POST', '/v1/config', { json: { task_max_retries: 2 } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    r = await call(coord.base, 'POST', '/v1/queries?wait=120', {
      json: { plan: { source: { dataset: 'kv' }, ops: [{ agg: ['count(*) as n'] }] } },
    });
    assert.equal(r.body.state, 'failed', JSON.stringify(r.body));
    assert.equal(r.body.error.kind, 'dataset-changed', JSON.stringify(r.body.error));
    assert.match(r.body.error.message, /changed on the coordinator while the task read it/);
    assert.doesNotMatch(r.body.error.message, /retries exhausted/);
    assert.ok(px.ranges() >= 2, `the proxy saw ${px.ranges()} range reads`);
    const workers = (await call(coord.base, 'GET', '/v1/workers')).body.workers;
    assert.deepEqual(workers.map((w) => w.state), ['active'], JSON.stringify(workers));
    const retried = coord.logLines().filter((l) => /retry \d/.test(l.msg ?? ''));
    assert.equal(retried.length, 0, 'the coordinator did not retry');
  } finally {
    await worker.stop();
    await coord.stop();
    px.proxy.close();
  }
});
