// Reads every IPC stream and file that Quiver wrote into DIR with
// apache-arrow and checks schema and values against the expected canonical
// JSON written beside them (docs/interop.md describes the layout).
//
//   node tests/interop/js/read_check.mjs DIR
//
// Prints "apache-arrow VERSION DIR" first (the C++ test checks it), then one
// line per case and format. Exits 0 when everything matches, 1 on any
// mismatch (each printed as "FAIL case=... format=... batch=... column=...
// row=...: expected ..., got ..."), 2 on bad usage or unreadable input.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as arrow from 'apache-arrow';
import {
  canonicalColumn, firstDifference, loadedArrowInfo, realBatches, schemaJson,
} from './canonical.mjs';

const MAX_FAILURES_PER_FORMAT = 25;

class Checker {
  constructor(caseName, format) {
    this.prefix = `case=${caseName} format=${format}`;
    this.failures = [];
  }
  fail(where, message) {
    if (this.failures.length < MAX_FAILURES_PER_FORMAT) {
      this.failures.push(`FAIL ${this.prefix}${where ? ` ${where}` : ''}: ${message}`);
    } else if (this.failures.length === MAX_FAILURES_PER_FORMAT) {
      this.failures.push(`FAIL ${this.prefix}: more failures not shown`);
    }
  }
}

