"""The Python package's benchmark: each figure beside its reference, measured
in the same run, as a ratio (docs/python.md "Benchmarks").

    PYTHONPATH=build/release/python /usr/bin/python3 bench/python_bench.py \
        [--build build/release] [--reps 9] [--json out.json]

Starts a 3-node `quiver up` cluster of its own (2 GiB regions, in a
temporary state directory), measures, and stops it. The C++ references run
`<build>/bench/python_bench_ref` against the same cluster and tables.

Figures (medians of --reps runs):
  get_numpy     get(name) + column(0).to_numpy() of a one-chunk int64 column
                of 1 GiB, against the same of 1 MiB (zero-copy is flat) and
                against C++ GetHugeTable + the column's address (same table);
  put_frame     put of a 1 GiB DataFrame of 8 numeric columns as GB/s,
                against one memcpy of the same bytes into memory already
                faulted in (numpy.copyto, the machine's best);
  store_get     store get + release of 1000 objects of 1 kB, against
                ObjectStore::Get + Release of the same ids from C++;
  store_get_one a single small get + release, as calls per second.
Ray's own published figures are printed beside them, labelled as published.

`quiver bench python` runs this script as a Google Benchmark program: it
takes --benchmark_list_tests, --benchmark_out=F (JSON), --benchmark_repetitions=N
and --benchmark_filter=RE, and reports one run per repetition of each figure
and of its reference (the BM_ names of BENCHMARKS below).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, List

import numpy as np
import pandas as pd

import quiver

GIB = 1 << 30
MIB = 1 << 20

# Ray's release microbenchmark, release/perf_metrics/microbenchmark.json of
# ray-project/ray (commit 08444c4c): published on Ray's own machine, not
# measured here.
RAY_PUBLISHED = {
    "single_client_put_gigabytes": 19.86,  # GB/s, ray.put of large numpy arrays
    "single_client_get_calls_Plasma_Store": 10620.4,  # ray.get of small objects /s
    "single_client_put_calls_Plasma_Store": 5173.3,  # ray.put of small objects /s
}


def median_ns(fn: Callable[[], None], reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times)


class Cluster:
    def __init__(self, build: str) -> None:
        self.quiver = os.path.join(build, "quiver")
        self.ref = os.path.join(build, "bench", "python_bench_ref")
        for p in (self.quiver, self.ref):
            if not os.access(p, os.X_OK):
                sys.exit(f"python_bench: {p} is missing: build the project first "
                         "(cmake --build build/release)")
        self.dir = os.path.join(tempfile.mkdtemp(prefix="quiver-pybench-"), "state")
        subprocess.run([self.quiver, "up", "--dir", self.dir, "--nodes", "3", "--size", "2G"],
                       check=True, capture_output=True)

    @property
    def config(self) -> str:
        return os.path.join(self.dir, "cluster.toml")

    def cpp(self, *args: str) -> Dict[str, float]:
        out = subprocess.run([self.ref, "--config", self.config, "--node", "0", *args],
                             check=True, capture_output=True, text=True).stdout
        return json.loads(out)

    def down(self) -> None:
        subprocess.run([self.quiver, "down", "--dir", self.dir], capture_output=True)
        shutil.rmtree(os.path.dirname(self.dir), ignore_errors=True)


def wait_used(client: quiver.Client, baseline: Dict[int, int]) -> None:
    """Waits (on the daemons' status) until every region is back to baseline."""
    deadline = time.monotonic() + 60
    while {n.node: n.used for n in client.status().nodes} != baseline:
        if time.monotonic() > deadline:
            sys.exit("python_bench: region use did not come back to its baseline")
        time.sleep(0.01)


def bench_get_numpy(cluster: Cluster, client: quiver.Client, reps: int) -> Dict[str, float]:
    for name, size in (("py_small", MIB), ("py_big", GIB)):
        client.put(name, {"v": np.arange(size // 8, dtype=np.int64)}, nodes=[1],
                   chunk_bytes=2 * GIB)
        assert client.get(name).num_chunks == 1

    def get(name: str) -> Callable[[], None]:
        def run() -> None:
            a = client.get(name).column("v").to_numpy(zero_copy_only=True)
            del a

        return run

    for name in ("py_small", "py_big"):
        get(name)()  # warm: the homes are known
    small = median_ns(get("py_small"), reps * 10)
    big = median_ns(get("py_big"), reps * 10)
    cpp = cluster.cpp("--table", "py_big", "--reps", str(reps * 10))["table_get_ns"]
    client.rm("py_small")
    client.rm("py_big")
    return {"get_numpy_1MiB_us": small / 1e3, "get_numpy_1GiB_us": big / 1e3,
            "cpp_get_1GiB_us": cpp / 1e3, "ratio_1GiB_vs_1MiB": big / small,
            "ratio_vs_cpp": big / cpp}


def bench_put_frame(client: quiver.Client, baseline: Dict[int, int],
                    reps: int) -> Dict[str, float]:
    rows = GIB // 8 // 8
    rng = np.random.default_rng(1)
    df = pd.DataFrame({f"c{i}": (rng.random(rows) if i % 2 else
                                 np.arange(rows, dtype=np.int64) * i) for i in range(8)})
    nbytes = sum(df[c].to_numpy().nbytes for c in df.columns)
    # The reference: one memcpy of every column into memory already faulted.
    dst = [np.empty_like(df[c].to_numpy()) for c in df.columns]
    for d in dst:
        d.fill(0)
    src = [df[c].to_numpy() for c in df.columns]

    def copy() -> None:
        for s, d in zip(src, dst):
            np.copyto(d, s)

    memcpy_ns = median_ns(copy, reps)
    del dst
    put_times = []
    for _ in range(reps):
        start = time.perf_counter_ns()
        client.put("py_frame", df)
        put_times.append(time.perf_counter_ns() - start)
        client.rm("py_frame")
        wait_used(client, baseline)
    put_ns = statistics.median(put_times)
    return {"bytes": nbytes, "put_GBps": nbytes / put_ns, "memcpy_GBps": nbytes / memcpy_ns,
            "ratio_vs_memcpy": memcpy_ns / put_ns}


def bench_store(cluster: Cluster, client: quiver.Client, reps: int) -> Dict[str, float]:
    store = client.store
    payload = os.urandom(1000)
    ids = [store.put(payload) for _ in range(1000)]
    with tempfile.NamedTemporaryFile("w", suffix=".ids", delete=False) as f:
        f.write("\n".join(i.hex() for i in ids) + "\n")
        ids_file = f.name

    def get_all() -> None:
        views = store.get(ids, timeout_ms=0)
        assert all(v is not None for v in views)
        store.release(ids)  # one call for the batch, as C++ releases each
        del views

    get_all()  # warm, as the C++ side is
    py_ns = median_ns(get_all, reps * 3)
    one = ids[0]
    calls = 20000

    def get_one() -> None:
        for _ in range(calls):
            v = store.get(one, timeout_ms=0)
            store.release(one)
            del v

    one_ns = median_ns(get_one, 5) / calls
    cpp = cluster.cpp("--ids", ids_file, "--reps", str(reps * 3))
    os.unlink(ids_file)
    store.delete(ids)
    return {"get_1000_us": py_ns / 1e3, "cpp_get_1000_us": cpp["store_get_cached_ns"] / 1e3,
            "cpp_get_1000_uncached_us": cpp["store_get_first_ns"] / 1e3,
            "ratio_vs_cpp": py_ns / cpp["store_get_cached_ns"],
            "get_one_calls_per_s": 1e9 / one_ns,
            "cpp_get_one_calls_per_s": 1e9 / cpp["store_get_one_ns"]}


def verdict(ok: bool) -> str:
    return "meets target" if ok else "MISSES target"


# Google Benchmark names of the figures: (name, which measurement, key,
# unit). "ns" values are times; "GBps" ones are reported as bytes_per_second.
BENCHMARKS = [
    ("BM_PyGetNumpy/1MiB", "g", "get_numpy_1MiB_us", "us"),
    ("BM_PyGetNumpy/1GiB", "g", "get_numpy_1GiB_us", "us"),
    ("BM_CppGetHugeTable/1GiB", "g", "cpp_get_1GiB_us", "us"),
    ("BM_PyPutFrame/1GiB", "p", "put_GBps", "GBps"),
    ("BM_Memcpy/1GiB", "p", "memcpy_GBps", "GBps"),
    ("BM_PyStoreGet/1000x1kB", "s", "get_1000_us", "us"),
    ("BM_CppStoreGet/1000x1kB", "s", "cpp_get_1000_us", "us"),
    ("BM_PyStoreGetOne", "s", "get_one_calls_per_s", "calls"),
    ("BM_CppStoreGetOne", "s", "cpp_get_one_calls_per_s", "calls"),
]


def measure(build: str, reps: int, wanted: set) -> Dict[str, Dict[str, float]]:
    """One run of the measurements the wanted figures need."""
    cluster = Cluster(os.path.abspath(build))
    out: Dict[str, Dict[str, float]] = {}
    try:
        client = quiver.connect(cluster.dir, node=0)
        baseline = {n.node: n.used for n in client.status().nodes}
        if "g" in wanted:
            out["g"] = bench_get_numpy(cluster, client, reps)
            wait_used(client, baseline)
        if "p" in wanted:
            out["p"] = bench_put_frame(client, baseline, reps)
            gc.collect()
        if "s" in wanted:
            out["s"] = bench_store(cluster, client, reps)
        client.close()
    finally:
        cluster.down()
    return out


def gbench_entry(name: str, unit: str, value: float, k: int, n: int) -> Dict:
    e = {"name": name, "run_name": name, "run_type": "iteration", "repetitions": n,
         "repetition_index": k, "threads": 1, "iterations": 1, "time_unit": "ns"}
    if unit == "GBps":
        e["bytes_per_second"] = value * 1e9
        e["real_time"] = e["cpu_time"] = GIB / value  # ns for the 1 GiB
    elif unit == "calls":
        e["calls_per_second"] = value
        e["real_time"] = e["cpu_time"] = 1e9 / value
    else:
        e["real_time"] = e["cpu_time"] = value * 1e3
    return e


def gbench_main(args: argparse.Namespace, extra: List[str]) -> int:
    """The Google Benchmark command line `quiver bench` speaks."""
    opts = dict(a[2:].split("=", 1) if "=" in a else (a[2:], "true") for a in extra)
    unknown = set(opts) - {"benchmark_list_tests", "benchmark_out", "benchmark_out_format",
                           "benchmark_repetitions", "benchmark_filter",
                           "benchmark_min_time"}
    if unknown:
        sys.exit(f"python_bench: unknown option --{sorted(unknown)[0]}")
    pattern = re.compile(opts.get("benchmark_filter", "."))
    chosen = [b for b in BENCHMARKS if pattern.search(b[0])]
    if opts.get("benchmark_list_tests") == "true":
        print("\n".join(b[0] for b in chosen))
        return 0
    n = int(opts.get("benchmark_repetitions", "1"))
    entries = []
    for k in range(n):
        run = measure(args.build, args.reps, {b[1] for b in chosen})
        for name, which, key, unit in chosen:
            value = run[which][key]
            entries.append(gbench_entry(name, unit, value, k, n))
            print(f"{name:<28} {value:12.2f} {unit}", flush=True)
    if "benchmark_out" in opts:
        context = {"executable": os.path.abspath(__file__), "num_cpus": os.cpu_count(),
                   "library_build_type": "release",
                   "ray_published": RAY_PUBLISHED}
        with open(opts["benchmark_out"], "w") as f:
            json.dump({"context": context, "benchmarks": entries}, f, indent=1)
    return 0


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(os.path.dirname(here), "build",
                                                        "release"))
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--json", help="also write the figures to this file")
    args, extra = parser.parse_known_args()
    if extra:
        if any(not a.startswith("--benchmark_") for a in extra):
            parser.error(f"unknown option {extra[0]}")
        return gbench_main(args, extra)
    run = measure(args.build, args.reps, {"g", "p", "s"})
    g, p, s = run["g"], run["p"], run["s"]
    lines: List[str] = [
        "quiver Python benchmark (medians; ratios against references of this run)",
        f"get+to_numpy 1 GiB column  {g['get_numpy_1GiB_us']:10.1f} us   "
        f"1 MiB: {g['get_numpy_1MiB_us']:.1f} us -> {g['ratio_1GiB_vs_1MiB']:.2f}x "
        f"(target <= 1.2x: {verdict(g['ratio_1GiB_vs_1MiB'] <= 1.2)})",
        f"                           vs C++ GetHugeTable {g['cpp_get_1GiB_us']:.1f} us -> "
        f"{g['ratio_vs_cpp']:.2f}x (target <= 3x: {verdict(g['ratio_vs_cpp'] <= 3)})",
        f"put 1 GiB DataFrame        {p['put_GBps']:10.2f} GB/s  memcpy: "
        f"{p['memcpy_GBps']:.2f} GB/s -> {p['ratio_vs_memcpy']:.2f} of memcpy "
        f"(target >= 0.8: {verdict(p['ratio_vs_memcpy'] >= 0.8)})",
        f"store get 1000 x 1 kB      {s['get_1000_us']:10.1f} us   C++: "
        f"{s['cpp_get_1000_us']:.1f} us -> {s['ratio_vs_cpp']:.2f}x "
        f"(target <= 2x: {verdict(s['ratio_vs_cpp'] <= 2)}); C++ without kept pins: "
        f"{s['cpp_get_1000_uncached_us']:.1f} us",
        f"store get one small        {s['get_one_calls_per_s']:10.0f} calls/s  C++: "
        f"{s['cpp_get_one_calls_per_s']:.0f} calls/s "
        f"(target >= 100k/s: {verdict(s['get_one_calls_per_s'] >= 1e5)})",
        "Ray, published (release/perf_metrics/microbenchmark.json; not measured here): "
        f"single-client put {RAY_PUBLISHED['single_client_put_gigabytes']} GB/s, "
        f"small gets {RAY_PUBLISHED['single_client_get_calls_Plasma_Store']:.0f}/s, "
        f"small puts {RAY_PUBLISHED['single_client_put_calls_Plasma_Store']:.0f}/s",
    ]
    print("\n".join(lines))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"get_numpy": g, "put_frame": p, "store": s,
                       "ray_published": RAY_PUBLISHED}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
