// Output and input streams, memory mapping, and IPC over a pipe.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <thread>

#include "ipc_test_util.h"

namespace quiver::ipc::test {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/" + name;
}

TEST(IoOutput, BufferOutputStreamGrows) {
  SystemMemoryPool pool;
  ASSERT_OK_AND_ASSIGN(auto out, io::BufferOutputStream::Create(16, &pool));
  std::string expected;
  for (int i = 0; i < 1000; ++i) {
    std::string piece = "piece " + std::to_string(i) + ";";
    ASSERT_OK(out->Write(piece.data(), static_cast<int64_t>(piece.size())));
    expected += piece;
  }
  ASSERT_OK_AND_ASSIGN(int64_t pos, out->Tell());
  EXPECT_EQ(pos, static_cast<int64_t>(expected.size()));
  ASSERT_OK_AND_ASSIGN(auto buffer, out->Finish());
  EXPECT_EQ(buffer->view(), expected);
  EXPECT_TRUE(out->closed());
  EXPECT_TRUE(out->Write("x", 1).IsInvalid());
  EXPECT_GT(pool.bytes_allocated(), 0);
  buffer.reset();
  EXPECT_EQ(pool.bytes_allocated(), 0);
}

TEST(IoOutput, FixedSizeBufferWriter) {
  std::vector<uint8_t> memory(10, 0xEE);
  io::FixedSizeBufferWriter out(memory.data(), 8);
  ASSERT_OK(out.Write("abcdef", 6));
  Status st = out.Write("ghi", 3);
  EXPECT_TRUE(st.IsCapacityError()) << st.ToString();
  EXPECT_NE(st.message().find("fixed buffer of 8 bytes"), std::string::npos);
  ASSERT_OK(out.Write("gh", 2));
  EXPECT_EQ(std::string(memory.begin(), memory.begin() + 8), "abcdefgh");
  EXPECT_EQ(memory[8], 0xEE);  // nothing written past the end
  EXPECT_EQ(*out.Tell(), 8);
  EXPECT_TRUE(out.Write("", 0).ok());
  EXPECT_TRUE(out.Write("x", 1).IsCapacityError());

  ASSERT_OK_AND_ASSIGN(auto owned, AllocateBuffer(64));
  io::FixedSizeBufferWriter into_buffer(owned);
  ASSERT_OK(into_buffer.Write("quiver", 6));
  EXPECT_EQ(std::string(owned->view().substr(0, 6)), "quiver");
  // A read-only buffer offers no room at all.
  io::FixedSizeBufferWriter read_only(Buffer::FromString("constant"));
  EXPECT_TRUE(read_only.Write("x", 1).IsCapacityError());
}

TEST(IoOutput, CountingOutputStream) {
  io::CountingOutputStream counter;
  ASSERT_OK(counter.Write(nullptr, 100));
  ASSERT_OK(counter.Write("abc", 3));
  EXPECT_EQ(*counter.Tell(), 103);
  EXPECT_TRUE(counter.Write(nullptr, -1).IsInvalid());
}

