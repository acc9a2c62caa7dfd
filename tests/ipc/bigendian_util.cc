// The big-endian twin of an IPC stream or file (see bigendian_util.h). This
// code is the tests' own: it shares nothing with the reader's byte swapping
// (src/columnar/ipc/endian_swap.cc), so a mistake in either shows.

#include "bigendian_util.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "arrow_fbs/File_generated.h"
#include "columnar/ipc/metadata_internal.h"

namespace quiver::ipc::test {
namespace {

namespace fb = ::quiver::flatbuf;

// How the elements of one body buffer are stored.
enum class Layout { kBytes, kWord, kMonthDayNano, kViews };

// Walks the buffer entries of one batch message in the order the columnar
// format lists them for the schema's types, swapping each in `body`.
class BodySwapper {
 public:
  BodySwapper(const fb::RecordBatch* batch, std::string* body)
      : batch_(batch), body_(body) {}

  Status Type(const DataType& type) {
    const TypeId id = type.id();
    if (id == TypeId::kNull) return Status::OK();  // no buffers
    if (id == TypeId::kSparseUnion || id == TypeId::kDenseUnion) {
      QUIVER_RETURN_NOT_OK(Next(Layout::kBytes));  // int8 type ids (V5: no validity)
      if (id == TypeId::kDenseUnion) QUIVER_RETURN_NOT_OK(Next(Layout::kWord, 4));
      return Children(type);
    }
    QUIVER_RETURN_NOT_OK(Next(Layout::kBytes));  // validity bitmap
    switch (id) {
      case TypeId::kBool:
      case TypeId::kFixedSizeBinary:
        return Next(Layout::kBytes);
      case TypeId::kInterval:
        if (type.interval_unit() == IntervalUnit::kMonthDayNano) {
          return Next(Layout::kMonthDayNano);
        }
        return Next(Layout::kWord, 4);  // int32 months; int32 days, int32 ms
      case TypeId::kString:
      case TypeId::kBinary:
        QUIVER_RETURN_NOT_OK(Next(Layout::kWord, 4));
        return Next(Layout::kBytes);
      case TypeId::kLargeString:
      case TypeId::kLargeBinary:
        QUIVER_RETURN_NOT_OK(Next(Layout::kWord, 8));
        return Next(Layout::kBytes);
      case TypeId::kList:
      case TypeId::kMap:
        QUIVER_RETURN_NOT_OK(Next(Layout::kWord, 4));
        return Children(type);
      case TypeId::kLargeList:
        QUIVER_RETURN_NOT_OK(Next(Layout::kWord, 8));
        return Children(type);
      case TypeId::kListView:
      case TypeId::kLargeListView: {
        const int width = id == TypeId::kListView ? 4 : 8;
        QUIVER_RETURN_NOT_OK(Next(Layout::kWord, width));  // offsets
        QUIVER_RETURN_NOT_OK(Next(Layout::kWord, width));  // sizes
        return Children(type);
      }
      case TypeId::kFixedSizeList:
      case TypeId::kStruct:
        return Children(type);
      case TypeId::kDictionary:  // indices; the values come in dictionary batches
        return Next(Layout::kWord, type.index_type()->byte_width());
      case TypeId::kBinaryView:
      case TypeId::kStringView: {
        QUIVER_RETURN_NOT_OK(Next(Layout::kViews));
        const auto* counts = batch_->variadic_buffer_counts();
        if (counts == nullptr || views_ >= counts->size()) {
          return Status::Invalid("twin: no variadic buffer count");
        }
        const int64_t n = counts->Get(static_cast<flatbuffers::uoffset_t>(views_++));
        for (int64_t k = 0; k < n; ++k) QUIVER_RETURN_NOT_OK(Next(Layout::kBytes));
        return Status::OK();
      }
      default:  // integers, floats, decimals, dates, times, timestamps, durations
        if (type.byte_width() <= 0) {
          return Status::NotImplemented("twin: type ", type.ToString());
        }
        return Next(Layout::kWord, type.byte_width());
    }
  }

  Status Finish() const {
    const auto* buffers = batch_->buffers();
    const size_t total = buffers ? buffers->size() : 0;
    if (next_ != total) {
      return Status::Invalid("twin: walked ", next_, " of ", total, " buffers");
    }
    return Status::OK();
  }

 private:
  Status Children(const DataType& type) {
    for (const FieldPtr& f : type.fields()) QUIVER_RETURN_NOT_OK(Type(*f->type()));
    return Status::OK();
  }

  static void Reverse(char* p, int n) { std::reverse(p, p + n); }

  Status Next(Layout layout, int width = 1) {
    const auto* buffers = batch_->buffers();
    if (buffers == nullptr || next_ >= buffers->size()) {
      return Status::Invalid("twin: ran out of buffer entries");
    }
    const fb::Buffer* entry = buffers->Get(static_cast<flatbuffers::uoffset_t>(next_++));
    const int64_t offset = entry->offset();
    const int64_t length = entry->length();
    if (offset < 0 || length < 0 ||
        offset + length > static_cast<int64_t>(body_->size())) {
      return Status::Invalid("twin: buffer outside the body");
    }
    char* p = body_->data() + offset;
    switch (layout) {
      case Layout::kBytes:
        return Status::OK();
      case Layout::kWord:
        if (width == 1) return Status::OK();
        if (length % width != 0) return Status::Invalid("twin: ragged buffer");
        for (int64_t i = 0; i < length; i += width) Reverse(p + i, width);
        return Status::OK();
      case Layout::kMonthDayNano:
        if (length % 16 != 0) return Status::Invalid("twin: ragged buffer");
        for (int64_t i = 0; i < length; i += 16) {
          Reverse(p + i, 4);      // months
          Reverse(p + i + 4, 4);  // days
          Reverse(p + i + 8, 8);  // nanoseconds
        }
        return Status::OK();
      case Layout::kViews:
        if (length % 16 != 0) return Status::Invalid("twin: ragged buffer");
        for (int64_t i = 0; i < length; i += 16) {
          int32_t size;
          std::memcpy(&size, p + i, 4);  // still little-endian here
          Reverse(p + i, 4);
          if (size > 12) {  // prefix (bytes), buffer index, offset
            Reverse(p + i + 8, 4);
            Reverse(p + i + 12, 4);
          }  // else up to 12 inline bytes
        }
        return Status::OK();
    }
    return Status::OK();
  }

