// tpch_gen: our own generator of TPC-H-shaped data (not dbgen's bytes, its
// shape): the 8 tables with the spec's columns, keys and value domains
// (TPC-H 2.18, clause 4.2.3), scaled by SF (0.1: lineitem ~600k rows, orders
// 150k, customer 15k, part 20k, partsupp 80k, supplier 1k, nation 25,
// region 5), seeded so every run writes the same bytes, as CSV files with a
// header (<dir>/<table>.csv). Prices are written with 2 decimals, quantities
// as integers, dates as YYYY-MM-DD. Comments are words without commas.
//
// Usage: node tests/tpch/tpch_gen.mjs <dir> [sf]   (or import generateTpch)
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// mulberry32, as tests/integration/dbgen.mjs uses.
function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1));
  return { float: next, int, pick: (arr) => arr[Math.floor(next() * arr.length)] };
}

export const REGIONS = ['AFRICA', 'AMERICA', 'ASIA', 'EUROPE', 'MIDDLE EAST'];
export const NATIONS = [
  ['ALGERIA', 0], ['ARGENTINA', 1], ['BRAZIL', 1], ['CANADA', 1], ['EGYPT', 4], ['ETHIOPIA', 0],
  ['FRANCE', 3], ['GERMANY', 3], ['INDIA', 2], ['INDONESIA', 2], ['IRAN', 4], ['IRAQ', 4],
  ['JAPAN', 2], ['JORDAN', 4], ['KENYA', 0], ['MOROCCO', 0], ['MOZAMBIQUE', 0], ['PERU', 1],
  ['CHINA', 2], ['ROMANIA', 3], ['SAUDI ARABIA', 4], ['VIETNAM', 2], ['RUSSIA', 3],
  ['UNITED KINGDOM', 3], ['UNITED STATES', 1],
];
export const SEGMENTS = ['AUTOMOBILE', 'BUILDING', 'FURNITURE', 'MACHINERY', 'HOUSEHOLD'];
export const PRIORITIES = ['1-URGENT', '2-HIGH', '3-MEDIUM', '4-NOT SPECIFIED', '5-LOW'];
export const SHIPMODES = ['REG AIR', 'AIR', 'RAIL', 'SHIP', 'TRUCK', 'MAIL', 'FOB'];
export const INSTRUCTIONS = ['DELIVER IN PERSON', 'COLLECT COD', 'NONE', 'TAKE BACK RETURN'];
const TYPE_S1 = ['STANDARD', 'SMALL', 'MEDIUM', 'LARGE', 'ECONOMY', 'PROMO'];
const TYPE_S2 = ['ANODIZED', 'BURNISHED', 'PLATED', 'POLISHED', 'BRUSHED'];
const TYPE_S3 = ['TIN', 'NICKEL', 'BRASS', 'STEEL', 'COPPER'];
const CONT_S1 = ['SM', 'LG', 'MED', 'JUMBO', 'WRAP'];
const CONT_S2 = ['CASE', 'BOX', 'BAG', 'JAR', 'PKG', 'PACK', 'CAN', 'DRUM'];
const COLORS = ['almond', 'antique', 'aquamarine', 'azure', 'beige', 'bisque', 'black', 'blanched', 'blue',
  'blush', 'brown', 'burlywood', 'burnished', 'chartreuse', 'chiffon', 'chocolate', 'coral', 'cornflower',
  'cornsilk', 'cream', 'cyan', 'dark', 'deep', 'dim', 'dodger', 'drab', 'firebrick', 'floral', 'forest',
  'frosted', 'gainsboro', 'ghost', 'goldenrod', 'green', 'grey', 'honeydew', 'hot', 'indian', 'ivory',
  'khaki', 'lace', 'lavender', 'lawn', 'lemon', 'light', 'lime', 'linen', 'magenta', 'maroon', 'medium',
  'metallic', 'midnight', 'mint', 'misty', 'moccasin', 'navajo', 'navy', 'olive', 'orange', 'orchid',
  'pale', 'papaya', 'peach', 'peru', 'pink', 'plum', 'powder', 'puff', 'purple', 'red', 'rose', 'rosy',
  'royal', 'saddle', 'salmon', 'sandy', 'seashell', 'sienna', 'sky', 'slate', 'smoke', 'snow', 'spring',
  'steel', 'tan', 'thistle', 'tomato', 'turquoise', 'violet', 'wheat', 'white', 'yellow'];
