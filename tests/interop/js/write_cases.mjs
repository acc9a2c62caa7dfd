// Writes IPC streams and files with apache-arrow for Quiver to read, plus
// the canonical JSON of the values put in (docs/interop.md).
//
//   node tests/interop/js/write_cases.mjs DIR
//
// Each case is built with Arrow JS's own API: makeData over raw typed
// arrays for the randomised cases (so the expected values are exact bit
// patterns), and vectorFromArray / Builder / tableFromArrays with plain JS
// values for the builder case. Before exiting, every file is read back with
// Arrow JS and compared with the JSON, so a mismatch seen by the C++ test is
// Quiver's and not a broken writer or script. manifest.json lists the cases,
// and apart from them the "quirk_cases" that exercise a known oddity of
// Arrow JS's writer (docs/interop.md). Prints "apache-arrow VERSION DIR"
// first; exits non-zero on any error.

import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as arrow from 'apache-arrow';
import {
  canonicalColumn, firstDifference, loadedArrowInfo, realBatches, schemaJson,
} from './canonical.mjs';
import { fromCanonical, makeRng, randomColumn, withIndices } from './build.mjs';

const {
  Field, Schema, RecordBatch, Vector, makeData, Struct, Dictionary, Type,
  Null, Bool, Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64,
  Float16, Float32, Float64, Decimal, DateDay, DateMillisecond, Utf8View, BinaryView,
  TimeSecond, TimeMillisecond, TimeMicrosecond, TimeNanosecond,
  TimestampSecond, TimestampMillisecond, TimestampMicrosecond, TimestampNanosecond,
  DurationSecond, DurationMillisecond, DurationMicrosecond, DurationNanosecond,
  IntervalYearMonth, IntervalDayTime, IntervalMonthDayNano,
  Utf8, LargeUtf8, Binary, LargeBinary, FixedSizeBinary, List, LargeList,
  FixedSizeList, Map_, SparseUnion, DenseUnion,
} = arrow;

const f = (name, type, nullable = true, metadata = null) =>
  new Field(name, type, nullable, metadata ? new Map(metadata) : null);
const dict = (values, indices, ordered = false) =>
  new Dictionary(values, indices, null, ordered);
const mapOf = (keyType, valueType, sorted = false, valueNullable = true) =>
  new Map_(f('entries', new Struct([f('key', keyType, false), f('value', valueType,
      valueNullable)]), false), sorted);

// ---- Case construction ----------------------------------------------------

// A batch over a struct Data whose children are the column Data.
function makeBatch(schema, columns, length) {
  const data = makeData({ type: new Struct(schema.fields), length, nullCount: 0,
    children: columns });
  return new RecordBatch(schema, data);
}

// Random columns for `rows` rows, cut into batches at `cuts` (row indices):
// every batch after the first is a slice with a non-zero offset, and all
// batches share each column's dictionary, as one table would.
function randomCase(name, seed, schema, rows, cuts) {
  const rng = makeRng(seed);
  const pools = new Map();
  const values = schema.fields.map((field) => randomColumn(rng, field, rows, pools));
  const whole = schema.fields.map((field, c) => fromCanonical(field.type, values[c]));
  // A slice of a null-type column would be written with null_count -1 (see
  // slicedNullCase), so null columns are made per batch instead; so are
  // view columns: Arrow JS 21.2 writes a sliced view array's views from
  // offset x 16 of a buffer it has already sliced (its assembler applies the
  // offset twice), so the views it writes are another rows'.
  const isView = (t) => t.typeId === Type.Utf8View || t.typeId === Type.BinaryView;
  const cut = (d, lo, n, c) => (d.typeId === Type.Null
    ? makeData({ type: d.type, length: n, nullCount: n })
    : isView(d.type) ? fromCanonical(d.type, values[c].slice(lo, lo + n)) : d.slice(lo, n));
  const bounds = [0, ...cuts, rows];
  const batches = [];
  const expected = [];
  for (let b = 0; b + 1 < bounds.length; ++b) {
    const [lo, hi] = [bounds[b], bounds[b + 1]];
    batches.push(makeBatch(schema, whole.map((d, c) => cut(d, lo, hi - lo, c)), hi - lo));
    expected.push({ length: hi - lo, columns: values.map((v) => v.slice(lo, hi)) });
  }
  return { name, schema, batches, expected };
}

