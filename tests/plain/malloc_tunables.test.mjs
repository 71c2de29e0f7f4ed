// The roles restart once at start with glibc's malloc tunables (src/main.c,
// FR_MALLOC_TUNABLES in src/common/common.h): heaps grown 64 MiB at a time on
// huge pages. Run on the binary built without sanitizers (an ASan build takes no
// tunables and does not restart): CTest's plain_malloc_tunables, FRAMED_BIN =
// FRAMED_VALGRIND_BINARY. What is checked is what the kernel shows of the
// process: its [heap] mapping's size (the 64 MiB top pad), its mappings advised
// onto huge pages (VmFlags hg), its arenas' heaps (a worker allocates from one
// arena), and its environment; an operator's own malloc settings win, and
// tunables of other namespaces are kept.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { call, startServer, startWorker, waitWorkersActive } from '../integration/lib.mjs';

const MiB = 2 ** 20;
// the main heap's size in bytes (0 when there is none)
function heapBytes(pid) {
  const line = readFileSync(`/proc/${pid}/maps`, 'utf8').split('\n').find((l) => l.endsWith('[heap]'));
  if (!line) return 0;
  const [lo, hi] = line.split(' ')[0].split('-').map((x) => parseInt(x, 16));
  return hi - lo;
}
// glibc's heaps of arenas other than the main one: mappings at a 64 MiB boundary (HEAP_MAX_SIZE),
// read-write, whose reserve (---p) runs on to the next boundary
function arenaHeaps(pid) {
  const maps = readFileSync(`/proc/${pid}/maps`, 'utf8').trim().split('\n').map((l) => {
    const [range, perms, , , inode, file] = l.trim().split(/\s+/);
    const [lo, hi] = range.split('-').map((x) => BigInt(`0x${x}`));
    return { lo, hi, perms, anon: inode === '0' && !file };
  });
  const H = 64n * BigInt(MiB);
  let n = 0;
  for (let i = 0; i < maps.length; i++) {
    const m = maps[i];
    if (!m.anon || m.perms !== 'rw-p' || m.lo % H !== 0n) continue;
    const next = maps[i + 1];
    if (m.hi === m.lo + H || (next && next.anon && next.perms === '---p' && next.lo === m.hi && next.hi === m.lo + H)) n++;
  }
  return n;
}
// glibc advises nothing when the kernel's transparent huge pages are off
const thpOff = /\[never\]/.test(readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8'));
const hugeFlag = (pid) => /^VmFlags:.* hg/m.test(readFileSync(`/proc/${pid}/smaps`, 'utf8'));
const advisedHuge = (pid) => thpOff || hugeFlag(pid);
// glibc 2.36 cuts GLIBC_TUNABLES at its first ':' in place as it reads it (later ones
// may not): compare the first tunable
const tunables = (pid) => (readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').find((v) => v.startsWith('GLIBC_TUNABLES=')) ?? '').slice(15).split(':')[0];

test('serve and worker run with the malloc tunables, on huge pages', async () => {
  const srv = await startServer();
  try {
    assert.ok(heapBytes(srv.pid) >= 64 * MiB, `a 64 MiB heap: ${heapBytes(srv.pid)}`);
    assert.ok(advisedHuge(srv.pid), 'its heap is advised onto huge pages');
    assert.match(tunables(srv.pid), /^glibc\.malloc\.hugetlb=1/);
    // the same process answers (the restart kept its pid, flags and port)
    assert.equal((await call(srv.base, 'GET', '/v1/info')).status, 200);
    const w = await startWorker(srv.base);
    try {
      assert.ok(heapBytes(w.pid) >= 64 * MiB, `a worker's 64 MiB heap: ${heapBytes(w.pid)}`);
      assert.ok(advisedHuge(w.pid));
    } finally {
      await w.stop();
    }
  } finally {
    await srv.stop();
  }
});

// A worker runs each task on a thread of its own; with glibc's default of up to 8 arenas a
// core, each grew to a query's peak before the worker ran warm. With one arena a worker has
// no arena heaps besides the main one; the server's thread pool keeps its arenas (which shows
// the count sees them).
test('a worker allocates from one arena; the server keeps its threads\' arenas', async () => {
  const srv = await startServer({ args: ['--runner', 'remote', '--threads', '2'] });
  const local = await startServer({ args: ['--threads', '2'] });
  try {
    const w = await startWorker(srv.base, { args: ['--threads', '2'] });
    try {
      await waitWorkersActive(srv, 1);
      const rows = Array.from({ length: 20000 }, (_, i) => ({ k: i % 97, v: i, s: `row ${i}` }));
      const plan = { source: { rows }, ops: [{ groupby: ['k'], agg: ['sum(v) as v', 'count(*) as n'] }, { sort: ['k'] }] };
      for (const base of [srv.base, local.base]) {
        for (let i = 0; i < 4; i++) {
          const r = await call(base, 'POST', '/v1/queries?wait=60', { json: { plan } });
          assert.equal(r.body.state, 'succeeded', r.text);
          assert.equal(r.body.rows, 97);
        }
      }
      assert.equal(arenaHeaps(w.pid), 0, 'the worker made arena heaps');
      assert.ok(arenaHeaps(local.pid) >= 1, 'the local runner\'s threads have arenas of their own');
    } finally {
      await w.stop();
    }
  } finally {
    await srv.stop();
    await local.stop();
  }
});

test("an operator's malloc settings win; no second restart; other tunables are kept", async () => {
  for (const env of [{ GLIBC_TUNABLES: 'glibc.malloc.hugetlb=0' }, { MALLOC_TOP_PAD_: String(MiB) }]) {
    const srv = await startServer({ env });
    try {
      assert.ok(heapBytes(srv.pid) < 64 * MiB, `${JSON.stringify(env)}: no 64 MiB pad (${heapBytes(srv.pid)})`);
      assert.ok(!hugeFlag(srv.pid), `${JSON.stringify(env)}: nothing advised onto huge pages at start`);
      assert.equal(tunables(srv.pid), env.GLIBC_TUNABLES ?? '');
    } finally {
      await srv.stop();
    }
  }
  // the restarted process does not restart again, whatever its GLIBC_TUNABLES
  // (glibc drops them in secure execution): its marker says it restarted
  const again = await startServer({ env: { _FRAMED_MALLOC_RESTARTED: '1' } });
  try {
    assert.equal(tunables(again.pid), '', 'started as the restarted process: no second exec');
    assert.ok(heapBytes(again.pid) < 64 * MiB, `no 64 MiB pad (${heapBytes(again.pid)})`);
    assert.equal((await call(again.base, 'GET', '/v1/info')).status, 200);
  } finally {
    await again.stop();
  }
  const srv = await startServer({ env: { GLIBC_TUNABLES: 'glibc.rtld.optional_static_tls=4096' } });
  try {
    assert.equal(tunables(srv.pid), 'glibc.rtld.optional_static_tls=4096');
    assert.ok(heapBytes(srv.pid) >= 64 * MiB, 'ours after it');
    assert.ok(advisedHuge(srv.pid));
  } finally {
    await srv.stop();
  }
});
