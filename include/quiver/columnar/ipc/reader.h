// Reading Arrow IPC streams and files (namespace quiver::ipc).
//
// The readers decode untrusted bytes: every flatbuffer is verified, every
// buffer range, count and length is checked, and every batch is validated
// before it is returned; malformed input gives an error naming the message and
// what is wrong, never a crash. Reading from a Buffer is zero-copy: the arrays'
// buffers are slices of the input Buffer and keep it alive. Only decompression,
// dictionary deltas (concatenation) and misaligned buffers allocate, from
// IpcReadOptions::pool.
//
// Readers are not thread-safe; the batches they return are immutable and may
// be shared between threads.
//
// Example:
//   QUIVER_ASSIGN_OR_RAISE(auto data, io::MemoryMapFile("table.arrow"));
//   QUIVER_ASSIGN_OR_RAISE(TablePtr table, ipc::ReadTableFromBuffer(data));
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "quiver/columnar/io.h"
#include "quiver/columnar/ipc/message.h"
#include "quiver/columnar/ipc/message_io.h"
#include "quiver/columnar/table.h"

namespace quiver::ipc {

// What a reader has read so far.
struct ReadStats {
  int64_t num_messages = 0;
  int64_t num_record_batches = 0;
  int64_t num_dictionary_batches = 0;
  int64_t num_dictionary_deltas = 0;
  int64_t num_replaced_dictionaries = 0;
};

// Reads the stream format, batch by batch.
class RecordBatchStreamReader final : public RecordBatchReader {
 public:
  // Over a stream held in memory (zero-copy). Reads the schema message now.
  static Result<std::unique_ptr<RecordBatchStreamReader>> Open(
      std::shared_ptr<Buffer> data, const IpcReadOptions& options = {});
  // Over an input stream such as a pipe (copies); `stream` must outlive the
  // reader.
  static Result<std::unique_ptr<RecordBatchStreamReader>> Open(
      io::InputStream* stream, const IpcReadOptions& options = {});
  static Result<std::unique_ptr<RecordBatchStreamReader>> Open(
      std::unique_ptr<MessageReader> messages, const IpcReadOptions& options = {});

  SchemaPtr schema() const override { return schema_; }
  // Applies dictionary batches as they come and returns the next record
  // batch, or null at the end. After an error the reader stays failed.
  Result<RecordBatchPtr> Next() override;
  // Every remaining batch as a table of the stream's schema.
  Result<TablePtr> ReadTable();
  ReadStats stats() const { return stats_; }
  const DictionaryMemo& dictionaries() const { return memo_; }

 private:
  RecordBatchStreamReader(std::unique_ptr<MessageReader> messages, IpcReadOptions options)
      : messages_(std::move(messages)), options_(options) {}
  Status ReadSchema();
  std::string Context(const Message* message) const;

  std::unique_ptr<MessageReader> messages_;
  IpcReadOptions options_;
  SchemaPtr schema_;
  Endianness wire_endianness_ = Endianness::kLittle;  // of the bodies
  DictionaryMemo memo_;
  ReadStats stats_;
  Status failed_;
  bool finished_ = false;
};

// Reads the file format: random access to any record batch.
class RecordBatchFileReader {
 public:
  // Checks magic, footer and schema and reads every dictionary (so errors in
  // them surface here). Zero-copy.
  static Result<std::unique_ptr<RecordBatchFileReader>> Open(
      std::shared_ptr<Buffer> file, const IpcReadOptions& options = {});

  const SchemaPtr& schema() const { return schema_; }
  int num_record_batches() const { return static_cast<int>(batch_blocks_.size()); }
  int num_dictionaries() const { return static_cast<int>(dictionary_blocks_.size()); }
  // The footer's metadata version; V4 when the footer leaves it unset (V1-V3,
  // as older writers did), since each message's own version, checked as it
  // is read, must be V4 or V5.
  MetadataVersion version() const { return version_; }
  // The footer's custom metadata (null if none).
  const MetadataPtr& footer_metadata() const { return footer_metadata_; }
  // Record batch `i` (0-based); IndexError outside [0, num_record_batches()).
  Result<RecordBatchPtr> ReadRecordBatch(int i) const;
  // Every record batch as a table.
  Result<TablePtr> ReadTable() const;
  // A RecordBatchReader over batches 0, 1, ... (the file reader must outlive it).
  std::unique_ptr<RecordBatchReader> AsBatchReader() const;

  // One footer entry: where a message sits in the file.
  struct Block {
    int64_t offset = 0;
    int64_t metadata_length = 0;
    int64_t body_length = 0;
  };
  const std::vector<Block>& record_batch_blocks() const { return batch_blocks_; }
  const std::vector<Block>& dictionary_blocks() const { return dictionary_blocks_; }

 private:
  RecordBatchFileReader(std::shared_ptr<Buffer> file, IpcReadOptions options)
      : file_(std::move(file)), options_(options) {}
  Status ReadFooter();
  Status ReadDictionaries();

  std::shared_ptr<Buffer> file_;
  IpcReadOptions options_;
  SchemaPtr schema_;
  Endianness wire_endianness_ = Endianness::kLittle;  // of the bodies
  DictionaryMemo memo_;
  MetadataVersion version_ = MetadataVersion::kV5;
  MetadataPtr footer_metadata_;
  std::vector<Block> batch_blocks_;
  std::vector<Block> dictionary_blocks_;
  int64_t footer_offset_ = 0;
};

// The file magic "ARROW1".
constexpr char kArrowMagic[] = "ARROW1";
constexpr int kArrowMagicLength = 6;

// File if `data` starts with the magic, stream if it starts like an
// encapsulated message (either framing); Invalid otherwise.
Result<IpcFormat> DetectFormat(const Buffer& data);

// A RecordBatchReader over a stream or file held in memory (format sniffed),
// batch by batch; zero-copy. For tools that handle both formats alike.
Result<std::unique_ptr<RecordBatchReader>> OpenBatchReader(
    std::shared_ptr<Buffer> data, const IpcReadOptions& options = {});

// Reads a whole stream or file held in memory (format sniffed) into a table;
// zero-copy.
Result<TablePtr> ReadTableFromBuffer(std::shared_ptr<Buffer> data,
                                     const IpcReadOptions& options = {});

}  // namespace quiver::ipc