  const fb::RecordBatch* batch_;
  std::string* body_;
  size_t next_ = 0;
  size_t views_ = 0;
};

Status Append(io::BufferOutputStream* out, const std::string& bytes) {
  return out->Write(bytes.data(), static_cast<int64_t>(bytes.size()));
}

}  // namespace

Result<std::shared_ptr<Buffer>> BigEndianTwin(const std::shared_ptr<Buffer>& little,
                                              IpcFormat format, int32_t alignment) {
  const bool file = format == IpcFormat::kFile;
  IpcWriteOptions write_options;
  write_options.alignment = alignment;
  auto messages = MessageReader::FromBuffer(little, {}, file ? 8 : 0);
  QUIVER_ASSIGN_OR_RAISE(auto out, io::BufferOutputStream::Create());
  if (file) QUIVER_RETURN_NOT_OK(out->Write("ARROW1\0\0", 8));

  SchemaPtr big_schema;
  DictionaryFieldMap dictionaries;
  std::vector<fb::Block> dictionary_blocks, batch_blocks;
  for (;;) {
    QUIVER_ASSIGN_OR_RAISE(auto message, messages->Next());
    if (message == nullptr) break;
    QUIVER_ASSIGN_OR_RAISE(const int64_t start, out->Tell());
    if (message->type() == MessageType::kSchema) {
      QUIVER_ASSIGN_OR_RAISE(DecodedSchema decoded, DecodeSchema(*message));
      if (decoded.wire_endianness != Endianness::kLittle) {
        return Status::Invalid("twin: the input is big-endian already");
      }
      big_schema = decoded.schema->WithEndianness(Endianness::kBig);
      dictionaries = std::move(decoded.dictionaries);
      QUIVER_ASSIGN_OR_RAISE(auto metadata, EncodeSchema(*big_schema, dictionaries));
      QUIVER_RETURN_NOT_OK(
          WriteMessageMetadata(*metadata, out.get(), write_options).status());
      continue;
    }
    if (big_schema == nullptr) return Status::Invalid("twin: no schema first");
    const auto* fbm = static_cast<const fb::Message*>(message->flatbuffer());
    const fb::RecordBatch* batch = nullptr;
    TypePtr dictionary_values;
    if (message->type() == MessageType::kRecordBatch) {
      batch = fbm->header_as_RecordBatch();
    } else {
      const fb::DictionaryBatch* d = fbm->header_as_DictionaryBatch();
      batch = d ? d->data() : nullptr;
      const DictionaryField* field = dictionaries.FindById(message->dictionary_id());
      if (field == nullptr) return Status::Invalid("twin: unknown dictionary id");
      dictionary_values = field->type->value_type();
    }
    if (batch == nullptr) return Status::Invalid("twin: batch message without batch");
    if (batch->compression() != nullptr) {
      return Status::NotImplemented("twin: compressed bodies");
    }
    std::string body = message->body() ? message->body()->ToString() : std::string();
    body.resize(static_cast<size_t>(message->body_length()));
    BodySwapper swapper(batch, &body);
    if (dictionary_values != nullptr) {
      QUIVER_RETURN_NOT_OK(swapper.Type(*dictionary_values));
    } else {
      for (const FieldPtr& f : big_schema->fields()) {
        QUIVER_RETURN_NOT_OK(swapper.Type(*f->type()));
      }
    }
    QUIVER_RETURN_NOT_OK(swapper.Finish());
    // The metadata is unchanged: offsets and lengths stay what they were.
    QUIVER_ASSIGN_OR_RAISE(
        const int64_t metadata_length,
        WriteMessageMetadata(*message->metadata(), out.get(), write_options));
    QUIVER_RETURN_NOT_OK(Append(out.get(), body));
    fb::Block block(start, static_cast<int32_t>(metadata_length),
                    static_cast<int64_t>(body.size()));
    (message->type() == MessageType::kRecordBatch ? batch_blocks : dictionary_blocks)
        .push_back(block);
  }
  QUIVER_RETURN_NOT_OK(WriteEndOfStream(out.get(), write_options));
  if (file) {
    ::flatbuffers::FlatBufferBuilder fbb;
    QUIVER_ASSIGN_OR_RAISE(auto schema,
                           internal::SchemaToFlatbuffer(fbb, *big_schema, dictionaries));
    auto dicts = fbb.CreateVectorOfStructs(dictionary_blocks);
    auto batches = fbb.CreateVectorOfStructs(batch_blocks);
    fbb.Finish(fb::CreateFooter(fbb, fb::MetadataVersion::V5, schema, dicts, batches));
    const auto size = static_cast<int32_t>(fbb.GetSize());
    QUIVER_RETURN_NOT_OK(out->Write(fbb.GetBufferPointer(), size));
    QUIVER_RETURN_NOT_OK(out->Write(&size, sizeof(size)));
    QUIVER_RETURN_NOT_OK(out->Write("ARROW1", 6));
  }
  return out->Finish();
}

}  // namespace quiver::ipc::test
