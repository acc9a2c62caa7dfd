// An independent reading and writing of descriptors, from the documents
// alone: Arrow's Dissociated IPC protocol (5-byte metadata prefix, u64
// tags, type-0 and type-1 bodies), the flatbuffer encoding of Arrow's
// Message.fbs, and the framing of docs/descriptor.md. It shares no code with
// src/columnar/ipc: the flatbuffers are read by hand (root offset, vtable,
// fields by index), every integer with memcpy, and every bound is checked,
// so a descriptor Quiver writes is checked by a parser that Quiver's bugs
// cannot bend, and Quiver is fed messages it did not write.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace quiver::ipc::spec {

// ---------------------------------------------------------------------------
// Writing (docs/descriptor.md, "Byte layout")

inline void Put64(std::string* out, uint64_t v) {
  out->append(reinterpret_cast<const char*>(&v), 8);
}
inline void Put32(std::string* out, uint32_t v) {
  out->append(reinterpret_cast<const char*>(&v), 4);
}

// The tag of a data-stream message: sequence number in bits 0-31, body type
// in bits 56-63.
inline uint64_t Tag(uint32_t sequence, uint8_t body_type) {
  return (uint64_t{body_type} << 56) | sequence;
}

// A type-1 body: total size, count, then (address, length) per buffer.
inline std::string AddressList(const std::vector<std::pair<uint64_t, uint64_t>>& pairs) {
  uint64_t total = 0;
  for (const auto& p : pairs) total += p.second;
  std::string out;
  Put64(&out, total);
  Put64(&out, pairs.size());
  for (const auto& [address, length] : pairs) {
    Put64(&out, address);
    Put64(&out, length);
  }
  return out;
}

class FrameWriter {
 public:
  // Any frame, as the framing allows it (for malformed input too).
  void Raw(uint8_t stream, uint64_t tag, std::string_view message) {
    frames_.push_back(static_cast<char>(stream));
    frames_.append(3, '\0');
    Put32(&frames_, static_cast<uint32_t>(message.size()));
    Put64(&frames_, tag);
    frames_.append(message);
    frames_.append((8 - message.size() % 8) % 8, '\0');
    ++count_;
  }
  // A metadata-stream message: kind 1, the sequence number, the flatbuffer.
  void Metadata(uint32_t sequence, std::string_view flatbuffer) {
    std::string m(1, '\x01');
    Put32(&m, sequence);
    m.append(flatbuffer);
    Raw(0, 0, m);
  }
  void Body(uint64_t tag, std::string_view body) { Raw(1, tag, body); }
  // The end of stream: exactly kind 0 and the sequence number.
  void End(uint32_t sequence) {
    std::string m(1, '\0');
    Put32(&m, sequence);
    Raw(0, 0, m);
  }
  std::string Finish() const {
    std::string out("QVDESC", 6);
    const uint16_t version = 2;
    out.append(reinterpret_cast<const char*>(&version), 2);
    Put32(&out, count_);
    Put32(&out, static_cast<uint32_t>(16 + frames_.size()));
    return out + frames_;
  }

 private:
  std::string frames_;
  uint32_t count_ = 0;
};

// ---------------------------------------------------------------------------
// Reading

// A flatbuffer table read by hand, every access bounds-checked; `ok` turns
// false on the first bad offset.
class Table {
 public:
  Table(std::string_view buf, size_t pos, bool* ok) : buf_(buf), pos_(pos), ok_(ok) {
    const int32_t soffset = Load<int32_t>(pos);
    vtable_ = static_cast<size_t>(static_cast<int64_t>(pos) - soffset);
    vsize_ = Load<uint16_t>(vtable_);
  }
  static Table Root(std::string_view buf, bool* ok) {
    Table t(buf, 0, ok, 0);
    return Table(buf, t.Load<uint32_t>(0), ok);
  }

  template <typename T>
  T Scalar(int field, T fallback = T{}) {
    const size_t at = Field(field);
    return at == 0 ? fallback : Load<T>(pos_ + at);
  }
  std::optional<Table> Child(int field) {
    const size_t at = Field(field);
    if (at == 0) return std::nullopt;
    return Table(buf_, Target(pos_ + at), ok_);
  }
  // A vector of 16-byte structs of two int64 (FieldNode, Buffer).
  std::vector<std::pair<int64_t, int64_t>> Pairs(int field) {
    std::vector<std::pair<int64_t, int64_t>> out;
    const size_t at = Field(field);
    if (at == 0) return out;
    const size_t vec = Target(pos_ + at);
    const uint32_t n = Load<uint32_t>(vec);
    if (n > buf_.size() / 16) {
      *ok_ = false;
      return out;
    }
    for (uint32_t i = 0; i < n; ++i) {
      out.emplace_back(Load<int64_t>(vec + 4 + 16 * i), Load<int64_t>(vec + 12 + 16 * i));
    }
    return out;
  }

  template <typename T>
  T Load(size_t at) {
    T v{};
    if (at > buf_.size() || buf_.size() - at < sizeof(T)) {
      *ok_ = false;
      return v;
    }
    std::memcpy(&v, buf_.data() + at, sizeof(T));
    return v;
  }

 private:
  Table(std::string_view buf, size_t pos, bool* ok, int)
      : buf_(buf), pos_(pos), ok_(ok) {}
  size_t Field(int field) {
    const size_t slot = 4 + 2 * static_cast<size_t>(field);
    if (slot + 2 > vsize_) return 0;
    return Load<uint16_t>(vtable_ + slot);
  }
  size_t Target(size_t at) { return at + Load<uint32_t>(at); }

  std::string_view buf_;
  size_t pos_ = 0, vtable_ = 0, vsize_ = 0;
  bool* ok_;
};

