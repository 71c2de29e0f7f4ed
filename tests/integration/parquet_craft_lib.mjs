// parquet_craft_lib: a minimal Parquet writer (Thrift compact footer, hand-made
// pages) for tests that need files no real writer makes: a footer whose row
// count the pages do not back, one dictionary entry repeated 2^27 times by a
// single RLE run, a DELTA_BYTE_ARRAY page whose prefixes expand a few KB into
// a gigabyte, a gzip page of zeros claiming 64 MiB for one value. Each is
// valid or nearly valid Parquet; the reader must stay small on all of them.

// Unsigned LEB128 varint (BigInt-safe for the 2^33-row counts).
export function uvarint(n) {
  let v = BigInt(n);
  const out = [];
  for (;;) {
    const b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) out.push(b | 0x80);
    else {
      out.push(b);
      return Buffer.from(out);
    }
  }
}

const zigzag = (n) => { const v = BigInt(n); return (v << 1n) ^ (v >> 63n); };

// A Thrift compact struct being written: field headers with deltas.
class TStruct {
  constructor() { this.parts = []; this.last = 0; }
  head(fid, type) {
    const d = fid - this.last;
    this.parts.push(d > 0 && d <= 15 ? Buffer.from([(d << 4) | type]) : Buffer.concat([Buffer.from([type]), uvarint(zigzag(fid))]));
    this.last = fid;
  }
  i32(fid, v) { this.head(fid, 5); this.parts.push(uvarint(zigzag(v))); return this; }
  i64(fid, v) { this.head(fid, 6); this.parts.push(uvarint(zigzag(v))); return this; }
  bin(fid, b) { const v = Buffer.from(b); this.head(fid, 8); this.parts.push(uvarint(v.length), v); return this; }
  bool(fid, v) { this.head(fid, v ? 1 : 2); return this; }
  struct(fid, s) { this.head(fid, 12); this.parts.push(s.end()); return this; }
  // A list of structs (et 12), i32s (et 5) or binaries (et 8).
  list(fid, et, items) {
    this.head(fid, 9);
    const n = items.length;
    this.parts.push(n < 15 ? Buffer.from([(n << 4) | et]) : Buffer.concat([Buffer.from([0xf0 | et]), uvarint(n)]));
    for (const it of items) {
      if (et === 12) this.parts.push(it.end());
      else if (et === 5) this.parts.push(uvarint(zigzag(it)));
      else { const b = Buffer.from(it); this.parts.push(uvarint(b.length), b); }
    }
    return this;
  }
  end() { return Buffer.concat([...this.parts, Buffer.from([0])]); }
}

export const T = { BOOLEAN: 0, INT32: 1, INT64: 2, FLOAT: 4, DOUBLE: 5, BYTE_ARRAY: 6 };
export const ENC = { PLAIN: 0, RLE: 3, DELTA_BINARY_PACKED: 5, DELTA_BYTE_ARRAY: 7, RLE_DICTIONARY: 8 };
export const CODEC = { UNCOMPRESSED: 0, GZIP: 2 };

// A data page v1 (or a dictionary page, type 2) header followed by body.
// unc: the uncompressed size to claim (defaults to the body's length).
export function page(type, numValues, encoding, body, unc = body.length) {
  const h = new TStruct().i32(1, type).i32(2, unc).i32(3, body.length);
  if (type === 2) h.struct(7, new TStruct().i32(1, numValues).i32(2, encoding));
  else h.struct(5, new TStruct().i32(1, numValues).i32(2, encoding).i32(3, ENC.RLE).i32(4, ENC.RLE));
  return Buffer.concat([h.end(), body]);
}

// RLE_DICTIONARY data: bit width 1, then one RLE run of `count` zeros.
export const oneRun = (count) => Buffer.concat([Buffer.from([1]), uvarint(BigInt(count) << 1n), Buffer.from([0])]);

// A file. cols: [{name, type, optional, stringAnnotated}]; rowGroups:
// [{rows, chunks: [Buffer of pages per column], codec}]; numRows: the
// footer's total (defaults to the sum).
export function parquetFile(cols, rowGroups, numRows) {
  const parts = [Buffer.from('PAR1')];
  let off = 4;
  let total = 0n;
  const rgs = rowGroups.map((g) => {
    const chunks = g.chunks.map((pages, i) => {
      const start = off;
      parts.push(pages);
      off += pages.length;
      const md = new TStruct().i32(1, cols[i].type).list(2, 5, [0]).list(3, 8, [cols[i].name])
        .i32(4, g.codec ?? 0).i64(5, g.rows).i64(6, pages.length).i64(7, pages.length).i64(9, start);
      return new TStruct().i64(2, start).struct(3, md);
    });
    total += BigInt(g.rows);
    return new TStruct().list(1, 12, chunks).i64(2, 0).i64(3, g.rows);
  });
  const schema = [new TStruct().bin(4, 'schema').i32(5, cols.length), ...cols.map((c) => {
    const e = new TStruct().i32(1, c.type).i32(3, c.optional ? 1 : 0).bin(4, c.name);
    if (c.type === T.BYTE_ARRAY) e.i32(6, 0); // UTF8
    return e;
  })];
  const footer = new TStruct().i32(1, 1).list(2, 12, schema).i64(3, numRows ?? total).list(4, 12, rgs).end();
  const len = Buffer.alloc(4);
  len.writeUInt32LE(footer.length);
  parts.push(footer, len, Buffer.from('PAR1'));
  return Buffer.concat(parts);
}

// DELTA_BINARY_PACKED of values (small non-negative deltas), block 128, 4
// miniblocks of 32.
export function deltaBinaryPacked(values) {
  const out = [uvarint(128), uvarint(4), uvarint(values.length), uvarint(zigzag(values[0] ?? 0))];
  const deltas = [];
  for (let i = 1; i < values.length; i++) deltas.push(values[i] - values[i - 1]);
  for (let b = 0; b < deltas.length; b += 128) {
    const blk = deltas.slice(b, b + 128);
    const min = Math.min(...blk);
    out.push(uvarint(zigzag(min)));
    const widths = [];
    const bodies = [];
    for (let m = 0; m < 4; m++) {
      const mv = blk.slice(m * 32, m * 32 + 32).map((d) => d - min);
      if (mv.length === 0) { widths.push(0); continue; }
      while (mv.length < 32) mv.push(0);
      const w = Math.max(...mv).toString(2).length * (Math.max(...mv) > 0 ? 1 : 0);
      widths.push(w);
      const bytes = Buffer.alloc(w * 4);
      let bit = 0;
      for (const v of mv) {
        for (let k = 0; k < w; k++, bit++) if ((v >> k) & 1) bytes[bit >> 3] |= 1 << (bit & 7);
      }
      bodies.push(bytes);
    }
    out.push(Buffer.from(widths), ...bodies);
  }
  return Buffer.concat(out);
}
