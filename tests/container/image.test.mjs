// image: the framed image built by scripts/container-image.sh runs as a
// server with a mounted data dir: not as root, its health check passes, a
// query over HTTP works, an upload lands in the mounted dir, and SIGTERM
// (`podman stop -t 10`) exits 0 within the grace period. Also the Redis
// image: AOF on, not root. Prints the image size and start time (to /livez).
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { call } from '../integration/lib.mjs';
import {
  assert, ensureImages, freePort, IMAGE, inspect, logs, podman, podmanStatus, PREFIX, REDIS_IMAGE,
  redisCli, removeContainers, removeDir, runContainer, sharedDir, SOURCE_DIR, waitHttp,
} from './lib.mjs';

const ready = ensureImages();

test('the framed image: uid, health check, a query on mounted data, SIGTERM exits 0', { skip: !ready }, async () => {
  const name = `${PREFIX}-framed`;
  const data = sharedDir('data');
  const state = sharedDir('state');
  for (const f of ['trips.csv', 'vendors.ndjson']) copyFileSync(path.join(SOURCE_DIR, 'scripts', 'demo', f), path.join(data, f));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  try {
    const size = Number(await podman('image', 'inspect', '-f', '{{.Size}}', IMAGE));
    assert.ok(size > 0 && size < 400e6, `image size ${size}`);
    const linked = await podman('run', '--rm', '--network', 'host', '--pull', 'never', '--entrypoint', 'ldd', IMAGE, '/usr/local/bin/framed');
    assert.doesNotMatch(linked, /not found/, 'every shared library is in the image');

    const t0 = Date.now();
    await runContainer(name, IMAGE, {
      // FRAMED_PORT rather than --port: the image's health check follows it.
      env: { FRAMED_PORT: String(port), FRAMED_LISTEN: '127.0.0.1' },
      volumes: [`${data}:/var/lib/framed/data`, `${state}:/var/lib/framed/state`],
      args: ['serve'],
    });
    await waitHttp(`${base}/livez`);
    const startMs = Date.now() - t0;
    console.log(`# image ${IMAGE}: ${(size / 1e6).toFixed(1)} MB; podman run to /livez 200: ${startMs} ms`);
    await waitHttp(`${base}/readyz`);

    const uid = await podman('exec', name, 'id', '-u');
    assert.notEqual(uid, '0', 'the server does not run as root');
    assert.equal(uid, '10001');
    assert.equal(await inspect(name, '{{.Config.User}}'), 'framed');

    assert.equal(await podmanStatus('healthcheck', 'run', name), 0, `health check failed:\n${await logs(name)}`);
    assert.equal(await inspect(name, '{{.State.Health.Status}}'), 'healthy');

    // A query over the mounted demo data: fares of the acme trips, summed.
    const csv = readFileSync(path.join(data, 'trips.csv'), 'utf8').trim().split('\n').slice(1);
    const acme = csv.filter((l) => l.split(',')[1] === 'acme').length;
    const plan = { source: { dataset: 'trips' }, ops: [{ where: "vendor == 'acme'" }, { groupby: ['vendor'], agg: ['count(*) as n'] }] };
    let r = await call(base, 'POST', '/v1/queries?wait=30', { json: { plan } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.state, 'succeeded', JSON.stringify(r.body));
    r = await call(base, 'GET', `/v1/queries/${r.body.id}/result`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.rows.length, 1);
    const row = r.body.rows[0];
    assert.equal(Number(Array.isArray(row) ? row[1] : row.n), acme, JSON.stringify(r.body));

    // An upload is written into the mounted data dir by uid 10001.
    r = await call(base, 'PUT', '/v1/datasets/uploaded', { body: 'a,b\n1,x\n2,y\n', headers: { 'content-type': 'text/csv' } });
    assert.ok([200, 201].includes(r.status), r.text);
    assert.ok(existsSync(path.join(data, 'uploaded.csv')), 'the upload is in the mounted dir');

    const s0 = Date.now();
    await podman('stop', '-t', '10', name);
    const stopMs = Date.now() - s0;
    assert.equal(await inspect(name, '{{.State.ExitCode}}'), '0', `exit code after SIGTERM:\n${await logs(name)}`);
    assert.ok(stopMs < 10000, `stopped in ${stopMs} ms, past the 10 s grace period`);
    console.log(`# SIGTERM to exit 0: ${stopMs} ms`);
  } finally {
    await removeContainers(name);
    removeDir(data);
    removeDir(state);
  }
});

test('the Redis image: AOF on, not root, healthy, data in the volume', { skip: !ready }, async () => {
  const name = `${PREFIX}-redis`;
  const dir = sharedDir('redis');
  const port = await freePort();
  try {
    await runContainer(name, REDIS_IMAGE, { env: { REDIS_PORT: String(port) }, volumes: [`${dir}:/data`], args: ['--bind', '127.0.0.1'] });
    for (let i = 0; i < 100; i++) {
      if (await podmanStatus('exec', name, 'redis-cli', '-p', String(port), 'ping') === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(await redisCli(name, port, 'PING'), 'PONG');
    assert.equal(await redisCli(name, port, 'CONFIG', 'GET', 'appendonly'), 'appendonly\nyes');
    assert.equal(await redisCli(name, port, 'CONFIG', 'GET', 'appendfsync'), 'appendfsync\neverysec');
    assert.notEqual(await podman('exec', name, 'id', '-u'), '0');
    assert.equal(await podmanStatus('healthcheck', 'run', name), 0, await logs(name));
    await podman('stop', '-t', '10', name);
    assert.equal(await inspect(name, '{{.State.ExitCode}}'), '0', await logs(name));
  } finally {
    await removeContainers(name);
    removeDir(dir);
  }
});
