// dashboard_lib: what the browser tests of the dashboard share. Launches Debian's chromium
// through playwright-core (no browser download: a missing chromium fails, never skips), records
// every console error and page error of a page, saves screenshots into the artifacts dir
// (FRAMED_ARTIFACTS_DIR, else the build dir's artifacts/, else the OS temp dir's
// framed-artifacts/) and checks that a 390 px page never scrolls sideways.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BIN, SOURCE_DIR } from './lib.mjs';

export const CHROMIUM = process.env.FRAMED_CHROMIUM || '/usr/bin/chromium';
export const STATIC_DIR = SOURCE_DIR ? path.join(SOURCE_DIR, 'static') : null;
export const WIDE = { width: 1440, height: 900 };
export const NARROW = { width: 390, height: 844 };
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export function artifactsDir() {
  let dir = process.env.FRAMED_ARTIFACTS_DIR;
  if (!dir && BIN && existsSync(path.dirname(BIN))) dir = path.join(path.dirname(path.resolve(BIN)), 'artifacts');
  if (!dir) dir = path.join(tmpdir(), 'framed-artifacts');
  mkdirSync(dir, { recursive: true });
  return dir;
}

export async function launch() {
  assert.ok(SOURCE_DIR, 'FRAMED_SOURCE_DIR must name the source tree (CTest sets it)');
  assert.ok(existsSync(CHROMIUM),
    `Chromium is missing: no ${CHROMIUM}. Install Debian's package (apt-get install -y chromium); this test never downloads a browser.`);
  let pw;
  try {
    pw = await import('playwright-core');
  } catch (e) {
    throw new Error(`playwright-core is not installed (${e.message}); run \`PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci\` in ${SOURCE_DIR}`);
  }
  return pw.chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

// Statuses a test provokes on purpose (a 401 without the token, a 422, a 409, a 410 of a
// released result): Chromium logs each failed fetch as a console error, these are expected.
// expectedUrls: [status, path] pairs expected only for that path (a /readyz 503 during a drain).
export function openPage(browser, base, { expectedStatuses = [], expectedUrls = [] } = {}) {
  return (async () => {
    const context = await browser.newContext({ viewport: WIDE, acceptDownloads: true, locale: 'en-US', timezoneId: 'UTC' });
    context.setDefaultTimeout(15000);
    const page = await context.newPage();
    const errors = [];
    const allowed = expectedStatuses.length
      ? new RegExp(`Failed to load resource: the server responded with a status of (${expectedStatuses.join('|')})`) : null;
    page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() !== 'error') return;
      if (allowed && allowed.test(m.text())) return;
      const url = new URL(m.location().url || base, base);
      if (expectedUrls.some(([st, p]) => url.pathname === p && m.text().includes(`status of ${st}`))) return;
      errors.push(`console: ${m.text()} (${m.location().url})`);
    });
    page.on('requestfailed', (r) => {
      const why = r.failure()?.errorText || '';
      // A page left (navigation, reload) aborts its open event stream: not an error.
      if (/ERR_ABORTED/.test(why) && /\/v1\/events/.test(r.url())) return;
      errors.push(`requestfailed: ${r.url()} ${why}`);
    });
    await page.goto(`${base}/#/queries`);
    await page.waitForSelector('body[data-ready="1"]');
    return { context, page, errors, base };
  })();
}

// Opens a view by its hash route and waits for its section.
export async function go(page, hash, selector) {
  await page.evaluate((h) => { location.hash = h; }, hash);
  await page.waitForSelector(selector);
}

// A screenshot of the page as it is now, named "<name>-<width>.png".
export async function shoot(page, name, { fullPage = true } = {}) {
  const { width } = page.viewportSize();
  const file = path.join(artifactsDir(), `dashboard-${name}-${width}.png`);
  await page.screenshot({ path: file, fullPage });
  return file;
}

// At the current width, the page does not scroll sideways (only its tables and drawings do).
export async function assertNoSideScroll(page, what) {
  const [sw, iw] = await page.evaluate(() => [document.scrollingElement.scrollWidth, innerWidth]);
  assert.ok(sw <= iw, `${what}: the page is ${sw} px wide at ${iw} px`);
}

// Every view at both widths: screenshots, and no sideways scroll at 390 px. views: [name,
// hash, selector]. Ends at the wide size.
export async function shootViews(page, views, tag) {
  for (const size of [WIDE, NARROW]) {
    await page.setViewportSize(size);
    for (const [name, hash, selector] of views) {
      await go(page, hash, selector);
      await page.waitForFunction(() => !document.querySelector('.loading'), null, { timeout: 10000 });
      if (size === NARROW) {
        await assertNoSideScroll(page, `${name} at 390 px`);
        const small = await page.$$eval('input:not([type=checkbox]):not([type=file]), select, button:not(.sort)',
          (els) => els.filter((e) => e.offsetParent !== null && e.getBoundingClientRect().height < 44 && !e.classList.contains('skip'))
            .map((e) => `${e.tagName.toLowerCase()}#${e.id}`));
        assert.deepEqual(small, [], `${name} at 390 px: controls under 44 px tall`);
      }
      await page.evaluate(() => document.activeElement && document.activeElement.blur());
      await shoot(page, `${tag ? `${tag}-` : ''}${name}`);
    }
  }
  await page.setViewportSize(WIDE);
}

// Polls fn until it returns a truthy value; fails with what after timeoutMs.
export async function waitFor(fn, what, timeoutMs = 30000, everyMs = 100) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
