// partition_codecs: partitions sent between processes are compressed as the
// config says. On a cluster of 2 workers, a shuffled group-by and a
// shuffled join give the same answers with partition_codecs [], ["lz4"],
// ["zstd"] and ["zstd", "lz4"]; the workers' /metrics show the partitions
// went in the first coding listed (none in any other), in fewer bytes than
// as is. A worker's GET /v1/partitions/{id} answers a fetch that asks for
// lz4 or zstd (Accept-Encoding) with an LZ4 or zstd frame
// (Content-Encoding), one that asks for neither or for gzip as is. A config
// naming another codec, or one twice, is refused and changes nothing.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { test } from 'node:test';
import { assertProblem, call, signedGet, startServer, startWorker, waitWorkersActive } from './lib.mjs';

const ROWS = 40000;

function writeData(dataDir) {
  let s = 'k,v,name\n';
  for (let i = 0; i < ROWS; i++) s += `${(i * 7919) % 5003},${i % 1000},name-${i % 13}-${'x'.repeat(i % 5)}\n`;
  writeFileSync(path.join(dataDir, 'codec.csv'), s);
}

// Every worker's framed_worker_partition_{sends,sent_bytes}_total by coding, summed.
async function sent(workers) {
  const out = {};
  for (const w of workers) {
    const text = (await call(w.base, 'GET', '/metrics')).text;
    for (const m of text.matchAll(/^framed_worker_partition_(sends|sent_bytes)_total\{encoding="(\w+)"\} (\d+)$/gm)) {
      const key = `${m[1]}:${m[2]}`;
      out[key] = (out[key] || 0) + Number(m[3]);
    }
  }
  return out;
}

const diff = (a, b) => Object.fromEntries(Object.keys(b).map((k) => [k, b[k] - (a[k] || 0)]));

const GROUPBY = { plan: { source: { dataset: 'codec' }, ops: [{ groupby: ['k'], agg: ['sum(v) as s', 'count(*) as n', 'max(name) as m'] }, { sort: ['k'] }] } };
const JOIN = {
  plan: {
    source: { dataset: 'codec' },
    ops: [{ where: 'v < 40' }, { join: { right: { source: { dataset: 'codec' }, ops: [{ where: 'v >= 960' }, { select: ['k', 'v as v2'] }] }, on: ['k'] } }, { sort: ['k', 'v', 'v2', 'name'] }],
  },
};

async function rows(coord, body) {
  const r = await call(coord.base, 'POST', '/v1/queries?wait=120', { json: body });
  assert.equal(r.body.state, 'succeeded', r.text);
  const res = await call(coord.base, 'GET', `/v1/queries/${r.body.id}/result`);
  assert.equal(res.status, 200, res.text);
  return res.body.rows;
}