TEST(IoFiles, WriteReadMapAndErrors) {
  const std::string path = TempPath("quiver_io_test.bin");
  {
    ASSERT_OK_AND_ASSIGN(auto out, io::FileOutputStream::Open(path));
    ASSERT_OK(out->Write("hello ", 6));
    ASSERT_OK(out->Close());
    ASSERT_OK(out->Close());
    EXPECT_TRUE(out->Write("x", 1).IsInvalid());
  }
  {
    ASSERT_OK_AND_ASSIGN(auto out, io::FileOutputStream::Open(path, /*append=*/true));
    ASSERT_OK(out->Write("world", 5));
  }
  ASSERT_OK_AND_ASSIGN(auto mapped, io::MemoryMapFile(path));
  EXPECT_EQ(mapped->view(), "hello world");
  ASSERT_OK_AND_ASSIGN(auto whole, io::ReadWholeFile(path));
  EXPECT_EQ(whole->view(), "hello world");
  ASSERT_OK_AND_ASSIGN(auto in, io::FileInputStream::Open(path));
  ASSERT_OK_AND_ASSIGN(auto first, in->Read(5));
  EXPECT_EQ(first->view(), "hello");
  ASSERT_OK_AND_ASSIGN(auto rest, in->Read(100));
  EXPECT_EQ(rest->view(), " world");
  ASSERT_OK_AND_ASSIGN(auto none, in->Read(100));
  EXPECT_EQ(none->size(), 0);
  EXPECT_EQ(*in->Tell(), 11);

  // Empty files map to an empty buffer.
  const std::string empty = TempPath("quiver_io_empty.bin");
  { ASSERT_OK_AND_ASSIGN(auto out, io::FileOutputStream::Open(empty)); }
  ASSERT_OK_AND_ASSIGN(auto empty_map, io::MemoryMapFile(empty));
  EXPECT_EQ(empty_map->size(), 0);

  // OS errors carry errno.
  auto missing = io::MemoryMapFile(TempPath("no/such/dir/file"));
  EXPECT_TRUE(missing.status().IsIOError());
  EXPECT_NE(missing.status().message().find("errno"), std::string::npos)
      << missing.status().ToString();
  auto unwritable = io::FileOutputStream::Open(TempPath("no/such/dir/file"));
  EXPECT_TRUE(unwritable.status().IsIOError());
  EXPECT_NE(unwritable.status().message().find("No such file"), std::string::npos);
  EXPECT_TRUE(io::MemoryMapFile(::testing::TempDir()).status().IsIOError());
  std::remove(path.c_str());
  std::remove(empty.c_str());
}

TEST(IoInput, BufferInputStreamIsZeroCopy) {
  auto data = Buffer::FromString("0123456789");
  io::BufferInputStream in(data);
  ASSERT_OK_AND_ASSIGN(auto a, in.Read(4));
  EXPECT_EQ(a->data(), data->data());
  char tmp[4];
  ASSERT_OK_AND_ASSIGN(int64_t n, in.Read(4, tmp));
  EXPECT_EQ(n, 4);
  EXPECT_EQ(std::string(tmp, 4), "4567");
  ASSERT_OK_AND_ASSIGN(auto tail, in.Read(100));
  EXPECT_EQ(tail->view(), "89");
  EXPECT_TRUE(in.Read(-1).status().IsInvalid());
}

TEST(IoInput, HugeReadFromPipeAllocatesOnlyWhatArrives) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  SystemMemoryPool pool;
  ASSERT_OK_AND_ASSIGN(auto in,
                       io::FileInputStream::FromFd(fds[0], /*owns_fd=*/true, &pool));
  std::thread writer([fd = fds[1]] {
    const char msg[] = "short";
    EXPECT_EQ(::write(fd, msg, 5), 5);
    ::close(fd);
  });
  ASSERT_OK_AND_ASSIGN(auto got, in->Read(int64_t{1} << 40));
  writer.join();
  EXPECT_EQ(got->view(), "short");
  EXPECT_LT(pool.max_memory(), int64_t{4} << 20);
}

TEST(IoInput, IpcStreamThroughAPipe) {
  ASSERT_OK_AND_ASSIGN(auto batch, RandomBatch(AllTypes(), 300, 8));
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::thread producer([&, fd = fds[1]] {
    auto out = io::FileOutputStream::FromFd(fd, /*owns_fd=*/true).ValueOrDie();
    IpcWriteOptions o;
    o.compression = Compression::kLz4Frame;
    auto writer = MakeStreamWriter(out.get(), batch->schema(), o).ValueOrDie();
    for (int i = 0; i < 5; ++i)
      EXPECT_TRUE(writer->WriteRecordBatch(*batch->Slice(i * 7)).ok());
    EXPECT_TRUE(writer->Close().ok());
    EXPECT_TRUE(out->Close().ok());
  });
  ASSERT_OK_AND_ASSIGN(auto in, io::FileInputStream::FromFd(fds[0], /*owns_fd=*/true));
  ASSERT_OK_AND_ASSIGN(auto reader, RecordBatchStreamReader::Open(in.get()));
  int count = 0;
  while (true) {
    ASSERT_OK_AND_ASSIGN(auto b, reader->Next());
    if (b == nullptr) break;
    ASSERT_OK(b->ValidateFull());
    EXPECT_TRUE(BatchesEqual(*batch->Slice(count * 7), *b));
    ++count;
  }
  producer.join();
  EXPECT_EQ(count, 5);
}

}  // namespace
}  // namespace quiver::ipc::test
