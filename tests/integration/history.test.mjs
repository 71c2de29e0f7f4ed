// history: which config a past query ran with outlives the runner and the
// process. Queries (plan, dataframe, failing, cancelled) are listed newest
// first with their config IDs after a reset and after restarts; a past
// query's result answers 410 naming the reset; the archived config is served
// from the history (hashing to its ID) while the store no longer has it (I4);
// a kill -9 in the middle of a stream of queries leaves a sound history and
// an "ended" runner; retention flags prune; diffs, filters, paging and bad
// parameters.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import Ajv2020 from 'ajv/dist/2020.js';
import { assertProblem, call, runToExit, SOURCE_DIR, startServer, startWorker, tempRoot } from './lib.mjs';

const FINAL = ['succeeded', 'failed', 'cancelled'];

// The answers validate against the schemas openapi.yaml names for them.
const SCHEMAS = path.join(SOURCE_DIR, 'api', 'schemas');
const AJV_BASE = 'https://framed.dev/schemas/';
const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
for (const f of readdirSync(SCHEMAS).filter((n) => n.endsWith('.json'))) {
  ajv.addSchema({ ...JSON.parse(readFileSync(path.join(SCHEMAS, f), 'utf8')), $id: AJV_BASE + f });
}
function assertSchema(ref, res) {
  const check = ajv.getSchema(AJV_BASE + ref);
  assert.ok(check, `Ajv resolves ${ref}`);
  assert.ok(check(res.body), `${ref}: ${ajv.errorsText(check.errors)}: ${res.text}`);
}

// 1M rows (about 10 MB): a sort of it keeps one runner thread busy for a while.
function writeBigCsv(file) {
  const lines = ['k,v'];
  for (let i = 0; i < 1000000; i++) lines.push(`${i % 1000},${(i * 7919) % 1000003}`);
  writeFileSync(file, lines.join('\n') + '\n');
}

async function run(srv, body, headers = {}) {
  const r = await call(srv.base, 'POST', '/v1/queries?wait=60', { json: body, headers });
  assert.equal(r.status, 200, r.text);
  return r.body;
}

async function killed(srv) {
  process.kill(srv.pid, 'SIGKILL');
  await srv.exited;
}

