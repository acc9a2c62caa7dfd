// Stream and file readers.

#include "quiver/columnar/ipc/reader.h"

#include <cstring>
#include <string>

#include "columnar/ipc/metadata_internal.h"
#include "quiver/columnar/ipc/message_io.h"

namespace quiver::ipc {

namespace {

// Smallest possible file: magic + padding, footer length, magic.
constexpr int64_t kMinFileSize = 8 + 4 + kArrowMagicLength;

Status Failed(const Status& st, const std::string& context) {
  return st.WithContext(context);
}

}  // namespace

// ---------------------------------------------------------------------------
// RecordBatchStreamReader

Result<std::unique_ptr<RecordBatchStreamReader>> RecordBatchStreamReader::Open(
    std::shared_ptr<Buffer> data, const IpcReadOptions& options) {
  if (data == nullptr) return Status::Invalid("IPC stream: null input buffer");
  return Open(MessageReader::FromBuffer(std::move(data), options), options);
}

Result<std::unique_ptr<RecordBatchStreamReader>> RecordBatchStreamReader::Open(
    io::InputStream* stream, const IpcReadOptions& options) {
  if (stream == nullptr) return Status::Invalid("IPC stream: null input stream");
  return Open(MessageReader::FromStream(stream, options), options);
}

Result<std::unique_ptr<RecordBatchStreamReader>> RecordBatchStreamReader::Open(
    std::unique_ptr<MessageReader> messages, const IpcReadOptions& options) {
  std::unique_ptr<RecordBatchStreamReader> reader(
      new RecordBatchStreamReader(std::move(messages), options));
  QUIVER_RETURN_NOT_OK(reader->ReadSchema());
  return reader;
}

std::string RecordBatchStreamReader::Context(const Message* message) const {
  std::string out =
      "IPC stream: message " + std::to_string(messages_->messages_read() - 1);
  if (message != nullptr)
    out += std::string(" (") + MessageTypeName(message->type()) + ")";
  return out;
}

Status RecordBatchStreamReader::ReadSchema() {
  auto first = messages_->Next();
  if (!first.ok()) return Failed(first.status(), "IPC stream");
  if (*first == nullptr) {
    return Status::Invalid("IPC stream: no Schema message (empty stream)");
  }
  const Message& m = **first;
  ++stats_.num_messages;
  if (m.type() != MessageType::kSchema) {
    return Status::Invalid(Context(&m), ": the first message must be a Schema");
  }
  auto decoded = DecodeSchema(m, options_);
  if (!decoded.ok()) return Failed(decoded.status(), Context(&m));
  schema_ = decoded->schema;
  wire_endianness_ = decoded->wire_endianness;
  memo_ = DictionaryMemo(std::move(decoded->dictionaries));
  return Status::OK();
}

Result<RecordBatchPtr> RecordBatchStreamReader::Next() {
  if (!failed_.ok()) return failed_;
  while (!finished_) {
    auto next = messages_->Next();
    if (!next.ok()) {
      failed_ = Failed(next.status(), "IPC stream");
      return failed_;
    }
    std::shared_ptr<Message> m = std::move(*next);
    if (m == nullptr) {
      finished_ = true;
      break;
    }
    ++stats_.num_messages;
    const BodyResolver resolver = PackedBodyResolver(m->body());
    if (m->type() == MessageType::kRecordBatch) {
      auto batch =
          DecodeRecordBatch(*m, schema_, memo_, resolver, options_, wire_endianness_);
      if (!batch.ok()) {
        failed_ = Failed(batch.status(), Context(m.get()));
        return failed_;
      }
      ++stats_.num_record_batches;
      return batch;
    }
    if (m->type() == MessageType::kDictionaryBatch) {
      auto update =
          DecodeDictionaryBatch(*m, &memo_, resolver, options_, wire_endianness_);
      if (!update.ok()) {
        failed_ = Failed(update.status(), Context(m.get()));
        return failed_;
      }
      ++stats_.num_dictionary_batches;
      stats_.num_dictionary_deltas += *update == DictionaryUpdate::kDelta ? 1 : 0;
      stats_.num_replaced_dictionaries +=
          *update == DictionaryUpdate::kReplacement ? 1 : 0;
      continue;
    }
    failed_ = Status::Invalid(Context(m.get()), ": a stream has one Schema message only");
    return failed_;
  }
  return RecordBatchPtr();
}

Result<TablePtr> RecordBatchStreamReader::ReadTable() {
  QUIVER_ASSIGN_OR_RAISE(auto batches, ReadAll());
  return Table::FromRecordBatches(batches, schema_);
}

// ---------------------------------------------------------------------------
// RecordBatchFileReader

Result<std::unique_ptr<RecordBatchFileReader>> RecordBatchFileReader::Open(
    std::shared_ptr<Buffer> file, const IpcReadOptions& options) {
  if (file == nullptr) return Status::Invalid("IPC file: null input buffer");
  std::unique_ptr<RecordBatchFileReader> reader(
      new RecordBatchFileReader(std::move(file), options));
  QUIVER_RETURN_NOT_OK(reader->ReadFooter());
  QUIVER_RETURN_NOT_OK(reader->ReadDictionaries());
  return reader;
}

namespace {

Status ReadBlocks(const ::flatbuffers::Vector<const internal::fb::Block*>* in,
                  const char* what, int64_t footer_offset,
                  std::vector<RecordBatchFileReader::Block>* out) {
  if (in == nullptr) return Status::OK();
  out->reserve(in->size());
  for (flatbuffers::uoffset_t i = 0; i < in->size(); ++i) {
    const internal::fb::Block b = internal::LoadStruct(in, i);
    RecordBatchFileReader::Block block{b.offset(), b.metadata_length(), b.body_length()};
    if (block.offset < 8 || block.metadata_length <= 0 || block.body_length < 0 ||
        block.offset > footer_offset ||
        block.metadata_length > footer_offset - block.offset ||
        block.body_length > footer_offset - block.offset - block.metadata_length) {
      return Status::Invalid(
          "IPC file: ", what, " block ", i, " [offset ", block.offset, ", metadata ",
          block.metadata_length, ", body ", block.body_length,
          "] does not lie between the magic and the ", "footer at ", footer_offset);
    }
    out->push_back(block);
  }
  return Status::OK();
}

}  // namespace

Status RecordBatchFileReader::ReadFooter() {
  namespace fb = internal::fb;
  const int64_t size = file_->size();
  const uint8_t* data = file_->data();
  if (size < kMinFileSize) {
    return Status::Invalid("IPC file: ", size,
                           " bytes is too small for an Arrow file (at "
                           "least ",
                           kMinFileSize, ")");
  }
  if (std::memcmp(data, kArrowMagic, kArrowMagicLength) != 0) {
    return Status::Invalid("IPC file: missing the leading ARROW1 magic");
  }
  if (std::memcmp(data + size - kArrowMagicLength, kArrowMagic, kArrowMagicLength) != 0) {
    return Status::Invalid(
        "IPC file: missing the trailing ARROW1 magic (truncated file?)");
  }
  int32_t footer_length;
  std::memcpy(&footer_length, data + size - kArrowMagicLength - 4, 4);
  const int64_t footer_end = size - kArrowMagicLength - 4;
  if (footer_length <= 0 || footer_length > footer_end - 8) {
    return Status::Invalid("IPC file: footer length ", footer_length,
                           " does not fit in a file of ", size, " bytes");
  }
  footer_offset_ = footer_end - footer_length;
  QUIVER_ASSIGN_OR_RAISE(auto footer,
                         Buffer::SliceSafe(file_, footer_offset_, footer_length));
  QUIVER_ASSIGN_OR_RAISE(footer, internal::EnsureAligned(footer, options_.pool));
  Status st = internal::VerifyFlatbuffer<fb::Footer>(*footer, options_, "footer");
  if (!st.ok()) return st.WithContext("IPC file");
  const fb::Footer* f = fb::GetFooter(footer->data());
  // Older writers left the footer's version unset (V1, the flatbuffer's
  // default) in files of V4 messages; Arrow C++ and Arrow JS read them, and
  // so does Quiver: every message's own version is checked as it is read.
  if (f->version() >= fb::MetadataVersion::V1 &&
      f->version() <= fb::MetadataVersion::V3) {
    version_ = MetadataVersion::kV4;
  } else {
    auto version = internal::CheckMetadataVersion(f->version());
    if (!version.ok()) return version.status().WithContext("IPC file: footer");
    version_ = *version;
  }
  auto decoded = internal::SchemaFromFlatbuffer(f->schema(), options_);
  if (!decoded.ok()) return decoded.status().WithContext("IPC file: footer schema");
  schema_ = decoded->schema;
  wire_endianness_ = decoded->wire_endianness;
  memo_ = DictionaryMemo(std::move(decoded->dictionaries));
  footer_metadata_ = internal::MetadataFromFlatbuffer(f->custom_metadata());
  QUIVER_RETURN_NOT_OK(
      ReadBlocks(f->dictionaries(), "dictionary", footer_offset_, &dictionary_blocks_));
  return ReadBlocks(f->record_batches(), "record batch", footer_offset_, &batch_blocks_);
}

Status RecordBatchFileReader::ReadDictionaries() {
  for (size_t i = 0; i < dictionary_blocks_.size(); ++i) {
    const Block& b = dictionary_blocks_[i];
    const std::string context = "IPC file: dictionary block " + std::to_string(i) +
                                " at offset " + std::to_string(b.offset);
    auto m = ReadMessageAt(file_, b.offset, b.metadata_length, b.body_length, options_);
    if (!m.ok()) return m.status().WithContext(context);
    if ((*m)->type() != MessageType::kDictionaryBatch) {
      return Status::Invalid(context, ": expected a DictionaryBatch, found ",
                             MessageTypeName((*m)->type()));
    }
    if (!(*m)->is_delta() && memo_.HasDictionary((*m)->dictionary_id())) {
      return Status::Invalid(context, ": dictionary id ", (*m)->dictionary_id(),
                             " is sent in full twice; the file format does not allow "
                             "dictionary replacement");
    }
    auto update = DecodeDictionaryBatch(**m, &memo_, PackedBodyResolver((*m)->body()),
                                        options_, wire_endianness_);
    if (!update.ok()) return update.status().WithContext(context);
  }
  return Status::OK();
}

Result<RecordBatchPtr> RecordBatchFileReader::ReadRecordBatch(int i) const {
  if (i < 0 || i >= num_record_batches()) {
    return Status::IndexError("IPC file: record batch ", i,
                              " does not exist (the file has ", num_record_batches(),
                              ")");
  }
  const Block& b = batch_blocks_[i];
  const std::string context = "IPC file: record batch " + std::to_string(i) +
                              " at offset " + std::to_string(b.offset);
  auto m = ReadMessageAt(file_, b.offset, b.metadata_length, b.body_length, options_);
  if (!m.ok()) return m.status().WithContext(context);
  if ((*m)->type() != MessageType::kRecordBatch) {
    return Status::Invalid(context, ": expected a RecordBatch, found ",
                           MessageTypeName((*m)->type()));
  }
  auto batch = DecodeRecordBatch(**m, schema_, memo_, PackedBodyResolver((*m)->body()),
                                 options_, wire_endianness_);
  if (!batch.ok()) return batch.status().WithContext(context);
  return batch;
}

Result<TablePtr> RecordBatchFileReader::ReadTable() const {
  std::vector<RecordBatchPtr> batches;
  batches.reserve(batch_blocks_.size());
  for (int i = 0; i < num_record_batches(); ++i) {
    QUIVER_ASSIGN_OR_RAISE(auto batch, ReadRecordBatch(i));
    batches.push_back(std::move(batch));
  }
  return Table::FromRecordBatches(batches, schema_);
}

namespace {

class FileBatchReader final : public RecordBatchReader {
 public:
  explicit FileBatchReader(const RecordBatchFileReader* file) : file_(file) {}
  SchemaPtr schema() const override { return file_->schema(); }
  Result<RecordBatchPtr> Next() override {
    if (next_ >= file_->num_record_batches()) return RecordBatchPtr();
    return file_->ReadRecordBatch(next_++);
  }

