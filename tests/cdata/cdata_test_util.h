// Helpers of the C Data Interface tests: random arrays of every Quiver type
// (built with the builders), and a hand-made C producer whose structures
// can be made as malformed as a test needs and whose releases are counted.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/all_types.h"
#include "quiver/columnar/builder.h"
#include "quiver/columnar/c_data.h"

namespace quiver::cdata_test {

using quiver::testing::AllTypes;

// A random array of `type` with about one value in five null (none where
// the type forbids it, e.g. map keys). Deterministic for a given seed.
Result<ArrayPtr> RandomArray(const TypePtr& type, int64_t length, uint64_t seed);

// A random record batch with one column per type in `types`.
Result<RecordBatchPtr> RandomBatch(const std::vector<TypePtr>& types, int64_t rows,
                                   uint64_t seed);

// ---- A hand-made producer ----

// Counts the release calls of the structures FakeArray/FakeSchema make.
struct ReleaseCounter {
  int calls = 0;
};

// One node of a producer-side ArrowArray, described field by field. The
// buffers are taken as given (pointers into memory the test keeps alive).
struct FakeArraySpec {
  int64_t length = 0;
  int64_t null_count = 0;
  int64_t offset = 0;
  std::vector<const void*> buffers{};
  std::vector<FakeArraySpec> children{};
  std::shared_ptr<FakeArraySpec> dictionary{};
  // Overrides of the counts written into the struct (-2: use the vectors').
  int64_t n_buffers = -2;
  int64_t n_children = -2;
  bool null_buffers_array = false;   // buffers = NULL
  bool null_children_array = false;  // children = NULL
};

// Fills `out` from `spec`; every node's release increments `counter` (which
// must outlive the structure) and frees what the node owns.
void MakeFakeArray(const FakeArraySpec& spec, ReleaseCounter* counter, ArrowArray* out);

struct FakeSchemaSpec {
  std::string format{};
  std::string name{};
  int64_t flags = ARROW_FLAG_NULLABLE;
  std::vector<FakeSchemaSpec> children{};
  std::shared_ptr<FakeSchemaSpec> dictionary{};
  bool null_format = false;
  std::string metadata{};  // raw bytes; empty = NULL
  int64_t n_children = -2;
};

void MakeFakeSchema(const FakeSchemaSpec& spec, ReleaseCounter* counter,
                    ArrowSchema* out);

// A zeroed, released structure (release == NULL).
ArrowArray ReleasedArray();
ArrowSchema ReleasedSchema();

}  // namespace quiver::cdata_test
