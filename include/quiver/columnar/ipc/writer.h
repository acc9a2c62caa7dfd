// Writing Arrow IPC streams and files (namespace quiver::ipc).
//
// A RecordBatchWriter writes the schema, then for every batch the dictionary
// batches it needs (new dictionaries, deltas, replacements) and the batch;
// Close() writes the end-of-stream marker (and, for files, the footer).
// Uncompressed, unsliced buffers go from the arrays' memory straight to the
// sink. Writers are not thread-safe; the sink must outlive the writer.
//
// Example:
//   QUIVER_ASSIGN_OR_RAISE(auto sink, io::BufferOutputStream::Create());
//   QUIVER_ASSIGN_OR_RAISE(auto writer, ipc::MakeStreamWriter(sink.get(), schema));
//   QUIVER_RETURN_NOT_OK(writer->WriteRecordBatch(*batch));
//   QUIVER_RETURN_NOT_OK(writer->Close());
//   QUIVER_ASSIGN_OR_RAISE(std::shared_ptr<Buffer> bytes, sink->Finish());
#pragma once

#include <cstdint>
#include <memory>

#include "quiver/columnar/io.h"
#include "quiver/columnar/ipc/options.h"
#include "quiver/columnar/table.h"

namespace quiver::ipc {

// What a writer has written so far.
struct WriteStats {
  int64_t num_messages = 0;  // schema, dictionaries and batches
  int64_t num_record_batches = 0;
  int64_t num_dictionary_batches = 0;  // including deltas and replacements
  int64_t num_dictionary_deltas = 0;
  int64_t num_replaced_dictionaries = 0;
  int64_t body_bytes = 0;  // bytes of message bodies, padding included
};

class RecordBatchWriter {
 public:
  virtual ~RecordBatchWriter() = default;
  // `batch` must have the writer's schema (compared without metadata).
  virtual Status WriteRecordBatch(const RecordBatch& batch) = 0;
  // Writes every chunk-aligned batch of `table` (zero-copy slices).
  Status WriteTable(const Table& table);
  // Ends the stream (and writes the file footer). Further writes fail. Does
  // not close the sink. Idempotent.
  virtual Status Close() = 0;
  virtual WriteStats stats() const = 0;
};

// A stream writer; the schema message is written right away.
Result<std::unique_ptr<RecordBatchWriter>> MakeStreamWriter(
    io::OutputStream* sink, SchemaPtr schema,
    const IpcWriteOptions& options = IpcWriteOptions::Defaults());

// A file writer; the magic and the schema are written right away, the footer
// (with `footer_metadata` as its custom metadata) by Close(). Dictionary
// replacement is an error in the file format; deltas are allowed.
Result<std::unique_ptr<RecordBatchWriter>> MakeFileWriter(
    io::OutputStream* sink, SchemaPtr schema,
    const IpcWriteOptions& options = IpcWriteOptions::Defaults(),
    MetadataPtr footer_metadata = nullptr);

Result<std::unique_ptr<RecordBatchWriter>> MakeWriter(
    IpcFormat format, io::OutputStream* sink, SchemaPtr schema,
    const IpcWriteOptions& options = IpcWriteOptions::Defaults());

// ---- One-call helpers ----

// Writes `table` as a complete stream or file to `sink`.
Status WriteTable(const Table& table, IpcFormat format, io::OutputStream* sink,
                  const IpcWriteOptions& options = IpcWriteOptions::Defaults());
// The same into a new pool buffer.
Result<std::shared_ptr<Buffer>> SerializeTable(
    const Table& table, IpcFormat format,
    const IpcWriteOptions& options = IpcWriteOptions::Defaults());
Result<std::shared_ptr<Buffer>> SerializeRecordBatch(
    const RecordBatch& batch, IpcFormat format,
    const IpcWriteOptions& options = IpcWriteOptions::Defaults());
// The exact number of bytes WriteTable would write, found without writing
// (uncompressed: metadata only, no data is touched), to size a
// FixedSizeBufferWriter.
Result<int64_t> GetSerializedSize(
    const Table& table, IpcFormat format,
    const IpcWriteOptions& options = IpcWriteOptions::Defaults());

}  // namespace quiver::ipc