 private:
  const RecordBatchFileReader* file_;
  int next_ = 0;
};

// A FileBatchReader that owns its file reader.
class OwningFileBatchReader final : public RecordBatchReader {
 public:
  explicit OwningFileBatchReader(std::unique_ptr<RecordBatchFileReader> file)
      : file_(std::move(file)), batches_(file_.get()) {}
  SchemaPtr schema() const override { return batches_.schema(); }
  Result<RecordBatchPtr> Next() override { return batches_.Next(); }

 private:
  std::unique_ptr<RecordBatchFileReader> file_;
  FileBatchReader batches_;
};

}  // namespace

std::unique_ptr<RecordBatchReader> RecordBatchFileReader::AsBatchReader() const {
  return std::make_unique<FileBatchReader>(this);
}

Result<std::unique_ptr<RecordBatchReader>> OpenBatchReader(
    std::shared_ptr<Buffer> data, const IpcReadOptions& options) {
  if (data == nullptr) return Status::Invalid("IPC: null input buffer");
  QUIVER_ASSIGN_OR_RAISE(IpcFormat format, DetectFormat(*data));
  if (format == IpcFormat::kFile) {
    QUIVER_ASSIGN_OR_RAISE(auto file,
                           RecordBatchFileReader::Open(std::move(data), options));
    return std::unique_ptr<RecordBatchReader>(
        std::make_unique<OwningFileBatchReader>(std::move(file)));
  }
  QUIVER_ASSIGN_OR_RAISE(auto stream,
                         RecordBatchStreamReader::Open(std::move(data), options));
  return std::unique_ptr<RecordBatchReader>(std::move(stream));
}

// ---------------------------------------------------------------------------
// Helpers

Result<IpcFormat> DetectFormat(const Buffer& data) {
  if (data.size() == 0) return Status::Invalid("IPC: empty input");
  if (data.size() >= kArrowMagicLength &&
      std::memcmp(data.data(), kArrowMagic, kArrowMagicLength) == 0) {
    return IpcFormat::kFile;
  }
  if (data.size() >= 8) {
    uint32_t first;
    int32_t second;
    std::memcpy(&first, data.data(), 4);
    std::memcpy(&second, data.data() + 4, 4);
    if (first == kContinuationMarker && second >= 0) return IpcFormat::kStream;
    // Legacy framing: a plausible positive metadata length.
    const int32_t legacy = static_cast<int32_t>(first);
    if (legacy > 0 && legacy <= data.size() - 4) return IpcFormat::kStream;
  }
  return Status::Invalid("IPC: input of ", data.size(),
                         " bytes is neither an Arrow IPC stream nor an Arrow IPC file");
}

Result<TablePtr> ReadTableFromBuffer(std::shared_ptr<Buffer> data,
                                     const IpcReadOptions& options) {
  if (data == nullptr) return Status::Invalid("IPC: null input buffer");
  QUIVER_ASSIGN_OR_RAISE(IpcFormat format, DetectFormat(*data));
  if (format == IpcFormat::kFile) {
    QUIVER_ASSIGN_OR_RAISE(auto reader,
                           RecordBatchFileReader::Open(std::move(data), options));
    return reader->ReadTable();
  }
  QUIVER_ASSIGN_OR_RAISE(auto reader,
                         RecordBatchStreamReader::Open(std::move(data), options));
  return reader->ReadTable();
}

}  // namespace quiver::ipc
