// race: 50 first dataframe requests against 50 config changes, all at once.
// Exactly one runner is created, every dataframe reports its config, and no
// config change is lost (I2): each got 200 before the freeze or 409 after it.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { assertProblem, call, SAMPLE_PLAN, startServer } from './lib.mjs';

const N = 50;
const DEFAULT_PREVIEW_ROWS = 8;

test('concurrent freeze and config updates', async () => {
  const srv = await startServer();
  try {
    const frames = [];
    const configs = [];
    for (let i = 0; i < N; i++) {
      // Distinct values that differ from the default, so each one is traceable.
      const value = 100 + i;
      configs.push(call(srv.base, 'POST', '/v1/config', { json: { num_preview_rows: value } })
        .then((r) => ({ value, r })));
      frames.push(call(srv.base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN }));
    }
    const dfResults = await Promise.all(frames);
    const cfgResults = await Promise.all(configs);

    for (const r of dfResults) assert.equal(r.status, 201, r.text);
    const ids = new Set(dfResults.map((r) => r.body.config_id));
    assert.equal(ids.size, 1, `dataframes saw several configs: ${[...ids]}`);
    const [configId] = ids;

    const runner1 = await call(srv.base, 'GET', '/v1/runner');
    const runner2 = await call(srv.base, 'GET', '/v1/runner');
    assert.equal(runner1.body.state, 'active');
    assert.equal(runner1.body.config_id, configId);
    assert.equal(runner2.body.config_id, configId);

    const accepted = [];
    for (const { value, r } of cfgResults) {
      if (r.status === 200) {
        assert.equal(r.body.locked, false, 'a 200 came after the freeze');
        assert.equal(r.body.values.num_preview_rows, value, 'the update was not applied as a whole');
        accepted.push(value);
      } else {
        assertProblem(r, 409, 'config-locked');
        assert.equal(r.body.config_id, configId);
      }
    }

    const cfg = await call(srv.base, 'GET', '/v1/config');
    assert.equal(cfg.body.config_id, configId);
    const frozen = cfg.body.values.num_preview_rows;
    if (accepted.length === 0) {
      assert.equal(frozen, DEFAULT_PREVIEW_ROWS);
    } else {
      // Every 200 happened before the freeze, so the frozen value is one of them
      // (the last applied); a 409'd value never is.
      assert.ok(accepted.includes(frozen), `frozen ${frozen} is none of the accepted ${accepted}`);
    }

    const res = await fetch(`${srv.base}/v1/configs/${configId}`);
    const bytes = Buffer.from(await res.arrayBuffer());
    assert.equal(`sha256:${createHash('sha256').update(bytes).digest('hex')}`, configId);
    assert.equal(JSON.parse(bytes.toString('utf8')).num_preview_rows, frozen);
  } finally {
    await srv.stop();
  }
});
