// sql_lock: SQL SET racing the freeze obeys I2 as POST /v1/config does:
// each SET lands before the snapshot (and the frozen config holds one of
// those values) or gets 409 config-locked naming the frozen config; SHOW
// and EXPLAIN sent meanwhile never freeze anything themselves.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { call, rowsPlan, startServer } from './lib.mjs';

const J = (sql) => ({ json: { sql } });

test('SET racing the first dataframe: before the snapshot, or 409; never lost', async () => {
  const srv = await startServer();
  try {
    for (let round = 0; round < 3; round++) {
      const values = Array.from({ length: 24 }, (_, i) => 100 + round * 100 + i);
      const sets = values.map((v) => call(srv.base, 'POST', '/v1/queries', J(`SET shuffle_partitions = ${v}`)));
      const freeze = call(srv.base, 'POST', '/v1/dataframes', { json: rowsPlan([{ a: 1 }]) });
      const answers = await Promise.all(sets);
      const df = await freeze;
      assert.equal(df.status, 201, df.text);
      const conf = (await call(srv.base, 'GET', '/v1/config')).body;
      assert.equal(conf.locked, true);
      assert.equal(df.body.config_id, conf.config_id);
      const landed = [];
      answers.forEach((r, i) => {
        if (r.status === 200) {
          assert.equal(r.body.locked, false, r.text);
          landed.push(values[i]);
        } else {
          assert.equal(r.status, 409, r.text);
          assert.equal(r.body.type, 'https://framed.dev/problems/config-locked');
          assert.equal(r.body.config_id, conf.config_id);
          assert.notEqual(conf.values.shuffle_partitions, values[i], 'a refused SET is in the frozen config');
        }
      });
      if (landed.length > 0) assert.ok(landed.includes(conf.values.shuffle_partitions), `frozen ${conf.values.shuffle_partitions}, landed ${landed}`);
      const show = await call(srv.base, 'POST', '/v1/queries', J('SHOW shuffle_partitions'));
      assert.equal(show.body.value, conf.values.shuffle_partitions);
      assert.equal(show.body.locked, true);
      assert.equal((await call(srv.base, 'DELETE', '/v1/runner')).status, 200);
    }
  } finally {
    await srv.stop();
  }
});

test('SHOW and a refused SET before any dataframe leave the service unfrozen', async () => {
  const srv = await startServer();
  try {
    const answers = await Promise.all([
      call(srv.base, 'POST', '/v1/queries', J('SHOW CONFIG')),
      call(srv.base, 'POST', '/v1/queries', J('SHOW ALL')),
      call(srv.base, 'POST', '/v1/queries', J('SET shuffle_partitions = -1')),
      call(srv.base, 'POST', '/v1/queries', J('RESET no_such_field')),
    ]);
    assert.deepEqual(answers.map((r) => r.status), [200, 200, 422, 422]);
    assert.equal(answers[0].body.locked, false);
    assert.equal(answers[0].body.config_id, null);
    assert.deepEqual(answers[0].body.values, answers[1].body.values);
    const runner = await call(srv.base, 'GET', '/v1/runner');
    assert.equal(runner.body.state, 'none');
    assert.equal((await call(srv.base, 'GET', '/v1/config')).body.locked, false);
  } finally {
    await srv.stop();
  }
});
