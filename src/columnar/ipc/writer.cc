// Stream and file writers.

#include "quiver/columnar/ipc/writer.h"

#include <cstring>
#include <limits>
#include <vector>

#include "columnar/ipc/metadata_internal.h"
#include "quiver/columnar/ipc/message_io.h"

namespace quiver::ipc {

namespace {

constexpr uint8_t kFileMagicPadded[8] = {'A', 'R', 'R', 'O', 'W', '1', 0, 0};

struct Block {
  int64_t offset;
  int64_t metadata_length;
  int64_t body_length;
};

class IpcWriter : public RecordBatchWriter {
 public:
  IpcWriter(io::OutputStream* sink, SchemaPtr schema, const IpcWriteOptions& options,
            bool file_format, MetadataPtr footer_metadata)
      : sink_(sink),
        schema_(std::move(schema)),
        options_(options),
        file_format_(file_format),
        footer_metadata_(std::move(footer_metadata)) {}

  Status Start() {
    if (sink_ == nullptr || schema_ == nullptr) {
      return Status::Invalid("IPC writer needs a sink and a schema");
    }
    if (options_.alignment < 8 || (options_.alignment & (options_.alignment - 1)) != 0) {
      return Status::Invalid("IPC alignment must be a power of two >= 8, got ",
                             options_.alignment);
    }
    QUIVER_ASSIGN_OR_RAISE(
        auto fields, DictionaryFieldMap::Make(*schema_, options_.max_nesting_depth));
    tracker_ = std::make_unique<DictionaryWriteTracker>(
        fields, options_.emit_dictionary_deltas, /*allow_replacement=*/!file_format_);
    if (file_format_) QUIVER_RETURN_NOT_OK(sink_->Write(kFileMagicPadded, 8));
    QUIVER_ASSIGN_OR_RAISE(auto fb,
                           EncodeSchema(*schema_, tracker_->fields(), options_.pool));
    QUIVER_RETURN_NOT_OK(WriteMessageMetadata(*fb, sink_, options_).status());
    ++stats_.num_messages;
    return Status::OK();
  }

  Status WriteRecordBatch(const RecordBatch& batch) override {
    if (closed_) return Status::Invalid("IPC writer is closed");
    if (!batch.schema()->Equals(*schema_)) {
      return Status::Invalid("batch schema differs from the writer's schema:\n",
                             batch.schema()->ToString(), "\nvs\n", schema_->ToString());
    }
    QUIVER_ASSIGN_OR_RAISE(auto sends, tracker_->Collect(batch));
    for (const auto& send : sends) {
      QUIVER_ASSIGN_OR_RAISE(EncodedBatch dict, EncodeDictionaryMessage(send, options_));
      QUIVER_ASSIGN_OR_RAISE(Block block, WriteMessage(*dict.metadata, dict.payload));
      dictionary_blocks_.push_back(block);
      ++stats_.num_dictionary_batches;
      stats_.num_dictionary_deltas += send.is_delta ? 1 : 0;
      stats_.num_replaced_dictionaries += send.is_replacement ? 1 : 0;
    }
    QUIVER_ASSIGN_OR_RAISE(EncodedBatch encoded,
                           EncodeRecordBatchMessage(batch, options_));
    QUIVER_ASSIGN_OR_RAISE(Block block, WriteMessage(*encoded.metadata, encoded.payload));
    batch_blocks_.push_back(block);
    ++stats_.num_record_batches;
    return Status::OK();
  }

  Status Close() override {
    if (closed_) return Status::OK();
    closed_ = true;
    QUIVER_RETURN_NOT_OK(WriteEndOfStream(sink_, options_));
    if (file_format_) QUIVER_RETURN_NOT_OK(WriteFooter());
    return Status::OK();
  }

  WriteStats stats() const override { return stats_; }

 private:
  Result<Block> WriteMessage(const Buffer& fb, const BatchPayload& payload) {
    QUIVER_ASSIGN_OR_RAISE(int64_t offset, sink_->Tell());
    QUIVER_ASSIGN_OR_RAISE(int64_t metadata_length,
                           WriteMessageMetadata(fb, sink_, options_));
    if (metadata_length > std::numeric_limits<int32_t>::max()) {
      // A file footer records it as an int32.
      return Status::CapacityError("message metadata of ", metadata_length,
                                   " bytes is too large for the IPC format");
    }
    QUIVER_RETURN_NOT_OK(WriteBody(payload, sink_));
    ++stats_.num_messages;
    stats_.body_bytes += payload.metadata.body_length;
    return Block{offset, metadata_length, payload.metadata.body_length};
  }

