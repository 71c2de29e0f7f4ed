// dbgen: the db-benchmark tables (duckdblabs/db-benchmark), generated with a
// seeded PRNG so every run writes the same bytes. Shapes follow the
// benchmark's generators as the shared PERF-NOTES.md describes them:
//
// groupby G1_<N>_<K>_5_0 (K = 100, about 5% nulls in every column, written as
// empty CSV fields):
//   id1, id2: 'id001'..'id100'; id3: 'id0000000001'.. (N/K values);
//   id4, id5: int 1..K; id6: int 1..N/K; v1: int 1..5; v2: int 1..15;
//   v3: float in [0, 100] with 6 decimals (trailing zeros dropped).
//
// join (J1_<N>_NA_0_0): the keys of each key space are a permutation of
// 1..1.1n split into x (0.9n), l (0.1n, only on the left) and r (0.1n, only on
// the right); the left table draws its keys from x+l and the right tables
// from x+r, so about 90% of the left rows match. Key spaces: n = N/1e6 (at
// least 10) for id1, N/1e3 for id2, N for id3. Tables:
//   x      (N rows):     id1, id2, id3 ints, id4, id5, id6 the same as 'id<n>' strings, v1
//   small  (N/1e6 rows): id1, id4, v2
//   medium (N/1e3 rows): id1, id2, id4, id5, v2
//   big    (N rows):     id1, id2, id3, id4, id5, id6, v2
// v1 and v2 are floats in [0, 100] with 6 decimals; about 5% of the v values
// are null (the keys never are, as in the benchmark).

// mulberry32: a small, fast, well-mixed 32-bit generator.
export function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    float: next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)), // inclusive
    pick: (arr) => arr[Math.floor(next() * arr.length)],
    shuffle(arr) {
      for (let i = arr.length - 1; i > 0; i--) {
        const j = Math.floor(next() * (i + 1));
        [arr[i], arr[j]] = [arr[j], arr[i]];
      }
      return arr;
    },
  };
}

const pad = (n, w) => String(n).padStart(w, '0');
// A float in [0, 100] with at most 6 decimals, trailing zeros dropped.
const v6 = (r) => String(Math.round(r.float() * 100e6) / 1e6);

export function groupbyCsv(n, k = 100, seed = 1, nasPct = 5) {
  const r = rng(seed);
  const nk = Math.max(1, Math.floor(n / k));
  const na = nasPct / 100;
  const cell = (s) => (r.float() < na ? '' : s);
  const lines = ['id1,id2,id3,id4,id5,id6,v1,v2,v3'];
  for (let i = 0; i < n; i++) {
    lines.push([
      cell(`id${pad(r.int(1, k), 3)}`),
      cell(`id${pad(r.int(1, k), 3)}`),
      cell(`id${pad(r.int(1, nk), 10)}`),
      cell(String(r.int(1, k))),
      cell(String(r.int(1, k))),
      cell(String(r.int(1, nk))),
      cell(String(r.int(1, 5))),
      cell(String(r.int(1, 15))),
      cell(v6(r)),
    ].join(','));
  }
  return lines.join('\n') + '\n';
}

function splitXlr(n, r) {
  const total = Math.round(n * 1.1);
  const key = r.shuffle(Array.from({ length: total }, (_, i) => i + 1));
  const nx = Math.round(n * 0.9);
  return { x: key.slice(0, nx), l: key.slice(nx, n), r: key.slice(n, total) };
}

// Returns {x, small, medium, big}: CSV texts.
export function joinCsvs(n, seed = 2, nasPct = 5) {
  const r = rng(seed);
  const na = nasPct / 100;
  const v = () => (r.float() < na ? '' : v6(r));
  const nSmall = Math.max(10, Math.round(n / 1e6));
  const nMedium = Math.max(10, Math.round(n / 1e3));
  const k1 = splitXlr(nSmall, r), k2 = splitXlr(nMedium, r), k3 = splitXlr(n, r);
  const left = (k) => k.x.concat(k.l);
  const right = (k) => k.x.concat(k.r);
  const sid = (i) => `id${i}`;

  const x = ['id1,id2,id3,id4,id5,id6,v1'];
  const l1 = left(k1), l2 = left(k2), l3 = r.shuffle(left(k3)); // id3: each key once
  for (let i = 0; i < n; i++) {
    const a = r.pick(l1), b = r.pick(l2), c = l3[i % l3.length];
    x.push(`${a},${b},${c},${sid(a)},${sid(b)},${sid(c)},${v()}`);
  }
  const small = ['id1,id4,v2'];
  for (const a of r.shuffle(right(k1)).slice(0, nSmall)) small.push(`${a},${sid(a)},${v()}`);
  const medium = ['id1,id2,id4,id5,v2'];
  for (const b of r.shuffle(right(k2)).slice(0, nMedium)) {
    const a = r.pick(right(k1));
    medium.push(`${a},${b},${sid(a)},${sid(b)},${v()}`);
  }
  const big = ['id1,id2,id3,id4,id5,id6,v2'];
  const r3 = r.shuffle(right(k3));
  const r1 = right(k1), r2 = right(k2);
  for (let i = 0; i < n; i++) {
    const a = r.pick(r1), b = r.pick(r2), c = r3[i % r3.length];
    big.push(`${a},${b},${c},${sid(a)},${sid(b)},${sid(c)},${v()}`);
  }
  const text = (lines) => lines.join('\n') + '\n';
  return { x: text(x), small: text(small), medium: text(medium), big: text(big) };
}
