// libFuzzer target: the transport's control messages (src/transport/wire.h),
// every decoder a client's or server's bytes reach.
//
// The input is a control frame: DecodeFrame, then the decoder of its kind on
// the body. Whatever decodes must encode back to the same bytes (abort
// otherwise). Errors are the expected outcome for most inputs; crashes,
// sanitizer reports, leaks and timeouts are findings.
//
// Regenerate the seeds in fuzz/corpus/transport (one valid frame of each
// kind) with
//   QUIVER_TRANSPORT_SEEDS=fuzz/corpus/transport build/.../transport_fuzz

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "transport/wire.h"

namespace {

using namespace quiver::transport::wire;

template <typename M>
void Check(const quiver::Result<M>& decoded, std::string_view body) {
  if (decoded.ok() && Encode(*decoded) != body) std::abort();
}

void Decode(std::string_view bytes) {
  auto frame = DecodeFrame(bytes);
  if (!frame.ok()) return;
  if (EncodeFrame(frame->kind, frame->request, frame->body) != bytes) std::abort();
  const std::string_view body = frame->body;
  switch (frame->kind) {
    case Kind::kHello:
      return Check(DecodeHello(body), body);
    case Kind::kHelloReply:
      return Check(DecodeHelloReply(body), body);
    case Kind::kInitScan:
      return Check(DecodeInitScan(body), body);
    case Kind::kScanReply:
    case Kind::kFinalize:
      return Check(DecodeScanId(body), body);
    case Kind::kFinalized:
      return Check(DecodeFinalized(body), body);
    case Kind::kCredit:
      return Check(DecodeCredit(body), body);
    case Kind::kError:
      return Check(DecodeError(body), body);
    case Kind::kStatsReply:
      return Check(DecodeStatsReply(body), body);
    case Kind::kProbe:
      return Check(DecodeProbe(body), body);
    case Kind::kDataPath:
      return Check(DecodeDataPath(body), body);
    case Kind::kStats:
    case Kind::kWantData:
    case Kind::kMetadata:  // the bytes go to the Dissociated IPC reader
    case Kind::kBody:
      return;
  }
}

void WriteSeeds(const char* dir) {
  Hello hello;
  hello.worker_address = std::string(40, '\x07');
  HelloReply reply;
  reply.want_data = 1;
  reply.free_data = 2;
  reply.pool_address = 0x10000;
  reply.pool_length = 1 << 20;
  reply.probe_address = 0x10000;
  reply.probe_length = 4096;
  reply.rkey = "rkey";
  reply.worker_address = "address";
  InitScan init;
  init.sql = "SELECT 1";
  init.dataset = "t";
  init.min_rows = 65536;
  init.window_batches = 4;
  init.window_bytes = 1 << 26;
  init.addresses_from = 32768;
  const std::pair<const char*, std::string> seeds[] = {
      {"hello", EncodeFrame(Kind::kHello, 1, Encode(hello))},
      {"hello_reply", EncodeFrame(Kind::kHelloReply, 1, Encode(reply))},
      {"init_scan", EncodeFrame(Kind::kInitScan, 2, Encode(init))},
      {"scan_reply", EncodeFrame(Kind::kScanReply, 2, Encode(ScanId{7}))},
      {"finalize", EncodeFrame(Kind::kFinalize, 3, Encode(ScanId{7}))},
      {"finalized", EncodeFrame(Kind::kFinalized, 3, Encode(Finalized{7, 12}))},
      {"credit", EncodeFrame(Kind::kCredit, 4, Encode(Credit{7, 2}))},
      {"error", EncodeFrame(Kind::kError, 0, Encode(Error{7, "boom"}))},
      {"stats", EncodeFrame(Kind::kStats, 5, {})},
      {"stats_reply",
       EncodeFrame(Kind::kStatsReply, 5, Encode(StatsReply{1, 2, 3, 4, 5}))},
      {"probe", EncodeFrame(Kind::kProbe, 6, Encode(Probe{65536, 99}))},
      {"data_path", EncodeFrame(Kind::kDataPath, 0, Encode(DataPath{1}))},
  };
  for (const auto& [name, bytes] : seeds) {
    std::ofstream(std::string(dir) + "/" + name, std::ios::binary) << bytes;
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("QUIVER_TRANSPORT_SEEDS")) {
    WriteSeeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Decode(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
