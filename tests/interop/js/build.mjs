// Builds apache-arrow Data from canonical JSON values (the encoding of
// docs/interop.md) with makeData and raw typed arrays, so the bytes that
// Arrow JS writes are exactly the values listed in the expected JSON:
// float bit patterns, 64-bit integers and decimals never pass through a JS
// number. Also a seeded generator of random canonical values per type.

import * as arrow from 'apache-arrow';
import { INTERVAL_BYTES } from './canonical.mjs';

const { Type, Precision, DateUnit, UnionMode, makeData, Vector } = arrow;

// ---- Bit and byte helpers --------------------------------------------------

function packBits(bits) {
  const out = new Uint8Array(Math.max(1, (bits.length + 7) >> 3));
  bits.forEach((b, i) => { if (b) out[i >> 3] |= 1 << (i & 7); });
  return out;
}

function validity(values) {
  const nulls = values.filter((v) => v === null).length;
  return nulls === 0 ? { nullCount: 0 }
                     : { nullCount: nulls, nullBitmap: packBits(values.map((v) => v !== null)) };
}

function hexToBytes(hex) {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; ++i) out[i] = parseInt(hex.substr(2 * i, 2), 16);
  return out;
}

function concatBytes(chunks) {
  const total = chunks.reduce((n, c) => n + c.length, 0);
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) { out.set(c, at); at += c.length; }
  return out;
}

// Unscaled integer of a canonical decimal string ("-12.345" with scale 3 ->
// -12345n; "12300" with scale -2 -> 123n).
export function parseDecimal(text, scale) {
  const negative = text.startsWith('-');
  const body = negative ? text.slice(1) : text;
  let digits;
  if (scale > 0) {
    const [whole, frac = ''] = body.split('.');
    if (frac.length !== scale) throw new Error(`decimal ${text} does not have scale ${scale}`);
    digits = whole + frac;
  } else {
    if (body.includes('.')) throw new Error(`decimal ${text} has a point but scale ${scale}`);
    digits = scale === 0 || body === '0' ? body : body.slice(0, body.length + scale);
  }
  const v = BigInt(digits);
  return negative ? -v : v;
}

function decimalWords(unscaled, words) {
  const bits = BigInt(words * 32);
  let u = unscaled < 0n ? (1n << bits) + unscaled : unscaled;
  const out = [];
  for (let w = 0; w < words; ++w) { out.push(Number(u & 0xffffffffn)); u >>= 32n; }
  return out;
}

// ---- Canonical values -> Data ---------------------------------------------

// A valid placeholder value of `type` for the slots under a null parent
// whose child field is not nullable.
export function emptyValue(type) {
  switch (type.typeId) {
    case Type.Null: return null;
    case Type.Bool: return false;
    case Type.Utf8: case Type.LargeUtf8: case Type.Binary: case Type.LargeBinary:
    case Type.Utf8View: case Type.BinaryView: return '';
    case Type.FixedSizeBinary: return '00'.repeat(type.byteWidth);
    case Type.Interval: return '00'.repeat(INTERVAL_BYTES[type.unit]);
    case Type.Decimal: return type.scale > 0 ? `0.${'0'.repeat(type.scale)}` : '0';
    case Type.List: case Type.LargeList: case Type.Map: return [];
    case Type.FixedSizeList:
      return Array.from({ length: type.listSize }, () => emptyValue(type.children[0].type));
    case Type.Struct: {
      const out = {};
      for (const f of type.children) out[f.name] = emptyValue(f.type);
      return out;
    }
    case Type.Dictionary: return emptyValue(type.dictionary);
    case Type.Union: {  // the first child's empty value
      const f = type.children[0];
      return { type_code: type.typeIds[0], value: f.nullable ? null : emptyValue(f.type) };
    }
    default: return '0';
  }
}

function fill(type, values) {
  return values.map((v) => (v === null ? emptyValue(type) : v));
}

function numericData(type, values) {
  const placeholder = fill(type, values);
  let data;
  if (type.typeId === Type.Float) {
    const bits = type.precision === Precision.HALF ? Uint16Array
        : type.precision === Precision.SINGLE ? Uint32Array : BigUint64Array;
    const raw = bits === BigUint64Array ? bits.from(placeholder, (s) => BigInt(s))
                                        : bits.from(placeholder, (s) => Number(s));
    data = new type.ArrayType(raw.buffer);
  } else {
    const Ctor = type.ArrayType;
    const big = Ctor === BigInt64Array || Ctor === BigUint64Array;
    data = Ctor.from(placeholder, (s) => (big ? BigInt(s) : Number(s)));
  }
  return makeData({ type, length: values.length, ...validity(values), data });
}

