// libFuzzer target: arbitrary bytes through the IPC stream and file readers.
//
// Every input is read as a stream from memory, as a stream from an input
// stream (the copying path), and as a file; every batch that decodes is
// checked with ValidateFull; big-endian input also read with
// ensure_native_endian = false. Errors are the expected outcome for most inputs;
// crashes, sanitizer reports, leaks and timeouts are findings.

#include <cstddef>
#include <cstdint>

#include "quiver/columnar/ipc.h"

namespace {

using quiver::Buffer;
using quiver::ipc::IpcReadOptions;

IpcReadOptions FuzzOptions() {
  IpcReadOptions options;
  // Keep memory per input well under libFuzzer's RSS limit.
  options.max_decompressed_size = int64_t{16} << 20;
  options.max_metadata_size = int64_t{16} << 20;
  return options;
}

void Consume(quiver::RecordBatchReader* reader) {
  // Inputs are small, but a hostile stream may hold many tiny batches.
  for (int i = 0; i < 4096; ++i) {
    auto batch = reader->Next();
    if (!batch.ok() || *batch == nullptr) return;
    (void)(*batch)->ValidateFull();
  }
}

void ReadAsStream(const std::shared_ptr<Buffer>& data, const IpcReadOptions& options) {
  auto reader = quiver::ipc::RecordBatchStreamReader::Open(data, options);
  if (reader.ok()) Consume(reader->get());
  quiver::io::BufferInputStream input(data);
  auto streamed = quiver::ipc::RecordBatchStreamReader::Open(&input, options);
  if (streamed.ok()) Consume(streamed->get());
}

void ReadAsFile(const std::shared_ptr<Buffer>& data, const IpcReadOptions& options) {
  auto reader = quiver::ipc::RecordBatchFileReader::Open(data, options);
  if (!reader.ok()) return;
  for (int i = 0; i < (*reader)->num_record_batches() && i < 4096; ++i) {
    auto batch = (*reader)->ReadRecordBatch(i);
    if (batch.ok()) (void)(*batch)->ValidateFull();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // libFuzzer's own copy of the input, of exactly `size` bytes, lives for the
  // call; nothing decoded outlives it.
  auto buffer = Buffer::Wrap(data, static_cast<int64_t>(size));
  const IpcReadOptions options = FuzzOptions();
  ReadAsStream(buffer, options);
  ReadAsFile(buffer, options);
  // Big-endian input kept as it is: checked on a swapped copy, returned
  // unswapped (ValidateFull then reads big-endian bytes: errors, no crash).
  IpcReadOptions kept = options;
  kept.ensure_native_endian = false;
  auto reader = quiver::ipc::RecordBatchStreamReader::Open(buffer, kept);
  if (reader.ok() && !(*reader)->schema()->is_native_endian()) Consume(reader->get());
  auto file = quiver::ipc::RecordBatchFileReader::Open(buffer, kept);
  if (file.ok() && !(*file)->schema()->is_native_endian()) ReadAsFile(buffer, kept);
  (void)quiver::ipc::ReadTableFromBuffer(buffer, options);
  return 0;
}