const WORDS = ['furiously', 'quickly', 'carefully', 'blithely', 'slyly', 'final', 'regular', 'special',
  'pending', 'express', 'ironic', 'bold', 'even', 'silent', 'unusual', 'deposits', 'requests', 'packages',
  'accounts', 'instructions', 'theodolites', 'foxes', 'pinto', 'beans', 'asymptotes', 'courts', 'dolphins',
  'ideas', 'platelets', 'sauternes', 'sleep', 'wake', 'haggle', 'nag', 'use', 'boost', 'affix', 'detect',
  'integrate', 'cajole', 'among', 'above', 'according', 'across', 'after', 'along', 'around'];

// Days since 1970-01-01 and back.
const DAY_MS = 86400000;
const dayOf = (iso) => Date.parse(`${iso}T00:00:00Z`) / DAY_MS;
const isoOf = (day) => new Date(day * DAY_MS).toISOString().slice(0, 10);
const START_DATE = dayOf('1992-01-01');
const END_DATE = dayOf('1998-12-31');
const CURRENT_DATE = dayOf('1995-06-17');

const money = (cents) => (cents / 100).toFixed(2);
const pad = (n, w) => String(n).padStart(w, '0');

function comment(r, lo, hi) {
  const n = r.int(lo, hi);
  const w = [];
  for (let i = 0; i < n; i++) w.push(r.pick(WORDS));
  return w.join(' ');
}
const phone = (r, nation) => `${nation + 10}-${r.int(100, 999)}-${r.int(100, 999)}-${r.int(1000, 9999)}`;
const address = (r) => `${r.int(1, 9999)} ${r.pick(WORDS)} ${r.pick(['st', 'ave', 'rd', 'blvd'])}`;

// A buffered writer of one CSV file.
function csvWriter(file, header) {
  const fd = openSync(file, 'w');
  let buf = [header];
  let rows = 0;
  const flush = () => {
    if (buf.length) writeSync(fd, buf.join('\n') + '\n');
    buf = [];
  };
  return {
    row(fields) {
      buf.push(fields.join(','));
      rows++;
      if (buf.length >= 8192) flush();
    },
    close() {
      flush();
      closeSync(fd);
      return rows;
    },
  };
}

export const retailCents = (pk) => 90000 + (Math.floor(pk / 10) % 20001) + 100 * (pk % 1000);
// The spec's four suppliers of a part (clause 4.2.3, PS_SUPPKEY).
export function suppOf(pk, i, S) {
  return ((pk + i * (Math.floor(S / 4) + Math.floor((pk - 1) / S))) % S) + 1;
}

function small(dir) {
  const r = rng(11);
  const reg = csvWriter(path.join(dir, 'region.csv'), 'r_regionkey,r_name,r_comment');
  REGIONS.forEach((name, i) => reg.row([i, name, comment(r, 3, 8)]));
  const nat = csvWriter(path.join(dir, 'nation.csv'), 'n_nationkey,n_name,n_regionkey,n_comment');
  NATIONS.forEach(([name, rk], i) => nat.row([i, name, rk, comment(r, 3, 8)]));
  return { region: reg.close(), nation: nat.close() };
}

function suppliers(dir, S) {
  const r = rng(12);
  const w = csvWriter(path.join(dir, 'supplier.csv'), 's_suppkey,s_name,s_address,s_nationkey,s_phone,s_acctbal,s_comment');
  for (let k = 1; k <= S; k++) {
    const n = r.int(0, 24);
    w.row([k, `Supplier#${pad(k, 9)}`, address(r), n, phone(r, n), money(r.int(-99999, 999999)), comment(r, 4, 10)]);
  }
  return w.close();
}

