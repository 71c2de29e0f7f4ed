// lib: what the container tests share. They drive podman through
// scripts/container-podman.sh (this repository's containers.conf and a
// storage of its own) and build the images with scripts/container-image.sh
// (idempotent, cached; serialized by its lock). Containers are named
// framed-test-<pid>-<what>, run on host networking with loopback ports, and
// are removed (with their anonymous volumes) by name at the end.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

export const SOURCE_DIR = process.env.FRAMED_SOURCE_DIR ?? path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');
const PODMAN = path.join(SOURCE_DIR, 'scripts', 'container-podman.sh');
const IMAGE_SCRIPT = path.join(SOURCE_DIR, 'scripts', 'container-image.sh');
export const TAG = process.env.FRAMED_IMAGE_TAG ?? 'latest';
export const IMAGE = `framed:${TAG}`;
export const REDIS_IMAGE = `framed-redis:${TAG}`;
export const PREFIX = `framed-test-${process.pid}`;
// CTest's SKIP_REGULAR_EXPRESSION (CMakeLists.txt) turns this line into a skip.
export const SKIP_MARK = 'CONTAINER-SKIP:';

const execFileP = promisify(execFile);

// podman through the wrapper; resolves to trimmed stdout, rejects with stderr.
export async function podman(...args) {
  try {
    const { stdout } = await execFileP(PODMAN, args, { maxBuffer: 64 << 20 });
    return stdout.trim();
  } catch (e) {
    throw new Error(`podman ${args.join(' ')} failed (${e.code}): ${e.stderr}`);
  }
}

// The exit code of a podman command (no throw).
export async function podmanStatus(...args) {
  try {
    await execFileP(PODMAN, args);
    return 0;
  } catch (e) {
    return typeof e.code === 'number' ? e.code : 1;
  }
}

// Builds (or reuses) the images. Returns false, after printing the skip
// line, only when podman cannot start a container at all on this machine.
export function ensureImages() {
  const t0 = Date.now();
  try {
    execFileSync(IMAGE_SCRIPT, ['--probe'], { stdio: ['ignore', 'inherit', 'pipe'], encoding: 'utf8' });
  } catch (e) {
    process.stderr.write(e.stderr ?? '');
    if (e.status === 77) {
      console.log(`${SKIP_MARK} podman cannot start a container on this machine (see above); the container tests are skipped`);
      return false;
    }
    throw new Error(`scripts/container-image.sh failed (exit ${e.status}):\n${e.stderr}`);
  }
  console.log(`# images ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return true;
}

export async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

// A temp dir that uid 10001 (framed) and 10002 (redis) in the containers can
// write: the test runs as root or as another user, the containers do not.
export function sharedDir(what) {
  const dir = mkdtempSync(path.join(tmpdir(), `framed-ct-${what}-`));
  chmodSync(dir, 0o777);
  return dir;
}

export function removeDir(dir) {
  // Files written by the containers' users: a root test removes them; else
  // podman unshare would be needed, and a temp dir left over does no harm.
  try { rmSync(dir, { recursive: true, force: true }); } catch { /* left for tmp cleaning */ }
}

// Starts a detached container on host networking. The health check's
// systemd timer cannot run here (no systemd): `podman healthcheck run` runs it.
export async function runContainer(name, image, { env = {}, volumes = [], args = [], entrypoint } = {}) {
  const flags = ['run', '-d', '--name', name, '--network', 'host', '--pull', 'never', '--health-interval', 'disable'];
  for (const [k, v] of Object.entries(env)) flags.push('-e', `${k}=${v}`);
  for (const v of volumes) flags.push('-v', v);
  if (entrypoint) flags.push('--entrypoint', entrypoint);
  return podman(...flags, image, ...args);
}

export async function removeContainers(...names) {
  for (const n of names) await podmanStatus('rm', '-f', '-v', '-t', '0', n);
}

export async function logs(name) {
  try { return await podman('logs', '--tail', '60', name); } catch (e) { return String(e); }
}

export async function inspect(name, format) {
  return podman('inspect', '-f', format, name);
}

// Waits until GET url answers 200; returns the milliseconds it took.
export async function waitHttp(url, timeoutMs = 60000) {
  const t0 = Date.now();
  for (;;) {
    try {
      const r = await fetch(url);
      await r.text();
      if (r.status === 200) return Date.now() - t0;
    } catch { /* not up yet */ }
    if (Date.now() - t0 > timeoutMs) throw new Error(`${url} never answered 200 in ${timeoutMs} ms`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

export async function redisCli(name, port, ...args) {
  return podman('exec', name, 'redis-cli', '-p', String(port), ...args);
}

export { assert };
