// Writes an Arrow IPC file holding one column of every type Quiver supports
// (tests/common/all_types.h), random values with nulls, for the Python
// tests (tests/python/test_types.py), which put it into a cluster and
// compare what comes back.
//
//   python_all_types_ipc OUT.arrow [ROWS] [--no-views]
#include <cstdio>
#include <cstring>
#include <string>

#include "cdata/cdata_test_util.h"
#include "quiver/columnar/io.h"
#include "quiver/columnar/ipc.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: python_all_types_ipc OUT.arrow [ROWS] [--no-views]\n");
    return 2;
  }
  int64_t rows = 300;
  bool views = true;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--no-views") == 0) {
      views = false;
    } else {
      rows = std::stoll(argv[i]);
    }
  }
  auto types = views ? quiver::testing::AllTypes() : quiver::testing::AllTypesButViews();
  auto batch = quiver::cdata_test::RandomBatch(types, rows, 28);
  if (!batch.ok()) {
    std::fprintf(stderr, "%s\n", batch.status().ToString().c_str());
    return 1;
  }
  auto table = quiver::Table::FromRecordBatches({*batch});
  auto bytes = quiver::ipc::SerializeTable(**table, quiver::ipc::IpcFormat::kFile);
  if (!bytes.ok()) {
    std::fprintf(stderr, "%s\n", bytes.status().ToString().c_str());
    return 1;
  }
  FILE* f = std::fopen(argv[1], "wb");
  if (f == nullptr ||
      std::fwrite((*bytes)->data(), 1, (*bytes)->size(), f) !=
          static_cast<size_t>((*bytes)->size()) ||
      std::fclose(f) != 0) {
    std::perror(argv[1]);
    return 1;
  }
  return 0;
}
