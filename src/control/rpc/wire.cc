#include "control/rpc/wire.h"

#include <cstdint>

namespace quiver::control {

wire::Chunk ToWire(const ChunkMeta& c) {
  wire::Chunk w;
  w.set_id(c.id);
  w.set_home(c.home);
  w.set_publisher(c.publisher);
  w.set_publisher_pid(c.publisher_pid);
  w.set_first_row(c.first_row);
  w.set_num_rows(c.num_rows);
  w.set_explicit_rows(c.explicit_rows);
  w.set_local_only(c.local_only);
  w.set_name(c.name);
  w.set_batch_descriptor(c.descriptor);
  for (uint32_t o : c.owners) w.add_owners(o);
  w.set_group(c.group);
  w.set_group_chunks(c.group_chunks);
  return w;
}

ChunkMeta FromWire(const wire::Chunk& w) {
  ChunkMeta c;
  c.id = w.id();
  c.home = w.home();
  c.publisher = w.publisher();
  c.publisher_pid = w.publisher_pid();
  c.first_row = w.first_row();
  c.num_rows = w.num_rows();
  c.explicit_rows = w.explicit_rows();
  c.local_only = w.local_only();
  c.name = w.name();
  c.descriptor = w.batch_descriptor();
  c.owners.assign(w.owners().begin(), w.owners().end());
  c.group = w.group();
  c.group_chunks = w.group_chunks();
  return c;
}

std::vector<BufferRange> FromWire(
    const google::protobuf::RepeatedPtrField<wire::Range>& ranges) {
  std::vector<BufferRange> out;
  out.reserve(ranges.size());
  for (const auto& r : ranges) out.push_back({r.address(), r.length()});
  return out;
}

void ToWire(const std::vector<BufferRange>& ranges,
            google::protobuf::RepeatedPtrField<wire::Range>* out) {
  for (const auto& r : ranges) {
    auto* w = out->Add();
    w->set_address(r.address);
    w->set_length(r.length);
  }
}

namespace {

// The tags of UploadPieceRequest's fields (field number << 3 | wire type),
// each one byte.
constexpr uint8_t kTagUpload = 0x08;  // 1, varint
constexpr uint8_t kTagOffset = 0x10;  // 2, varint
constexpr uint8_t kTagData = 0x1a;    // 3, length-delimited
static_assert(wire::UploadPieceRequest::kUploadFieldNumber == 1 &&
              wire::UploadPieceRequest::kOffsetFieldNumber == 2 &&
              wire::UploadPieceRequest::kDataFieldNumber == 3);

// A base-128 varint of at most 10 bytes whose value fits in 64 bits.
bool ReadVarint(std::string_view in, size_t* pos, uint64_t* out) {
  uint64_t v = 0;
  for (int i = 0; i < 10 && *pos < in.size(); ++i) {
    const auto b = static_cast<uint8_t>(in[(*pos)++]);
    if (i == 9 && b > 1) return false;
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      *out = v;
      return true;
    }
  }
  return false;
}

void AppendVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

}  // namespace

std::string UploadPieceHead(uint64_t upload, uint64_t offset, size_t data_size) {
  wire::UploadPieceRequest head;
  head.set_upload(upload);
  head.set_offset(offset);
  std::string out = head.SerializeAsString();
  out.push_back(static_cast<char>(kTagData));
  AppendVarint(data_size, &out);
  return out;
}

Result<UploadPieceView> ParseUploadPiece(std::string_view payload) {
  auto malformed = [&] {
    return Status::Invalid("malformed quiver.rpc.UploadPieceRequest (", payload.size(),
                           " bytes)");
  };
  // The three fields in any order, a later value replacing an earlier one,
  // as the generated parser reads them; anything else (unknown fields, other
  // wire types, tags spelt in more than one byte) is refused, though a
  // protobuf library might accept it: senders write none of it.
  UploadPieceView out;
  size_t pos = 0;
  while (pos < payload.size()) {
    const auto tag = static_cast<uint8_t>(payload[pos++]);
    bool ok = false;
    if (tag == kTagUpload) {
      ok = ReadVarint(payload, &pos, &out.upload);
    } else if (tag == kTagOffset) {
      ok = ReadVarint(payload, &pos, &out.offset);
    } else if (tag == kTagData) {
      uint64_t length = 0;
      ok = ReadVarint(payload, &pos, &length) && length <= INT32_MAX &&
           length <= payload.size() - pos;
      if (ok) {
        out.data = payload.substr(pos, length);
        pos += length;
      }
    }
    if (!ok) return malformed();
  }
  return out;
}

}  // namespace quiver::control
