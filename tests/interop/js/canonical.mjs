// Canonical JSON of Arrow values and types, computed from apache-arrow's own
// Data objects. The C++ side (tests/interop/json_values_util.cc) produces the
// same encoding from Quiver arrays; docs/interop.md specifies it. The two are
// written independently on purpose: a shared mistake would hide a real
// disagreement between the implementations.
//
// Values are read from the raw buffers of each Data (validity bitmap,
// offsets, values) rather than through Vector.get(), so floats keep their
// exact bit patterns and 64-bit integers never pass through a JS number.

import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as arrow from 'apache-arrow';

// Bytes per value of each IntervalUnit (YEAR_MONTH, DAY_TIME, MONTH_DAY_NANO).
export const INTERVAL_BYTES = [4, 8, 16];

const { Type, Precision, DateUnit, UnionMode } = arrow;

// The apache-arrow package actually loaded (path and version), so that the
// C++ tests can prove the peer is the pinned npm package and not a stand-in.
export function loadedArrowInfo() {
  let entry;
  if (typeof import.meta.resolve === 'function') {
    entry = fileURLToPath(import.meta.resolve('apache-arrow'));
  } else {
    entry = createRequire(import.meta.url).resolve('apache-arrow');
  }
  let dir = dirname(entry);
  // Walk up from the entry module to the package root.
  for (let i = 0; i < 4; ++i) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
      if (pkg.name === 'apache-arrow') return { version: pkg.version, dir };
    } catch { /* not the package root yet */ }
    dir = dirname(dir);
  }
  throw new Error(`cannot find package.json of apache-arrow above ${entry}`);
}

const UNIT_NAMES = ['s', 'ms', 'us', 'ns'];

// ---- Types ---------------------------------------------------------------

function metadataString(metadata) {
  if (!metadata || metadata.size === 0) return '';
  const parts = [];
  for (const [k, v] of metadata) parts.push(`${k}: ${v}`);
  return ` {${parts.join(', ')}}`;
}

// "name: type[ not null][ {k: v, ...}]"
export function fieldString(field) {
  return `${field.name}: ${typeString(field.type)}` +
      (field.nullable ? '' : ' not null') + metadataString(field.metadata);
}

function intName(type) {
  return `${type.isSigned ? 'int' : 'uint'}${type.bitWidth}`;
}

// The canonical type string (see docs/interop.md, "Type strings").
export function typeString(type) {
  switch (type.typeId) {
    case Type.Null: return 'null';
    case Type.Bool: return 'bool';
    case Type.Int: return intName(type);
    case Type.Float:
      switch (type.precision) {
        case Precision.HALF: return 'float16';
        case Precision.SINGLE: return 'float32';
        case Precision.DOUBLE: return 'float64';
      }
      break;
    case Type.Decimal:
      return `decimal${type.bitWidth}(${type.precision}, ${type.scale})`;
    case Type.Date: return type.unit === DateUnit.DAY ? 'date32' : 'date64';
    case Type.Time: return `time${type.bitWidth}[${UNIT_NAMES[type.unit]}]`;
    case Type.Timestamp:
      return `timestamp[${UNIT_NAMES[type.unit]}` +
          (type.timezone ? `, tz=${type.timezone}]` : ']');
    case Type.Duration: return `duration[${UNIT_NAMES[type.unit]}]`;
    case Type.Utf8: return 'utf8';
    case Type.LargeUtf8: return 'large_utf8';
    case Type.Binary: return 'binary';
    case Type.LargeBinary: return 'large_binary';
    case Type.Utf8View: return 'string_view';
    case Type.BinaryView: return 'binary_view';
    case Type.FixedSizeBinary: return `fixed_size_binary[${type.byteWidth}]`;
    case Type.Interval:
      return ['month_interval', 'day_time_interval', 'month_day_nano_interval'][type.unit];
    case Type.List: return `list<${fieldString(type.children[0])}>`;
    case Type.LargeList: return `large_list<${fieldString(type.children[0])}>`;
    case Type.FixedSizeList:
      return `fixed_size_list<${fieldString(type.children[0])}>[${type.listSize}]`;
    case Type.Struct: return `struct<${type.children.map(fieldString).join(', ')}>`;
    case Type.Map:
      return `map<${fieldString(type.children[0])}${type.keysSorted ? ', keys_sorted' : ''}>`;
    case Type.Union:
      return `${type.mode === UnionMode.Dense ? 'dense' : 'sparse'}_union<` +
          type.children.map((f, k) => `${fieldString(f)}=${type.typeIds[k]}`).join(', ') + '>';
    case Type.Dictionary:
      return `dictionary<values=${typeString(type.dictionary)}, ` +
          `indices=${intName(type.indices)}, ${type.isOrdered ? 'ordered' : 'unordered'}>`;
  }
  return `unsupported(${String(type)})`;
}

export function metadataPairs(metadata) {
  return metadata ? [...metadata.entries()].map(([k, v]) => [k, v]) : [];
}

