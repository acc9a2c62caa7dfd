// Helpers shared by the IPC tests: random arrays of any type, round trips,
// checks that decoded buffers alias their input.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/all_types.h"
#include "common/status_macros.h"
#include "quiver/columnar/builder.h"
#include "quiver/columnar/ipc.h"
#include "quiver/columnar/table.h"

namespace quiver::ipc::test {

using quiver::testing::AllTypes;

// A random array of `type` with about `null_percent`% nulls (none for
// non-nullable children), deterministic for a given seed.
Result<ArrayPtr> RandomArray(const TypePtr& type, int64_t length, uint32_t seed,
                             int null_percent = 20);

// A batch with one column per type.
Result<RecordBatchPtr> RandomBatch(const std::vector<TypePtr>& types, int64_t length,
                                   uint32_t seed);

// One column "nested" of dictionary<int32, list<dictionary<int8, utf8>>>:
// indices [2, 0, 1, null] into the lists [["p", "q"], ["rr", "p"], null]. Its
// inner dictionary must be sent before the outer one, whose values use it.
Result<RecordBatchPtr> NestedDictionaryBatch();

// Writes `batches` in `format` and returns the bytes.
Result<std::shared_ptr<Buffer>> WriteBatches(const std::vector<RecordBatchPtr>& batches,
                                             IpcFormat format,
                                             const IpcWriteOptions& options = {});

// Reads every batch of a stream or file held in `data`.
Result<std::vector<RecordBatchPtr>> ReadBatches(std::shared_ptr<Buffer> data,
                                                const IpcReadOptions& options = {});

// A copy of `bytes` in a heap block of exactly that size (ASan catches any
// read past the end); 8-byte aligned.
std::shared_ptr<Buffer> ExactCopy(const uint8_t* data, int64_t size);

// True if every non-empty buffer of `data` (children and dictionaries
// included) lies inside `input`.
::testing::AssertionResult AllBuffersInside(const ArrayData& data, const Buffer& input);

// Batch equality with a readable diff on failure.
::testing::AssertionResult BatchesEqual(const RecordBatch& expected,
                                        const RecordBatch& actual,
                                        bool check_metadata = false);

}  // namespace quiver::ipc::test