const PRIMITIVES = new Schema([
  f('null', new Null()),
  f('bool', new Bool()),
  f('int8', new Int8()), f('int16', new Int16()), f('int32', new Int32()),
  f('int64', new Int64()),
  f('uint8', new Uint8()), f('uint16', new Uint16()), f('uint32', new Uint32()),
  f('uint64', new Uint64()),
  f('float16', new Float16()), f('float32', new Float32()), f('float64', new Float64()),
  f('date32', new DateDay()), f('date64', new DateMillisecond()),
  f('time32_s', new TimeSecond()), f('time32_ms', new TimeMillisecond()),
  f('time64_us', new TimeMicrosecond()), f('time64_ns', new TimeNanosecond()),
  f('ts_s', new TimestampSecond()), f('ts_ms', new TimestampMillisecond()),
  f('ts_us', new TimestampMicrosecond()), f('ts_ns', new TimestampNanosecond()),
  f('ts_s_utc', new TimestampSecond('UTC')),
  f('ts_ms_berlin', new TimestampMillisecond('Europe/Berlin')),
  f('ts_us_offset', new TimestampMicrosecond('+05:30')),
  f('ts_ns_ny', new TimestampNanosecond('America/New_York')),
  f('dur_s', new DurationSecond()), f('dur_ms', new DurationMillisecond()),
  f('dur_us', new DurationMicrosecond()), f('dur_ns', new DurationNanosecond()),
  f('iv_ym', new IntervalYearMonth()), f('iv_dt', new IntervalDayTime()),
  f('iv_mdn', new IntervalMonthDayNano()),
  f('int32_required', new Int32(), false, [['note', 'never null']]),
  f('float64_required', new Float64(), false),
], new Map([['producer', 'apache-arrow js'], ['case', 'primitives'], ['ünïcode', 'värde']]));

const BINARY = new Schema([
  f('utf8', new Utf8()), f('large_utf8', new LargeUtf8()),
  f('binary', new Binary()), f('large_binary', new LargeBinary()),
  f('fsb1', new FixedSizeBinary(1)), f('fsb3', new FixedSizeBinary(3)),
  f('fsb16', new FixedSizeBinary(16)),
  f('utf8_required', new Utf8(), false),
  f('dec_1_0', new Decimal(0, 1, 128)), f('dec_5_2', new Decimal(2, 5, 128)),
  f('dec_18_4', new Decimal(4, 18, 128)), f('dec_38_0', new Decimal(0, 38, 128)),
  f('dec_38_10', new Decimal(10, 38, 128)), f('dec_38_38', new Decimal(38, 38, 128)),
  f('dec_12_neg3', new Decimal(-3, 12, 128)),
  f('dec32_9_2', new Decimal(2, 9, 32)), f('dec32_4_neg1', new Decimal(-1, 4, 32)),
  f('dec64_18_4', new Decimal(4, 18, 64)), f('dec256_76_0', new Decimal(0, 76, 256)),
  f('dec256_76_30', new Decimal(30, 76, 256)), f('dec256_50_10', new Decimal(10, 50, 256)),
  f('utf8_view', new Utf8View()), f('binary_view', new BinaryView()),
]);

const point = new Struct([f('x', new Int64()), f('y', new FixedSizeBinary(2), false)]);
const NESTED = new Schema([
  f('list_int32', new List(f('item', new Int32()))),
  f('list_required_items', new List(f('item', new Int16(), false))),
  f('list_element_name', new List(f('element', new Utf8()))),
  f('large_list_utf8', new LargeList(f('item', new Utf8()))),
  f('fsl_float64_3', new FixedSizeList(3, f('item', new Float64()))),
  f('fsl_required_2', new FixedSizeList(2, f('item', new Uint8(), false))),
  f('struct', new Struct([f('a', new Int32()), f('b', new Utf8(), false),
    f('c', new List(f('item', new Bool())))])),
  f('struct_of_list', new Struct([f('xs', new LargeList(f('item', new Float32())))])),
  f('list_of_struct', new List(f('item', point))),
  f('list_of_list', new List(f('item', new List(f('item', new Int8()))))),
  f('fsl_of_struct', new FixedSizeList(2, f('item', new Struct([f('s', new Utf8())])))),
  f('map_utf8_list', mapOf(new Utf8(), new List(f('item', new Int32())))),
  f('map_sorted', mapOf(new Int32(), new Float64(), true)),
  f('map_of_struct', mapOf(new Utf8(), point)),
  f('list_of_map', new List(f('item', mapOf(new Int64(), new Binary())))),
  f('struct_field_meta', new Struct([f('m', new Int8(), true, [['unit', 'kg']])])),
]);