function customers(dir, C) {
  const r = rng(13);
  const w = csvWriter(path.join(dir, 'customer.csv'), 'c_custkey,c_name,c_address,c_nationkey,c_phone,c_acctbal,c_mktsegment,c_comment');
  for (let k = 1; k <= C; k++) {
    const n = r.int(0, 24);
    w.row([k, `Customer#${pad(k, 9)}`, address(r), n, phone(r, n), money(r.int(-99999, 999999)), r.pick(SEGMENTS), comment(r, 4, 10)]);
  }
  return w.close();
}

function parts(dir, P, S) {
  const r = rng(14);
  const w = csvWriter(path.join(dir, 'part.csv'), 'p_partkey,p_name,p_mfgr,p_brand,p_type,p_size,p_container,p_retailprice,p_comment');
  const ps = csvWriter(path.join(dir, 'partsupp.csv'), 'ps_partkey,ps_suppkey,ps_availqty,ps_supplycost,ps_comment');
  for (let k = 1; k <= P; k++) {
    const names = [];
    while (names.length < 5) {
      const c = r.pick(COLORS);
      if (!names.includes(c)) names.push(c);
    }
    const m = r.int(1, 5);
    w.row([k, names.join(' '), `Manufacturer#${m}`, `Brand#${m}${r.int(1, 5)}`,
      `${r.pick(TYPE_S1)} ${r.pick(TYPE_S2)} ${r.pick(TYPE_S3)}`, r.int(1, 50),
      `${r.pick(CONT_S1)} ${r.pick(CONT_S2)}`, money(retailCents(k)), comment(r, 2, 5)]);
    for (let i = 0; i < 4; i++) ps.row([k, suppOf(k, i, S), r.int(1, 9999), money(r.int(100, 100000)), comment(r, 4, 10)]);
  }
  return { part: w.close(), partsupp: ps.close() };
}

// Orders and their 1-7 line items; o_orderstatus and o_totalprice follow
// from the items (clause 4.2.3).
function ordersAndLines(dir, O, C, P, S, clerks) {
  const r = rng(15);
  const ow = csvWriter(path.join(dir, 'orders.csv'),
    'o_orderkey,o_custkey,o_orderstatus,o_totalprice,o_orderdate,o_orderpriority,o_clerk,o_shippriority,o_comment');
  const lw = csvWriter(path.join(dir, 'lineitem.csv'),
    'l_orderkey,l_partkey,l_suppkey,l_linenumber,l_quantity,l_extendedprice,l_discount,l_tax,l_returnflag,' +
    'l_linestatus,l_shipdate,l_commitdate,l_receiptdate,l_shipinstruct,l_shipmode,l_comment');
  for (let i = 1; i <= O; i++) {
    // Sparse keys as in the spec: the first 8 of every 32.
    const okey = Math.floor((i - 1) / 8) * 32 + ((i - 1) % 8) + 1;
    let cust;
    do cust = r.int(1, C); while (cust % 3 === 0); // a third of the customers place no order
    const odate = r.int(START_DATE, END_DATE - 151);
    const nlines = r.int(1, 7);
    let total = 0;
    let nF = 0;
    for (let ln = 1; ln <= nlines; ln++) {
      const pk = r.int(1, P);
      const sk = suppOf(pk, r.int(0, 3), S);
      const qty = r.int(1, 50);
      const ext = qty * retailCents(pk); // cents
      const disc = r.int(0, 10); // hundredths
      const tax = r.int(0, 8);
      const ship = odate + r.int(1, 121);
      const commit = odate + r.int(30, 90);
      const receipt = ship + r.int(1, 30);
      const rflag = receipt <= CURRENT_DATE ? r.pick(['R', 'A']) : 'N';
      const lstatus = ship > CURRENT_DATE ? 'O' : 'F';
      if (lstatus === 'F') nF++;
      total += ext * (1 + tax / 100) * (1 - disc / 100);
      lw.row([okey, pk, sk, ln, qty, money(ext), (disc / 100).toFixed(2), (tax / 100).toFixed(2), rflag, lstatus,
        isoOf(ship), isoOf(commit), isoOf(receipt), r.pick(INSTRUCTIONS), r.pick(SHIPMODES), comment(r, 2, 6)]);
    }
    const status = nF === nlines ? 'F' : nF === 0 ? 'O' : 'P';
    ow.row([okey, cust, status, money(Math.round(total)), isoOf(odate), r.pick(PRIORITIES),
      `Clerk#${pad(r.int(1, clerks), 9)}`, 0, comment(r, 3, 9)]);
  }
  return { orders: ow.close(), lineitem: lw.close() };
}

