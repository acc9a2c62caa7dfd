// The serialising baselines' shared writer, and the gRPC one: server-streaming
// Arrow IPC in 4 MiB messages (bench/serialized_baseline.h).
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/rpc_service_method.h>
#include <grpcpp/support/method_handler.h>

#include <algorithm>
#include <cstring>

#include "quiver/columnar/concatenate.h"
#include "quiver/columnar/ipc/reader.h"
#include "quiver/columnar/ipc/writer.h"
#include "serialized_baseline.h"

namespace quiver::bench {

Status WriteCoalescedStream(const BatchSource& source, std::string request,
                            io::OutputStream* sink, int64_t batch_rows) {
  if (auto at = request.find(" batch="); at != std::string::npos) {
    batch_rows = std::max<int64_t>(1, std::atoll(request.c_str() + at + 7));
    request.resize(at);
  }
  QUIVER_ASSIGN_OR_RAISE(auto reader, source(request));
  QUIVER_ASSIGN_OR_RAISE(auto writer,
                         ipc::MakeWriter(ipc::IpcFormat::kStream, sink, reader->schema(),
                                         ipc::IpcWriteOptions::Defaults()));
  std::vector<RecordBatchPtr> group;
  int64_t rows = 0;
  auto flush = [&]() -> Status {
    if (group.empty()) return Status::OK();
    QUIVER_ASSIGN_OR_RAISE(auto batch, ConcatenateBatches(group));
    group.clear();
    rows = 0;
    return writer->WriteRecordBatch(*batch);
  };
  for (;;) {
    QUIVER_ASSIGN_OR_RAISE(auto b, reader->Next());
    if (b == nullptr) break;
    rows += b->num_rows();
    group.push_back(std::move(b));
    if (rows >= batch_rows) QUIVER_RETURN_NOT_OK(flush());
  }
  QUIVER_RETURN_NOT_OK(flush());
  return writer->Close();
}

namespace {

constexpr char kMethod[] = "/quiver.bench.Baseline/Scan";
constexpr size_t kMessageBytes = size_t{4} << 20;
constexpr int kWindowBytes = 16 << 20;

// Cuts the stream into messages of kMessageBytes, each sent once full. The
// writer's bytes are copied once, into the message, which gRPC then owns.
class MessageSink final : public io::OutputStream {
 public:
  explicit MessageSink(grpc::ServerWriter<grpc::ByteBuffer>* writer) : writer_(writer) {}
  ~MessageSink() override { delete pending_; }

  Status Write(const void* data, int64_t nbytes) override {
    const char* p = static_cast<const char*>(data);
    while (nbytes > 0) {
      if (pending_ == nullptr) {
        pending_ = new std::string;
        pending_->reserve(kMessageBytes);
      }
      const size_t n =
          std::min<size_t>(static_cast<size_t>(nbytes), kMessageBytes - pending_->size());
      pending_->append(p, n);
      p += n;
      nbytes -= static_cast<int64_t>(n);
      position_ += static_cast<int64_t>(n);
      if (pending_->size() == kMessageBytes) QUIVER_RETURN_NOT_OK(Send());
    }
    return Status::OK();
  }
  Result<int64_t> Tell() const override { return position_; }
  Status Close() override {
    if (closed_) return Status::OK();
    closed_ = true;
    return pending_ != nullptr && !pending_->empty() ? Send() : Status::OK();
  }
  bool closed() const override { return closed_; }

 private:
  Status Send() {
    std::string* s = pending_;
    pending_ = nullptr;
    grpc::Slice slice(
        s->data(), s->size(), [](void* p) { delete static_cast<std::string*>(p); }, s);
    grpc::ByteBuffer message(&slice, 1);
    if (!writer_->Write(message)) return Status::IOError("the gRPC client went away");
    return Status::OK();
  }

  grpc::ServerWriter<grpc::ByteBuffer>* writer_;
  std::string* pending_ = nullptr;
  int64_t position_ = 0;
  bool closed_ = false;
};

std::string Flatten(const grpc::ByteBuffer& b) {
  std::vector<grpc::Slice> slices;
  std::string s;
  if (!b.Dump(&slices).ok()) return s;
  for (const auto& slice : slices) {
    s.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return s;
}

// One server-streaming method over raw byte buffers: what protoc would
// generate for it, without a protobuf message in the way of the bytes.
class Service final : public grpc::Service {
 public:
  explicit Service(BatchSource source) : source_(std::move(source)) {
    using Handler = grpc::internal::ServerStreamingHandler<Service, grpc::ByteBuffer,
                                                           grpc::ByteBuffer>;
    AddMethod(new grpc::internal::RpcServiceMethod(
        kMethod, grpc::internal::RpcMethod::SERVER_STREAMING,
        new Handler(
            [](Service* s, grpc::ServerContext*, const grpc::ByteBuffer* request,
               grpc::ServerWriter<grpc::ByteBuffer>* writer) {
              return s->Scan(*request, writer);
            },
            this)));
  }

 private:
  grpc::Status Scan(const grpc::ByteBuffer& request,
                    grpc::ServerWriter<grpc::ByteBuffer>* writer) {
    MessageSink sink(writer);
    Status st = WriteCoalescedStream(source_, Flatten(request), &sink);
    if (st.ok()) st = sink.Close();
    if (!st.ok()) return grpc::Status(grpc::StatusCode::INTERNAL, st.ToString());
    return grpc::Status::OK;
  }

  BatchSource source_;
};

class Server final : public GrpcBaselineServer {
 public:
  explicit Server(BatchSource source) : service_(std::move(source)) {}
  ~Server() override {
    if (server_) server_->Shutdown();
  }
  Status Start() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    // Flow-control windows as large as a message from the start (gRPC's
    // default starts at 64 KiB and grows with its bandwidth probe).
    builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, kWindowBytes);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    if (server_ == nullptr || port_ == 0) {
      return Status::IOError("the gRPC baseline server did not start");
    }
    return Status::OK();
  }
  uint16_t port() const override { return static_cast<uint16_t>(port_); }