test('a cluster sends partitions in the codec its config names, with the same answers', async () => {
  const secret = randomBytes(24).toString('hex');
  const env = { FRAMED_CLUSTER_SECRET: secret };
  const coord = await startServer({ args: ['--runner', 'remote'], env });
  const workers = [];
  try {
    for (let i = 0; i < 2; i++) workers.push(await startWorker(coord.base, { args: ['--threads', '1', '--data-dir', coord.dataDir], env }));
    await waitWorkersActive(coord, 2);
    writeData(coord.dataDir);
    const base = { shuffle_partitions: 4, shuffle_coalesce_bytes: 0, broadcast_join_size_bytes_threshold: 0, scan_tasks_max_size_bytes: 200000, scan_tasks_min_size_bytes: 1 };

    // refused configs change nothing
    for (const [codecs, needle] of [[['gzip'], 'must be one of lz4, zstd'], [['lz4', 'lz4'], 'repeats'], ['lz4', 'array']]) {
      const r = await call(coord.base, 'POST', '/v1/config', { json: { ...base, partition_codecs: codecs } });
      assertProblem(r, 422, 'validation-failed');
      assert.ok(r.text.includes(needle), r.text);
    }
    assert.deepEqual((await call(coord.base, 'GET', '/v1/config')).body.values.partition_codecs, []);

    let want, plainBytes;
    for (const codecs of [[], ['lz4'], ['zstd'], ['zstd', 'lz4']]) {
      if (want) assert.equal((await call(coord.base, 'DELETE', '/v1/runner')).status, 200);
      const c = await call(coord.base, 'POST', '/v1/config', { json: { ...base, partition_codecs: codecs } });
      assert.equal(c.status, 200, c.text);
      const before = await sent(workers);
      const got = { groupby: await rows(coord, GROUPBY), join: await rows(coord, JOIN) };
      const d = diff(before, await sent(workers));
      const coding = codecs[0] || 'identity';
      assert.ok(got.groupby.length > 1000 && got.join.length > 100, `answers of some size: ${got.groupby.length}, ${got.join.length}`);
      if (!want) want = got;
      else assert.deepEqual(got, want, `the same answers with ${JSON.stringify(codecs)}`);
      assert.ok(d[`sends:${coding}`] >= 8, `partitions went in ${coding}: ${JSON.stringify(d)}`);
      for (const other of ['identity', 'lz4', 'zstd'].filter((x) => x !== coding)) assert.equal(d[`sends:${other}`], 0, `none in ${other}: ${JSON.stringify(d)}`);
      if (!codecs.length) {
        plainBytes = d['sent_bytes:identity'];
        // the raw fetches' receive buffers are kept for the next ones, within their bound
        const kept = await Promise.all(workers.map(async (w) => Number((await call(w.base, 'GET', '/metrics')).text.match(/^framed_worker_fetch_buffer_bytes (\d+)$/m)[1])));
        assert.ok(kept.some((b) => b > 0) && kept.every((b) => b <= 256 * 2 ** 20), `kept receive buffers: ${kept}`);
      }
      else assert.ok(d[`sent_bytes:${coding}`] < plainBytes * 0.7, `${coding} sent fewer bytes: ${d[`sent_bytes:${coding}`]} against ${plainBytes}`);
    }

    // a worker's partition, fetched as another process would
    const r = await call(coord.base, 'POST', '/v1/queries?wait=60', { json: { plan: { source: { dataset: 'codec' }, ops: [{ select: ['k', 'v', 'name'] }] } } });
    assert.equal(r.body.state, 'succeeded', r.text);
    const loc = await call(coord.base, 'GET', `/v1/queries/${r.body.id}/result/locations`);
    assert.equal(loc.status, 200, loc.text);
    const u = new URL(loc.body.locations[0].url, coord.base);
    const target = `/v1/partitions/${u.pathname.split('/').pop()}`;
    // node:http: the bytes as they came (a fetch() may decode a coding it knows)
    const fetchAs = (accept) => new Promise((resolve, reject) => {
      const headers = { ...signedGet(secret, target), 'Framed-Config-Id': r.body.config_id };
      if (accept !== undefined) headers['Accept-Encoding'] = accept;
      http.get(u.origin + target, { headers }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, coding: res.headers['content-encoding'] ?? null, vary: res.headers.vary, length: res.headers['content-length'], body: Buffer.concat(chunks) }));
        res.on('error', reject);
      }).on('error', reject);
    });
    const plain = await fetchAs(undefined);
    assert.equal(plain.status, 200, plain.body.toString().slice(0, 300));
    assert.equal(plain.coding, null);
    assert.equal(Number(plain.length), plain.body.length, 'as is: with its Content-Length');
    for (const accept of ['gzip', 'identity', 'br;q=1, gzip']) {
      const got = await fetchAs(accept);
      assert.equal(got.coding, null, accept);
      assert.deepEqual(got.body, plain.body, `${accept}: as is`);
    }
    const magic = { lz4: '04224d18', zstd: '28b52ffd' };
    for (const [accept, coding] of [['lz4', 'lz4'], ['zstd', 'zstd'], ['gzip, zstd, lz4', 'zstd'], ['zstd;q=0, lz4', 'lz4'], ['LZ4', 'lz4']]) {
      const got = await fetchAs(accept);
      assert.equal(got.status, 200);
      assert.equal(got.coding, coding, accept);
      assert.equal(got.vary, 'Accept-Encoding');
      assert.equal(got.length, undefined, 'compressed as it is sent: no Content-Length');
      assert.equal(got.body.subarray(0, 4).toString('hex'), magic[coding], `${accept}: a ${coding} frame`);
      assert.ok(got.body.length < plain.body.length * 0.7, `${accept}: ${got.body.length} bytes against ${plain.body.length}`);
    }
    // unsigned, the coding changes nothing about what is refused
    const unsigned = await call(u.origin, 'GET', target, { headers: { 'Framed-Config-Id': r.body.config_id, 'Accept-Encoding': 'lz4' } });
    assertProblem(unsigned, 401, 'unauthorized');
  } finally {
    for (const w of workers) await w.stop();
    await coord.stop();
  }
});
