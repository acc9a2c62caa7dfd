#include "store/store_record.h"

#include <cstring>

#include "control/catalogue/chunk.h"
#include "quiver/util/little_endian.h"

namespace quiver::store {

namespace {

using control::Fnv1a;

constexpr uint64_t kRecordMagic = 0x3145524F54535651ULL;  // "QVSTORE1" little-endian
constexpr uint32_t kRecordVersion = 1;

using util::AppendLE;
using util::LoadLE;

}  // namespace

std::string EncodeStoreRecord(const StoreRecord& r) {
  std::string out;
  out.reserve(kStoreRecordSize);
  AppendLE<uint64_t>(&out, kRecordMagic);
  AppendLE<uint32_t>(&out, kRecordVersion);
  AppendLE<uint32_t>(&out, 0);
  out += r.id.Binary();
  AppendLE<uint64_t>(&out, r.address);
  AppendLE<uint64_t>(&out, r.data_size);
  AppendLE<uint64_t>(&out, r.metadata_size);
  AppendLE<uint64_t>(&out, Fnv1a(out));
  return out;
}

bool IsStoreRecord(std::string_view bytes) {
  return bytes.size() >= sizeof(kRecordMagic) &&
         LoadLE<uint64_t>(bytes, 0) == kRecordMagic;
}

Result<StoreRecord> DecodeStoreRecord(std::string_view bytes) {
  auto bad = [](const std::string& why) {
    return Status::Invalid("object store record: ", why);
  };
  if (bytes.size() != kStoreRecordSize) {
    return bad(std::to_string(bytes.size()) + " bytes, not " +
               std::to_string(kStoreRecordSize));
  }
  if (!IsStoreRecord(bytes)) return bad("bad magic");
  if (LoadLE<uint32_t>(bytes, 8) != kRecordVersion) {
    return bad("version " + std::to_string(LoadLE<uint32_t>(bytes, 8)) + " is unknown");
  }
  if (LoadLE<uint32_t>(bytes, 12) != 0) return bad("reserved bytes are not zero");
  const size_t body = kStoreRecordSize - 8;
  if (LoadLE<uint64_t>(bytes, body) != Fnv1a(bytes.substr(0, body))) {
    return bad("checksum mismatch");
  }
  StoreRecord r;
  QUIVER_ASSIGN_OR_RAISE(r.id, ObjectId::FromBinary(bytes.substr(16, ObjectId::kSize)));
  if (r.id.nil()) return bad("the nil id");
  r.address = LoadLE<uint64_t>(bytes, 36);
  r.data_size = LoadLE<uint64_t>(bytes, 44);
  r.metadata_size = LoadLE<uint64_t>(bytes, 52);
  if (r.data_size > UINT64_MAX - r.metadata_size) return bad("sizes overflow");
  return r;
}

std::string EncodePackedIds(const std::vector<ObjectId>& ids) {
  std::string out;
  out.reserve(ids.size() * ObjectId::kSize);
  for (const ObjectId& id : ids) {
    out.append(reinterpret_cast<const char*>(id.data()), ObjectId::kSize);
  }
  return out;
}

Result<std::vector<ObjectId>> DecodePackedIds(std::string_view bytes) {
  if (bytes.size() % ObjectId::kSize != 0) {
    return Status::Invalid("packed object ids: ", bytes.size(),
                           " bytes is not a multiple of ", ObjectId::kSize);
  }
  std::vector<ObjectId> ids;
  ids.reserve(bytes.size() / ObjectId::kSize);
  for (size_t at = 0; at < bytes.size(); at += ObjectId::kSize) {
    QUIVER_ASSIGN_OR_RAISE(ObjectId id,
                           ObjectId::FromBinary(bytes.substr(at, ObjectId::kSize)));
    if (id.nil()) {
      return Status::Invalid("object id #", ids.size(), " is nil: it names no object");
    }
    ids.push_back(id);
  }
  return ids;
}

void AppendFoundRecord(std::string* out, const StoreRecord& r) {
  out->append(reinterpret_cast<const char*>(r.id.data()), ObjectId::kSize);
  AppendLE<uint64_t>(out, r.address);
  AppendLE<uint64_t>(out, r.data_size);
  AppendLE<uint64_t>(out, r.metadata_size);
}

Result<std::vector<StoreRecord>> DecodeFoundRecords(std::string_view bytes) {
  if (bytes.size() % kFoundRecordSize != 0) {
    return Status::Invalid("found objects: ", bytes.size(),
                           " bytes is not a multiple of ", kFoundRecordSize);
  }
  std::vector<StoreRecord> out;
  out.reserve(bytes.size() / kFoundRecordSize);
  for (size_t at = 0; at < bytes.size(); at += kFoundRecordSize) {
    StoreRecord r;
    QUIVER_ASSIGN_OR_RAISE(r.id, ObjectId::FromBinary(bytes.substr(at, ObjectId::kSize)));
    r.address = LoadLE<uint64_t>(bytes, at + ObjectId::kSize);
    r.data_size = LoadLE<uint64_t>(bytes, at + ObjectId::kSize + 8);
    r.metadata_size = LoadLE<uint64_t>(bytes, at + ObjectId::kSize + 16);
    if (r.id.nil())
      return Status::Invalid("found object #", out.size(), " has the nil id");
    if (r.data_size > UINT64_MAX - r.metadata_size) {
      return Status::Invalid("found object #", out.size(), ": sizes overflow");
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace quiver::store