 private:
  Service service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

// Reads the answer's messages as one stream; Read() copies out of them.
class MessageSource final : public io::InputStream {
 public:
  explicit MessageSource(grpc::ClientReader<grpc::ByteBuffer>* reader)
      : reader_(reader) {}

  using io::InputStream::Read;
  Result<std::shared_ptr<Buffer>> Read(int64_t nbytes) override {
    QUIVER_ASSIGN_OR_RAISE(auto buffer, AllocateResizableBuffer(nbytes));
    QUIVER_ASSIGN_OR_RAISE(int64_t n, Read(nbytes, buffer->mutable_data()));
    if (n < nbytes) QUIVER_RETURN_NOT_OK(buffer->Resize(n));
    return std::shared_ptr<Buffer>(std::move(buffer));
  }
  Result<int64_t> Read(int64_t nbytes, void* out) override {
    auto* dst = static_cast<uint8_t*>(out);
    int64_t done = 0;
    while (done < nbytes) {
      if (slice_ == slices_.size()) {
        if (ended_ || !Next()) break;
        continue;
      }
      const grpc::Slice& s = slices_[slice_];
      const size_t n =
          std::min<size_t>(s.size() - offset_, static_cast<size_t>(nbytes - done));
      std::memcpy(dst + done, s.begin() + offset_, n);
      done += static_cast<int64_t>(n);
      offset_ += n;
      if (offset_ == s.size()) {
        ++slice_;
        offset_ = 0;
      }
    }
    position_ += done;
    return done;
  }
  Result<int64_t> Tell() const override { return position_; }
  Status Close() override {
    closed_ = true;
    return Status::OK();
  }
  bool closed() const override { return closed_; }

 private:
  bool Next() {
    grpc::ByteBuffer message;
    slices_.clear();
    slice_ = offset_ = 0;
    if (!reader_->Read(&message) || !message.Dump(&slices_).ok()) {
      ended_ = true;
      return false;
    }
    return true;
  }

  grpc::ClientReader<grpc::ByteBuffer>* reader_;
  std::vector<grpc::Slice> slices_;
  size_t slice_ = 0, offset_ = 0;
  int64_t position_ = 0;
  bool ended_ = false, closed_ = false;
};

class Client final : public GrpcBaselineClient {
 public:
  explicit Client(std::shared_ptr<grpc::Channel> channel)
      : channel_(std::move(channel)),
        method_(kMethod, grpc::internal::RpcMethod::SERVER_STREAMING, channel_) {}

  Result<int64_t> Fetch(const std::string& request, int64_t* batches) override {
    grpc::ClientContext context;
    grpc::Slice text(request);
    grpc::ByteBuffer message(&text, 1);
    std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> call(
        grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(
            channel_.get(), method_, &context, message));
    MessageSource source(call.get());
    int64_t rows = 0;
    Status st = [&]() -> Status {
      QUIVER_ASSIGN_OR_RAISE(auto reader, ipc::RecordBatchStreamReader::Open(&source));
      for (;;) {
        QUIVER_ASSIGN_OR_RAISE(auto b, reader->Next());
        if (b == nullptr) return Status::OK();
        rows += b->num_rows();
        if (batches != nullptr) ++*batches;
      }
    }();
    if (!st.ok()) context.TryCancel();
    grpc::ByteBuffer rest;
    while (call->Read(&rest)) {
    }
    grpc::Status end = call->Finish();
    if (!end.ok()) return Status::IOError("gRPC baseline: ", end.error_message());
    QUIVER_RETURN_NOT_OK(st);
    return rows;
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  grpc::internal::RpcMethod method_;
};

}  // namespace

Result<std::unique_ptr<GrpcBaselineServer>> GrpcBaselineServer::Start(
    BatchSource source) {
  auto server = std::make_unique<Server>(std::move(source));
  QUIVER_RETURN_NOT_OK(server->Start());
  return std::unique_ptr<GrpcBaselineServer>(std::move(server));
}

Result<std::unique_ptr<GrpcBaselineClient>> GrpcBaselineClient::Connect(uint16_t port) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(2 * kMessageBytes));
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, kWindowBytes);
  auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                           grpc::InsecureChannelCredentials(), args);
  if (!channel->WaitForConnected(std::chrono::system_clock::now() +
                                 std::chrono::seconds(10))) {
    return Status::IOError("cannot reach the gRPC baseline server on port ", port);
  }
  return std::unique_ptr<GrpcBaselineClient>(
      std::make_unique<Client>(std::move(channel)));
}

}  // namespace quiver::bench