// Writes the 8 tables into dir at scale factor sf; returns {table: rows}.
export function generateTpch(dir, sf = 0.1) {
  mkdirSync(dir, { recursive: true });
  const S = Math.max(1, Math.round(10000 * sf));
  const C = Math.max(1, Math.round(150000 * sf));
  const P = Math.max(1, Math.round(200000 * sf));
  const O = Math.max(1, Math.round(1500000 * sf));
  const clerks = Math.max(1, Math.round(1000 * sf));
  return {
    ...small(dir),
    supplier: suppliers(dir, S),
    customer: customers(dir, C),
    ...parts(dir, P, S),
    ...ordersAndLines(dir, O, C, P, S, clerks),
  };
}

// The column types every reader uses (framed infers these from the files).
export const TPCH_COLUMNS = {
  region: { r_regionkey: 'BIGINT', r_name: 'VARCHAR', r_comment: 'VARCHAR' },
  nation: { n_nationkey: 'BIGINT', n_name: 'VARCHAR', n_regionkey: 'BIGINT', n_comment: 'VARCHAR' },
  supplier: { s_suppkey: 'BIGINT', s_name: 'VARCHAR', s_address: 'VARCHAR', s_nationkey: 'BIGINT', s_phone: 'VARCHAR', s_acctbal: 'DOUBLE', s_comment: 'VARCHAR' },
  customer: { c_custkey: 'BIGINT', c_name: 'VARCHAR', c_address: 'VARCHAR', c_nationkey: 'BIGINT', c_phone: 'VARCHAR', c_acctbal: 'DOUBLE', c_mktsegment: 'VARCHAR', c_comment: 'VARCHAR' },
  part: { p_partkey: 'BIGINT', p_name: 'VARCHAR', p_mfgr: 'VARCHAR', p_brand: 'VARCHAR', p_type: 'VARCHAR', p_size: 'BIGINT', p_container: 'VARCHAR', p_retailprice: 'DOUBLE', p_comment: 'VARCHAR' },
  partsupp: { ps_partkey: 'BIGINT', ps_suppkey: 'BIGINT', ps_availqty: 'BIGINT', ps_supplycost: 'DOUBLE', ps_comment: 'VARCHAR' },
  orders: { o_orderkey: 'BIGINT', o_custkey: 'BIGINT', o_orderstatus: 'VARCHAR', o_totalprice: 'DOUBLE', o_orderdate: 'DATE', o_orderpriority: 'VARCHAR', o_clerk: 'VARCHAR', o_shippriority: 'BIGINT', o_comment: 'VARCHAR' },
  lineitem: { l_orderkey: 'BIGINT', l_partkey: 'BIGINT', l_suppkey: 'BIGINT', l_linenumber: 'BIGINT', l_quantity: 'BIGINT', l_extendedprice: 'DOUBLE', l_discount: 'DOUBLE', l_tax: 'DOUBLE', l_returnflag: 'VARCHAR', l_linestatus: 'VARCHAR', l_shipdate: 'DATE', l_commitdate: 'DATE', l_receiptdate: 'DATE', l_shipinstruct: 'VARCHAR', l_shipmode: 'VARCHAR', l_comment: 'VARCHAR' },
};

// The TPC-H queries of this suite, read from tests/tpch/q<n>.sql.
export const TPCH_QUERIES = ['q1', 'q3', 'q5', 'q6', 'q10', 'q12', 'q14', 'q19'];

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2];
  if (!dir) {
    process.stderr.write('usage: node tests/tpch/tpch_gen.mjs <dir> [sf]\n');
    process.exit(2);
  }
  const t0 = Date.now();
  const counts = generateTpch(dir, Number(process.argv[3] ?? 0.1));
  process.stdout.write(`${JSON.stringify(counts)} in ${Date.now() - t0} ms\n`);
}