const unionPoint = new Struct([f('x', new Int64()), f('y', new Utf8(), false)]);
const UNIONS = new Schema([
  f('sparse', new SparseUnion([0, 1], [f('i', new Int32()), f('s', new Utf8())])),
  f('dense', new DenseUnion([0, 1], [f('i', new Int32()), f('s', new Utf8())])),
  f('sparse_codes', new SparseUnion([5, 2, 9],
      [f('b', new Bool()), f('d', new Float64()), f('p', unionPoint)])),
  f('dense_codes', new DenseUnion([127, 0, 3], [f('l', new List(f('item', new Int16()))),
    f('n', new Int8(), false), f('p', unionPoint)])),
  f('list_of_dense', new List(f('item', new DenseUnion([0, 1],
      [f('a', new Int64()), f('b', new Binary())])))),
  f('struct_of_sparse', new Struct([f('u', new SparseUnion([0, 1],
      [f('t', new TimestampMillisecond()), f('d', new Decimal(2, 9, 128))])), f('k', new Int8())])),
]);

const DICTIONARIES = new Schema([
  f('dict_utf8_i8', dict(new Utf8(), new Int8())),
  f('dict_utf8_i16_ordered', dict(new Utf8(), new Int16(), true)),
  f('dict_utf8_i32', dict(new Utf8(), new Int32())),
  f('dict_utf8_u8', dict(new Utf8(), new Uint8())),
  f('dict_utf8_u16', dict(new Utf8(), new Uint16())),
  f('dict_utf8_u32', dict(new Utf8(), new Uint32(), true)),
  f('dict_int64_i32', dict(new Int64(), new Int32())),
  f('dict_int16_u8', dict(new Int16(), new Uint8())),
  f('dict_binary_i8', dict(new Binary(), new Int8())),
  f('dict_large_utf8', dict(new LargeUtf8(), new Int32())),
  f('dict_fsb', dict(new FixedSizeBinary(4), new Int16())),
  f('dict_float64', dict(new Float64(), new Int32())),
  f('dict_decimal', dict(new Decimal(2, 9, 128), new Int32())),
  f('dict_date32', dict(new DateDay(), new Int32())),
  f('dict_required', dict(new Utf8(), new Int32()), false),
  f('list_of_dict', new List(f('item', dict(new Utf8(), new Int16())))),
  f('struct_of_dict', new Struct([f('d', dict(new Utf8(), new Int8()))])),
]);

const DICT_64 = new Schema([
  f('dict_utf8_i64', dict(new Utf8(), new Int64())),
  f('dict_utf8_u64', dict(new Utf8(), new Uint64())),
]);

// Dictionary batches that grow between record batches: the DictionaryBuilder
// keeps its dictionary and each flush() appends the new values as another
// chunk, which the writers emit as delta dictionary batches.
function deltaCase() {
  const type = dict(new Utf8(), new Int32());
  const schema = new Schema([f('color', type), f('n', new Int32())]);
  const builder = arrow.makeBuilder({ type, nullValues: [null] });
  const plan = [['red', 'green', null, 'red'], ['blue', 'green', 'violet'],
    [null, 'ochre', 'red', 'blue', 'ochre']];
  const batches = [];
  const expected = [];
  plan.forEach((values, b) => {
    for (const v of values) builder.append(v);
    const colors = builder.flush();
    const n = values.map((_, i) => (i % 3 === 2 ? null : String(100 * b + i)));
    batches.push(makeBatch(schema, [colors, fromCanonical(new Int32(), n)], values.length));
    expected.push({ length: values.length, columns: [values, n] });
  });
  return { name: 'dictionary_deltas', schema, batches, expected };
}

// A stream whose second batch replaces (not extends) the dictionary.
function replacementCase() {
  const type = dict(new Utf8(), new Int8());
  const schema = new Schema([f('word', type)]);
  const first = new Vector([fromCanonical(new Utf8(), ['alpha', 'beta'])]);
  const second = new Vector([fromCanonical(new Utf8(), ['gamma', 'delta', 'alpha'])]);
  const v1 = ['beta', 'alpha', null, 'beta'];
  const v2 = ['alpha', 'gamma', 'delta', null];
  const batches = [
    makeBatch(schema, [withIndices(type, v1, [1, 0, 0, 1], first)], 4),
    makeBatch(schema, [withIndices(type, v2, [2, 0, 1, 0], second)], 4),
  ];
  return {
    name: 'dictionary_replacement', schema, batches, streamOnly: true,
    expected: [{ length: 4, columns: [v1] }, { length: 4, columns: [v2] }],
  };
}