export function schemaJson(schema) {
  return {
    fields: schema.fields.map((f) => ({
      name: f.name,
      type: typeString(f.type),
      nullable: f.nullable,
      metadata: metadataPairs(f.metadata),
    })),
    metadata: metadataPairs(schema.metadata),
  };
}

// ---- Values --------------------------------------------------------------

function hex(bytes) {
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}

function dataView(typed) {
  return new DataView(typed.buffer, typed.byteOffset, typed.byteLength);
}

// Arrow JS keeps the validity bitmap (and boolean values) un-sliced and
// addresses it with data.offset; every other buffer is already sliced to
// start at logical row 0 (see Data.slice in apache-arrow).
function isValid(data, i) {
  if (data.typeId === Type.Null) return false;
  const bitmap = data.nullBitmap;
  if (!bitmap || bitmap.length === 0 || data.nullCount === 0) return true;
  const bit = data.offset + i;
  return (bitmap[bit >> 3] & (1 << (bit & 7))) !== 0;
}

// Decimal text of a two's complement integer of `words` little-endian
// 32-bit words, with `scale` digits after the point (negative scale
// appends zeros).
export function formatDecimal(words, scale) {
  let v = 0n;
  for (let w = words.length - 1; w >= 0; --w) v = (v << 32n) | BigInt(words[w] >>> 0);
  const bits = BigInt(words.length * 32);
  if (v >> (bits - 1n)) v -= 1n << bits;
  const negative = v < 0n;
  let digits = (negative ? -v : v).toString();
  if (scale <= 0) {
    if (digits !== '0') digits += '0'.repeat(-scale);
    return (negative ? '-' : '') + digits;
  }
  digits = digits.padStart(scale + 1, '0');
  const text = `${digits.slice(0, digits.length - scale)}.${digits.slice(-scale)}`;
  return (negative ? '-' : '') + text;
}

function valueOffsetPair(data, i) {
  const o = data.valueOffsets;
  return [Number(o[i]), Number(o[i + 1])];
}

const dictionaryCache = new WeakMap();

// Every value of a (possibly chunked) dictionary Vector, canonicalised.
function dictionaryValues(vector) {
  let values = dictionaryCache.get(vector);
  if (!values) {
    values = [];
    for (const chunk of vector.data) {
      for (let i = 0; i < chunk.length; ++i) values.push(canonicalValue(chunk, i));
    }
    dictionaryCache.set(vector, values);
  }
  return values;
}

function primitiveValue(data, i) {
  const type = data.type;
  const view = dataView(data.values);
  switch (type.typeId) {
    case Type.Int:
    case Type.Date:
    case Type.Time:
    case Type.Timestamp:
    case Type.Duration: {
      const width = data.values.BYTES_PER_ELEMENT;
      const signed = type.typeId !== Type.Int || type.isSigned;
      switch (width) {
        case 1: return String(signed ? view.getInt8(i) : view.getUint8(i));
        case 2: return String(signed ? view.getInt16(2 * i, true) : view.getUint16(2 * i, true));
        case 4: return String(signed ? view.getInt32(4 * i, true) : view.getUint32(4 * i, true));
        case 8: return String(signed ? view.getBigInt64(8 * i, true)
                                     : view.getBigUint64(8 * i, true));
      }
      break;
    }
    case Type.Float:
      switch (type.precision) {
        case Precision.HALF: return String(view.getUint16(2 * i, true));
        case Precision.SINGLE: return String(view.getUint32(4 * i, true));
        case Precision.DOUBLE: return String(view.getBigUint64(8 * i, true));
      }
      break;
  }
  throw new Error(`no primitive reader for ${typeString(type)}`);
}

// The bytes of view i, read from the format's description: a 16-byte view
// of its length, then up to 12 bytes inline, or a prefix, a variadic buffer
// index and an offset.
function viewBytes(data, i) {
  const all = new Uint8Array(data.values.buffer, data.values.byteOffset,
                             data.values.byteLength);
  const v = all.subarray(i * 16, i * 16 + 16);
  const view = new DataView(v.buffer, v.byteOffset, 16);
  const n = view.getInt32(0, true);
  if (n <= 12) return v.subarray(4, 4 + n);
  const buffer = data.variadicBuffers[view.getInt32(8, true)];
  const offset = view.getInt32(12, true);
  if (buffer === undefined || offset + n > buffer.length) {
    throw new Error(`view ${i} points outside its data buffers`);
  }
  return buffer.subarray(offset, offset + n);
}

