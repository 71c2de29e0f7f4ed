// dashboard_cluster: the Cluster view in Debian's headless Chromium against `framed serve
// --runner remote` with two workers: both listed active with their slots and "last heartbeat
// ... ago", the runner's config ID on each once a query ran (no drift warning), the charts fed by
// the stats events; then one worker is stopped (SIGSTOP) and the page shows it suspect, then gone,
// while the other stays active; reset while it is stopped and freeze another config, and once it
// is back it shows the red drift warning (it holds a config that is not the runner's).
// Screenshots at 1440 and 390 px; a console error fails the test.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { call, startServer, startWorker } from './lib.mjs';
import { go, launch, openPage, shoot, shootViews, STATIC_DIR, waitFor } from './dashboard_lib.mjs';

const badge = (id) => `#workers-table tr[data-worker-id="${id}"] .badge`;

test('the Cluster view shows workers active, then one suspect and gone', { timeout: 180000 }, async () => {
  const browser = await launch();
  const coord = await startServer({ args: ['--runner', 'remote', '--static-dir', STATIC_DIR] });
  const workers = [];
  let stopped = null;
  try {
    for (let i = 0; i < 2; i++) workers.push(await startWorker(coord.base, { args: ['--threads', '2', '--data-dir', coord.dataDir] }));
    const listed = await waitFor(async () => {
      const w = (await call(coord.base, 'GET', '/v1/workers')).body.workers;
      return w.length === 2 && w.every((x) => x.state === 'active') ? w : null;
    }, 'two active workers');
    // /readyz answers 503 while the reset drains the runner (the header polls it)
    const { page, errors } = await openPage(browser, coord.base, { expectedUrls: [[503, '/readyz']] });
    await go(page, '#/cluster', '#workers-table');
    for (const w of listed) {
      await page.waitForSelector(`${badge(w.id)}[data-state="active"]`);
      const row = await page.textContent(`#workers-table tr[data-worker-id="${w.id}"]`);
      assert.match(row, /last heartbeat \d+ s ago/);
      assert.match(row, /\/ 2/, 'slots: running / threads');
      assert.ok(row.includes(w.url), row);
    }
    // a query gives the workers the runner's config: listed, and no drift warning
    const q = await call(coord.base, 'POST', '/v1/queries?wait=30', { json: { plan: { source: { rows: [{ a: 1 }, { a: 2 }] }, ops: [{ where: 'a > 1' }] } } });
    assert.equal(q.body.state, 'succeeded', q.text);
    await page.waitForSelector(`#runner-facts .config-id[data-config-id="${q.body.config_id}"]`);
    await waitFor(async () => (await page.$$(`#workers-table .config-id[data-config-id="${q.body.config_id}"]`)).length >= 1,
      'a worker to report the runner\'s config ID');
    assert.equal((await page.$$('#workers-table .drift')).length, 0, 'no drift: every worker holds the runner\'s config');
    await page.waitForSelector('#live-status:has-text("live")');
    await page.waitForSelector('#chart-tasks canvas');
    await waitFor(async () => Number(await page.getAttribute('#chart-queries', 'data-points')) >= 2, 'the charts to get stats points');
    await shootViews(page, [['cluster', '#/cluster', '#workers-table']], 'remote');
    // SIGSTOP one worker: no heartbeats, so suspect (3 heartbeats) then gone (10)
    stopped = workers[0];
    const victim = listed.find((w) => w.url === stopped.base) ?? listed[0];
    const other = listed.find((w) => w !== victim);
    process.kill(stopped.pid, 'SIGSTOP');
    await page.waitForSelector(`${badge(victim.id)}[data-state="suspect"]`, { timeout: 30000 });
    assert.equal(await page.getAttribute(badge(other.id), 'data-state'), 'active');
    await shoot(page, 'cluster-suspect');
    await page.waitForSelector(`${badge(victim.id)}[data-state="gone"]`, { timeout: 60000 });
    assert.equal(await page.getAttribute(badge(other.id), 'data-state'), 'active');
    assert.match(await page.textContent('#worker-counts'), /gone\s*1/);
    await page.setViewportSize({ width: 390, height: 844 });
    await shoot(page, 'cluster-gone');
    await page.setViewportSize({ width: 1440, height: 900 });
    await shoot(page, 'cluster-gone');
    // drift: the runner is reset while the victim is stopped (it never hears of it), a new
    // runner freezes another config, and the victim comes back holding the old one
    const reset = await call(coord.base, 'DELETE', '/v1/runner?force=true');
    assert.equal(reset.status, 200, reset.text);
    assert.equal((await call(coord.base, 'POST', '/v1/config', { json: { shuffle_partitions: 3 } })).status, 200);
    const q2 = await call(coord.base, 'POST', '/v1/queries?wait=30', { json: { plan: { source: { rows: [{ a: 1 }] } } } });
    assert.equal(q2.body.state, 'succeeded', q2.text);
    assert.notEqual(q2.body.config_id, q.body.config_id);
    process.kill(stopped.pid, 'SIGCONT');
    stopped = null;
    await page.waitForSelector(`#workers-table tr[data-state="active"]:has(.config-id[data-config-id="${q.body.config_id}"]) .drift`, { timeout: 30000 });
    assert.equal(await page.$eval('#workers-table .drift', (e) => getComputedStyle(e).backgroundColor), 'rgb(185, 28, 28)', 'the drift warning is red');
    await shoot(page, 'cluster-drift');
    assert.deepEqual(errors, [], 'the page logged errors');
  } finally {
    await browser.close();
    if (stopped) process.kill(stopped.pid, 'SIGCONT');
    for (const w of workers) await w.stop();
    await coord.stop();
  }
});