// Plain JS values through Arrow JS's builders; expected values by hand.
function builderCase() {
  const ts = [Date.UTC(2024, 1, 29, 12, 30), null, 0, -1000];
  const table = arrow.tableFromArrays({
    i32: arrow.vectorFromArray([1, null, -3, 2147483647], new Int32()),
    i64: arrow.vectorFromArray([1n, -(2n ** 63n), null, 2n ** 63n - 1n], new Int64()),
    u64: arrow.vectorFromArray([0n, 2n ** 64n - 1n, null, 42n], new Uint64()),
    f64: arrow.vectorFromArray([1.5, -0, null, Infinity], new Float64()),
    f32: arrow.vectorFromArray([0.25, null, -2, NaN], new Float32()),
    f16: arrow.vectorFromArray([1.5, -0, 65504, null], new Float16()),
    flag: arrow.vectorFromArray([true, false, null, true], new Bool()),
    text: arrow.vectorFromArray(['héllo', '', null, '🙂'], new Utf8()),
    day: arrow.vectorFromArray([new Date(Date.UTC(2000, 0, 2)), null,
      new Date(Date.UTC(1969, 11, 31)), new Date(0)], new DateDay()),
    ts_ms: arrow.vectorFromArray(ts, new TimestampMillisecond('UTC')),
    ts_us: arrow.vectorFromArray(ts, new TimestampMicrosecond()),
    words: arrow.vectorFromArray(['x', 'y', 'x', null], dict(new Utf8(), new Int32())),
    lists: arrow.vectorFromArray([[1, 2], null, [], [null, 5]],
        new List(f('item', new Int32()))),
    pairs: arrow.vectorFromArray([{ a: 1, b: 'one' }, null, { a: null, b: 'three' },
      { a: 4, b: null }], new Struct([f('a', new Int16()), f('b', new Utf8())])),
    maps: arrow.vectorFromArray([new Map([['k', 1]]), new Map(), null,
      new Map([['a', 2], ['b', null]])], mapOf(new Utf8(), new Int32())),
    fixed: arrow.vectorFromArray([[1, 2], [3, null], null, [0, 0]],
        new FixedSizeList(2, f('item', new Int8()))),
  });
  const columns = [
    ['1', null, '-3', '2147483647'],
    ['1', '-9223372036854775808', null, '9223372036854775807'],
    ['0', '18446744073709551615', null, '42'],
    ['4609434218613702656', '9223372036854775808', null, '9218868437227405312'],
    ['1048576000', null, '3221225472', '2143289344'],
    ['15872', '32768', '31743', null],
    [true, false, null, true],
    ['héllo', '', null, '🙂'],
    ['10958', null, '-1', '0'],
    ['1709209800000', null, '0', '-1000'],
    ['1709209800000000', null, '0', '-1000000'],
    ['x', 'y', 'x', null],
    [['1', '2'], null, [], [null, '5']],
    [{ a: '1', b: 'one' }, null, { a: null, b: 'three' }, { a: '4', b: null }],
    [[['k', '1']], [], null, [['a', '2'], ['b', null]]],
    [['1', '2'], ['3', null], null, ['0', '0']],
  ];
  return {
    name: 'builder_api', schema: table.schema, batches: table.batches,
    expected: table.batches.length === 1 ? [{ length: 4, columns }] : null,
  };
}

// Arrow JS quirk: a slice of a null-type column has an unknown null count
// (-1), which RecordBatchWriter writes into the field node as is. Arrow C++
// reads -1 as "unknown"; a reader must derive it (the null type's null count
// is its length). Listed apart in the manifest (quirk_cases).
function slicedNullCase() {
  const schema = new Schema([f('nothing', new Null()), f('n', new Int32())]);
  const nulls = makeData({ type: new Null(), length: 10, nullCount: 10 }).slice(3, 5);
  const n = ['1', '2', null, '4', '5'];
  return {
    name: 'sliced_null_column', quirk: true, schema,
    batches: [makeBatch(schema, [nulls, fromCanonical(new Int32(), n)], 5)],
    expected: [{ length: 5, columns: [[null, null, null, null, null], n] }],
  };
}

