// Arrow IPC stream and file formats: everything in namespace quiver::ipc.
//
//   ipc/options.h     IpcWriteOptions, IpcReadOptions, Compression, IpcFormat
//   ipc/writer.h      MakeStreamWriter, MakeFileWriter, SerializeTable, ...
//   ipc/reader.h      RecordBatchStreamReader, RecordBatchFileReader,
//                     ReadTableFromBuffer, DetectFormat
//   ipc/message.h     the reusable pieces: schema/batch metadata encoding and
//                     decoding, body resolvers, dictionary bookkeeping
//   ipc/message_io.h  message framing (continuation marker, lengths, padding)
//
// See docs/ipc.md for what is supported, the zero-copy rule and the limits.
#pragma once

#include "quiver/columnar/io.h"
#include "quiver/columnar/ipc/message.h"
#include "quiver/columnar/ipc/message_io.h"
#include "quiver/columnar/ipc/options.h"
#include "quiver/columnar/ipc/reader.h"
#include "quiver/columnar/ipc/writer.h"
