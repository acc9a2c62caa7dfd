#include "transport/wire.h"

#include "quiver/util/little_endian.h"

namespace quiver::transport::wire {

using util::AppendLE;
using util::LoadLE;

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kHello:
      return "Hello";
    case Kind::kHelloReply:
      return "HelloReply";
    case Kind::kInitScan:
      return "InitScan";
    case Kind::kScanReply:
      return "ScanReply";
    case Kind::kFinalize:
      return "Finalize";
    case Kind::kFinalized:
      return "Finalized";
    case Kind::kCredit:
      return "Credit";
    case Kind::kError:
      return "Error";
    case Kind::kStats:
      return "Stats";
    case Kind::kStatsReply:
      return "StatsReply";
    case Kind::kProbe:
      return "Probe";
    case Kind::kDataPath:
      return "DataPath";
    case Kind::kWantData:
      return "WantData";
    case Kind::kMetadata:
      return "Metadata";
    case Kind::kBody:
      return "Body";
  }
  return "unknown";
}

namespace {

// Appends fields; strings as u32 length + bytes.
class Writer {
 public:
  template <typename T>
  Writer& Int(T v) {
    AppendLE(&out_, v);
    return *this;
  }
  Writer& Str(std::string_view s) {
    AppendLE(&out_, static_cast<uint32_t>(s.size()));
    out_.append(s);
    return *this;
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads fields of one message, failing with its name and the field's.
class Reader {
 public:
  Reader(std::string_view bytes, const char* message)
      : bytes_(bytes), message_(message) {}

  template <typename T>
  Status Int(const char* field, T* out) {
    if (bytes_.size() - at_ < sizeof(T)) return Short(field);
    *out = LoadLE<T>(bytes_, at_);
    at_ += sizeof(T);
    return Status::OK();
  }
  Status Str(const char* field, size_t limit, std::string* out) {
    uint32_t n = 0;
    QUIVER_RETURN_NOT_OK(Int(field, &n));
    if (n > limit) {
      return Status::Invalid("transport ", message_, ": ", field, " of ", n,
                             " bytes exceeds the limit of ", limit);
    }
    if (bytes_.size() - at_ < n) return Short(field);
    out->assign(bytes_.substr(at_, n));
    at_ += n;
    return Status::OK();
  }
  Status End() const {
    if (at_ != bytes_.size()) {
      return Status::Invalid("transport ", message_, ": ", bytes_.size() - at_,
                             " bytes after its last field");
    }
    return Status::OK();
  }

 private:
  Status Short(const char* field) const {
    return Status::Invalid("transport ", message_, " of ", bytes_.size(),
                           " bytes ends inside its field ", field);
  }
  std::string_view bytes_;
  const char* message_;
  size_t at_ = 0;
};

}  // namespace

std::string EncodeFrame(Kind kind, uint64_t request, std::string_view body) {
  std::string out;
  out.reserve(9 + body.size());
  AppendLE(&out, static_cast<uint8_t>(kind));
  AppendLE(&out, request);
  out.append(body);
  return out;
}

Result<Frame> DecodeFrame(std::string_view bytes) {
  if (bytes.size() < 9) {
    return Status::Invalid("transport control frame of ", bytes.size(),
                           " bytes: shorter than its 9-byte header");
  }
  return MakeFrame(LoadLE<uint8_t>(bytes, 0), LoadLE<uint64_t>(bytes, 1),
                   bytes.substr(9));
}

Result<Frame> MakeFrame(uint8_t kind, uint64_t request, std::string_view body) {
  if (kind < static_cast<uint8_t>(Kind::kHello) ||
      kind > static_cast<uint8_t>(Kind::kBody)) {
    return Status::Invalid("transport control frame of unknown kind ",
                           static_cast<int>(kind));
  }
  Frame f;
  f.kind = static_cast<Kind>(kind);
  f.request = request;
  f.body = body;
  return f;
}

std::string Encode(const Hello& m) {
  return Writer().Int(m.version).Str(m.worker_address).Take();
}

Result<Hello> DecodeHello(std::string_view body) {
  Reader r(body, "Hello");
  Hello m;
  QUIVER_RETURN_NOT_OK(r.Int("version", &m.version));
  QUIVER_RETURN_NOT_OK(r.Str("worker_address", kMaxWorkerAddress, &m.worker_address));
  QUIVER_RETURN_NOT_OK(r.End());
  return m;
}

std::string Encode(const HelloReply& m) {
  Writer w;
  w.Int(m.version)
      .Int(m.want_data)
      .Int(m.free_data)
      .Int(m.pool_address)
      .Int(m.pool_length)
      .Int(m.probe_address)
      .Int(m.probe_length)
      .Str(m.rkey)
      .Str(m.worker_address);
  return w.Take();
}

Result<HelloReply> DecodeHelloReply(std::string_view body) {
  Reader r(body, "HelloReply");
  HelloReply m;
  QUIVER_RETURN_NOT_OK(r.Int("version", &m.version));
  QUIVER_RETURN_NOT_OK(r.Int("want_data", &m.want_data));
  QUIVER_RETURN_NOT_OK(r.Int("free_data", &m.free_data));
  QUIVER_RETURN_NOT_OK(r.Int("pool_address", &m.pool_address));
  QUIVER_RETURN_NOT_OK(r.Int("pool_length", &m.pool_length));
  QUIVER_RETURN_NOT_OK(r.Int("probe_address", &m.probe_address));
  QUIVER_RETURN_NOT_OK(r.Int("probe_length", &m.probe_length));
  QUIVER_RETURN_NOT_OK(r.Str("rkey", kMaxRkey, &m.rkey));
  QUIVER_RETURN_NOT_OK(r.Str("worker_address", kMaxWorkerAddress, &m.worker_address));
  QUIVER_RETURN_NOT_OK(r.End());
  if (m.pool_address + m.pool_length < m.pool_address ||
      m.probe_address < m.pool_address ||
      m.probe_address - m.pool_address > m.pool_length ||
      m.probe_length > m.pool_length - (m.probe_address - m.pool_address)) {
    return Status::Invalid("transport HelloReply: the probe area (", m.probe_length,
                           " bytes) is not inside the pool it names");
  }
  return m;
}

std::string Encode(const DataPath& m) { return Writer().Int(m.ucx).Take(); }

Result<DataPath> DecodeDataPath(std::string_view body) {
  Reader r(body, "DataPath");
  DataPath m;
  QUIVER_RETURN_NOT_OK(r.Int("ucx", &m.ucx));
  QUIVER_RETURN_NOT_OK(r.End());
  if (m.ucx > 1) return Status::Invalid("transport DataPath: ucx must be 0 or 1");
  return m;
}

std::string Encode(const InitScan& m) {
  return Writer()
      .Str(m.sql)
      .Str(m.dataset)
      .Int(m.min_rows)
      .Int(m.window_batches)
      .Int(m.window_bytes)
      .Int(m.addresses_from)
      .Take();
}

Result<InitScan> DecodeInitScan(std::string_view body) {
  Reader r(body, "InitScan");
  InitScan m;
  QUIVER_RETURN_NOT_OK(r.Str("sql", kMaxSql, &m.sql));
  QUIVER_RETURN_NOT_OK(r.Str("dataset", kMaxName, &m.dataset));
  QUIVER_RETURN_NOT_OK(r.Int("min_rows", &m.min_rows));
  QUIVER_RETURN_NOT_OK(r.Int("window_batches", &m.window_batches));
  QUIVER_RETURN_NOT_OK(r.Int("window_bytes", &m.window_bytes));
  QUIVER_RETURN_NOT_OK(r.Int("addresses_from", &m.addresses_from));
  QUIVER_RETURN_NOT_OK(r.End());
  if (m.window_batches == 0 || m.window_bytes == 0) {
    return Status::Invalid("transport InitScan: a window of ", m.window_batches,
                           " batches and ", m.window_bytes,
                           " bytes lets nothing through");
  }
  return m;
}

std::string Encode(const ScanId& m) { return Writer().Int(m.scan).Take(); }

Result<ScanId> DecodeScanId(std::string_view body) {
  Reader r(body, "scan id");
  ScanId m;
  QUIVER_RETURN_NOT_OK(r.Int("scan", &m.scan));
  QUIVER_RETURN_NOT_OK(r.End());
  return m;
}

std::string Encode(const Finalized& m) {
  return Writer().Int(m.scan).Int(m.bodies_sent).Take();
}

Result<Finalized> DecodeFinalized(std::string_view body) {
  Reader r(body, "Finalized");
  Finalized m;
  QUIVER_RETURN_NOT_OK(r.Int("scan", &m.scan));
  QUIVER_RETURN_NOT_OK(r.Int("bodies_sent", &m.bodies_sent));
  QUIVER_RETURN_NOT_OK(r.End());
  return m;
}

std::string Encode(const Credit& m) { return Writer().Int(m.scan).Int(m.bodies).Take(); }

Result<Credit> DecodeCredit(std::string_view body) {
  Reader r(body, "Credit");
  Credit m;
  QUIVER_RETURN_NOT_OK(r.Int("scan", &m.scan));
  QUIVER_RETURN_NOT_OK(r.Int("bodies", &m.bodies));
  QUIVER_RETURN_NOT_OK(r.End());
  return m;
}

std::string Encode(const Error& m) { return Writer().Int(m.scan).Str(m.message).Take(); }

Result<Error> DecodeError(std::string_view body) {
  Reader r(body, "Error");
  Error m;
  QUIVER_RETURN_NOT_OK(r.Int("scan", &m.scan));
  QUIVER_RETURN_NOT_OK(r.Str("message", kMaxMessage, &m.message));
  QUIVER_RETURN_NOT_OK(r.End());
  return m;
}

std::string Encode(const StatsReply& m) {
  return Writer()
      .Int(m.connections)
      .Int(m.scans)
      .Int(m.pool_bytes_in_use)
      .Int(m.bodies_in_flight)
      .Int(m.sends)
      .Take();
}

Result<StatsReply> DecodeStatsReply(std::string_view body) {
  Reader r(body, "StatsReply");
  StatsReply m;
  QUIVER_RETURN_NOT_OK(r.Int("connections", &m.connections));
  QUIVER_RETURN_NOT_OK(r.Int("scans", &m.scans));
  QUIVER_RETURN_NOT_OK(r.Int("pool_bytes_in_use", &m.pool_bytes_in_use));
  QUIVER_RETURN_NOT_OK(r.Int("bodies_in_flight", &m.bodies_in_flight));
  QUIVER_RETURN_NOT_OK(r.Int("sends", &m.sends));
  QUIVER_RETURN_NOT_OK(r.End());
  return m;
}

std::string Encode(const Probe& m) { return Writer().Int(m.length).Int(m.tag).Take(); }

Result<Probe> DecodeProbe(std::string_view body) {
  Reader r(body, "Probe");
  Probe m;
  QUIVER_RETURN_NOT_OK(r.Int("length", &m.length));
  QUIVER_RETURN_NOT_OK(r.Int("tag", &m.tag));
  QUIVER_RETURN_NOT_OK(r.End());
  return m;
}

}  // namespace quiver::transport::wire
