// The big-endian twin of an IPC stream or file (see bigendian_util.h). This
// code is the tests' own: it shares nothing with the reader's byte swapping
// (src/columnar/ipc/endian_swap.cc), so a mistake in either shows.

#include "bigendian_util.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "arrow_fbs/File_generated.h"
#include "columnar/ipc/compression.h"
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
  BodySwapper(const std::vector<BufferSpec>& buffers,
              const std::vector<int64_t>& variadic_counts, std::string* body)
      : buffers_(buffers), variadic_counts_(variadic_counts), body_(body) {}

  Status Type(const DataType& type) {
    const TypeId id = type.id();
    if (id == TypeId::kNull) return Status::OK();             // no buffers
    if (id == TypeId::kRunEndEncoded) return Children(type);  // no buffers of its own
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
        if (views_ >= variadic_counts_.size()) {
          return Status::Invalid("twin: no variadic buffer count");
        }
        const int64_t n = variadic_counts_[views_++];
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
    if (next_ != buffers_.size()) {
      return Status::Invalid("twin: walked ", next_, " of ", buffers_.size(), " buffers");
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
    if (next_ >= buffers_.size()) {
      return Status::Invalid("twin: ran out of buffer entries");
    }
    const int64_t offset = buffers_[next_].offset;
    const int64_t length = buffers_[next_].length;
    ++next_;
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

  const std::vector<BufferSpec>& buffers_;
  const std::vector<int64_t>& variadic_counts_;
  std::string* body_;
  size_t next_ = 0;
  size_t views_ = 0;
};

Status Append(io::BufferOutputStream* out, const std::string& bytes) {
  return out->Write(bytes.data(), static_cast<int64_t>(bytes.size()));
}

using SwapFunction = std::function<Status(const std::vector<BufferSpec>&, std::string*)>;

// A compressed body: every buffer decompressed into a plain body (8-byte
// aligned), swapped there by `swap`, compressed again and laid out anew;
// `md` gets the new buffer entries and body length.
Status SwapCompressed(const Buffer& body, BatchMetadata* md, const SwapFunction& swap,
                      std::string* out) {
  auto whole = Buffer::Wrap(body.data(), body.size());
  std::string plain;
  std::vector<BufferSpec> plain_specs;
  for (const BufferSpec& spec : md->buffers) {
    std::shared_ptr<Buffer> bytes;
    if (spec.length > 0) {
      QUIVER_ASSIGN_OR_RAISE(auto framed,
                             Buffer::SliceSafe(whole, spec.offset, spec.length));
      int64_t allocated = 0;
      QUIVER_ASSIGN_OR_RAISE(
          bytes, internal::DecompressBuffer(md->compression, framed, int64_t{1} << 30,
                                            nullptr, &allocated));
    }
    const int64_t size = bytes ? bytes->size() : 0;
    plain_specs.push_back(BufferSpec{static_cast<int64_t>(plain.size()), size});
    if (size > 0) plain.append(bytes->view());
    plain.resize((plain.size() + 7) / 8 * 8, '\0');
  }
  QUIVER_RETURN_NOT_OK(swap(plain_specs, &plain));
  out->clear();
  for (size_t i = 0; i < plain_specs.size(); ++i) {
    const BufferSpec& p = plain_specs[i];
    md->buffers[i] = BufferSpec{static_cast<int64_t>(out->size()), 0};
    if (p.length > 0) {
      QUIVER_ASSIGN_OR_RAISE(
          auto framed, internal::CompressBuffer(
                           md->compression, kDefaultCompressionLevel,
                           reinterpret_cast<const uint8_t*>(plain.data()) + p.offset,
                           p.length, nullptr));
      md->buffers[i].length = framed->size();
      out->append(framed->view());
    }
    out->resize((out->size() + 7) / 8 * 8, '\0');
  }
  md->body_length = static_cast<int64_t>(out->size());
  return Status::OK();
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
    QUIVER_ASSIGN_OR_RAISE(BatchMetadata md, message->batch_metadata());
    SwapFunction swap = [&](const std::vector<BufferSpec>& specs,
                            std::string* body) -> Status {
      BodySwapper swapper(specs, md.variadic_buffer_counts, body);
      if (dictionary_values != nullptr) {
        QUIVER_RETURN_NOT_OK(swapper.Type(*dictionary_values));
      } else {
        for (const FieldPtr& f : big_schema->fields()) {
          QUIVER_RETURN_NOT_OK(swapper.Type(*f->type()));
        }
      }
      return swapper.Finish();
    };
    std::string body;
    std::shared_ptr<Buffer> metadata = message->metadata();
    if (batch->compression() == nullptr) {
      // The metadata is unchanged: offsets and lengths stay what they were.
      body = message->body() ? message->body()->ToString() : std::string();
      body.resize(static_cast<size_t>(message->body_length()));
      QUIVER_RETURN_NOT_OK(swap(md.buffers, &body));
    } else {
      if (message->body() == nullptr) return Status::Invalid("twin: no body");
      QUIVER_RETURN_NOT_OK(SwapCompressed(*message->body(), &md, swap, &body));
      if (message->type() == MessageType::kRecordBatch) {
        QUIVER_ASSIGN_OR_RAISE(metadata, EncodeRecordBatch(md));
      } else {
        QUIVER_ASSIGN_OR_RAISE(metadata, EncodeDictionaryBatch(message->dictionary_id(),
                                                               message->is_delta(), md));
      }
    }
    QUIVER_ASSIGN_OR_RAISE(const int64_t metadata_length,
                           WriteMessageMetadata(*metadata, out.get(), write_options));
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