  Status WriteFooter() {
    namespace fb = internal::fb;
    internal::FlatBufferBuilder fbb(1024);
    QUIVER_ASSIGN_OR_RAISE(
        auto schema, internal::SchemaToFlatbuffer(fbb, *schema_, tracker_->fields()));
    auto blocks = [&](const std::vector<Block>& in) {
      std::vector<fb::Block> out;
      out.reserve(in.size());
      for (const Block& b : in) {
        out.emplace_back(b.offset, static_cast<int32_t>(b.metadata_length),
                         b.body_length);
      }
      return fbb.CreateVectorOfStructs(out);
    };
    auto dictionaries = blocks(dictionary_blocks_);
    auto batches = blocks(batch_blocks_);
    auto metadata = internal::MetadataToFlatbuffer(fbb, footer_metadata_.get());
    fbb.Finish(fb::CreateFooter(fbb, fb::MetadataVersion::V5, schema, dictionaries,
                                batches, metadata));
    const int32_t size = static_cast<int32_t>(fbb.GetSize());
    QUIVER_RETURN_NOT_OK(sink_->Write(fbb.GetBufferPointer(), size));
    QUIVER_RETURN_NOT_OK(sink_->Write(&size, sizeof(size)));
    return sink_->Write(kFileMagicPadded, 6);
  }

  io::OutputStream* sink_;
  SchemaPtr schema_;
  IpcWriteOptions options_;
  bool file_format_;
  MetadataPtr footer_metadata_;
  std::unique_ptr<DictionaryWriteTracker> tracker_;
  std::vector<Block> dictionary_blocks_;
  std::vector<Block> batch_blocks_;
  WriteStats stats_;
  bool closed_ = false;
};

Result<std::unique_ptr<RecordBatchWriter>> Open(io::OutputStream* sink, SchemaPtr schema,
                                                const IpcWriteOptions& options, bool file,
                                                MetadataPtr footer_metadata) {
  auto writer = std::make_unique<IpcWriter>(sink, std::move(schema), options, file,
                                            std::move(footer_metadata));
  QUIVER_RETURN_NOT_OK(writer->Start());
  return std::unique_ptr<RecordBatchWriter>(std::move(writer));
}

}  // namespace

Status RecordBatchWriter::WriteTable(const Table& table) {
  QUIVER_ASSIGN_OR_RAISE(auto batches, table.ToRecordBatches());
  for (const auto& batch : batches) QUIVER_RETURN_NOT_OK(WriteRecordBatch(*batch));
  return Status::OK();
}

Result<std::unique_ptr<RecordBatchWriter>> MakeStreamWriter(
    io::OutputStream* sink, SchemaPtr schema, const IpcWriteOptions& options) {
  return Open(sink, std::move(schema), options, false, nullptr);
}

Result<std::unique_ptr<RecordBatchWriter>> MakeFileWriter(io::OutputStream* sink,
                                                          SchemaPtr schema,
                                                          const IpcWriteOptions& options,
                                                          MetadataPtr footer_metadata) {
  return Open(sink, std::move(schema), options, true, std::move(footer_metadata));
}

Result<std::unique_ptr<RecordBatchWriter>> MakeWriter(IpcFormat format,
                                                      io::OutputStream* sink,
                                                      SchemaPtr schema,
                                                      const IpcWriteOptions& options) {
  return Open(sink, std::move(schema), options, format == IpcFormat::kFile, nullptr);
}

Status WriteTable(const Table& table, IpcFormat format, io::OutputStream* sink,
                  const IpcWriteOptions& options) {
  QUIVER_ASSIGN_OR_RAISE(auto writer, MakeWriter(format, sink, table.schema(), options));
  QUIVER_RETURN_NOT_OK(writer->WriteTable(table));
  return writer->Close();
}

Result<std::shared_ptr<Buffer>> SerializeTable(const Table& table, IpcFormat format,
                                               const IpcWriteOptions& options) {
  // Uncompressed, the size is cheap to know (a pass that copies nothing):
  // one allocation of exactly that, instead of a buffer that doubles,
  // copying itself each time, and zeroes the unused half at the end.
  int64_t capacity = 4096;
  if (options.compression == Compression::kUncompressed) {
    QUIVER_ASSIGN_OR_RAISE(capacity, GetSerializedSize(table, format, options));
  }
  QUIVER_ASSIGN_OR_RAISE(auto sink,
                         io::BufferOutputStream::Create(capacity, options.pool));
  QUIVER_RETURN_NOT_OK(WriteTable(table, format, sink.get(), options));
  return sink->Finish();
}

Result<std::shared_ptr<Buffer>> SerializeRecordBatch(const RecordBatch& batch,
                                                     IpcFormat format,
                                                     const IpcWriteOptions& options) {
  QUIVER_ASSIGN_OR_RAISE(auto sink, io::BufferOutputStream::Create(4096, options.pool));
  QUIVER_ASSIGN_OR_RAISE(auto writer,
                         MakeWriter(format, sink.get(), batch.schema(), options));
  QUIVER_RETURN_NOT_OK(writer->WriteRecordBatch(batch));
  QUIVER_RETURN_NOT_OK(writer->Close());
  return sink->Finish();
}

Result<int64_t> GetSerializedSize(const Table& table, IpcFormat format,
                                  const IpcWriteOptions& options) {
  io::CountingOutputStream counter;
  QUIVER_RETURN_NOT_OK(WriteTable(table, format, &counter, options));
  return counter.Tell();
}

}  // namespace quiver::ipc
