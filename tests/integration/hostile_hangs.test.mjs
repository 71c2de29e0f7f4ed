// hostile_hangs: requests that used to never finish (or take minutes): a
// join with suffix "", column floods (duplicate and 1e5 CSV header names,
// records of 1e5 keys), a FIFO in the data dir. Each runs on its own server:
// it must be answered within a bound, with its problem, the server must
// still answer /livez, and SIGTERM must then stop it cleanly (a server that
// cannot stop is killed and the case fails).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { checkAnswer, problem, send, Target } from './hostile_lib.mjs';

const ANSWER_WITHIN_MS = 10000;
const COLUMNS = problem(422, 'too-many-columns');
const rows = [{ a: 1, b: 'x' }];
const wide = (n, name = (i) => `c${i}`) => Array.from({ length: n }, (_, i) => name(i));
const csvOf = (cols) => `${cols.join(',')}\n${cols.map(() => '1').join(',')}\n`;
const ndOf = (cols) => `${JSON.stringify(Object.fromEntries(cols.map((c) => [c, 1])))}\n`;
const jsonReq = (p, body) => ({ method: 'POST', path: p, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const upload = (name, ct, body) => ({ method: 'PUT', path: `/v1/datasets/${name}`, headers: { 'content-type': ct }, body });

// A FIFO (and a directory) where a dataset file would be.
function trapDir(root) {
  const data = path.join(root, 'data');
  mkdirSync(data, { recursive: true });
  execFileSync('mkfifo', [path.join(data, 'fifo.csv')]);
  mkdirSync(path.join(data, 'dir.csv'));
}

const CASES = [
  { name: 'a join with suffix ""', req: jsonReq('/v1/dataframes', { source: { rows }, ops: [{ join: { right: { source: { rows } }, on: ['a'], how: 'inner', suffix: '' } }] }), expect: problem(400, 'invalid-plan') },
  { name: 'one inline row of 1e5 keys', req: jsonReq('/v1/dataframes', { source: { rows: [Object.fromEntries(wide(100000).map((c) => [c, 1]))] } }), expect: COLUMNS },
  { name: 'a plan schema of 1e5 hints', req: jsonReq('/v1/dataframes', { source: { rows, schema: Object.fromEntries(wide(100000).map((c) => [c, 'int64'])) } }), expect: { ...COLUMNS, alt: problem(400, 'invalid-plan') } },
  { name: 'a CSV header of 10,001 columns', req: upload('wide', 'text/csv', csvOf(wide(10001))), expect: COLUMNS },
  { name: 'a CSV header of 1e5 columns', req: upload('wide', 'text/csv', csvOf(wide(100000))), expect: COLUMNS },
  // 2,000 copies of one name: refused or renamed, but answered soon.
  { name: 'a CSV header of 2,000 copies of a', req: upload('dups', 'text/csv', csvOf(wide(2000, () => 'a'))), expect: { status: [200, 201, 422], problem: false } },
  { name: 'an NDJSON record of 10,001 keys', req: upload('wide', 'application/x-ndjson', ndOf(wide(10001))), expect: COLUMNS },
  { name: 'an NDJSON record of 1e5 keys', req: upload('wide', 'application/x-ndjson', ndOf(wide(100000))), expect: COLUMNS },
  { name: 'GET a FIFO dataset', trap: true, req: { method: 'GET', path: '/v1/datasets/fifo' }, expect: problem(404, 'dataset-not-found') },
  { name: 'a query on a FIFO dataset', trap: true, req: jsonReq('/v1/dataframes', { source: { dataset: 'fifo' } }), expect: problem(404, 'dataset-not-found') },
  { name: 'a path source naming a FIFO', trap: true, req: jsonReq('/v1/dataframes', { source: { path: 'fifo.csv' } }), expect: { ...problem(404, 'dataset-not-found'), alt: problem(400, 'invalid-plan') } },
  { name: 'GET a directory named like a dataset', trap: true, req: { method: 'GET', path: '/v1/datasets/dir' }, expect: problem(404, 'dataset-not-found') },
  {
    name: 'the listing skips a FIFO and a directory', trap: true, req: { method: 'GET', path: '/v1/datasets' }, expect: { status: 200, problem: false },
    check: (r) => assert.deepEqual(r.body.datasets.map((d) => d.name), []),
  },
];

// Three at a time: most wait out their bound, and the machine is small.
describe('requests that never finished', { concurrency: 3 }, () => {
  for (const c of CASES) {
    it(c.name, async () => {
      const target = new Target('serve', { args: ['--max-body-bytes', String(16 << 20)] });
      if (c.trap) trapDir(target.root);
      await target.start();
      const failures = [];
      try {
        const r = await send(target.base, c.req, ANSWER_WITHIN_MS);
        checkAnswer(c, r);
        if (c.check) c.check(r);
        await target.assertUp(c.name);
        const runner = await send(target.base, { method: 'GET', path: '/v1/runner' });
        assert.equal(runner.body.state, 'none', 'a refused plan created the runner');
      } catch (e) {
        failures.push(e.message);
      }
      try {
        await target.stop();
      } catch (e) {
        failures.push(e.message.slice(0, 2000));
      }
      assert.deepEqual(failures, []);
    });
  }
});
