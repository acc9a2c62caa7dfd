// Interoperability with Polars (nodejs-polars, Rust, pinned in scripts/setup.sh),
// a third independent Arrow implementation, both directions in one test:
// Polars writes IPC streams of many types (nulls in every column),
// uncompressed and with its LZ4 and ZSTD codecs; Quiver reads each with full
// validation and writes it back with the same codec; Polars reads what
// Quiver wrote and checks every column equals its own frame
// (tests/interop/js/polars_roundtrip.mjs). A value Quiver misread, or wrote
// wrongly, fails the check. The test fails, never skips, when node or the
// npm packages are missing.
//
// Polars' IPC *file* writer uses string_view for strings (its own layout),
// the stream writer large_string: both are read, written back and checked.
#include <gtest/gtest.h>

#include <string>

#include "js_interop_util.h"
#include "quiver/columnar/ipc.h"

namespace quiver::interop::js {
namespace {

TEST(PolarsInterop, StreamsOfEveryCodecRoundTripThroughQuiver) {
  auto dir = TempDir::Make("quiver-polars");
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  CommandResult wrote = RunNodeScript("polars_roundtrip.mjs write", dir->path());
  ASSERT_EQ(wrote.exit_code, 0) << wrote.output;
  ASSERT_NE(wrote.output.find("nodejs-polars 0.26.1 " + std::string(QUIVER_SOURCE_DIR) +
                              "/node_modules/nodejs-polars"),
            std::string::npos)
      << "not the pinned Polars of this repository:\n"
      << wrote.output;

  const std::pair<const char*, ipc::Compression> codecs[] = {
      {"uncompressed", ipc::Compression::kUncompressed},
      {"lz4", ipc::Compression::kLz4Frame},
      {"zstd", ipc::Compression::kZstd}};
  for (const auto& [name, codec] : codecs) {
    for (const auto format : {ipc::IpcFormat::kStream, ipc::IpcFormat::kFile}) {
      const std::string ext = format == ipc::IpcFormat::kStream ? ".arrows" : ".arrow";
      SCOPED_TRACE(std::string(name) + ext);
      const std::string in = dir->path() + "/" + name + ext;
      const std::string out = dir->path() + "/" + name + ".quiver" + ext;
      auto data = io::MemoryMapFile(in);
      ASSERT_TRUE(data.ok()) << data.status().ToString();
      ipc::IpcReadOptions read_options;
      read_options.validate_full = true;
      auto reader = ipc::OpenBatchReader(*data, read_options);
      ASSERT_TRUE(reader.ok()) << reader.status().ToString();
      auto batches = (*reader)->ReadAll();
      ASSERT_TRUE(batches.ok()) << batches.status().ToString();
      int64_t rows = 0;
      for (const auto& b : *batches) rows += b->num_rows();
      EXPECT_EQ(rows, 1000);
      const SchemaPtr& schema = (*reader)->schema();
      EXPECT_EQ(schema->num_fields(), 15);
      // Polars' files hold its strings as string_view: Quiver reads them as
      // such (and writes them back so).
      if (format == ipc::IpcFormat::kFile) {
        EXPECT_EQ(schema->field(schema->GetFieldIndex("s"))->type()->id(),
                  TypeId::kStringView)
            << schema->ToString();
      }
      auto sink = io::FileOutputStream::Open(out);
      ASSERT_TRUE(sink.ok()) << sink.status().ToString();
      auto write_options = ipc::IpcWriteOptions::Defaults();
      write_options.compression = codec;
      auto writer = ipc::MakeWriter(format, sink->get(), schema, write_options);
      ASSERT_TRUE(writer.ok()) << writer.status().ToString();
      for (const auto& b : *batches) ASSERT_TRUE((*writer)->WriteRecordBatch(*b).ok());
      ASSERT_TRUE((*writer)->Close().ok());
      ASSERT_TRUE((*sink)->Close().ok());
    }
  }

  CommandResult checked = RunNodeScript("polars_roundtrip.mjs check", dir->path());
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  for (const auto& [name, codec] : codecs) {
    for (const char* ext : {" arrows", " arrow"}) {
      EXPECT_NE(checked.output.find(std::string("ok ") + name + ext), std::string::npos)
          << checked.output;
    }
  }
  if (HasFailure()) dir->Keep();
}

}  // namespace
}  // namespace quiver::interop::js