// Message.fbs: MessageHeader union values.
enum Header : uint8_t { kNone = 0, kSchema = 1, kDictionaryBatch = 2, kRecordBatch = 3 };

struct Message {
  uint32_t sequence = 0;
  uint8_t header = kNone;
  int64_t body_length = 0;
  // RecordBatch (also the data of a DictionaryBatch)
  int64_t length = 0;
  std::vector<std::pair<int64_t, int64_t>> nodes, buffers;
  int64_t dictionary_id = -1;
  bool is_delta = false;
  // Its body, when it has one.
  uint8_t body_type = 0xFF;
  std::vector<std::pair<uint64_t, uint64_t>> pairs;  // type 1
  std::string packed;                                // type 0
};

// Parses a whole descriptor; empty `error` on success.
inline std::vector<Message> Parse(std::string_view bytes, std::string* error) {
  std::vector<Message> out;
  auto fail = [&](const std::string& why) {
    *error = why;
    return std::vector<Message>{};
  };
  auto u32 = [&](size_t at) {
    uint32_t v;
    std::memcpy(&v, bytes.data() + at, 4);
    return v;
  };
  auto u64 = [&](std::string_view s, size_t at) {
    uint64_t v;
    std::memcpy(&v, s.data() + at, 8);
    return v;
  };
  if (bytes.size() < 16 || bytes.substr(0, 6) != "QVDESC") return fail("no header");
  uint16_t version;
  std::memcpy(&version, bytes.data() + 6, 2);
  if (version != 2) return fail("version " + std::to_string(version));
  const uint32_t count = u32(8);
  if (u32(12) != bytes.size()) return fail("total size");
  size_t pos = 16;
  bool ended = false;
  for (uint32_t f = 0; f < count; ++f) {
    if (ended) return fail("frame after the end of stream");
    if (bytes.size() - pos < 16) return fail("frame header past the end");
    const uint8_t stream = static_cast<uint8_t>(bytes[pos]);
    const uint32_t size = u32(pos + 4);
    const uint64_t tag = u64(bytes, pos + 8);
    const size_t padded = (size + 7) / 8 * 8;
    if (bytes.size() - pos - 16 < padded) return fail("message past the end");
    const std::string_view m = bytes.substr(pos + 16, size);
    pos += 16 + padded;
    if (stream == 1) {  // data stream: the body of the last message
      if (out.empty() || out.back().body_type != 0xFF ||
          (out.back().header != kRecordBatch && out.back().header != kDictionaryBatch)) {
        return fail("body without a batch message");
      }
      if ((tag & 0xFFFFFFFFu) != out.back().sequence) return fail("tag sequence");
      if ((tag & 0x00FFFFFF00000000ull) != 0) return fail("reserved tag bits");
      Message& msg = out.back();
      msg.body_type = static_cast<uint8_t>(tag >> 56);
      if (msg.body_type == 0) {
        msg.packed.assign(m);
      } else if (msg.body_type == 1) {
        if (m.size() < 16) return fail("short address list");
        const uint64_t total = u64(m, 0), n = u64(m, 8);
        if (m.size() != 16 * (n + 1)) return fail("address list size");
        uint64_t sum = 0;
        for (uint64_t i = 0; i < n; ++i) {
          msg.pairs.emplace_back(u64(m, 16 * (i + 1)), u64(m, 16 * (i + 1) + 8));
          sum += msg.pairs.back().second;
        }
        if (sum != total) return fail("address list total");
      } else {
        return fail("body type " + std::to_string(msg.body_type));
      }
      continue;
    }
    if (stream != 0 || tag != 0) return fail("metadata frame");
    if (m.size() < 5) return fail("short metadata message");
    const uint8_t kind = static_cast<uint8_t>(m[0]);
    uint32_t sequence;
    std::memcpy(&sequence, m.data() + 1, 4);
    if (sequence != out.size()) return fail("sequence " + std::to_string(sequence));
    if (kind == 0) {
      if (m.size() != 5) return fail("end of stream is not 5 bytes");
      ended = true;
      continue;
    }
    if (kind != 1) return fail("metadata kind");
    if (!out.empty() && out.back().header != kSchema && out.back().body_type == 0xFF) {
      return fail("batch message without its body");
    }
    const std::string flatbuffer(m.substr(5));
    bool ok = true;
    Table message = Table::Root(flatbuffer, &ok);
    Message msg;
    msg.sequence = sequence;
    msg.header = message.Scalar<uint8_t>(1);
    msg.body_length = message.Scalar<int64_t>(3);
    std::optional<Table> header = message.Child(2);
    if (!header) return fail("message without a header");
    std::optional<Table> batch;
    if (msg.header == kRecordBatch) {
      batch = header;
    } else if (msg.header == kDictionaryBatch) {
      msg.dictionary_id = header->Scalar<int64_t>(0);
      msg.is_delta = header->Scalar<uint8_t>(2) != 0;
      batch = header->Child(1);
      if (!batch) return fail("dictionary batch without data");
    } else if (msg.header != kSchema) {
      return fail("header type " + std::to_string(msg.header));
    }
    if (batch) {
      msg.length = batch->Scalar<int64_t>(0);
      msg.nodes = batch->Pairs(1);
      msg.buffers = batch->Pairs(2);
    }
    if (!ok) return fail("flatbuffer offset out of bounds");
    if (out.empty() && msg.header != kSchema) return fail("first message is not Schema");
    out.push_back(std::move(msg));
  }
  if (!ended) return fail("no end of stream");
  if (pos != bytes.size()) return fail("bytes after the end of stream");
  error->clear();
  return out;
}

}  // namespace quiver::ipc::spec