function offsetsOf(lengths, large) {
  const out = large ? new BigInt64Array(lengths.length + 1) : new Int32Array(lengths.length + 1);
  let at = 0;
  lengths.forEach((n, i) => {
    at += n;
    out[i + 1] = large ? BigInt(at) : at;
  });
  return out;
}

function binaryData(type, values) {
  const isString = type.typeId === Type.Utf8 || type.typeId === Type.LargeUtf8;
  const large = type.typeId === Type.LargeUtf8 || type.typeId === Type.LargeBinary;
  const chunks = values.map((v) => (v === null ? new Uint8Array(0)
      : isString ? new TextEncoder().encode(v) : hexToBytes(v)));
  return makeData({
    type, length: values.length, ...validity(values),
    valueOffsets: offsetsOf(chunks.map((c) => c.length), large), data: concatBytes(chunks),
  });
}

// Views built here from the format's description, not by Arrow JS's
// builders: up to 12 bytes inline, longer values in data buffers of at most
// 256 bytes (so a column has several).
function viewData(type, values) {
  const isString = type.typeId === Type.Utf8View;
  const views = new Uint8Array(values.length * 16);
  const buffers = [];
  let current = [];
  let used = 0;
  values.forEach((v, i) => {
    if (v === null) return;
    const bytes = isString ? new TextEncoder().encode(v) : hexToBytes(v);
    const view = new DataView(views.buffer, i * 16, 16);
    view.setInt32(0, bytes.length, true);
    if (bytes.length <= 12) {
      views.set(bytes, i * 16 + 4);
      return;
    }
    if (used > 0 && used + bytes.length > 256) {
      buffers.push(concatBytes(current));
      current = [];
      used = 0;
    }
    views.set(bytes.subarray(0, 4), i * 16 + 4);
    view.setInt32(8, buffers.length, true);
    view.setInt32(12, used, true);
    current.push(bytes);
    used += bytes.length;
  });
  if (used > 0) buffers.push(concatBytes(current));
  return makeData({ type, length: values.length, ...validity(values), views,
    variadicBuffers: buffers });
}

function dictionaryData(type, values) {
  const pool = [];
  const index = new Map();
  const indices = values.map((v) => {
    if (v === null) return 0;
    const key = JSON.stringify(v);
    if (!index.has(key)) { index.set(key, pool.length); pool.push(v); }
    return index.get(key);
  });
  const dictionary = new Vector([fromCanonical(type.dictionary, pool)]);
  return withIndices(type, values, indices, dictionary);
}

// A dictionary column whose values are indices into an existing
// (possibly chunked) dictionary vector.
export function withIndices(type, values, indices, dictionary) {
  const Ctor = type.indices.ArrayType;
  const big = Ctor === BigInt64Array || Ctor === BigUint64Array;
  return makeData({
    type, length: values.length, ...validity(values), dictionary,
    data: Ctor.from(indices, (i) => (big ? BigInt(i) : i)),
  });
}

// Unions from {type_code, value} slots (a null slot, under a null parent,
// becomes the first child's empty value). Sparse: every child as long as
// the union, an empty value (or null) where another child holds the slot;
// dense: each child holds its own slots in order, offsets into them.
function unionData(type, values) {
  const slots = fill(type, values);
  const typeIds = Int8Array.from(slots, (s) => s.type_code);
  const childOf = (s) => type.typeIdToChildIndex[s.type_code];
  if (type.mode === UnionMode.Sparse) {
    const children = type.children.map((f, k) => fromCanonical(f.type, slots.map((s) => (
      childOf(s) === k ? s.value : (f.nullable ? null : emptyValue(f.type))))));
    return makeData({ type, length: values.length, nullCount: 0, typeIds, children });
  }
  const counts = type.children.map(() => 0);
  const valueOffsets = Int32Array.from(slots, (s) => counts[childOf(s)]++);
  const children = type.children.map((f, k) => fromCanonical(f.type,
      slots.filter((s) => childOf(s) === k).map((s) => s.value)));
  return makeData({ type, length: values.length, nullCount: 0, typeIds, valueOffsets,
    children });
}

