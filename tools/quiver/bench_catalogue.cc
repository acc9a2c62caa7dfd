// quiver bench: the catalogue of programs, report sections and figures, and
// the published numbers the figures are set beside (resolved against a run
// in bench_suite.cc).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

#include "bench_suite.h"

namespace quiver::cli::bench {

namespace {

// --- The works and their machines -------------------------------------------

const char* kThesis = "Groet, MSc thesis (seeds/000)";
const char* kThesisHw =
    "two IBM Power System IC922 servers (two POWER9 CPUs each: 12 cores, SMT-4, "
    "120 MiB L3; 16 x 32 GiB DDR4-2666), one lending memory to the other through "
    "OpenCAPI Alpha Data 9V3 FPGAs running ThymesisFlow; 25 Gbit/s ConnectX-4 Lx "
    "Ethernet; Ubuntu 20.04, Linux 5.4; every run pinned to NUMA node 0";
const char* kPlasma =
    "Abrahamse et al., memory-disaggregated Plasma object store (seeds/002)";
const char* kPlasmaHw =
    "two IBM Power System IC922 with Alpha Data ADM-PCIE-9V3 FPGAs (ThymesisFlow); "
    "every benchmark single-threaded";
const char* kThallus = "Chakraborty et al., Thallus (seeds/003)";
const char* kRay = "Ray's release microbenchmarks (ray-project/ray, commit 08444c4c)";
const char* kRayHw = "Ray's release-test machine (not measured here)";
const char* kThallusHw =
    "client and server over InfiniBand RDMA (Thallium/Mochi); the paper gives no "
    "further detail of the machines";

// --- Programs -----------------------------------------------------------------

std::vector<ProgramSpec> MakePrograms() {
  // Quick suite: Google Benchmark's minimum time per benchmark cut to 0.05 s
  // and, where a program has fixed iteration counts or table sizes, its own
  // quick switches (QUIVER_BENCH_QUICK, QUIVER_BENCH_ROWS). Benchmark names
  // stay the same apart from "/iterations:N".
  const std::string min_time = "--benchmark_min_time=0.05";
  return {
      {"descriptor",
       "Table 5.3: descriptor encode/decode vs Arrow IPC stream write/read",
       {min_time},
       {},
       4,
       15,
       ""},
      {"builder",
       "append throughput per type vs memcpy of the bytes produced",
       {min_time},
       {},
       12,
       140,
       ""},
      {"ipc",
       "IPC write of the Figure 5.1 table vs memcpy; reading 1 GiB vs 1 MiB streams",
       {min_time},
       {{"QUIVER_BENCH_ROWS", "16777216"}},
       12,
       45,
       ""},
      {"memory",
       "Tables 5.2, 5.4 (allocator), Figures 5.2, 5.3: flush, malloc, bandwidth",
       {min_time},
       {{"QUIVER_BENCH_QUICK", "1"}},
       45,
       420,
       "^BM_MallocFreeRandom/"},
      {"cluster",
       "Tables 5.4, 5.5, Figure 5.1, ping and publish: 2- and 8-node clusters of quiverd",
       {min_time},
       {{"QUIVER_BENCH_QUICK", "1"}},
       45,
       300,
       ""},
      {"store",
       "object store: Table I workloads (seeds/002), Ray's put/get microbenchmarks, "
       "spill and restore",
       {min_time},
       {},
       55,
       150,
       ""},
      {"python",
       "the Python package: zero-copy get, DataFrame put and the store, against C++ "
       "and memcpy (bench/python_bench.py)",
       {"--reps=3"},
       {},
       60,
       150,
       ""},
      {"transport",
       "Thallus (seeds/003): scans over UCX by body type, transport and selectivity, "
       "beside serialised IPC over gRPC and TCP, raw UCX and memcpy",
       {min_time},
       {{"QUIVER_BENCH_QUICK", "1"}},
       40,
       120,
       ""},
  };
}

// --- Sections -------------------------------------------------------------------

std::vector<Section> MakeSections() {
  std::vector<Section> s;
  s.push_back(
      {"table-5.2", "Table 5.2: flushing 1 GiB from the caches",
       std::string(kThesis) + ", §5.4.2, Table 5.2", kThesisHw,
       "\"Time to flush 1GiB of written data. Approximately 8,388,608 flush "
       "instructions\": empty cache, local 53.12 ms (σ 0.007), remote 51.84 ms "
       "(σ 0.016); every byte touched first, local 60.32 ms (σ 1.71), remote "
       "88.57 ms (σ 1.53).",
       "`coherence::FlushRange` over 1 GiB of this node's region (local) and of node "
       "1's region mapped here (remote), untouched (nothing cached) and right after "
       "writing every byte. Reference: a bare `clflushopt` loop with `sfence` over "
       "the same memory in the same run (the machine's floor).",
       ""});
  s.push_back(
      {"table-5.3", "Table 5.3: serialising and deserialising a table descriptor",
       std::string(kThesis) + ", §5.4.3, Table 5.3", kThesisHw,
       "\"Time to (de-)serialize a 3 column RecordBatch with column types: int64, "
       "int8, uint16\" (average of 10 iterations): serialization 0.058 ms (σ 0.032), "
       "deserialization 0.019 ms (σ 0.029).",
       "Encoding the descriptor of a 2^20-row (int64, int8, uint16) batch and decoding "
       "it with a range check of every buffer. Reference: writing the same batch as "
       "an Arrow IPC stream (which copies its 11 MB) and reading that stream back "
       "from memory (zero-copy).",
       ""});
  s.push_back(
      {"table-5.4", "Table 5.4: malloc in local and remote memory",
       std::string(kThesis) + ", §5.4.4, Table 5.4", kThesisHw,
       "\"Time for either a remote or local malloc call to complete\", random sizes "
       "of 0 to 5000 bytes: local 3.13 ms (σ 0.48), remote 4.99 ms (σ 0.86); \"the "
       "difference between remote and local is the gRPC call\".",
       "Local: the region allocator, random 0-5000 B allocations freed in random "
       "order (each timing one free and one malloc), beside glibc malloc/free doing "
       "the same; and large sizes. Remote: a Malloc RPC of 4 KiB to node 1's daemon "
       "over TCP, beside the local allocator of the same size in the same run; also "
       "with daemon and client on one CPU (no cross-CPU wake-up).",
       ""});
  s.push_back(
      {"table-5.5", "Table 5.5: initialising a 1 GiB table, local vs remote memory",
       std::string(kThesis) + ", §5.7, Table 5.5", kThesisHw,
       "\"Initialization overhead when creating a table in local vs remote memory. "
       "Table used is a 1GiB table with uint64 data elements\". (a) remote memory: "
       "malloc request 4.99 ms, remote pre-write flush (gRPC call + flush) 51.84 ms, "
       "write to remote 180 ms, flush local write cache 60.32 ms, serialize table "
       "descriptor 0.058 ms, send table descriptor to other nodes 3.23 ms; total "
       "300.44 ms. (b) local memory: malloc 3.13 ms, flush borrower caches 51.84 ms, "
       "write to local 10 ms, flush local write cache not necessary, serialize "
       "0.058 ms, send 3.23 ms; total 68.26 ms.",
       "The whole protocol for a 1 GiB uint64 table, each step timed alone: "
       "allocation (local allocator, or a Malloc RPC to node 1), step 2 (flush here "
       "and a Flush RPC to the other node's daemon), writing the values, step 4 with "
       "the seal, encoding the descriptor, publishing it. Remote steps are set "
       "beside the same step in local memory; local steps beside the local total "
       "(their share); the local total beside the local write alone (the protocol's "
       "overhead over just writing the data).",
       ""});
  s.push_back(
      {"figure-5.1", "Figure 5.1: descriptor-only publish vs a full copy, by table size",
       std::string(kThesis) + ", §5.5, Figure 5.1 (paper: Figure 2)", kThesisHw,
       "\"Transfer time comparison between full and descriptor only copy of an Arrow "
       "RecordBatch through the ethernet connection\" for slices of a 150 * 2^20-row "
       "(int64, int8, uint16) table, about 1.61 GiB in all. The values are published "
       "only as a plot; the text gives no numbers to quote.",
       "A uint64 table of 1 MiB to 1 GiB in this node's region made readable on the "
       "other node: `Publish` (descriptor only) beside `SendTableFull` (Arrow IPC "
       "with the data, written into the receiver's memory) of the same table in the "
       "same run; and publishing 1 GiB beside publishing 1 MiB (the cost must not "
       "grow with the table).",
       ""});
  s.push_back(
      {"figure-5.2",
       "Figure 5.2: bandwidth by threads, element width, read/write, "
       "local/remote",
       std::string(kThesis) + ", §5.6.1, Figure 5.2 and §5.7; " + kPlasma +
           ", §V-A, Figure 7",
       kThesisHw,
       "Thesis: the bars of Figure 5.2 are published only as a plot; the text states "
       "\"the maximum bandwidth is around 5.3 GB/s for both reading and writing\" of "
       "ThymesisFlow memory, \"quickly achievable with only 4 threads\", and that "
       "the link saturates with types wider than 8 bits. Object store (two IC922 with "
       "ThymesisFlow, one thread): reading "
       "object buffers \"stabilize[s] at 6.5 GiB/s for local objects and 5.75 GiB/s "
       "for remote objects\".",
       "Reading (summing) and writing 512 MiB with 1 and 2 threads and 8-64-bit "
       "elements, in node 1's region mapped here (remote), this node's region "
       "(local) and the process's private heap. Remote is set beside local; local "
       "beside the private heap (plain DRAM, the machine's limit). On one host both "
       "regions are the same DRAM, so remote/local near 1 is expected here; across "
       "ThymesisFlow or CXL the ratio is the link's cost.",
       ""});
  s.push_back(
      {"figure-5.3", "Figure 5.3: strided reads and writes",
       std::string(kThesis) + ", §5.6.2, Figure 5.3 (paper: Figure 3)", kThesisHw,
       "Published only as a plot (read and write throughput by stride, local and "
       "ThymesisFlow memory). The text: \"for both remote and local memory accesses, "
       "we have that the throughput decreases for a higher stride, but does not "
       "completely diminish at the 128-byte mark\" (the prefetcher at work; POWER9 "
       "lines are 128 B).",
       "One 8-byte element every `stride` bytes over 512 MiB, 8 B to 4 KiB; the "
       "bytes counted are the elements accessed. Remote beside local at the same "
       "stride; local beside the private heap.",
       ""});
  s.push_back(
      {"ping", "Section 5.4.1: RPC round trip (ping)", std::string(kThesis) + ", §5.4.1",
       kThesisHw,
       "An empty gRPC service called by a client: \"An average of 3.23ms was "
       "measured over 10 iterations, σ2 = 0.636\".",
       "The daemon's Ping over its Unix socket (local client) and over a peer's TCP "
       "port, beside a one-byte round trip between two threads over a Unix socket "
       "(the machine's floor for a request and a reply); and the same with daemon "
       "and client on one CPU.",
       ""});
  s.push_back(
      {"object-store", "Object store: Table I workloads",
       std::string(kPlasma) + ", §IV-B Table I, §V-A", kPlasmaHw,
       "Table I: six workloads, (objects x size) 1000 x 1 kB, 500 x 10 kB, "
       "200 x 100 kB, 100 x 1000 kB, 50 x 10000 kB, 10 x 100000 kB, each repeated 100 "
       "times. Retrieval latency: local \"1.885 ms for 1000 objects to 0.075 ms for "
       "10 objects\", remote \"5.049 ms for 1000 objects to 2.624 ms for 100 "
       "objects\". Read throughput: 6.5 GiB/s local, 5.75 GiB/s remote.",
       "Each workload's objects are created, written (memcpy from private memory) "
       "and sealed, then got in one batched Get and every byte read, with the objects "
       "homed on the client's node (local) and on node 1 (remote), 2 nodes of quiverd "
       "on this host. References: memcpy of the same bytes into private memory "
       "(create), a one-byte round trip over a Unix socket between two processes "
       "(Get: the floor of any call to a daemon), reading the same bytes from private "
       "memory (read). Ray's figures: one 100 MB put beside memcpy; one Get of a "
       "1 kB object and one put of a 1 kB object beside the raw round trip "
       "(Ray 2.9 published 20.9 GB/s, 10.4k gets/s, 5.4k puts/s on 64 cores).",
       ""});
  s.push_back(
      {"thallus", "Thallus: transport vs serialising RPC",
       std::string(kThallus) + ", §2, §4", kThallusHw,
       "\"up to 5.5x data transport performance improvement and up to 2.5x faster "
       "query execution over plain Thallium RPCs\"; serialising a record batch is "
       "\"about 30% of the RPC duration\".",
       "Scans of a generated 8-column table (4 int64, 2 double, 2 strings; 8M rows, "
       "1M with --quick) served in 2048-row chunks as DuckDB gives them, through "
       "`transport::Server` (a process of its own) and `Client`: bodies measured "
       "(addresses "
       "where one-sided reads win), shared memory and cma, or TCP only; by the "
       "share of rows and of columns selected. References of the same run: the "
       "same batches (coalesced to 64K rows alike) as an ordinary Arrow IPC stream "
       "through gRPC server-streaming in 4 MiB messages (the serialising RPC "
       "Thallus compared with; the bytes handed to gRPC without a protobuf copy) "
       "and over a TCP loopback socket with 4 MiB buffers (serialising done as "
       "well as this machine allows), and tagged sends of the same bytes, each "
       "body from its own place, between two UCX workers of one process (what "
       "the transport could reach). "
       "Queries end to end: DuckDB in the server process selects 1-100% of a "
       "4-column table, through the transport, gRPC and the IPC socket. "
       "Far Get: `Client::Get` on a node of another memory group (the chunk's "
       "home daemon serves it over UCX into the reader's region) vs memcpy of "
       "the same bytes and vs SendTableFull of the same table.",
       ""});
  s.push_back(
      {"python", "Python: zero-copy reads, DataFrame puts and the store",
       std::string(kRay) + " (release/perf_metrics/microbenchmark.json)", kRayHw,
       "single_client_put_gigabytes 19.86 (GB/s, ray.put of large numpy arrays); "
       "single_client_get_calls_Plasma_Store 10620.4 (ray.get of small objects per "
       "second); single_client_put_calls_Plasma_Store 5173.3.",
       "`import quiver` against a 3-node `quiver up` cluster: get + to_numpy of a "
       "one-chunk int64 column of 1 GiB beside the same of 1 MiB (zero-copy is "
       "flat) and beside C++ GetHugeTable of the same table; put of a 1 GiB "
       "DataFrame of 8 numeric columns beside numpy.copyto of the same bytes into "
       "memory already faulted in (one memcpy, the machine's best); store get + "
       "release of 1000 x 1 kB objects and of one, beside ObjectStore::Get + "
       "Release of the same ids from C++ (bench/python_bench_ref). Targets "
       "(issue 28): 1 GiB vs 1 MiB <= 1.2x, vs C++ <= 3x, put >= 0.8 of memcpy, "
       "1000 gets <= 2x C++, >= 100k single gets/s.",
       ""});
  s.push_back({"ipc", "Arrow IPC write and read (Quiver's own)", "", "", "",
               "Writing the Figure 5.1 table (int64, int8, uint16) as an IPC stream and "
               "as an IPC file into preallocated memory, beside memcpy of the same "
               "column bytes; reading a 1 GiB stream beside a 1 MiB stream (zero-copy "
               "reading must not grow with the size). No published counterpart.",
               ""});
  s.push_back({"builder", "Builders: append throughput (Quiver's own)", "", "", "",
               "Filling a 2^20-row array per type, beside memcpy of the bytes the "
               "builder produces (the floor of any way to fill those buffers). No "
               "published counterpart.",
               ""});
  return s;
}

// --- Figures ----------------------------------------------------------------------

Published Pub(double value, const std::string& quote, const char* source,
              const char* hardware) {
  return {value, quote, source, hardware};
}

std::vector<FigureSpec> MakeFigures() {
  std::vector<FigureSpec> f;
  auto add = [&](FigureSpec s) { f.push_back(std::move(s)); };
  const Metric ms = Time("ms"), us = Time("us"), ns = Time("ns");

  // Table 5.2.
  struct FlushCase {
    const char* state;
    const char* thesis_state;
    int remote;
    double value;
    const char* quote;
  };
  for (const FlushCase& c :
       {FlushCase{"untouched", "empty", 0, 53.12, "53.12 ms (σ 0.007)"},
        FlushCase{"untouched", "empty", 1, 51.84, "51.84 ms (σ 0.016)"},
        FlushCase{"touched", "touched", 0, 60.32, "60.32 ms (σ 1.71)"},
        FlushCase{"touched", "touched", 1, 88.57, "88.57 ms (σ 1.53)"}}) {
    const std::string where = c.remote ? "remote" : "local";
    const std::string arg = "/remote:" + std::to_string(c.remote) + "/real_time";
    add({"table-5.2", std::string("table-5.2/") + c.state + "/" + where,
         std::string(c.thesis_state) + ", " + where, "memory",
         std::string("BM_Flush1GiB/") + c.state + "/FlushRange" + arg, ms,
         "raw clflushopt loop", std::string("BM_Flush1GiB/") + c.state + "/raw" + arg, ms,
         Pub(c.value, c.quote, "Groet thesis, Table 5.2", kThesisHw)});
  }

  // The Python package (bench/python_bench.py).
  {
    add({"python", "python/get-numpy/1GiB-vs-1MiB", "get + to_numpy of a 1 GiB column",
         "python", "BM_PyGetNumpy/1GiB", us, "the same of a 1 MiB column",
         "BM_PyGetNumpy/1MiB", us, std::nullopt});
    add({"python", "python/get-numpy/vs-cpp", "get + to_numpy of a 1 GiB column",
         "python", "BM_PyGetNumpy/1GiB", us, "C++ GetHugeTable of the same table",
         "BM_CppGetHugeTable/1GiB", us, std::nullopt});
    add({"python", "python/put-frame", "put of a 1 GiB DataFrame (8 numeric columns)",
         "python", "BM_PyPutFrame/1GiB", BytesPerSecond(), "memcpy of the same bytes",
         "BM_Memcpy/1GiB", BytesPerSecond(),
         Pub(19.86, "19.86 GB/s single-client put", kRay, kRayHw)});
    add({"python", "python/store-get-1000", "store get + release of 1000 x 1 kB",
         "python", "BM_PyStoreGet/1000x1kB", us, "the same from C++",
         "BM_CppStoreGet/1000x1kB", us, std::nullopt});
    add({"python", "python/store-get-one", "store get + release of one 1 kB object",
         "python", "BM_PyStoreGetOne", us, "the same from C++", "BM_CppStoreGetOne", us,
         Pub(1e6 / 10620.4, "10,620 gets/s", kRay, kRayHw)});
  }

  // The object store: Table I and Ray's microbenchmarks.
  {
    const char* w1000 = "objects:1000/bytes:1000";
    const char* w10 = "objects:10/bytes:100000000";
    const char* table1 = "Abrahamse et al., Table I / §V-A";
    add({"object-store", "object-store/get-1000/local",
         "Get of 1000 x 1 kB, local, repeated (kept pins)", "store",
         std::string("BM_TableI_Get/home:0/") + w1000 + "/manual_time", us,
         "raw Unix round trip", "BM_SocketRoundTrip", us,
         Pub(1885, "1.885 ms for 1000 objects", table1, kPlasmaHw)});
    add({"object-store", "object-store/get-1000/remote",
         "Get of 1000 x 1 kB, remote, repeated (kept pins)", "store",
         std::string("BM_TableI_Get/home:1/") + w1000 + "/manual_time", us,
         "raw Unix round trip", "BM_SocketRoundTrip", us,
         Pub(5049, "5.049 ms for 1000 objects", table1, kPlasmaHw)});
    add({"object-store", "object-store/get-1000/local-first",
         "Get of 1000 x 1 kB, local, first (one round trip)", "store",
         std::string("BM_TableI_GetFirst/home:0/") + w1000 + "/manual_time", us,
         "raw Unix round trip", "BM_SocketRoundTrip", us,
         Pub(1885, "1.885 ms for 1000 objects", table1, kPlasmaHw)});
    add({"object-store", "object-store/get-1000/remote-first",
         "Get of 1000 x 1 kB, remote, first (one round trip)", "store",
         std::string("BM_TableI_GetFirst/home:1/") + w1000 + "/manual_time", us,
         "raw Unix round trip", "BM_SocketRoundTrip", us,
         Pub(5049, "5.049 ms for 1000 objects", table1, kPlasmaHw)});
    add({"object-store", "object-store/read-1gb/remote", "read 10 x 100 MB, remote",
         "store", std::string("BM_TableI_Read/home:1/") + w10 + "/manual_time",
         BytesPerSecond(), "read 10 x 100 MB, local",
         std::string("BM_TableI_Read/home:0/") + w10 + "/manual_time", BytesPerSecond(),
         Pub(5.75 * 1.073741824, "5.75 GiB/s remote (6.5 GiB/s local)", table1,
             kPlasmaHw)});
    add({"object-store", "object-store/create-1gb/local",
         "create+write+seal 10 x 100 MB, local", "store",
         std::string("BM_TableI_CreateSeal/home:0/") + w10 + "/manual_time",
         BytesPerSecond(), "memcpy of the same bytes", std::string("BM_Memcpy/") + w10,
         BytesPerSecond(), std::nullopt});
    add({"object-store", "object-store/ray-put", "put of 100 MB (one client)", "store",
         "BM_Ray_Put/100000000/min_warmup_time:0.500/manual_time", BytesPerSecond(),
         "memcpy of 100 MB", "BM_Ray_PutMemcpy/100000000/min_warmup_time:0.500",
         BytesPerSecond(),
         Pub(20.9, "20.9 GB/s single-client put (Ray 2.9, 64 cores)",
             "Ray 2.9 microbenchmarks", "64-core machine")});
    add({"object-store", "object-store/ray-get", "Get of one 1 kB object", "store",
         "BM_Ray_GetCalls", us, "raw Unix round trip", "BM_SocketRoundTrip", us,
         Pub(1e6 / 10400, "10.4k gets/s (Ray 2.9, 64 cores)", "Ray 2.9 microbenchmarks",
             "64-core machine")});
    add({"object-store", "object-store/ray-put-calls",
         "put of one 1 kB object (CreateAndSeal)", "store", "BM_Ray_PutCalls", us,
         "raw Unix round trip", "BM_SocketRoundTrip", us,
         Pub(1e6 / 5400, "5.4k puts/s (Ray 2.9, 64 cores)", "Ray 2.9 microbenchmarks",
             "64-core machine")});
    add({"object-store", "object-store/put-calls-create-seal",
         "put of one 1 kB object (Create, write, Seal)", "store",
         "BM_Ray_CreateSealCalls", us, "raw Unix round trip", "BM_SocketRoundTrip", us,
         std::nullopt});
    add({"object-store", "object-store/ray-multi-put",
         "put of 100 MB (two client threads)", "store",
         "BM_Ray_MultiPut/100000000/min_warmup_time:0.500/real_time/threads:2",
         BytesPerSecond(), "memcpy of 100 MB, two threads",
         "BM_Ray_PutMemcpy/100000000/min_warmup_time:0.500/real_time/threads:2",
         BytesPerSecond(), std::nullopt});
    add({"object-store", "object-store/spill", "spill 4 x 100 MB (Evict)", "store",
         "BM_Spill/100000000/min_time:1.000/min_warmup_time:0.500/real_time",
         BytesPerSecond(), "write(2) of the same bytes, same directory",
         "BM_DiskWrite/100000000/min_time:1.000/min_warmup_time:0.500/real_time",
         BytesPerSecond(), std::nullopt});
    add({"object-store", "object-store/restore", "restore 4 x 100 MB (Get)", "store",
         "BM_Restore/100000000/min_time:1.000/min_warmup_time:0.500/real_time",
         BytesPerSecond(), "read(2) of the same bytes, same directory",
         "BM_DiskRead/100000000/min_time:1.000/min_warmup_time:0.500/real_time",
         BytesPerSecond(), std::nullopt});
  }

  // Table 5.3.
  add({"table-5.3", "table-5.3/serialise", "serialise (encode the descriptor)",
       "descriptor", "BM_DescriptorEncode/real_time", us, "IPC stream write",
       "BM_IpcSerialize/real_time", us,
       Pub(58, "0.058 ms (σ 0.032)", "Groet thesis, Table 5.3", kThesisHw)});
  add({"table-5.3", "table-5.3/deserialise", "deserialise (decode, check every range)",
       "descriptor", "BM_DescriptorDecode/real_time", us, "IPC stream read (zero-copy)",
       "BM_IpcReadBack/real_time", us,
       Pub(19, "0.019 ms (σ 0.029)", "Groet thesis, Table 5.3", kThesisHw)});
  add({"table-5.3", "table-5.3/bytes", "bytes that travel: descriptor", "descriptor",
       "BM_DescriptorEncode/real_time", Counter("descriptor_bytes", "B"),
       "IPC stream bytes", "BM_IpcSerialize/real_time", Counter("ipc_bytes", "B"),
       std::nullopt});

  // Table 5.4.
  add({"table-5.4", "table-5.4/local", "local: region allocator, random 0-5000 B",
       "memory", "BM_MallocFreeRandom/region", ns, "glibc malloc/free",
       "BM_MallocFreeRandom/glibc", ns,
       Pub(3.13e6, "3.13 ms (σ 0.48)", "Groet thesis, Table 5.4", kThesisHw)});
  for (const char* size : {"1048576", "33554432", "1073741824"}) {
    add({"table-5.4", std::string("table-5.4/local-large/") + size,
         std::string("local: region allocator, ") + size + " B", "memory",
         std::string("BM_MallocFreeLarge/region/") + size, ns, "glibc malloc/free",
         std::string("BM_MallocFreeLarge/glibc/") + size, ns, std::nullopt});
  }
  add({"table-5.4", "table-5.4/remote", "remote: Malloc RPC to node 1 (TCP), 4 KiB",
       "cluster", "BM_Malloc_remote/manual_time", us, "local allocator, 4 KiB",
       "BM_Malloc_local/manual_time", us,
       Pub(4990, "4.99 ms (σ 0.86)", "Groet thesis, Table 5.4", kThesisHw)});
  add({"table-5.4", "table-5.4/remote-vs-round-trip",
       "remote: Malloc at node 1 (TLS), step 2 on every node", "cluster",
       "BM_Malloc_remote/manual_time", us, "raw TCP round trip", "BM_TcpRoundTrip", us,
       std::nullopt});
  add({"table-5.4", "table-5.4/own-daemon", "local: Malloc at the node's daemon (Unix)",
       "cluster", "BM_Malloc_own_daemon/manual_time", us, "raw Unix round trip",
       "BM_SocketRoundTrip", us, std::nullopt});

  // Table 5.5.
  const std::string init_remote = "BM_Init1GiB/remote:1/manual_time";
  const std::string init_local = "BM_Init1GiB/remote:0/manual_time";
  struct Part {
    const char* counter;
    const char* label;
    double remote_value;
    const char* remote_quote;
    double local_value;  // < 0: none published
    const char* local_quote;
  };
  const Part parts[] = {
      // Quiver's malloc includes the pre-write flush (protocol steps 1-2,
      // step 2 by the caller), which the thesis timed apart.
      {"malloc_ms", "malloc + pre-write flush", 4.99 + 51.84,
       "4.99 ms malloc + 51.84 ms pre-write flush", 3.13 + 51.84,
       "3.13 ms malloc + 51.84 ms pre-write flush"},
      {"write_ms", "write 1 GiB", 180, "180 ms", 10, "10 ms"},
      {"flush_seal_ms", "writer flush + seal", 60.32, "60.32 ms", -1,
       "not necessary (snooped by OpenCAPI)"},
      {"serialise_ms", "serialise descriptor", 0.058, "0.058 ms", 0.058, "0.058 ms"},
      {"send_ms", "send descriptor (publish)", 3.23, "3.23 ms", 3.23, "3.23 ms"},
  };
  for (const Part& p : parts) {
    add({"table-5.5", std::string("table-5.5/remote/") + p.counter,
         std::string("remote: ") + p.label, "cluster", init_remote,
         Counter(p.counter, "ms"), std::string("local: ") + p.label, init_local,
         Counter(p.counter, "ms"),
         Pub(p.remote_value, p.remote_quote, "Groet thesis, Table 5.5a", kThesisHw)});
  }
  for (const Part& p : parts) {
    std::optional<Published> pub;
    if (p.local_value >= 0) {
      pub = Pub(p.local_value, p.local_quote, "Groet thesis, Table 5.5b", kThesisHw);
    }
    add({"table-5.5", std::string("table-5.5/local/") + p.counter,
         std::string("local: ") + p.label, "cluster", init_local,
         Counter(p.counter, "ms"), "local total", init_local, ms, pub});
  }
  add({"table-5.5", "table-5.5/remote/total", "remote: total", "cluster", init_remote, ms,
       "local: total", init_local, ms,
       Pub(300.44, "300.44 ms", "Groet thesis, Table 5.5a", kThesisHw)});
  add({"table-5.5", "table-5.5/local/total", "local: total", "cluster", init_local, ms,
       "local: write 1 GiB alone", init_local, Counter("write_ms", "ms"),
       Pub(68.26, "68.26 ms", "Groet thesis, Table 5.5b", kThesisHw)});

  // Figure 5.1.
  for (const char* size : {"1048576", "16777216", "268435456", "1073741824"}) {
    add({"figure-5.1", std::string("figure-5.1/") + size,
         std::string("publish ") + size + " B (descriptor only)", "cluster",
         std::string("BM_Publish/") + size + "/manual_time", ms,
         "SendTableFull (full IPC copy)",
         std::string("BM_SendTableFull/") + size + "/manual_time", ms, std::nullopt});
  }
  add({"figure-5.1", "figure-5.1/publish-1GiB-vs-1MiB", "publish 1 GiB", "cluster",
       "BM_Publish/1073741824/manual_time", ms, "publish 1 MiB",
       "BM_Publish/1048576/manual_time", ms, std::nullopt});

  // Figure 5.2.
  struct Width {
    const char* type;
    int bits;
  };
  const Width widths[] = {
      {"uint8_t", 8}, {"uint16_t", 16}, {"uint32_t", 32}, {"uint64_t", 64}};
  for (const std::string op : {"Read", "Write"}) {
    for (const Width& w : widths) {
      const std::string t = w.type;
      for (int threads : {1, 2}) {
        const std::string base = "BM_" + op + "<" + t + ">/target:";
        const std::string tail = "/real_time/threads:" + std::to_string(threads);
        const std::string what =
            std::string(op == "Read" ? "read " : "write ") + std::to_string(w.bits) +
            "-bit, " + std::to_string(threads) + " thread" + (threads > 1 ? "s" : "");
        std::optional<Published> remote_pub, local_pub;
        if (w.bits == 64 && op == "Read" && threads == 1) {
          remote_pub = Pub(5.75 * 1.073741824, "5.75 GiB/s (remote object read)",
                           "Abrahamse et al., §V-A", kPlasmaHw);
          local_pub = Pub(6.5 * 1.073741824, "6.5 GiB/s (local object read)",
                          "Abrahamse et al., §V-A", kPlasmaHw);
        }
        if (w.bits == 64 && threads == 2) {
          remote_pub = Pub(5.3, "about 5.3 GB/s (ThymesisFlow, 4+ threads)",
                           "Groet thesis, §5.7", kThesisHw);
        }
        const std::string id =
            "figure-5.2/" + op + "/" + t + "/t" + std::to_string(threads);
        add({"figure-5.2", id + "/remote", "remote " + what, "memory", base + "1" + tail,
             BytesPerSecond(), "local region", base + "0" + tail, BytesPerSecond(),
             remote_pub});
        add({"figure-5.2", id + "/local", "local " + what, "memory", base + "0" + tail,
             BytesPerSecond(), "private heap", base + "2" + tail, BytesPerSecond(),
             local_pub});
      }
    }
  }

  // Figure 5.3.
  for (const std::string op : {"Read", "Write"}) {
    for (int stride = 8; stride <= 4096; stride *= 2) {
      const std::string base = "BM_Strided" + op + "/target:";
      const std::string tail = "/stride:" + std::to_string(stride) + "/real_time";
      const std::string what = std::string(op == "Read" ? "read" : "write") +
                               ", stride " + std::to_string(stride) + " B";
      const std::string id = "figure-5.3/" + op + "/" + std::to_string(stride);
      add({"figure-5.3", id + "/remote", "remote " + what, "memory", base + "1" + tail,
           BytesPerSecond(), "local region", base + "0" + tail, BytesPerSecond(),
           std::nullopt});
      add({"figure-5.3", id + "/local", "local " + what, "memory", base + "0" + tail,
           BytesPerSecond(), "private heap", base + "2" + tail, BytesPerSecond(),
           std::nullopt});
    }
  }

  // §5.4.1.
  add({"ping", "ping/peer-tcp", "Ping a peer's daemon (mutual TLS over TCP)", "cluster",
       "BM_Ping_peer_tcp", us, "raw TCP round trip", "BM_TcpRoundTrip", us,
       Pub(3230, "3.23 ms (σ² 0.636)", "Groet thesis, §5.4.1", kThesisHw)});
  add({"ping", "ping/local-unix", "Ping the node's daemon (Unix socket)", "cluster",
       "BM_Ping_local_unix", us, "raw Unix round trip", "BM_SocketRoundTrip", us,
       std::nullopt});
  add({"ping", "ping/publish-2-nodes", "Publish on 2 nodes (descriptor)", "cluster",
       "BM_Publish_nodes/2/manual_time", us, "Ping a peer (TLS)", "BM_Ping_peer_tcp", us,
       std::nullopt});
  add({"ping", "ping/publish-8-nodes", "Publish on 8 nodes (descriptor)", "cluster",
       "BM_Publish_nodes/8/manual_time", us, "Publish on 2 nodes",
       "BM_Publish_nodes/2/manual_time", us, std::nullopt});

  // Thallus: the transport.
  for (const char* sel :
       {"100/100", "1/100", "10/100", "50/100", "100/1", "100/10", "100/50"}) {
    const std::string s = sel;
    const std::string rows = s.substr(0, s.find('/')), cols = s.substr(s.find('/') + 1);
    add({"thallus", "thallus/shm/" + s,
         "scan over shared memory, " + rows + "% of rows, " + cols + "% of columns",
         "transport", "BM_Scan/2/0/" + s + "/real_time", BytesPerSecond(),
         "serialised IPC over TCP", "BM_SerializedTcp/" + s + "/real_time",
         BytesPerSecond(), std::nullopt});
    add({"thallus", "thallus/grpc/shm/" + s,
         "scan over shared memory, " + rows + "% of rows, " + cols + "% of columns",
         "transport", "BM_Scan/2/0/" + s + "/real_time", BytesPerSecond(),
         "serialised IPC over gRPC", "BM_SerializedGrpc/" + s + "/real_time",
         BytesPerSecond(), std::nullopt});
  }
  add({"thallus", "thallus/grpc/tcp/100/100", "scan over TCP (UCX_TLS=tcp), all rows",
       "transport", "BM_Scan/2/1/100/100/real_time", BytesPerSecond(),
       "serialised IPC over gRPC", "BM_SerializedGrpc/100/100/real_time",
       BytesPerSecond(), std::nullopt});
  // The ceiling of any transport between processes that share no memory:
  // it moves every byte at least once, so it cannot beat one memcpy of the
  // scan's bytes. Beside gRPC, this bounds the ratio a scan can reach here.
  add({"thallus", "thallus/grpc/memcpy-bound", "one memcpy of the scan's bytes (ceiling)",
       "transport", "BM_Memcpy/real_time", BytesPerSecond(), "serialised IPC over gRPC",
       "BM_SerializedGrpc/100/100/real_time", BytesPerSecond(), std::nullopt});
  add({"thallus", "thallus/grpc/baseline", "serialised IPC over a tuned TCP socket",
       "transport", "BM_SerializedTcp/100/100/real_time", BytesPerSecond(),
       "the same over gRPC", "BM_SerializedGrpc/100/100/real_time", BytesPerSecond(),
       std::nullopt});
  for (const char* pct : {"1", "10", "100"}) {
    add({"thallus", std::string("thallus/query/") + pct,
         std::string("query selecting ") + pct + "% of rows, DuckDB included",
         "transport", std::string("BM_QueryUcx/") + pct + "/real_time", Time("ms"),
         "the same over serialised IPC", std::string("BM_QueryTcp/") + pct + "/real_time",
         Time("ms"), std::nullopt});
    add({"thallus", std::string("thallus/grpc/query/") + pct,
         std::string("query selecting ") + pct + "% of rows, DuckDB included",
         "transport", std::string("BM_QueryUcx/") + pct + "/real_time", Time("ms"),
         "the same over gRPC", std::string("BM_QueryGrpc/") + pct + "/real_time",
         Time("ms"), std::nullopt});
  }
  // One cluster, two kinds of node: Client::Get of a table whose memory the
  // reader's node does not map (the rows come over the transport).
  for (const char* size : {"16777216", "268435456"}) {
    const std::string mib = std::to_string(std::stoll(size) >> 20) + "MiB";
    add({"thallus", "thallus/far-get/" + mib,
         "Get of a " + mib + " table from another memory group", "cluster",
         std::string("BM_FarGet/") + size + "/manual_time", BytesPerSecond(),
         "memcpy of the same bytes", std::string("BM_Memcpy/") + size, BytesPerSecond(),
         std::nullopt});
    add({"thallus", "thallus/far-get-vs-full/" + mib,
         "Get of a " + mib + " table from another memory group", "cluster",
         std::string("BM_FarGet/") + size + "/manual_time", BytesPerSecond(),
         "SendTableFull of it to one node",
         std::string("BM_SendTableFull/") + size + "/manual_time", BytesPerSecond(),
         std::nullopt});
  }
  add({"thallus", "thallus/tcp/100/100", "scan over TCP (UCX_TLS=tcp), all rows",
       "transport", "BM_Scan/2/1/100/100/real_time", BytesPerSecond(),
       "serialised IPC over TCP", "BM_SerializedTcp/100/100/real_time", BytesPerSecond(),
       std::nullopt});
  for (const char* k : {"16", "64", "256", "1024"}) {
    const std::string rows = std::string(k) + "K";
    add({"thallus", "thallus/batch/shm/" + rows,
         "scan over shared memory, batches of " + rows + " rows", "transport",
         std::string("BM_ScanBatch/0/") + k + "/real_time", BytesPerSecond(),
         "serialised IPC over TCP, same batches",
         std::string("BM_SerializedTcpBatch/") + k + "/real_time", BytesPerSecond(),
         std::nullopt});
    add({"thallus", "thallus/batch/tcp/" + rows,
         "scan over TCP (UCX_TLS=tcp), batches of " + rows + " rows", "transport",
         std::string("BM_ScanBatch/1/") + k + "/real_time", BytesPerSecond(),
         "serialised IPC over TCP, same batches",
         std::string("BM_SerializedTcpBatch/") + k + "/real_time", BytesPerSecond(),
         std::nullopt});
  }
  add({"thallus", "thallus/cpu/shm",
       "CPU per 64K-row batch (client + server), shared memory", "transport",
       "BM_Scan/2/0/100/100/real_time", Counter("cpu_us_per_batch", "us"),
       "serialised IPC over TCP", "BM_SerializedTcp/100/100/real_time",
       Counter("cpu_us_per_batch", "us"), std::nullopt});
  add({"thallus", "thallus/cpu/tcp", "CPU per 64K-row batch (client + server), TCP",
       "transport", "BM_Scan/2/1/100/100/real_time", Counter("cpu_us_per_batch", "us"),
       "serialised IPC over TCP", "BM_SerializedTcp/100/100/real_time",
       Counter("cpu_us_per_batch", "us"), std::nullopt});
  add({"thallus", "thallus/raw/shm", "scan, packed bodies, shared memory", "transport",
       "BM_Scan/0/0/100/100/real_time", BytesPerSecond(), "raw UCX tagged sends",
       "BM_RawUcx/0/real_time", BytesPerSecond(), std::nullopt});
  add({"thallus", "thallus/raw/shm-measured",
       "scan over shared memory, bodies measured (the default)", "transport",
       "BM_Scan/2/0/100/100/real_time", BytesPerSecond(), "raw UCX tagged sends",
       "BM_RawUcx/0/real_time", BytesPerSecond(), std::nullopt});
  add({"thallus", "thallus/raw/shm-memcpy",
       "scan over shared memory, bodies measured (the default)", "transport",
       "BM_Scan/2/0/100/100/real_time", BytesPerSecond(),
       "one memcpy of the scan's bytes (ceiling)", "BM_Memcpy/real_time",
       BytesPerSecond(), std::nullopt});
  add({"thallus", "thallus/raw/tcp", "scan, packed bodies, TCP", "transport",
       "BM_Scan/0/1/100/100/real_time", BytesPerSecond(), "raw UCX tagged sends over TCP",
       "BM_RawUcx/1/real_time", BytesPerSecond(), std::nullopt});

  // IPC.
  add({"ipc", "ipc/write-stream", "IPC stream write (column bytes)", "ipc",
       "BM_IpcWrite/file:0/real_time", BytesPerSecond(), "memcpy of the columns",
       "BM_MemcpyColumns/real_time", BytesPerSecond(), std::nullopt});
  add({"ipc", "ipc/write-file", "IPC file write (column bytes)", "ipc",
       "BM_IpcWrite/file:1/real_time", BytesPerSecond(), "memcpy of the columns",
       "BM_MemcpyColumns/real_time", BytesPerSecond(), std::nullopt});
  add({"ipc", "ipc/read-1GiB", "read a 1 GiB stream", "ipc",
       "BM_IpcReadStream/1073741824", us, "read a 1 MiB stream",
       "BM_IpcReadStream/1048576", us, std::nullopt});

  // Builders: each beside memcpy of the bytes it produces.
  const int64_t n = int64_t{1} << 20;
  struct B {
    const char* bench;
    int64_t bytes;
  };
  for (const B& b :
       {B{"BM_AppendOneByOne<Int8Type>", n}, B{"BM_AppendOneByOne<UInt16Type>", n * 2},
        B{"BM_AppendOneByOne<Int32Type>", n * 4},
        B{"BM_AppendOneByOne<Int64Type>", n * 8},
        B{"BM_AppendOneByOne<FloatType>", n * 4},
        B{"BM_AppendOneByOne<DoubleType>", n * 8},
        B{"BM_AppendOneByOne<HalfFloatType>", n * 2},
        B{"BM_AppendOneByOne<TimestampType>", n * 8},
        B{"BM_AppendValuesBulk<Int8Type>", n}, B{"BM_AppendValuesBulk<Int64Type>", n * 8},
        B{"BM_AppendValuesBulk<DoubleType>", n * 8}, B{"BM_AppendBoolean", n / 8},
        B{"BM_AppendWithNulls", n * 8}, B{"BM_AppendFixedSizeBinary", n * 16},
        B{"BM_AppendDecimal128", n * 16}, B{"BM_AppendStruct", n * 16},
        B{"BM_AppendDictionaryStrings", n * 4}}) {
    std::string label = std::string(b.bench).substr(3);  // without "BM_"
    add({"builder", std::string("builder/") + label, label, "builder", b.bench,
         BytesPerSecond(), "memcpy of " + std::to_string(b.bytes) + " B",
         "BM_Memcpy/" + std::to_string(b.bytes), BytesPerSecond(), std::nullopt});
  }
  return f;
}

}  // namespace

Metric Time(const std::string& unit) { return {Metric::kTime, unit, ""}; }
Metric BytesPerSecond() { return {Metric::kBytesPerSecond, "GB/s", ""}; }
Metric Counter(const std::string& name, const std::string& unit) {
  return {Metric::kCounter, unit, name};
}

const std::vector<ProgramSpec>& Programs() {
  static const std::vector<ProgramSpec> p = MakePrograms();
  return p;
}

const ProgramSpec* FindProgram(const std::string& name) {
  for (const auto& p : Programs()) {
    if (p.name == name || p.name + "_bench" == name) return &p;
  }
  return nullptr;
}

const std::vector<Section>& Sections() {
  static const std::vector<Section> s = MakeSections();
  return s;
}

std::string ShortHardware(const std::string& hardware) {
  if (hardware == kThesisHw)
    return "the thesis's two POWER9 IC922 servers with ThymesisFlow";
  if (hardware == kPlasmaHw)
    return "the object store's two POWER9 IC922 with ThymesisFlow";
  if (hardware == kThallusHw) return "InfiniBand RDMA";
  return hardware;
}

const std::vector<FigureSpec>& Figures() {
  static const std::vector<FigureSpec> f = MakeFigures();
  return f;
}

}  // namespace quiver::cli::bench
