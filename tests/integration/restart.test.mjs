// restart: the pending config lives in the state dir and survives a restart;
// FRAMED_CONFIG_* variables apply at start; a corrupt state file or a bad
// variable stops the start with a message that names it.
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { call, runToExit, startServer, tempRoot } from './lib.mjs';

test('the pending config survives a restart', async () => {
  const root = tempRoot();
  try {
    let srv = await startServer({ root });
    const patch = { shuffle_partitions: 12, csv_null_values: ['NA', '-'], nulls_first: true };
    const r = await call(srv.base, 'POST', '/v1/config', { json: patch });
    assert.equal(r.status, 200, r.text);
    await srv.stop();

    srv = await startServer({ root });
    try {
      const after = await call(srv.base, 'GET', '/v1/config');
      assert.equal(after.body.locked, false);
      assert.equal(after.body.values.shuffle_partitions, 12);
      assert.deepEqual(after.body.values.csv_null_values, ['NA', '-']);
      assert.equal(after.body.values.nulls_first, true);
    } finally {
      await srv.stop();
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('FRAMED_CONFIG_* variables set pending values', async () => {
  const srv = await startServer({ env: { FRAMED_CONFIG_SAMPLE_SIZE_FOR_SORT: '33' } });
  try {
    const r = await call(srv.base, 'GET', '/v1/config');
    assert.equal(r.body.values.sample_size_for_sort, 33);
  } finally {
    await srv.stop();
  }
});

test('a bad FRAMED_CONFIG_* variable stops the start and is named', async () => {
  const root = tempRoot();
  try {
    const res = await runToExit(
      ['serve', '--port', '0', '--data-dir', path.join(root, 'data'), '--state-dir', path.join(root, 'state')],
      { FRAMED_CONFIG_SHUFFLE_PARTITIONS: 'lots' },
    );
    assert.notEqual(res.code, 0);
    assert.equal(res.listened, false);
    assert.match(res.stderr, /FRAMED_CONFIG_SHUFFLE_PARTITIONS/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a corrupt state file stops the start and is named', async () => {
  const root = tempRoot();
  try {
    const stateDir = path.join(root, 'state');
    mkdirSync(stateDir, { recursive: true });
    const file = path.join(stateDir, 'config.json');
    writeFileSync(file, '{"shuffle_partitions": 4, \x00garbage');
    const res = await runToExit(
      ['serve', '--port', '0', '--data-dir', path.join(root, 'data'), '--state-dir', stateDir],
    );
    assert.notEqual(res.code, 0);
    assert.equal(res.signal, null, res.stderr);
    assert.equal(res.listened, false);
    assert.ok(res.stderr.includes(file), `stderr does not name ${file}:\n${res.stderr}`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