// Data of `type` holding the canonical `values` (null = null slot).
export function fromCanonical(type, values) {
  const length = values.length;
  switch (type.typeId) {
    case Type.Null: return makeData({ type, length, nullCount: length });
    case Type.Bool:
      return makeData({ type, length, ...validity(values),
        data: packBits(values.map((v) => v === true)) });
    case Type.Int: case Type.Float: case Type.Date: case Type.Time:
    case Type.Timestamp: case Type.Duration:
      return numericData(type, values);
    case Type.Decimal: {
      const words = type.bitWidth / 32;
      const data = new Uint32Array(length * words);
      fill(type, values).forEach((v, i) => {
        data.set(decimalWords(parseDecimal(v, type.scale), words), i * words);
      });
      return makeData({ type, length, ...validity(values), data });
    }
    case Type.Utf8: case Type.LargeUtf8: case Type.Binary: case Type.LargeBinary:
      return binaryData(type, values);
    case Type.Utf8View: case Type.BinaryView:
      return viewData(type, values);
    case Type.FixedSizeBinary:
      return makeData({ type, length, ...validity(values),
        data: concatBytes(fill(type, values).map(hexToBytes)) });
    case Type.Interval: {
      const bytes = concatBytes(fill(type, values).map(hexToBytes));
      const words = new Int32Array(bytes.length / 4);
      new Uint8Array(words.buffer).set(bytes);
      return makeData({ type, length, ...validity(values), data: words });
    }
    case Type.List: case Type.LargeList: {
      const lists = values.map((v) => v ?? []);
      return makeData({
        type, length, ...validity(values),
        valueOffsets: offsetsOf(lists.map((l) => l.length), type.typeId === Type.LargeList),
        child: fromCanonical(type.children[0].type, lists.flat(1)),
      });
    }
    case Type.FixedSizeList: {
      const child = type.children[0];
      const lists = values.map((v) => v ?? Array.from({ length: type.listSize },
          () => (child.nullable ? null : emptyValue(child.type))));
      return makeData({ type, length, ...validity(values),
        child: fromCanonical(child.type, lists.flat(1)) });
    }
    case Type.Struct:
      return makeData({
        type, length, ...validity(values),
        children: type.children.map((f) => fromCanonical(f.type, values.map((v) => (
          v === null ? (f.nullable ? null : emptyValue(f.type)) : v[f.name])))),
      });
    case Type.Map: {
      const maps = values.map((v) => v ?? []);
      const entriesType = type.children[0].type;
      const pairs = maps.flat(1);
      const entries = makeData({
        type: entriesType, length: pairs.length, nullCount: 0,
        children: [fromCanonical(entriesType.children[0].type, pairs.map((p) => p[0])),
                   fromCanonical(entriesType.children[1].type, pairs.map((p) => p[1]))],
      });
      return makeData({ type, length, ...validity(values),
        valueOffsets: offsetsOf(maps.map((m) => m.length), false), child: entries });
    }
    case Type.Dictionary: return dictionaryData(type, values);
    case Type.Union: return unionData(type, values);
  }
  throw new Error(`cannot build ${String(type)}`);
}

// ---- Random canonical values ----------------------------------------------

// Mulberry32: small, fast and deterministic for a given seed.
export function makeRng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n) => Math.floor(next() * n);
  const u32 = () => BigInt(Math.floor(next() * 4294967296));
  return {
    next, int,
    pick: (list) => list[int(list.length)],
    bits64: () => (u32() << 32n) | u32(),
  };
}

const TEXT = ['', 'a', 'quiver', 'é', 'ß', 'Ωμέγα', '漢字', '🙂', '🏹🎯', 'tab\tnl\n', '"q"\\'];
const F16_SPECIAL = [0x7e00, 0x7c00, 0xfc00, 0x8000, 0x0000, 0x0001, 0x7bff, 0x3c00];
const F32_SPECIAL = [
  0x7fc00000, 0x7f800000, 0xff800000, 0x80000000, 0, 1, 0x7f7fffff, 0xffc00001];
const F64_SPECIAL = [0x7ff8000000000000n, 0x7ff0000000000000n, 0xfff0000000000000n,
  0x8000000000000000n, 0n, 1n, 0x7fefffffffffffffn, 0x3ff0000000000000n];
const DAY_MS = 86400000n;

function randomInteger(rng, type) {
  const bits = BigInt(type.bitWidth);
  const signed = type.isSigned;
  const min = signed ? -(1n << (bits - 1n)) : 0n;
  const max = signed ? (1n << (bits - 1n)) - 1n : (1n << bits) - 1n;
  const r = rng.int(10);
  if (r === 0) return String(min);
  if (r === 1) return String(max);
  const span = max - min + 1n;
  return String(min + (rng.bits64() % span));
}

function randomDecimal(rng, type) {
  const digits = 1 + rng.int(type.precision);
  let text = '';
  for (let i = 0; i < digits; ++i) text += String(rng.int(10));
  let v = BigInt(text);
  if (rng.int(2)) v = -v;
  const negative = v < 0n;
  let body = (negative ? -v : v).toString();
  if (type.scale > 0) {
    body = body.padStart(type.scale + 1, '0');
    body = `${body.slice(0, body.length - type.scale)}.${body.slice(-type.scale)}`;
  } else if (body !== '0') {
    body += '0'.repeat(-type.scale);
  }
  return (negative && v !== 0n ? '-' : '') + body;
}