// The canonical JSON value of row i of `data` (docs/interop.md, "Values").
export function canonicalValue(data, i) {
  const type = data.type;
  if (type.typeId === Type.Union) {
    // No validity of its own: the type code and the child's value (null
    // when the child's slot is). Sparse children are sliced with the union,
    // dense offsets index them directly.
    const code = data.typeIds[i];
    const child = data.children[type.typeIdToChildIndex[code]];
    if (child === undefined) throw new Error(`union type code ${code} at ${i} names no child`);
    const j = type.mode === UnionMode.Dense ? Number(data.valueOffsets[i]) : i;
    return { type_code: code, value: canonicalValue(child, j) };
  }
  if (!isValid(data, i)) return null;
  switch (type.typeId) {
    case Type.Bool: {
      const bit = data.offset + i;
      return (data.values[bit >> 3] & (1 << (bit & 7))) !== 0;
    }
    case Type.Int: case Type.Float: case Type.Date: case Type.Time:
    case Type.Timestamp: case Type.Duration:
      return primitiveValue(data, i);
    case Type.Decimal: {
      const words = type.bitWidth / 32;
      return formatDecimal(data.values.subarray(i * words, (i + 1) * words), type.scale);
    }
    case Type.Utf8: case Type.LargeUtf8: {
      const [begin, end] = valueOffsetPair(data, i);
      return new TextDecoder('utf-8', { fatal: true }).decode(data.values.subarray(begin, end));
    }
    case Type.Binary: case Type.LargeBinary: {
      const [begin, end] = valueOffsetPair(data, i);
      return hex(data.values.subarray(begin, end));
    }
    case Type.Utf8View:
      return new TextDecoder('utf-8', { fatal: true }).decode(viewBytes(data, i));
    case Type.BinaryView:
      return hex(viewBytes(data, i));
    case Type.FixedSizeBinary: {
      const w = type.byteWidth;
      return hex(data.values.subarray(i * w, (i + 1) * w));
    }
    case Type.Interval: {  // the value's bytes in hex, as Quiver gives them
      const w = INTERVAL_BYTES[type.unit];
      const bytes = new Uint8Array(data.values.buffer, data.values.byteOffset,
                                   data.values.byteLength);
      return hex(bytes.subarray(i * w, (i + 1) * w));
    }
    case Type.List: case Type.LargeList: {
      const [begin, end] = valueOffsetPair(data, i);
      const out = [];
      for (let j = begin; j < end; ++j) out.push(canonicalValue(data.children[0], j));
      return out;
    }
    case Type.FixedSizeList: {
      const n = type.listSize;
      const out = [];
      for (let j = 0; j < n; ++j) out.push(canonicalValue(data.children[0], i * n + j));
      return out;
    }
    case Type.Struct: {
      const out = {};
      type.children.forEach((f, k) => { out[f.name] = canonicalValue(data.children[k], i); });
      return out;
    }
    case Type.Map: {
      const [begin, end] = valueOffsetPair(data, i);
      const entries = data.children[0];
      const out = [];
      for (let j = begin; j < end; ++j) {
        out.push([canonicalValue(entries.children[0], j),
                  canonicalValue(entries.children[1], j)]);
      }
      return out;
    }
    case Type.Dictionary: {
      const index = Number(data.values[i]);
      const values = dictionaryValues(data.dictionary);
      if (!(index >= 0 && index < values.length)) {
        throw new Error(`dictionary index ${index} outside [0, ${values.length})`);
      }
      return values[index];
    }
  }
  throw new Error(`no canonical form for ${typeString(type)}`);
}

export function canonicalColumn(data) {
  const out = [];
  for (let i = 0; i < data.length; ++i) out.push(canonicalValue(data, i));
  return out;
}

// The record batches of an opened reader. With no record batch at all,
// apache-arrow yields one empty placeholder batch of an internal class; a
// real zero-row batch is an ordinary RecordBatch and is kept.
export function realBatches(reader) {
  return [...reader].filter(
      (b) => b.constructor.name !== '_InternalEmptyPlaceholderRecordBatch');
}

// ---- Comparison ----------------------------------------------------------

function show(v) {
  const s = JSON.stringify(v);
  return s === undefined ? 'undefined' : (s.length > 200 ? `${s.slice(0, 200)}...` : s);
}

// The first difference between two canonical JSON values, as
// "path: expected X, got Y", or null when they are identical (object keys
// must also appear in the same order: struct fields are ordered).
export function firstDifference(expected, actual, path = '') {
  const where = path || 'value';
  const differ = () => `${where}: expected ${show(expected)}, got ${show(actual)}`;
  if (expected === null || actual === null || typeof expected !== 'object' ||
      typeof actual !== 'object') {
    return expected === actual ? null : differ();
  }
  if (Array.isArray(expected) !== Array.isArray(actual)) return differ();
  if (Array.isArray(expected)) {
    if (expected.length !== actual.length) {
      return `${where}: expected ${expected.length} elements ${show(expected)}, ` +
          `got ${actual.length} ${show(actual)}`;
    }
    for (let k = 0; k < expected.length; ++k) {
      const d = firstDifference(expected[k], actual[k], `${path}[${k}]`);
      if (d) return d;
    }
    return null;
  }
  const ek = Object.keys(expected);
  const ak = Object.keys(actual);
  if (show(ek) !== show(ak)) {
    return `${where}: expected fields ${show(ek)}, got ${show(ak)}`;
  }
  for (const k of ek) {
    const d = firstDifference(expected[k], actual[k], `${path}.${k}`);
    if (d) return d;
  }
  return null;
}
