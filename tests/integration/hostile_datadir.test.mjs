// hostile_datadir: traversal through the data dir's own entries. A symlink to
// a file outside (leak.csv), a symlink to a directory outside (out/), and a
// symlink in a dataset's place that points at another dataset's file through
// '..' must not be read, listed or deleted through: 404 dataset-not-found, or
// 400 for a path source that would leave the dir. The outside file is never
// touched.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { json, problem, runGroup, Target, uploadFixtures } from './hostile_lib.mjs';

const SECRET = 'secret,value\nhunter2,42\n';
const NO_DATASET = problem(404, 'dataset-not-found');
const BAD_PLAN = problem(400, 'invalid-plan');
const OUTSIDE = { ...NO_DATASET, alt: BAD_PLAN };

// The traps: made after the fixtures, inside the running server's data dir.
async function setup(target) {
  await uploadFixtures(target);
  const outside = path.join(target.root, 'outside');
  mkdirSync(outside, { recursive: true });
  writeFileSync(path.join(outside, 'secret.csv'), SECRET);
  symlinkSync(path.join(outside, 'secret.csv'), path.join(target.dataDir, 'leak.csv'));
  symlinkSync(path.join('..', 'outside', 'secret.csv'), path.join(target.dataDir, 'rel.csv'));
  symlinkSync(outside, path.join(target.dataDir, 'out'));
  symlinkSync('/etc/passwd', path.join(target.dataDir, 'passwd.csv'));
}

function noSecret(r) {
  assert.ok(!r.text.includes('hunter2') && !r.text.includes('root:'), `the outside file leaked: ${r.text.slice(0, 300)}`);
}

function cases() {
  const c = [];
  for (const name of ['leak', 'rel', 'passwd']) {
    c.push({ name: `GET dataset ${name}`, method: 'GET', path: `/v1/datasets/${name}`, expect: NO_DATASET, check: noSecret });
    c.push({ name: `DELETE dataset ${name}`, method: 'DELETE', path: `/v1/datasets/${name}`, expect: NO_DATASET });
    c.push(json('POST', '/v1/dataframes', JSON.stringify({ source: { dataset: name } }), NO_DATASET, { name: `dataframe on ${name}`, check: noSecret }));
    c.push(json('POST', '/v1/queries?wait=5', JSON.stringify({ plan: { source: { dataset: name } } }), NO_DATASET, { name: `query on ${name}`, check: noSecret }));
    c.push(json('POST', '/v1/dataframes', JSON.stringify({ source: { path: `${name}.csv` } }), OUTSIDE, { name: `path source ${name}.csv`, check: noSecret }));
  }
  for (const p of ['out/secret.csv', './out/secret.csv', 'out/../out/secret.csv', 'out//secret.csv']) {
    c.push(json('POST', '/v1/dataframes', JSON.stringify({ source: { path: p } }), OUTSIDE, { name: `path source ${p}`, check: noSecret }));
  }
  c.push({ name: 'GET dataset out', method: 'GET', path: '/v1/datasets/out', expect: NO_DATASET });
  c.push({
    name: 'the listing shows no link out of the data dir', method: 'GET', path: '/v1/datasets', expect: { status: 200, problem: false },
    check: (r) => {
      noSecret(r);
      assert.deepEqual(r.body.datasets.map((d) => d.name).sort(), ['trips', 'vendors', 'victim', 'victim2']);
    },
  });
  return c;
}

test('symlinks out of the data dir are not datasets', async (t) => {
  const target = await new Target('serve', { setup }).start();
  try {
    await runGroup(t, target, 'symlinks', cases());
    assert.equal(readFileSync(path.join(target.root, 'outside', 'secret.csv'), 'utf8'), SECRET);
  } finally {
    await target.stop();
  }
});
