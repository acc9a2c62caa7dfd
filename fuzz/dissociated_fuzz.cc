// libFuzzer target: Arrow's Dissociated IPC protocol
// (quiver/columnar/ipc/dissociated.h), every decoder a peer's bytes reach.
//
// The first byte of an input picks what the rest is fed to:
//   0  DecodeMetadataMessage; accepted messages re-encode to their bytes.
//   1  DecodeTag of the next 8 bytes; accepted tags re-make themselves.
//   2  DecodeAddressList; accepted lists re-encode to their bytes.
//   3  DecodeFreeData; accepted lists re-encode to their bytes.
//   4+ A whole conversation into a StreamReader: records of
//      [u8 0 = metadata, 1 = body][u32 length][body: u64 tag][length bytes],
//      each handed over as it comes, batches drained after each; the reader
//      validates fully, and every batch it gives must pass ValidateFull
//      again. Type-1 bodies resolve
//      only inside a 64 KiB arena mapped at a fixed address, so that seeds
//      can point at real bytes.
// Errors are the expected outcome for most inputs; crashes, sanitizer
// reports, leaks, timeouts and a broken round trip (abort) are findings.
//
// Regenerate the seeds in fuzz/corpus/dissociated (streams of sample
// batches with both body types, and one of each message) with
//   QUIVER_DISSOCIATED_SEEDS=fuzz/corpus/dissociated build/.../dissociated_fuzz
// which writes one file per seed and exits.

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "quiver/columnar/builder.h"
#include "quiver/columnar/ipc/dissociated.h"

namespace {

using namespace quiver;                    // NOLINT(build/namespaces)
using namespace quiver::ipc::dissociated;  // NOLINT(build/namespaces)

constexpr uint64_t kArenaBase = 0x5e0000000000ULL;
constexpr uint64_t kArenaSize = uint64_t{64} << 10;
uint64_t g_arena_used = 0;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "dissociated_fuzz: %s\n", what);
    std::abort();
  }
}

Result<std::shared_ptr<Buffer>> InArena(uint64_t address, uint64_t length) {
  if (address < kArenaBase || length > kArenaSize ||
      address - kArenaBase > kArenaSize - length) {
    return Status::Invalid("range outside the fuzz arena");
  }
  return Buffer::Wrap(reinterpret_cast<const uint8_t*>(address),
                      static_cast<int64_t>(length));
}

// Copies `bytes` into the arena (8-byte aligned) and returns its address.
uint64_t IntoArena(const Buffer& bytes) {
  const uint64_t at = (g_arena_used + 63) & ~uint64_t{63};
  Check(at + static_cast<uint64_t>(bytes.size()) <= kArenaSize, "arena too small");
  std::memcpy(reinterpret_cast<void*>(kArenaBase + at), bytes.data(),
              static_cast<size_t>(bytes.size()));
  g_arena_used = at + static_cast<uint64_t>(bytes.size());
  return kArenaBase + at;
}

void Record(std::string* out, bool body, std::string_view bytes, uint64_t tag = 0) {
  out->push_back(body ? 1 : 0);
  const auto n = static_cast<uint32_t>(bytes.size());
  out->append(reinterpret_cast<const char*>(&n), sizeof(n));
  if (body) out->append(reinterpret_cast<const char*>(&tag), sizeof(tag));
  out->append(bytes);
}

Result<RecordBatchPtr> Sample(int64_t rows) {
  Int64Builder ints;
  StringBuilder strings;
  DictionaryBuilder dict(dictionary(int8(), utf8()));
  for (int64_t i = 0; i < rows; ++i) {
    QUIVER_RETURN_NOT_OK(i % 4 == 3 ? ints.AppendNull() : ints.Append(i * 977));
    QUIVER_RETURN_NOT_OK(strings.Append(std::string(static_cast<size_t>(i % 5), 'q')));
    QUIVER_RETURN_NOT_OK(dict.Append(std::string_view(i % 3 ? "red" : "blue")));
  }
  QUIVER_ASSIGN_OR_RAISE(auto a, ints.Finish());
  QUIVER_ASSIGN_OR_RAISE(auto b, strings.Finish());
  QUIVER_ASSIGN_OR_RAISE(auto c, dict.Finish());
  auto s = schema({field("n", int64()), field("s", utf8()), field("d", c->type())});
  return RecordBatch::Make(s, rows, {a, b, c});
}

// A conversation: the stream of `batches` with body type `type`, type-1
// buffers copied into the arena.
Result<std::string> Conversation(const std::vector<RecordBatchPtr>& batches,
                                 BodyType type) {
  QUIVER_ASSIGN_OR_RAISE(auto writer, StreamWriter::Make(batches[0]->schema(), type));
  std::vector<Outgoing> all;
  QUIVER_ASSIGN_OR_RAISE(auto begin, writer->Begin());
  all.push_back(std::move(begin));
  for (const auto& b : batches) {
    QUIVER_ASSIGN_OR_RAISE(auto out, writer->Write(*b));
    for (auto& o : out) all.push_back(std::move(o));
  }
  QUIVER_ASSIGN_OR_RAISE(auto end, writer->End());
  all.push_back(std::move(end));
  std::string out;
  // Bodies first, then metadata: the reader must hold them until due.
  for (auto& o : all) {
    if (!o.tagged) continue;
    if (type == BodyType::kAddresses) {
      std::vector<AddressRange> ranges;
      for (const auto& b : o.buffers) {
        if (b == nullptr || b->size() == 0) {
          ranges.push_back({0, 0});
        } else {
          ranges.push_back({IntoArena(*b), static_cast<uint64_t>(b->size())});
        }
      }
      o.body = EncodeAddressList(ranges);
    }
    Record(&out, true, o.body, o.tag);
  }
  for (const auto& o : all) Record(&out, false, o.metadata);
  return out;
}

