// The Polars side of tests/interop/polars_interop_test.cc (nodejs-polars,
// pinned in scripts/setup.sh).
//   node polars_roundtrip.mjs write DIR   writes one frame of many types (nulls in
//                                  every column) as IPC streams DIR/<c>.arrows
//                                  and IPC files DIR/<c>.arrow (strings as
//                                  string_view there), c = uncompressed, lz4, zstd
//   node polars_roundtrip.mjs check DIR   reads DIR/<c>.quiver.arrows and .arrow
//                                  (what Quiver read and wrote back) and checks
//                                  each equals the frame; prints "ok <c> <ext>" or
//                                  "FAIL <c> <ext>: ..." and exits 1 on any failure
// The first line names the Polars package version and where it was loaded
// from (the repository's node_modules).
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import pl from "nodejs-polars";

const require = createRequire(import.meta.url);
const pkg = require.resolve("nodejs-polars/package.json");
console.log(`nodejs-polars ${JSON.parse(fs.readFileSync(pkg)).version} ${path.dirname(pkg)}`);

const codecs = ["uncompressed", "lz4", "zstd"];
const n = 1000;
const pick = (f) => Array.from({ length: n }, (_, i) => (i % 7 === 3 ? null : f(i)));

function frame() {
  return pl.DataFrame([
    pl.Series("i8", pick((i) => (i % 200) - 100), pl.Int8),
    pl.Series("i16", pick((i) => i * 31 - 15000), pl.Int16),
    pl.Series("i32", pick((i) => i * 100003 - 50000000), pl.Int32),
    pl.Series("i64", pick((i) => i * 1000000007 - 4000000000), pl.Int64),
    pl.Series("u8", pick((i) => i % 256), pl.UInt8),
    pl.Series("u16", pick((i) => (i * 67) % 65536), pl.UInt16),
    pl.Series("u32", pick((i) => i * 4000001), pl.UInt32),
    pl.Series("f32", pick((i) => i / 8), pl.Float32),
    pl.Series("f64", pick((i) => i / 3 - 100), pl.Float64),
    pl.Series("b", pick((i) => i % 3 === 0), pl.Bool),
    pl.Series("s", pick((i) => "v" + "é".repeat(i % 4) + i), pl.Utf8),
    pl.Series("d", pick((i) => new Date(Date.UTC(2000, 0, 1 + i))), pl.Date),
    pl.Series("t", pick((i) => new Date(1700000000000 + i * 1234)), pl.Datetime("ms")),
    pl.Series("l", pick((i) => Array.from({ length: i % 4 }, (_, k) => i * 10 + k)),
              pl.List(pl.Int64)),
    pl.Series("c", pick((i) => ["red", "green", "blue"][i % 3]), pl.Categorical),
  ]);
}

const [mode, dir] = process.argv.slice(2);
const df = frame();
let failed = false;
for (const c of codecs) {
  if (mode === "write") {
    // Streams (large_string) and files (string_view: Polars' own layout).
    fs.writeFileSync(path.join(dir, `${c}.arrows`), df.writeIPCStream({ compression: c }));
    fs.writeFileSync(path.join(dir, `${c}.arrow`), df.writeIPC({ compression: c }));
    console.log(`wrote ${c}`);
  } else if (mode === "check") {
    for (const [ext, read] of [["arrows", pl.readIPCStream], ["arrow", pl.readIPC]]) {
      try {
        const back = read(fs.readFileSync(path.join(dir, `${c}.quiver.${ext}`)));
        if (back.height !== df.height) throw new Error(`${back.height} rows, not ${df.height}`);
        for (const name of df.columns) {
          const a = df.getColumn(name), b = back.getColumn(name);
          const cast = name === "c" ? (s) => s.cast(pl.Utf8) : (s) => s;
          if (!cast(a).seriesEqual(cast(b), true)) {
            throw new Error(`column ${name} differs (${a.dtype} vs ${b.dtype})`);
          }
        }
        console.log(`ok ${c} ${ext}`);
      } catch (e) {
        console.log(`FAIL ${c} ${ext}: ${e.message}`);
        failed = true;
      }
    }
  } else {
    console.log("usage: polars_roundtrip.mjs write|check DIR");
    process.exit(2);
  }
}
process.exit(failed ? 1 : 0);