function randomString(rng) {
  const parts = 1 + rng.int(3);
  let s = '';
  for (let i = 0; i < parts; ++i) s += rng.pick(TEXT);
  return s;
}

function randomHex(rng, n) {
  let s = '';
  for (let i = 0; i < n; ++i) s += rng.int(256).toString(16).padStart(2, '0');
  return s;
}

function randomTemporal(rng, type) {
  switch (type.typeId) {
    case Type.Date:
      return type.unit === DateUnit.DAY ? String(rng.int(200000) - 100000)
                                        : String(BigInt(rng.int(200000) - 100000) * DAY_MS);
    case Type.Time: {
      const perDay = [86400n, 86400000n, 86400000000n, 86400000000000n][type.unit];
      return String(rng.bits64() % perDay);
    }
    default:  // timestamp, duration: any int64
      return String(BigInt.asIntN(64, rng.bits64()) >> BigInt(rng.int(40)));
  }
}

// A random canonical value of `type`; null with some probability when
// `nullable`. Dictionary columns draw from a small per-type pool so that
// values repeat.
export function randomValue(rng, type, nullable, pools = new Map()) {
  if (type.typeId === Type.Null) return null;
  if (type.typeId === Type.Union) {  // no nulls of its own: its children have them
    const k = rng.int(type.children.length);
    const f = type.children[k];
    return { type_code: type.typeIds[k], value: randomValue(rng, f.type, f.nullable, pools) };
  }
  if (nullable && rng.int(6) === 0) return null;
  switch (type.typeId) {
    case Type.Bool: return rng.int(2) === 1;
    case Type.Int: return randomInteger(rng, type);
    case Type.Float:
      if (type.precision === Precision.HALF) {
        return String(rng.int(4) === 0 ? rng.pick(F16_SPECIAL) : rng.int(65536));
      }
      if (type.precision === Precision.SINGLE) {
        return String(rng.int(4) === 0 ? rng.pick(F32_SPECIAL) : Number(rng.bits64() >> 32n));
      }
      return String(rng.int(4) === 0 ? rng.pick(F64_SPECIAL) : rng.bits64());
    case Type.Decimal: return randomDecimal(rng, type);
    case Type.Date: case Type.Time: case Type.Timestamp: case Type.Duration:
      return randomTemporal(rng, type);
    case Type.Utf8: case Type.LargeUtf8: return randomString(rng);
    case Type.Binary: case Type.LargeBinary: return randomHex(rng, rng.int(9));
    case Type.Utf8View: return randomString(rng) + (rng.int(2) ? randomString(rng) : '');
    case Type.BinaryView: return randomHex(rng, rng.int(40));
    case Type.FixedSizeBinary: return randomHex(rng, type.byteWidth);
    case Type.Interval: return randomHex(rng, INTERVAL_BYTES[type.unit]);
    case Type.List: case Type.LargeList: {
      const f = type.children[0];
      return Array.from({ length: rng.int(5) }, () => randomValue(rng, f.type, f.nullable, pools));
    }
    case Type.FixedSizeList: {
      const f = type.children[0];
      return Array.from({ length: type.listSize },
          () => randomValue(rng, f.type, f.nullable, pools));
    }
    case Type.Struct: {
      const out = {};
      for (const f of type.children) out[f.name] = randomValue(rng, f.type, f.nullable, pools);
      return out;
    }
    case Type.Map: {
      const [kf, vf] = type.children[0].type.children;
      const seen = new Set();
      const out = [];
      for (let n = rng.int(4); n > 0; --n) {
        const key = randomValue(rng, kf.type, false, pools);
        if (seen.has(JSON.stringify(key))) continue;
        seen.add(JSON.stringify(key));
        out.push([key, randomValue(rng, vf.type, vf.nullable, pools)]);
      }
      return out;
    }
    case Type.Dictionary: {
      const key = typeKey(type.dictionary);
      if (!pools.has(key)) {
        pools.set(key, Array.from({ length: 5 }, () => randomValue(rng, type.dictionary, false)));
      }
      return rng.pick(pools.get(key));
    }
  }
  throw new Error(`no generator for ${String(type)}`);
}

function typeKey(type) { return String(type); }

export function randomColumn(rng, field, length, pools = new Map()) {
  return Array.from({ length }, () => randomValue(rng, field.type, field.nullable, pools));
}