int Stream(std::string_view bytes);

std::vector<std::pair<std::string, std::string>> MakeSeeds() {
  std::vector<std::pair<std::string, std::string>> seeds;
  auto add = [&](const std::string& name, uint8_t selector, const std::string& bytes) {
    seeds.emplace_back(name, std::string(1, static_cast<char>(selector)) + bytes);
  };
  add("metadata", 0, EncodeMetadataMessage(3, "flatbuffer"));
  add("end_of_stream", 0, EncodeEndOfStream(9));
  const uint64_t tag = MakeTag(12, BodyType::kAddresses);
  add("tag", 1, std::string(reinterpret_cast<const char*>(&tag), sizeof(tag)));
  add("address_list", 2, EncodeAddressList({{kArenaBase, 16}, {0, 0}}));
  add("free_data", 3, EncodeFreeData({kArenaBase, kArenaBase + 64}));
  std::vector<RecordBatchPtr> batches;
  for (int64_t rows : {20, 0, 7}) {
    auto b = Sample(rows);
    Check(b.ok(), "cannot build a sample batch");
    batches.push_back(*b);
  }
  auto packed = Conversation(batches, BodyType::kPacked);
  auto listed = Conversation(batches, BodyType::kAddresses);
  Check(packed.ok() && listed.ok(), "cannot write the sample streams");
  // A stream seed must decode to its three batches.
  Check(Stream(*packed) == 3 && Stream(*listed) == 3, "a stream seed does not decode");
  add("stream_packed", 4, *packed);
  add("stream_addresses", 4, *listed);
  return seeds;
}

void Metadata(std::string_view bytes) {
  auto m = DecodeMetadataMessage(bytes);
  if (!m.ok()) return Check(m.status().IsInvalid(), "metadata: not Invalid");
  const std::string again = m->kind == MetadataKind::kEndOfStream
                                ? EncodeEndOfStream(m->sequence)
                                : EncodeMetadataMessage(m->sequence, m->flatbuffer);
  Check(again == bytes, "metadata message has two spellings");
}

void TagOf(std::string_view bytes) {
  if (bytes.size() < 8) return;
  uint64_t tag;
  std::memcpy(&tag, bytes.data(), sizeof(tag));
  auto t = DecodeTag(tag);
  if (!t.ok()) return Check(t.status().IsInvalid(), "tag: not Invalid");
  Check(MakeTag(t->sequence, t->type) == tag, "tag has two spellings");
}

void Addresses(std::string_view bytes) {
  auto l = DecodeAddressList(bytes, 1 << 16);
  if (!l.ok()) return Check(l.status().IsInvalid(), "address list: not Invalid");
  Check(EncodeAddressList(*l) == bytes, "address list has two spellings");
}

void Free(std::string_view bytes) {
  auto f = DecodeFreeData(bytes);
  if (!f.ok()) return Check(f.status().IsInvalid(), "free_data: not Invalid");
  Check(EncodeFreeData(*f) == bytes, "free_data has two spellings");
}

// The number of batches decoded.
int Stream(std::string_view bytes) {
  StreamReader::Limits limits;
  limits.max_pending = 64;
  limits.max_buffers = 4096;
  // Full validation while decoding: an invalid batch is an error, never a
  // batch (the cheap default checks only what reading needs).
  auto options = ipc::IpcReadOptions::Defaults();
  options.validate_full = true;
  StreamReader reader(InArena, options, limits);
  int batches = 0;
  size_t at = 0;
  while (at + 5 <= bytes.size()) {
    const uint8_t kind = static_cast<uint8_t>(bytes[at]);
    uint32_t n;
    std::memcpy(&n, bytes.data() + at + 1, sizeof(n));
    at += 5;
    Status st;
    if (kind == 1) {
      if (at + 8 > bytes.size()) return batches;
      uint64_t tag;
      std::memcpy(&tag, bytes.data() + at, sizeof(tag));
      at += 8;
      if (n > bytes.size() - at) return batches;
      st = reader.OnBody(tag, Buffer::FromString(std::string(bytes.substr(at, n))));
    } else if (kind == 0) {
      if (n > bytes.size() - at) return batches;
      st = reader.OnMetadata(bytes.substr(at, n));
    } else {
      return batches;
    }
    at += n;
    if (!st.ok()) return batches;
    for (;;) {
      auto next = reader.Next();
      if (!next.ok() || !next->has_value()) break;
      Check((**next)->ValidateFull().ok(), "a decoded batch fails ValidateFull");
      ++batches;
    }
  }
  return batches;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  void* p = mmap(reinterpret_cast<void*>(kArenaBase), kArenaSize, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  Check(p == reinterpret_cast<void*>(kArenaBase), "cannot map the arena");
  // Always: the arena then holds the bytes the seeds point at.
  auto seeds = MakeSeeds();
  if (const char* dir = std::getenv("QUIVER_DISSOCIATED_SEEDS")) {
    for (const auto& [name, bytes] : seeds) {
      const std::string path = std::string(dir) + "/" + name;
      std::ofstream(path, std::ios::binary) << bytes;
      std::printf("wrote %s (%zu bytes)\n", path.c_str(), bytes.size());
    }
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0]) {
    case 0:
      Metadata(rest);
      break;
    case 1:
      TagOf(rest);
      break;
    case 2:
      Addresses(rest);
      break;
    case 3:
      Free(rest);
      break;
    default:
      (void)Stream(rest);
      break;
  }
  return 0;
}