function checkSchema(check, expected, schema) {
  const actual = schemaJson(schema);
  if (actual.fields.length !== expected.fields.length) {
    check.fail('schema', `expected ${expected.fields.length} fields, got ` +
        `${actual.fields.length}: ${JSON.stringify(actual.fields.map((f) => f.name))}`);
    return false;
  }
  expected.fields.forEach((ef, c) => {
    const af = actual.fields[c];
    for (const key of ['name', 'type', 'nullable', 'metadata']) {
      const d = firstDifference(ef[key], af[key]);
      if (d) check.fail(`schema field=${c} (${ef.name})`, `${key} ${d}`);
    }
  });
  const d = firstDifference(expected.metadata, actual.metadata);
  if (d) check.fail('schema', `schema metadata ${d}`);
  return true;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

// Whether Vector.get() of Arrow JS 21 can return this value at all. Two of
// its limits are narrower than the format (docs/interop.md, "gaps"): it
// turns timestamps into JS numbers of milliseconds and throws beyond 2^53,
// and it cannot index dictionaries whose indices are 64-bit (BigInt). The
// raw comparison above covers those values exactly either way.
function getterHandles(type, value) {
  if (type.typeId === arrow.Type.Dictionary) {
    return type.indices.bitWidth < 64 && getterHandles(type.dictionary, value);
  }
  if (value === null) return true;
  if (type.typeId === arrow.Type.Timestamp ||
      (type.typeId === arrow.Type.Date && type.unit === arrow.DateUnit.MILLISECOND)) {
    const divisor = [1n, 1n, 1000n, 1000000n][type.typeId === arrow.Type.Date ? 1 : type.unit];
    const v = BigInt(value) / divisor;
    return v >= -MAX_SAFE && v <= MAX_SAFE;
  }
  return true;
}

function checkColumn(check, where, expectedValues, vector) {
  const data = vector.data;
  if (data.length !== 1) {
    check.fail(where, `expected one Data chunk per batch column, got ${data.length}`);
    return;
  }
  let actual;
  try {
    actual = canonicalColumn(data[0]);
  } catch (e) {
    check.fail(where, `cannot decode column: ${e.message}`);
    return;
  }
  if (actual.length !== expectedValues.length) {
    check.fail(where, `expected ${expectedValues.length} rows, got ${actual.length}`);
    return;
  }
  for (let r = 0; r < actual.length; ++r) {
    const d = firstDifference(expectedValues[r], actual[r]);
    if (d) check.fail(`${where} row=${r}`, d);
    // The values must also be usable through Arrow JS's own accessors, as
    // far as those accessors go (see getterHandles).
    if (getterHandles(vector.type, expectedValues[r])) {
      try {
        vector.get(r);
      } catch (e) {
        check.fail(`${where} row=${r}`, `Vector.get() threw: ${e.message}`);
      }
    }
    // Validity as Arrow JS itself reports it (bitmap offsets included);
    // Arrow JS reports the slots of the null type as valid, so skip those;
    // and a union's as its child's (a union has no validity of its own, its
    // canonical value is never null), so skip those too.
    if (vector.type.typeId === arrow.Type.Null) continue;
    if (vector.type.typeId === arrow.Type.Union) continue;
    const valid = vector.isValid(r);
    if (valid !== (expectedValues[r] !== null)) {
      check.fail(`${where} row=${r}`, `Vector.isValid() is ${valid}, expected value ` +
          JSON.stringify(expectedValues[r]));
    }
  }
}

function checkBatches(check, expected, batches) {
  if (batches.length !== expected.batches.length) {
    check.fail('', `expected ${expected.batches.length} record batches, got ${batches.length}`);
    return;
  }
  batches.forEach((batch, b) => {
    const eb = expected.batches[b];
    if (batch.numRows !== eb.length) {
      check.fail(`batch=${b}`, `expected ${eb.length} rows, got ${batch.numRows}`);
      return;
    }
    expected.schema.fields.forEach((field, c) => {
      checkColumn(check, `batch=${b} column=${c} (${field.name})`, eb.columns[c],
          batch.getChildAt(c));
    });
  });
}

// The whole-table view (tableFromIPC) must agree with the batches.
function checkTable(check, expected, bytes) {
  const table = arrow.tableFromIPC(bytes);
  const rows = expected.batches.reduce((n, b) => n + b.length, 0);
  if (expected.batches.length === 0) return;
  if (table.numRows !== rows) {
    check.fail('table', `tableFromIPC: expected ${rows} rows, got ${table.numRows}`);
    return;
  }
  expected.schema.fields.forEach((field, c) => {
    const want = expected.batches.flatMap((b) => b.columns[c]);
    const got = table.getChildAt(c).data.flatMap((d) => canonicalColumn(d));
    const d = firstDifference(want, got);
    if (d) check.fail(`table column=${c} (${field.name})`, d);
  });
}

function checkFormat(dir, expected, format) {
  const check = new Checker(expected.case, format);
  const bytes = new Uint8Array(readFileSync(join(dir, expected[format])));
  try {
    const reader = arrow.RecordBatchReader.from(bytes);
    reader.open();
    const isRightKind = format === 'file' ? reader.isFile() : reader.isStream();
    if (!isRightKind) check.fail('', `apache-arrow did not recognise it as an IPC ${format}`);
    checkSchema(check, expected.schema, reader.schema);
    const batches = realBatches(reader);
    checkBatches(check, expected, batches);
    if (format === 'file') {
      // Random access through the footer, last batch first (a fresh reader:
      // iterating to the end closed the first one).
      const fileReader = arrow.RecordBatchReader.from(bytes);
      fileReader.open({ autoDestroy: false });
      if (fileReader.numRecordBatches !== expected.batches.length) {
        check.fail('footer', `expected ${expected.batches.length} record batch blocks, ` +
            `got ${fileReader.numRecordBatches}`);
      }
      for (let b = expected.batches.length - 1; b >= 0; --b) {
        const batch = fileReader.readRecordBatch(b);
        if (!batch || batch.numRows !== expected.batches[b].length) {
          check.fail(`footer block=${b}`, `readRecordBatch gave ` +
              `${batch ? `${batch.numRows} rows` : 'nothing'}, expected ` +
              `${expected.batches[b].length} rows`);
        }
      }
    }
    checkTable(check, expected, bytes);
  } catch (e) {
    check.fail('', `apache-arrow threw: ${e.stack || e}`);
  }
  const rows = expected.batches.reduce((n, b) => n + b.length, 0);
  return {
    summary: `${format} ${check.failures.length ? 'FAILED' : 'ok'} ` +
        `(${expected.batches.length} batches, ${rows} rows, ` +
        `${expected.schema.fields.length} columns)`,
    failures: check.failures,
  };
}

function main() {
  const dir = process.argv[2];
  if (!dir) {
    console.error('usage: node read_check.mjs DIR');
    process.exit(2);
  }
  const info = loadedArrowInfo();
  console.log(`apache-arrow ${info.version} ${info.dir}`);
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
  if (!Array.isArray(manifest.cases) || manifest.cases.length === 0) {
    console.error(`${dir}/manifest.json lists no cases`);
    process.exit(2);
  }
  let failed = 0;
  for (const name of manifest.cases) {
    const expected = JSON.parse(readFileSync(join(dir, `${name}.json`), 'utf8'));
    const formats = expected.file ? ['stream', 'file'] : ['stream'];
    const results = formats.map((f) => checkFormat(dir, expected, f));
    console.log(`case ${name}: ${results.map((r) => r.summary).join('; ')}`);
    for (const r of results) {
      for (const line of r.failures) console.log(line);
      if (r.failures.length) ++failed;
    }
  }
  console.log(`checked ${manifest.cases.length} cases, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main();