function sha256Id(bytes) {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

test('queries, runners and configs outlive a reset and restarts', async () => {
  const root = tempRoot();
  try {
    // A local runner on one thread: a plan, a dataframe's run, a failing query
    // and one cancelled while it waits behind two heavy ones; then a reset.
    let srv = await startServer({ root, args: ['--threads', '1'] });
    writeBigCsv(path.join(srv.dataDir, 'big.csv'));
    let r = await call(srv.base, 'POST', '/v1/config', { json: { shuffle_partitions: 4 } });
    assert.equal(r.status, 200, r.text);
    r = await call(srv.base, 'POST', '/v1/dataframes', {
      json: { source: { rows: [{ a: 1 }, { a: 2 }] }, ops: [{ where: 'a > 1' }] },
      headers: { 'x-request-id': 'freeze-req-1' },
    });
    assert.equal(r.status, 201, r.text);
    const df = r.body.id;
    const configId = r.body.config_id;
    const planQ = await run(srv, { plan: { source: { rows: [{ a: 1 }] } } });
    const dfQ = await run(srv, { dataframe: df });
    assert.equal(dfQ.state, 'succeeded');
    writeFileSync(path.join(srv.dataDir, 'bad.csv'), 'a,b\n1,2\n3,x\n');
    const badQ = await run(srv, { plan: { source: { path: 'bad.csv', options: { schema: { b: 'int64' } } } } });
    assert.equal(badQ.state, 'failed');
    const heavy = { plan: { source: { dataset: 'big' }, ops: [{ sort: ['v desc'] }] } };
    const heavyIds = [];
    for (let i = 0; i < 2; i++) heavyIds.push((await call(srv.base, 'POST', '/v1/queries', { json: heavy })).body.id);
    r = await call(srv.base, 'POST', '/v1/queries', { json: { plan: { source: { rows: [{ a: 2 }] } } } });
    assert.equal(r.status, 202, r.text);
    r = await call(srv.base, 'DELETE', `/v1/queries/${r.body.id}`);
    const cancelled = r.body;
    assert.equal(cancelled.state, 'cancelled', r.text);
    for (const id of heavyIds) { // both run to their end
      r = await call(srv.base, 'GET', `/v1/queries/${id}`);
      for (let i = 0; i < 1200 && !FINAL.includes(r.body.state); i++) {
        await new Promise((res) => setTimeout(res, 50));
        r = await call(srv.base, 'GET', `/v1/queries/${id}`);
      }
      assert.equal(r.body.state, 'succeeded', r.text);
    }
    // The dataframe's preview ran as a query of that dataframe: recorded too.
    r = await call(srv.base, 'GET', '/v1/queries?limit=500');
    const preview = r.body.queries.at(-1);
    assert.equal(preview.dataframe, df, r.text);
    assert.equal(preview.state, 'succeeded', r.text);
    const listed = [cancelled.id, ...heavyIds.slice().reverse(), badQ.id, dfQ.id, planQ.id, preview.id];

    // Live: listed newest first with live progress, not archived.
    r = await call(srv.base, 'GET', '/v1/queries');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.queries.map((q) => q.id), listed);
    assert.ok(r.body.queries.every((q) => q.archived === false && q.config_id === configId), r.text);
    assertSchema('history-query.json#/$defs/List', r);
    assert.equal(r.body.queries[0].state, 'cancelled');
    assert.equal(r.body.queries[1].state, 'succeeded');
    assert.equal(r.body.queries[1].rows, 1000000);
    r = await call(srv.base, 'GET', `/v1/queries/${planQ.id}`);
    assertSchema('query.json', r);
    assert.equal(r.body.archived, false);
    assert.match(r.body.runner_id, /^runner-[0-9a-f]{16}$/);
    const runnerA = r.body.runner_id;
    r = await call(srv.base, 'GET', '/v1/dataframes');
    assertSchema('history-dataframes.json', r);
    assert.deepEqual(r.body.dataframes.map((d) => d.id), [df]);

    r = await call(srv.base, 'DELETE', '/v1/runner', { headers: { 'x-request-id': 'reset-req-1' } });
    assert.equal(r.status, 200, r.text);

    // Archived: the same queries, the right config, their plan.
    r = await call(srv.base, 'GET', '/v1/queries');
    assert.deepEqual(r.body.queries.map((q) => q.id), listed);
    assert.ok(r.body.queries.every((q) => q.archived === true && q.config_id === configId), r.text);
    assertSchema('history-query.json#/$defs/List', r);
    assert.equal(r.body.queries[0].state, 'cancelled');
    assert.equal(r.body.queries[0].error, null);
    // The cancelled query's times: the runner took it (started), it ended,
    // and its elapsed time is the span between the two.
    const cq = r.body.queries[0];
    assert.match(cq.started_at ?? '', /^\d{4}-/, JSON.stringify(cq));
    assert.match(cq.finished_at ?? '', /^\d{4}-/, JSON.stringify(cq));
    assert.ok(Date.parse(cq.created_at) <= Date.parse(cq.started_at), JSON.stringify(cq));
    assert.ok(Date.parse(cq.started_at) <= Date.parse(cq.finished_at), JSON.stringify(cq));
    assert.equal(cq.elapsed_ms, Date.parse(cq.finished_at) - Date.parse(cq.started_at), JSON.stringify(cq));
    const [bad, ranDf, ranPlan] = r.body.queries.slice(3);
    assert.equal(bad.state, 'failed');
    assert.equal(bad.error.kind, 'malformed-data');
    assert.equal(bad.error.status, 422);
    assert.equal(ranDf.dataframe, df);
    assert.equal(ranPlan.rows, 1);
    assert.equal(ranPlan.runner_id, runnerA);
    r = await call(srv.base, 'GET', `/v1/queries/${dfQ.id}`);
    assert.equal(r.status, 200, r.text);
    assertSchema('history-query.json#/$defs/Archived', r);
    assert.equal(r.body.archived, true);
    assert.equal(r.body.config_id, configId);
    // A dataframe's query keeps the dataframe's plan: recoverable after the reset.
    assert.deepEqual(r.body.plan, { dataframe: df, plan: { source: { rows: [{ a: 1 }, { a: 2 }] }, ops: [{ where: 'a > 1' }] } });
    assert.deepEqual(r.body.task_config_ids, [configId]);
    r = await call(srv.base, 'GET', `/v1/queries/${planQ.id}`);
    assert.deepEqual(r.body.plan, { source: { rows: [{ a: 1 }] } });
    // Its stages as they were at its end, from the history.
    r = await call(srv.base, 'GET', `/v1/queries/${heavyIds[0]}/stages`);
    assert.equal(r.status, 200, r.text);
    assertSchema('stages.json', r);
    assert.equal(r.body.query_id, heavyIds[0]);
    assert.equal(r.body.state, 'succeeded');
    assert.equal(r.body.config_id, configId);
    assert.ok(r.body.stages.length >= 1, r.text);
    assert.equal(r.body.stages.at(-1).rows_out, 1000000, r.text);

    // Its result is gone with the runner: 410 naming the reset.
    r = await call(srv.base, 'GET', `/v1/queries/${planQ.id}/result`);
    assertProblem(r, 410, 'result-released');
    assert.match(r.body.detail, new RegExp(`runner ${runnerA} was reset at \\S+ \\(request reset-req-1\\)`));
    assert.equal(r.body.runner_id, runnerA);
    assert.match(r.body.reset_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assertProblem(await call(srv.base, 'GET', '/v1/queries/q-0000000000000000/result'), 404, 'query-not-found');

    r = await call(srv.base, 'GET', '/v1/runners');
    assert.equal(r.status, 200, r.text);
    assertSchema('history-runner.json#/$defs/List', r);
    assert.equal(r.body.runners[0].id, runnerA);
    assert.equal(r.body.runners[0].state, 'reset');
    assert.equal(r.body.runners[0].reset_by, 'reset-req-1');
    assert.equal(r.body.runners[0].frozen_by, 'freeze-req-1');
    assert.equal(r.body.runners[0].config_id, configId);
    assert.equal(r.body.runners[0].queries, 7);
    r = await call(srv.base, 'GET', `/v1/runners/${runnerA}`);
    assertSchema('history-runner.json', r);
    assert.equal(r.body.kind, 'local');
    assertProblem(await call(srv.base, 'GET', '/v1/runners/runner-0000000000000000'), 404, 'runner-not-found');

    // The archived bytes: from the history, hashing to the ID; the store let go (I4).
    let res = await fetch(`${srv.base}/v1/history/configs/${configId}`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('framed-config-archived'), 'true');
    assert.equal(res.headers.get('etag'), `"${configId}"`);
    const bytes = Buffer.from(await res.arrayBuffer());
    assert.equal(sha256Id(bytes), configId);
    assert.equal(JSON.parse(bytes.toString('utf8')).shuffle_partitions, 4);
    assertProblem(await call(srv.base, 'GET', `/v1/configs/${configId}`), 404, 'config-not-found');
    await srv.stop();

    // Restarted: everything is still there.
    srv = await startServer({ root });
    r = await call(srv.base, 'GET', '/v1/queries');
    assert.deepEqual(r.body.queries.map((q) => q.id), listed);
    assert.ok(r.body.queries.every((q) => q.archived === true && q.config_id === configId), r.text);
    r = await call(srv.base, 'GET', '/v1/runners');
    assert.deepEqual(r.body.runners.map((x) => [x.id, x.state, x.reset_by]), [[runnerA, 'reset', 'reset-req-1']]);
    res = await fetch(`${srv.base}/v1/history/configs/${configId}`);
    assert.equal(sha256Id(Buffer.from(await res.arrayBuffer())), configId);
    r = await call(srv.base, 'GET', `/v1/queries/${cancelled.id}`);
    assert.equal(r.body.state, 'cancelled');
    assertProblem(await call(srv.base, 'GET', `/v1/queries/${planQ.id}/result`), 410, 'result-released');
    await srv.stop();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('kill -9 during a stream of queries: the history opens sound, the runner ended', async () => {
  const root = tempRoot();
  try {
    let srv = await startServer({ root });
    // A heavy sort that is surely running at the kill: it must come back
    // interrupted, with its start and no end.
    writeBigCsv(path.join(srv.dataDir, 'big.csv'));
    const heavy = await call(srv.base, 'POST', '/v1/queries', { json: { plan: { source: { dataset: 'big' }, ops: [{ sort: ['v desc'] }] } } });
    assert.equal(heavy.status, 202, heavy.text);
    const sent = [];
    let stop = false;
    const stream = (async () => {
      for (let i = 0; !stop; i++) {
        try {
          const r = await call(srv.base, 'POST', '/v1/queries', {
            json: { plan: { source: { rows: Array.from({ length: 200 }, (_, j) => ({ a: j, b: i })) }, ops: [{ sort: ['a desc'] }] } },
          });
          if (r.status === 202 || r.status === 200) sent.push(r.body.id);
        } catch { return; } // the server is gone
      }
    })();
    while (sent.length < 20) await new Promise((r) => setTimeout(r, 5));
    const before = await call(srv.base, 'GET', `/v1/queries/${heavy.body.id}`);
    assert.equal(before.body.state, 'running', before.text);
    await killed(srv);
    stop = true;
    await stream;
    const file = path.join(root, 'state', 'history.sqlite3');
    const check = execFileSync('sqlite3', [file, 'PRAGMA integrity_check;'], { encoding: 'utf8' }).trim();
    assert.equal(check, 'ok');

    srv = await startServer({ root });
    let r = await call(srv.base, 'GET', '/v1/runners');
    assert.equal(r.body.runners.length, 1);
    assert.equal(r.body.runners[0].state, 'ended');
    r = await call(srv.base, 'GET', '/v1/queries?limit=500');
    const listed = new Map(r.body.queries.map((q) => [q.id, q]));
    for (const id of sent) assert.ok(listed.has(id), `accepted query ${id} is missing from the history`);
    for (const q of listed.values()) {
      assert.ok(FINAL.includes(q.state), `query ${q.id} is still ${q.state} after the restart`);
      if (q.state === 'failed') assert.equal(q.error.kind, 'interrupted');
    }
    const hq = listed.get(heavy.body.id);
    assert.ok(hq, 'the heavy query is listed');
    assert.equal(hq.state, 'failed', JSON.stringify(hq));
    assert.equal(hq.error.kind, 'interrupted');
    assert.match(hq.started_at ?? '', /^\d{4}-/, 'its start was recorded when it started');
    assert.ok(Date.parse(hq.started_at) >= Date.parse(hq.created_at), JSON.stringify(hq));
    assert.equal(hq.finished_at, null, 'when it stopped is not known');
    assert.equal(hq.elapsed_ms, null, 'no elapsed time that counts the downtime');
    assert.equal(execFileSync('sqlite3', [file, 'PRAGMA journal_mode;'], { encoding: 'utf8' }).trim(), 'wal');
    await srv.stop();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('retention flags prune the oldest queries; bad values are refused', async () => {
  const root = tempRoot();
  try {
    let srv = await startServer({ root, args: ['--history-max-queries', '2'] });
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push((await run(srv, { plan: { source: { rows: [{ a: i }] } } })).id);
    let r = await call(srv.base, 'GET', '/v1/queries');
    assert.deepEqual(r.body.queries.map((q) => q.id), [ids[3], ids[2]]);
    await srv.stop();
    // The variable names the same setting; pruned at the open.
    srv = await startServer({ root, env: { FRAMED_HISTORY_MAX_QUERIES: '1' } });
    r = await call(srv.base, 'GET', '/v1/queries');
    assert.deepEqual(r.body.queries.map((q) => q.id), [ids[3]]);
    await srv.stop();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  for (const args of [['--history-max-queries', '0'], ['--history-max-age-days', '0'], ['--history-max-age-days', 'x']]) {
    const res = await runToExit(['serve', '--port', '0', ...args]);
    assert.equal(res.code, 2, res.stderr);
    assert.match(res.stderr, /history-max/);
  }
});

test('the diff of two configs frozen in two cycles names the changed field', async () => {
  const srv = await startServer();
  try {
    const frozen = [];
    for (const n of [4, 6]) {
      assert.equal((await call(srv.base, 'POST', '/v1/config', { json: { shuffle_partitions: n } })).status, 200);
      frozen.push((await run(srv, { plan: { source: { rows: [{ a: 1 }] } } })).config_id);
      assert.equal((await call(srv.base, 'DELETE', '/v1/runner')).status, 200);
    }
    let r = await call(srv.base, 'GET', '/v1/runners');
    assert.deepEqual(r.body.runners.map((x) => x.config_id), [frozen[1], frozen[0]]);
    r = await call(srv.base, 'GET', `/v1/configs/diff?from=${frozen[0]}&to=${frozen[1]}`);
    assert.equal(r.status, 200, r.text);
    assertSchema('history-diff.json', r);
    assert.deepEqual(r.body, { from: frozen[0], to: frozen[1], equal: false,
      changes: [{ field: 'shuffle_partitions', from: 4, to: 6 }] });
    r = await call(srv.base, 'GET', `/v1/configs/diff?from=${frozen[1]}&to=${frozen[1]}`);
    assert.equal(r.body.equal, true);
    assert.deepEqual(r.body.changes, []);
    r = await call(srv.base, 'GET', `/v1/configs/diff?from=defaults&to=pending`);
    assert.deepEqual(r.body.changes, [{ field: 'shuffle_partitions', from: 8, to: 6 }]);
    assertProblem(await call(srv.base, 'GET', `/v1/configs/diff?from=defaults&to=sha256:${'0'.repeat(64)}`), 404, 'config-not-found');
  } finally {
    await srv.stop();
  }
});

test('filters and paging of the query list; bad parameters are 400 problems', async () => {
  const srv = await startServer();
  try {
    const before = new Date(Date.now() - 1000).toISOString();
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await run(srv, { plan: { source: { rows: [{ a: i }] } } })).id);
    writeFileSync(path.join(srv.dataDir, 'bad.csv'), 'a\nx\n');
    const bad = await run(srv, { plan: { source: { path: 'bad.csv', options: { schema: { a: 'int64' } } } } });
    ids.push(bad.id);
    const newest = ids.slice().reverse();
    // Paging: two at a time, every query once, newest first.
    const seen = [];
    let cursor = null;
    for (let page = 0; page < 10; page++) {
      const r = await call(srv.base, 'GET', `/v1/queries?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(r.status, 200, r.text);
      assert.ok(r.body.queries.length <= 2);
      seen.push(...r.body.queries.map((q) => q.id));
      cursor = r.body.next_cursor;
      if (!cursor) break;
    }
    assert.deepEqual(seen, newest);
    let r = await call(srv.base, 'GET', '/v1/queries?state=failed');
    assert.deepEqual(r.body.queries.map((q) => q.id), [bad.id]);
    r = await call(srv.base, 'GET', '/v1/queries?state=succeeded&limit=500');
    assert.equal(r.body.queries.length, 5);
    r = await call(srv.base, 'GET', `/v1/queries?config_id=${bad.config_id}&runner_id=${bad.runner_id ?? (await call(srv.base, 'GET', `/v1/queries/${bad.id}`)).body.runner_id}`);
    assert.equal(r.body.queries.length, 6);
    r = await call(srv.base, 'GET', `/v1/queries?config_id=sha256:${'0'.repeat(64)}`);
    assert.deepEqual(r.body.queries, []);
    r = await call(srv.base, 'GET', `/v1/queries?since=${before}&until=${new Date(Date.now() + 60000).toISOString()}`);
    assert.equal(r.body.queries.length, 6);
    r = await call(srv.base, 'GET', '/v1/queries?until=2000-01-01T00:00:00Z');
    assert.deepEqual(r.body.queries, []);
    r = await call(srv.base, 'GET', '/v1/queries?since=2026-01-01T00:00:00%2B01:00');
    assert.equal(r.body.queries.length, 6);
    // The runner's dataframes, newest first, paged (none yet: an empty list).
    r = await call(srv.base, 'GET', '/v1/dataframes');
    assert.deepEqual(r.body, { dataframes: [], next_cursor: null });
    const dfs = [];
    for (let i = 0; i < 3; i++) dfs.push((await call(srv.base, 'POST', '/v1/dataframes', { json: { source: { rows: [{ a: i }] } } })).body.id);
    r = await call(srv.base, 'GET', '/v1/dataframes?limit=2');
    assert.equal(r.body.dataframes.length, 2);
    const rest = await call(srv.base, 'GET', `/v1/dataframes?limit=2&cursor=${r.body.next_cursor}`);
    assert.deepEqual([...r.body.dataframes, ...rest.body.dataframes].map((d) => d.id).sort(), dfs.slice().sort());
    assert.equal(rest.body.next_cursor, null);

    const bads = [
      ['/v1/queries?limit=0', 'limit'], ['/v1/queries?limit=501', 'limit'], ['/v1/queries?limit=x', 'limit'],
      ['/v1/queries?cursor=zzz', 'cursor'], ['/v1/queries?cursor=c', 'cursor'], ['/v1/queries?state=done', 'state'],
      ['/v1/queries?since=yesterday', 'since'], ['/v1/queries?until=2026-13-01T00:00:00Z', 'until'],
      ['/v1/queries?since=2026-02-30T00:00:00Z', 'since'], ['/v1/queries?since=2026-01-01T00:00:00', 'since'],
      ['/v1/queries?config_id=sha256:abc', 'config_id'], ['/v1/queries?runner_id=bob', 'runner_id'],
      ['/v1/runners?limit=0', 'limit'], ['/v1/runners?cursor=-1', 'cursor'],
      ['/v1/dataframes?limit=9999', 'limit'], ['/v1/dataframes?cursor=1_x', 'cursor'],
      ['/v1/history/configs/nope', 'id'], ['/v1/configs/diff?from=defaults', 'to'],
      ['/v1/configs/diff?from=abc&to=defaults', 'from'],
    ];
    for (const [url, parameter] of bads) {
      r = await call(srv.base, 'GET', url);
      assertProblem(r, 400, 'invalid-parameter');
      assert.equal(r.body.parameter, parameter, url);
    }
  } finally {
    await srv.stop();
  }
});

test('a corrupt history file is moved aside at the start; queries run and are recorded', async () => {
  const root = tempRoot();
  try {
    const state = path.join(root, 'state');
    execFileSync('mkdir', ['-p', state]);
    writeFileSync(path.join(state, 'history.sqlite3'), 'not a database '.repeat(1000));
    const srv = await startServer({ root });
    const aside = readdirSync(state).filter((f) => f.startsWith('history.sqlite3.corrupt-'));
    assert.equal(aside.length, 1, readdirSync(state).join(' '));
    assert.ok(srv.logLines().some((l) => l.level === 'error' && /history.*corrupt.*moved aside/.test(l.msg)), srv.stderr());
    const q = await run(srv, { plan: { source: { rows: [{ a: 1 }] } } });
    assert.equal(q.state, 'succeeded');
    const r = await call(srv.base, 'GET', '/v1/queries');
    assert.deepEqual(r.body.queries.map((x) => x.id), [q.id]);
    const m = /^framed_history_errors_total (\d+)$/m.exec((await call(srv.base, 'GET', '/metrics')).text);
    assert.ok(m && Number(m[1]) >= 1, 'the corrupt file is counted');
    const accepted = srv.logLines().find((l) => l.msg === 'query accepted' && l.query_id === q.id);
    assert.ok(accepted, 'a "query accepted" line names the query');
    assert.equal(accepted.config_id, q.config_id);
    assert.match(accepted.runner_id, /^runner-/);
    const finished = srv.logLines().find((l) => l.msg === 'query finished' && l.query_id === q.id);
    assert.equal(finished.state, 'succeeded');
    assert.equal(finished.rows, 1);
    assert.equal(typeof finished.elapsed_ms, 'number');
    await srv.stop();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a forced reset during heavy queries: every end is logged and recorded with its runner', async () => {
  const root = tempRoot();
  try {
    const srv = await startServer({ root, args: ['--threads', '1'] });
    writeBigCsv(path.join(srv.dataDir, 'big.csv'));
    const heavy = { plan: { source: { dataset: 'big' }, ops: [{ sort: ['v desc'] }] } };
    const ids = [];
    for (let i = 0; i < 4; i++) {
      const r = await call(srv.base, 'POST', '/v1/queries', { json: heavy });
      assert.equal(r.status, 202, r.text);
      ids.push(r.body.id);
    }
    const runnerId = (await call(srv.base, 'GET', `/v1/queries/${ids[0]}`)).body.runner_id;
    assert.match(runnerId, /^runner-/);
    let r = await call(srv.base, 'DELETE', '/v1/runner?force=true');
    assert.equal(r.status, 200, r.text);
    // The reset waited for every query's end hook: each one is logged with
    // its runner and recorded as ended, none left queued or running.
    for (const id of ids) {
      const lines = srv.logLines().filter((l) => l.msg === 'query finished' && l.query_id === id);
      assert.equal(lines.length, 1, `one "query finished" line for ${id}`);
      assert.equal(lines[0].runner_id, runnerId, JSON.stringify(lines[0]));
    }
    r = await call(srv.base, 'GET', '/v1/queries?limit=500');
    for (const id of ids) {
      const q = r.body.queries.find((x) => x.id === id);
      assert.ok(q, `${id} is listed`);
      assert.equal(q.runner_id, runnerId);
      assert.ok(FINAL.includes(q.state), JSON.stringify(q));
      assert.equal(q.archived, true);
    }
    assert.ok(r.body.queries.some((q) => ids.includes(q.id) && q.state === 'cancelled'), r.text);
    r = await call(srv.base, 'GET', `/v1/runners/${runnerId}`);
    assert.equal(r.body.state, 'reset');
    await srv.stop();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('the reset is recorded when the drain ends, before the release to a hung worker', async () => {
  const coord = await startServer({ args: ['--runner', 'remote'] });
  const worker = await startWorker(coord.base, { args: ['--threads', '1'] });
  let stopped = false;
  try {
    const q = await run(coord, { plan: { source: { rows: [{ a: 1 }] } } });
    assert.equal(q.state, 'succeeded', JSON.stringify(q));
    process.kill(worker.pid, 'SIGSTOP'); // the release to it hangs until its timeout
    stopped = true;
    const reset = call(coord.base, 'DELETE', '/v1/runner', { headers: { 'x-request-id': 'reset-hung-1' } });
    let seen = null;
    for (let i = 0; i < 400 && !seen; i++) {
      const live = await call(coord.base, 'GET', '/v1/runner');
      if (live.body.state === 'draining') {
        const runners = await call(coord.base, 'GET', '/v1/runners');
        const result = await call(coord.base, 'GET', `/v1/queries/${q.id}/result`);
        const still = await call(coord.base, 'GET', '/v1/runner');
        if (still.body.state === 'draining') seen = { runners, result };
      } else if (live.body.state === 'none') {
        break;
      }
      await new Promise((res) => setTimeout(res, 10));
    }
    assert.ok(seen, 'a GET /v1/runners answered while the reset was releasing');
    assert.equal(seen.runners.body.runners[0].state, 'reset', seen.runners.text);
    assert.equal(seen.runners.body.runners[0].reset_by, 'reset-hung-1');
    assertProblem(seen.result, 410, 'result-released');
    assert.match(seen.result.body.reset_at ?? '', /^\d{4}-/, seen.result.text);
    assert.equal((await reset).status, 200);
  } finally {
    if (stopped) process.kill(worker.pid, 'SIGCONT');
    await worker.stop();
    await coord.stop();
  }
});

test('a history that cannot be opened is left alone; the live config still diffs; history routes say 503', async () => {
  const root = tempRoot();
  try {
    const state = path.join(root, 'state');
    // Not a file SQLite can open (a directory): unavailable, never moved aside.
    execFileSync('mkdir', ['-p', path.join(state, 'history.sqlite3')]);
    const srv = await startServer({ root });
    assert.deepEqual(readdirSync(state).filter((f) => f.startsWith('history.sqlite3')), ['history.sqlite3']);
    const q = await run(srv, { plan: { source: { rows: [{ a: 1 }] } } });
    assert.equal(q.state, 'succeeded');
    let r = await call(srv.base, 'GET', `/v1/configs/diff?from=${q.config_id}&to=defaults`);
    assert.equal(r.status, 200, r.text);
    assertSchema('history-diff.json', r);
    assert.equal(r.body.equal, true, r.text);
    for (const url of ['/v1/queries', '/v1/runners', '/v1/runners/runner-0000000000000000',
      `/v1/history/configs/${q.config_id}`]) {
      assertProblem(await call(srv.base, 'GET', url), 503, 'unavailable');
    }
    await srv.stop();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('age retention end to end: a query older than --history-max-age-days goes at the start', async () => {
  const root = tempRoot();
  try {
    let srv = await startServer({ root });
    const old = (await run(srv, { plan: { source: { rows: [{ a: 1 }] } } })).id;
    const young = (await run(srv, { plan: { source: { rows: [{ a: 2 }] } } })).id;
    await srv.stop();
    const file = path.join(root, 'state', 'history.sqlite3');
    const threeDays = 3 * 86400 * 1000;
    execFileSync('sqlite3', [file, `UPDATE queries SET created_at = created_at - ${threeDays} WHERE id = '${old}';`]);
    srv = await startServer({ root, args: ['--history-max-age-days', '2'] });
    const r = await call(srv.base, 'GET', '/v1/queries');
    assert.deepEqual(r.body.queries.map((q) => q.id), [young]);
    await srv.stop();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a big inline plan is kept as its sha256 and size, so the file stays small', async () => {
  const root = tempRoot();
  try {
    const srv = await startServer({ root });
    const ids = [];
    for (let i = 0; i < 3; i++) {
      const rows = Array.from({ length: 25000 }, (_, j) => ({ a: j, b: `row-${i}-${j}-padding` }));
      ids.push((await run(srv, { plan: { source: { rows } } })).id);
    }
    assert.equal((await call(srv.base, 'DELETE', '/v1/runner')).status, 200);
    const r = await call(srv.base, 'GET', `/v1/queries/${ids[0]}`);
    assert.equal(r.status, 200, r.text);
    assertSchema('history-query.json#/$defs/Archived', r);
    assert.equal(r.body.plan.plan_truncated, true, JSON.stringify(r.body.plan));
    assert.match(r.body.plan.plan_sha256, /^sha256:[0-9a-f]{64}$/);
    assert.ok(r.body.plan.plan_bytes > 256 * 1024, JSON.stringify(r.body.plan));
    assert.equal(r.body.plan.source, undefined);
    let bytes = 0;
    for (const f of readdirSync(srv.stateDir).filter((n) => n.startsWith('history.sqlite3'))) {
      bytes += statSync(path.join(srv.stateDir, f)).size;
    }
    assert.ok(bytes < 2 * 1024 * 1024, `the history files hold ${bytes} bytes for three ~1 MB plans`);
    await srv.stop();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
