#include "control/rpc/wire.h"

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

}  // namespace quiver::control