function emptyCases() {
  const schema = new Schema([f('a', new Int32()), f('b', new Utf8()),
    f('c', dict(new Utf8(), new Int8()))], new Map([['empty', 'yes']]));
  const zero = randomCase('zero_row_batch', 7, new Schema([f('a', new Int64()),
    f('b', new List(f('item', new Utf8()))), f('c', dict(new Utf8(), new Int32()))]),
  40, [0, 0, 17]);
  return [{ name: 'empty_table', schema, batches: [], expected: [] }, zero];
}

function allCases() {
  return [
    randomCase('primitives', 1, PRIMITIVES, 300, [37, 100, 101, 229]),
    randomCase('binary_decimal', 2, BINARY, 200, [13, 150]),
    randomCase('nested', 3, NESTED, 160, [5, 77]),
    randomCase('dictionaries', 4, DICTIONARIES, 120, [9, 64]),
    randomCase('dictionary_int64_indices', 5, DICT_64, 50, [21]),
    randomCase('single_row', 6, NESTED, 1, []),
    randomCase('unions', 10, UNIONS, 150, [7, 90]),
    deltaCase(),
    slicedNullCase(),
    replacementCase(),
    builderCase(),
    ...emptyCases(),
  ];
}

// ---- Writing and the self-check ---------------------------------------------

function writeIpc(Writer, schema, batches) {
  const writer = new Writer();
  writer.reset(undefined, schema);
  for (const b of batches) writer.write(b);
  writer.finish();
  return writer.toUint8Array(true);
}

function readBack(bytes, kase) {
  const reader = arrow.RecordBatchReader.from(bytes);
  reader.open();
  const problems = [];
  const d = firstDifference(schemaJson(kase.schema), schemaJson(reader.schema));
  if (d) problems.push(`schema ${d}`);
  // With no record batch at all, the reader yields one empty placeholder
  // batch; its count of batches actually read is the truth.
  const batches = realBatches(reader);
  if (batches.length !== kase.expected.length) {
    problems.push(`${batches.length} batches read back, ${kase.expected.length} written`);
    return problems;
  }
  batches.forEach((batch, b) => {
    kase.expected[b].columns.forEach((want, c) => {
      const got = batch.getChildAt(c).data.flatMap((x) => canonicalColumn(x));
      const diff = firstDifference(want, got);
      if (diff) problems.push(`batch ${b} column ${c}: ${diff}`);
    });
  });
  return problems;
}

function main() {
  const dir = process.argv[2];
  if (!dir) {
    console.error('usage: node write_cases.mjs DIR');
    process.exit(2);
  }
  mkdirSync(dir, { recursive: true });
  const info = loadedArrowInfo();
  console.log(`apache-arrow ${info.version} ${info.dir}`);
  const names = [];
  const quirks = [];
  let failed = 0;
  for (const kase of allCases()) {
    if (!kase.expected) throw new Error(`case ${kase.name}: unexpected batch layout`);
    const out = {
      case: kase.name, producer: `apache-arrow ${info.version}`,
      stream: `${kase.name}.arrows`, file: kase.streamOnly ? null : `${kase.name}.arrow`,
      schema: schemaJson(kase.schema), batches: kase.expected,
    };
    const formats = [['stream', arrow.RecordBatchStreamWriter]];
    if (!kase.streamOnly) formats.push(['file', arrow.RecordBatchFileWriter]);
    for (const [format, Writer] of formats) {
      const bytes = writeIpc(Writer, kase.schema, kase.batches);
      writeFileSync(join(dir, out[format]), bytes);
      const problems = readBack(new Uint8Array(readFileSync(join(dir, out[format]))), kase);
      for (const p of problems) console.log(`SELF-CHECK FAIL case=${kase.name} ${format}: ${p}`);
      if (problems.length) ++failed;
    }
    writeFileSync(join(dir, `${kase.name}.json`), JSON.stringify(out, null, 1));
    (kase.quirk ? quirks : names).push(kase.name);
    const rows = kase.expected.reduce((n, b) => n + b.length, 0);
    console.log(`case ${kase.name}: wrote ${formats.map((x) => x[0]).join('+')} ` +
        `(${kase.expected.length} batches, ${rows} rows, ${kase.schema.fields.length} columns)`);
  }
  writeFileSync(join(dir, 'manifest.json'),
      JSON.stringify({ producer: `apache-arrow ${info.version}`, cases: names,
        quirk_cases: quirks }, null, 1));
  process.exit(failed ? 1 : 0);
}

main();
