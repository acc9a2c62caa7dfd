// Arrow tables as objects (include/quiver/store.h, docs/store.md "Tables").
//
// A table that some node has room for is one object: its Arrow IPC stream,
// metadata kTableMetadata. A bigger one is cut into parts of consecutive
// rows, each an IPC stream in its own object on the node with the most room
// left, and the table's id names a small object listing them (metadata
// kPartsMetadata):
//
//   "QVTPARTS" | u64 rows | u32 parts | parts x (20-byte id | u64 rows)
//
// little-endian. The parts stay unsealed (invisible, owned by this client's
// session) until all are written; then they are sealed, then the list. A
// failure aborts them all; a crash leaves nothing either, since the homes
// free what a dead session was creating.
#include <algorithm>
#include <cstring>

#include "quiver/columnar/io.h"
#include "quiver/columnar/ipc/reader.h"
#include "quiver/columnar/ipc/writer.h"
#include "store/client/store_impl.h"

namespace quiver::store {

namespace {

constexpr std::string_view kTableMetadata = "quiver:arrow-ipc-stream";
constexpr std::string_view kPartsMetadata = "quiver:arrow-table-parts";
constexpr char kPartsMagic[8] = {'Q', 'V', 'T', 'P', 'A', 'R', 'T', 'S'};
constexpr size_t kPartEntry = ObjectId::kSize + 8;
constexpr uint32_t kMaxParts = 1u << 20;
constexpr uint64_t kMaxPartBytes = 64ULL << 20;

ObjectId PartId(const ObjectId& table, size_t i) {
  return ObjectId::FromName("quiver:table-part:" + table.Hex() + ":" + std::to_string(i));
}

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

template <typename T>
T Take(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Writes `table` as an IPC stream into object `id` (created, not sealed).
Status WriteInto(ObjectStore& store, const ObjectId& id, const Table& table,
                 uint64_t size, std::string_view metadata, const CreateOptions& where) {
  QUIVER_ASSIGN_OR_RAISE(auto buf, store.Create(id, size, metadata, where));
  io::FixedSizeBufferWriter sink(buf->mutable_data(), buf->size());
  Status st = ipc::WriteTable(table, ipc::IpcFormat::kStream, &sink);
  if (st.ok() && static_cast<uint64_t>(*sink.Tell()) != size) {
    st = Status::IOError("the table took ", *sink.Tell(), " bytes, not the ", size,
                         " measured");
  }
  if (!st.ok()) (void)store.Abort(id);
  return st;
}

Result<TablePtr> ReadStream(const ObjectBuffer& o) {
  auto reader = ipc::RecordBatchStreamReader::Open(o.data);
  if (!reader.ok()) return reader.status().WithContext("object " + o.id.Hex());
  auto table = (*reader)->ReadTable();
  if (!table.ok()) return table.status().WithContext("object " + o.id.Hex());
  return table;
}

struct PartList {
  uint64_t rows = 0;
  std::vector<ObjectId> ids;
  std::vector<uint64_t> rows_of;
};

// The list of parts from object memory: bytes another process wrote, so
// every length is checked before it is used.
Result<PartList> ParseParts(const ObjectId& id, const Buffer& data) {
  auto bad = [&](const std::string& why) {
    return Status::Invalid("object ", id.Hex(),
                           " is not a valid list of table parts: ", why);
  };
  const uint8_t* p = data.data();
  const auto size = static_cast<uint64_t>(data.size());
  if (size < 20 || std::memcmp(p, kPartsMagic, 8) != 0) return bad("no header");
  PartList list;
  list.rows = Take<uint64_t>(p + 8);
  const uint32_t n = Take<uint32_t>(p + 16);
  if (n == 0 || n > kMaxParts || size != 20 + uint64_t{n} * kPartEntry) {
    return bad(std::to_string(n) + " parts in " + std::to_string(size) + " bytes");
  }
  uint64_t sum = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint8_t* e = p + 20 + uint64_t{i} * kPartEntry;
    auto part = ObjectId::FromBinary(
        std::string_view(reinterpret_cast<const char*>(e), ObjectId::kSize));
    if (!part.ok() || part->nil()) return bad("part " + std::to_string(i) + " has no id");
    const uint64_t rows = Take<uint64_t>(e + ObjectId::kSize);
    if (rows > list.rows - sum) return bad("the parts hold more rows than the table");
    sum += rows;
    list.ids.push_back(*part);
    list.rows_of.push_back(rows);
  }
  if (sum != list.rows) return bad("the parts hold fewer rows than the table");
  return list;
}

}  // namespace

Result<TableLayout> ObjectStore::PutTable(const ObjectId& id, const Table& table,
                                          const TableOptions& options) {
  QUIVER_ASSIGN_OR_RAISE(int64_t whole,
                         ipc::GetSerializedSize(table, ipc::IpcFormat::kStream));
  TableLayout layout;
  layout.bytes = static_cast<uint64_t>(whole);
  auto context = [&](const Status& st) {
    return st.WithContext("PutTable of object " + id.Hex());
  };
  // Room per node, as the homes count it.
  std::vector<std::pair<uint32_t, uint64_t>> room;  // node, free bytes
  uint64_t largest_capacity = 0;
  if (!options.node) {
    for (uint32_t n : impl_->nodes()) {
      auto st = Stats(n);
      if (!st.ok()) continue;  // down: no room there
      largest_capacity = std::max(largest_capacity, st->capacity);
      room.emplace_back(
          n, st->capacity > st->region_used ? st->capacity - st->region_used : 0);
    }
  }
  const bool one_fits = std::any_of(
      room.begin(), room.end(), [&](const auto& r) { return r.second >= layout.bytes; });
  if (options.node || one_fits || table.num_rows() <= 1) {
    CreateOptions where;
    where.node = options.node;
    Status st = WriteInto(*this, id, table, layout.bytes, kTableMetadata, where);
    if (st.ok()) st = Seal(id);
    if (!st.ok()) return context(st);
    return layout;
  }

  // Parts of about `target` bytes, cut by rows.
  uint64_t target = options.part_bytes;
  if (target == 0)
    target = std::min(kMaxPartBytes, std::max<uint64_t>(largest_capacity / 8, 1));
  const auto rows = static_cast<uint64_t>(table.num_rows());
  const uint64_t parts_wanted =
      std::max<uint64_t>(1, (layout.bytes + target - 1) / target);
  if (parts_wanted > kMaxParts) {
    return context(Status::Invalid(parts_wanted, " parts of ", target,
                                   " bytes: more than ", kMaxParts));
  }
  const uint64_t rows_per =
      std::max<uint64_t>(1, (rows + parts_wanted - 1) / parts_wanted);
  std::vector<ObjectId> made;
  auto abort_all = [&](const Status& st) {
    for (const auto& part : made) (void)Abort(part);
    return context(st);
  };
  std::string list(kPartsMagic, sizeof(kPartsMagic));
  Put<uint64_t>(&list, rows);
  Put<uint32_t>(&list, 0);  // the count, set below
  for (uint64_t first = 0; first < rows; first += rows_per) {
    const uint64_t n = std::min(rows_per, rows - first);
    TablePtr slice = table.Slice(static_cast<int64_t>(first), static_cast<int64_t>(n));
    auto size = ipc::GetSerializedSize(*slice, ipc::IpcFormat::kStream);
    if (!size.ok()) return abort_all(size.status());
    const auto bytes = static_cast<uint64_t>(*size);
    const ObjectId part = PartId(id, made.size());
    // The node with the most room left takes it; a full one is skipped.
    std::sort(room.begin(), room.end(),
              [](const auto& a, const auto& b) { return a.second > b.second; });
    Status st =
        Status::OutOfMemory("no node has ", bytes, " bytes free for part ", made.size(),
                            " of the table (", layout.bytes, " bytes in all)");
    for (auto& [node, avail] : room) {
      if (avail < bytes) break;
      CreateOptions where;
      where.node = node;
      Status wrote = WriteInto(*this, part, *slice, bytes, kTableMetadata, where);
      if (wrote.ok()) {
        avail -= bytes;
        layout.part_homes.push_back(node);
        st = Status::OK();
        break;
      }
      if (!wrote.IsOutOfMemory()) return abort_all(wrote);
      avail = 0;  // fuller than its status said
    }
    if (!st.ok()) return abort_all(st);
    made.push_back(part);
    list += part.Binary();
    Put<uint64_t>(&list, n);
  }
  const auto count = static_cast<uint32_t>(made.size());
  std::memcpy(list.data() + 16, &count, sizeof(count));
  for (const auto& part : made) {
    Status st = Seal(part);
    if (!st.ok()) {
      // Sealed ones are the store's now: delete them; abort the rest.
      (void)Delete(made);
      return abort_all(st);
    }
  }
  layout.parts = made;
  Status st = CreateAndSeal(id, list, kPartsMetadata);
  if (!st.ok()) {
    (void)Delete(made);
    return context(st);
  }
  return layout;
}

Result<TablePtr> ObjectStore::GetTable(const ObjectId& id, int64_t timeout_ms) {
  QUIVER_ASSIGN_OR_RAISE(auto got, Get({id}, timeout_ms));
  ObjectBuffer& o = got[0];
  QUIVER_RETURN_NOT_OK(o.status);
  // The table's buffers keep the pin; this client's Get reference goes now.
  (void)Release(id);
  if (o.metadata->view() == kTableMetadata) return ReadStream(o);
  if (o.metadata->view() != kPartsMetadata) {
    return Status::Invalid("object ", id.Hex(), " does not hold a table (PutTable)");
  }
  QUIVER_ASSIGN_OR_RAISE(PartList list, ParseParts(id, *o.data));
  // One round trip per home for every part.
  QUIVER_ASSIGN_OR_RAISE(auto parts, Get(list.ids, timeout_ms));
  for (const auto& part : list.ids) (void)Release(part);
  std::vector<RecordBatchPtr> batches;
  SchemaPtr schema;
  for (size_t i = 0; i < parts.size(); ++i) {
    QUIVER_RETURN_NOT_OK(parts[i].status.WithContext("part " + std::to_string(i) +
                                                     " of table " + id.Hex()));
    QUIVER_ASSIGN_OR_RAISE(TablePtr t, ReadStream(parts[i]));
    if (static_cast<uint64_t>(t->num_rows()) != list.rows_of[i]) {
      return Status::Invalid("part ", i, " of table ", id.Hex(), " has ", t->num_rows(),
                             " rows, not the ", list.rows_of[i], " listed");
    }
    if (schema == nullptr) schema = t->schema();
    QUIVER_ASSIGN_OR_RAISE(auto b, t->ToRecordBatches());
    batches.insert(batches.end(), b.begin(), b.end());
  }
  auto table = Table::FromRecordBatches(batches, schema);
  if (!table.ok()) return table.status().WithContext("the parts of table " + id.Hex());
  return table;
}

Status ObjectStore::DeleteTable(const ObjectId& id) {
  QUIVER_ASSIGN_OR_RAISE(auto got, Get({id}, 0));
  ObjectBuffer& o = got[0];
  QUIVER_RETURN_NOT_OK(o.status);
  std::vector<ObjectId> doomed;
  if (o.metadata->view() == kPartsMetadata) {
    auto list = ParseParts(id, *o.data);
    if (list.ok()) doomed = list->ids;
  } else if (o.metadata->view() != kTableMetadata) {
    (void)Release(id);
    return Status::Invalid("object ", id.Hex(), " does not hold a table (PutTable)");
  }
  (void)Release(id);
  doomed.push_back(id);
  return Delete(doomed);
}

}  // namespace quiver::store
