// Interoperability with Apache Arrow JS (the apache-arrow npm package pinned
// in package.json), in both directions:
//  - Quiver writes IPC streams and files of every type; node reads them with
//    apache-arrow and checks schema and values (tests/interop/js/read_check.mjs).
//  - apache-arrow writes streams and files (tests/interop/js/write_cases.mjs);
//    Quiver reads them, validates them and checks schema and values.
// Values are compared through the canonical JSON of docs/interop.md. The
// tests fail, never skip, when node or the npm package is missing.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "js_cases_util.h"
#include "js_interop_util.h"
#include "json_values_util.h"

namespace quiver::interop::js {
namespace {

constexpr TypeId kLastTypeId = TypeId::kDenseUnion;  // the last TypeId

// The TypeId values (as numbers) of every Quiver type not marked in `seen`.
std::string MissingTypes(const std::vector<bool>& seen) {
  std::string missing;
  for (int id = 0; id <= static_cast<int>(kLastTypeId); ++id) {
    if (!seen[static_cast<size_t>(id)]) missing += " " + std::to_string(id);
  }
  return missing;
}

std::vector<bool> TypesOf(const Schema& schema) {
  std::vector<bool> seen(static_cast<size_t>(kLastTypeId) + 1, false);
  for (const FieldPtr& f : schema.fields()) CollectTypeIds(*f->type(), &seen);
  return seen;
}

void Merge(const std::vector<bool>& from, std::vector<bool>* into) {
  for (size_t i = 0; i < from.size(); ++i) (*into)[i] = (*into)[i] || from[i];
}

void ReportProblems(const std::vector<std::string>& problems) {
  for (const std::string& p : problems) ADD_FAILURE() << p;
}

// Reports every "FAIL ..." line of a node script as its own failure, so the
// test log names each case, column and row that disagreed.
void ReportNodeFailures(const CommandResult& run) {
  std::istringstream lines(run.output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("FAIL ", 0) == 0 || line.rfind("SELF-CHECK FAIL ", 0) == 0) {
      ADD_FAILURE() << "Arrow JS: " << line;
    }
  }
}

// The line "case NAME: ..." that read_check.mjs prints for a case.
std::string SummaryLine(const std::string& output, const std::string& name) {
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("case " + name + ": ", 0) == 0) return line;
  }
  return "";
}

// The generator's JSON and Quiver's canonical reading of the arrays it built
// must agree before any peer is involved; otherwise the test itself is wrong.
void CheckGeneratorAgreesWithCanonicaliser(const InteropCase& c) {
  ReportProblems(CompareBatches(c.expected_batches, c.batches, *c.schema,
                                "generator self-check case=" + c.name));
}

// Writes the stream and file of case `c` into `dir` with its case JSON, and
// checks that Quiver reads its own output back identically.
void WriteQuiverCase(const InteropCase& c, const std::string& dir) {
  const std::string stream = c.name + ".arrows";
  const std::string file = c.name + ".arrow";
  ipc::WriteStats stats;
  Status st = WriteCase(c, ipc::IpcFormat::kStream, dir + "/" + stream, &stats);
  ASSERT_TRUE(st.ok()) << "case " << c.name << " stream: " << st.ToString();
  EXPECT_EQ(stats.num_record_batches, static_cast<int64_t>(c.batches.size())) << c.name;
  EXPECT_GE(stats.num_dictionary_deltas, c.min_dictionary_deltas) << c.name;
  EXPECT_GE(stats.num_replaced_dictionaries, c.min_replaced_dictionaries) << c.name;
  // Current framing starts every message with the 0xFFFFFFFF continuation
  // marker, the legacy one directly with the metadata length.
  auto bytes = io::ReadWholeFile(dir + "/" + stream);
  ASSERT_TRUE(bytes.ok() && (*bytes)->size() >= 4) << c.name;
  EXPECT_EQ((*bytes)->view().substr(0, 4) == std::string(4, '\xff'), !c.legacy_format)
      << "case " << c.name << ": framing does not match legacy_format";
  std::vector<std::pair<ipc::IpcFormat, std::string>> outputs = {
      {ipc::IpcFormat::kStream, stream}};
  if (!c.stream_only) {
    st = WriteCase(c, ipc::IpcFormat::kFile, dir + "/" + file, &stats);
    ASSERT_TRUE(st.ok()) << "case " << c.name << " file: " << st.ToString();
    EXPECT_GE(stats.num_dictionary_deltas, c.min_dictionary_deltas) << c.name;
    outputs.emplace_back(ipc::IpcFormat::kFile, file);
  }
  for (const auto& [format, name] : outputs) {
    const std::string where = "Quiver re-reading its own case=" + c.name +
                              " format=" + ipc::IpcFormatName(format);
    auto read = ReadIpcFile(dir + "/" + name, format);
    ASSERT_TRUE(read.ok()) << where << ": " << read.status().ToString();
    ReportProblems(CompareSchema(SchemaToJson(*c.schema), *read->schema, where));
    ReportProblems(
        CompareBatches(c.expected_batches, read->batches, *read->schema, where));
  }
  st = WriteJsonFile(dir + "/" + c.name + ".json", CaseToJson(c, stream, file));
  ASSERT_TRUE(st.ok()) << st.ToString();
}

TEST(JsInteropTest, ArrowJsReadsWhatQuiverWrites) {
  auto cases = MakeJsInteropCases();
  ASSERT_TRUE(cases.ok()) << cases.status().ToString();
  auto dir = TempDir::Make("quiver-to-arrow-js");
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();

  std::vector<bool> covered(static_cast<size_t>(kLastTypeId) + 1, false);
  Json names = Json::array();
  for (const InteropCase& c : *cases) {
    Merge(TypesOf(*c.schema), &covered);
    CheckGeneratorAgreesWithCanonicaliser(c);
    WriteQuiverCase(c, dir->path());
    names.push_back(c.name);
  }
  EXPECT_EQ(MissingTypes(covered), "") << "type ids not covered by the Quiver cases";
  Json manifest = Json::object();
  manifest["producer"] = "quiver";
  manifest["cases"] = names;
  ASSERT_TRUE(WriteJsonFile(dir->path() + "/manifest.json", manifest).ok());

  const CommandResult run = RunNodeScript("read_check.mjs", dir->path());
  ReportProblems(CheckArrowJsBanner(run.output));
  ReportNodeFailures(run);
  EXPECT_EQ(run.exit_code, 0) << "read_check.mjs failed:\n" << run.output;
  // Node must have checked every case in both formats, not skipped any.
  for (const InteropCase& c : *cases) {
    const std::string summary = SummaryLine(run.output, c.name);
    EXPECT_EQ(summary.rfind("case " + c.name + ": stream ok (", 0), 0u)
        << "summary of case " << c.name << ": '" << summary << "'";
    if (!c.stream_only) {
      EXPECT_NE(summary.find("; file ok ("), std::string::npos)
          << "summary of case " << c.name << ": '" << summary << "'";
    }
  }
  if (::testing::Test::HasFailure()) dir->Keep();
}

// Reads one format of one case written by Arrow JS and compares it.
void CheckArrowJsCase(const std::string& dir, const Json& expected, const char* format,
                      std::vector<bool>* covered) {
  if (expected[format].is_null()) return;
  const std::string name = expected["case"].get<std::string>();
  const std::string where = std::string("case=") + name + " format=" + format;
  const ipc::IpcFormat kind =
      std::string(format) == "file" ? ipc::IpcFormat::kFile : ipc::IpcFormat::kStream;
  auto read = ReadIpcFile(dir + "/" + expected[format].get<std::string>(), kind);
  ASSERT_TRUE(read.ok()) << where
                         << ": Quiver cannot read it: " << read.status().ToString();
  Merge(TypesOf(*read->schema), covered);
  ReportProblems(CompareSchema(expected["schema"], *read->schema, where));
  ReportProblems(
      CompareBatches(expected["batches"], read->batches, *read->schema, where));
  if (kind == ipc::IpcFormat::kStream && name == "dictionary_deltas") {
    EXPECT_GT(read->stats.num_dictionary_deltas, 0) << where << ": no delta was applied";
  }
  if (name == "dictionary_replacement") {
    EXPECT_GT(read->stats.num_replaced_dictionaries, 0)
        << where << ": nothing was replaced";
  }
}

// Runs write_cases.mjs once for the tests that read what Arrow JS wrote.
class ArrowJsWrittenTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto dir = TempDir::Make("arrow-js-to-quiver");
    if (!dir.ok()) return;  // SetUp reports it
    dir_ = new TempDir(std::move(*dir));
    run_ = new CommandResult(RunNodeScript("write_cases.mjs", dir_->path()));
  }
  static void TearDownTestSuite() {
    delete run_;
    delete dir_;
    run_ = nullptr;
    dir_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(dir_, nullptr) << "cannot create a temporary directory";
    ReportProblems(CheckArrowJsBanner(run_->output));
    ReportNodeFailures(*run_);
    ASSERT_EQ(run_->exit_code, 0) << "write_cases.mjs failed:\n" << run_->output;
    auto manifest = ReadJsonFile(dir_->path() + "/manifest.json");
    ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
    manifest_ = std::move(*manifest);
  }
  void TearDown() override {
    if (HasFailure() && dir_ != nullptr) dir_->Keep();
  }

  // Reads and checks every case listed under `list` in the manifest.
  void CheckCases(const char* list, std::vector<bool>* covered) {
    ASSERT_TRUE(manifest_[list].is_array()) << manifest_.dump();
    for (const Json& name : manifest_[list]) {
      auto expected =
          ReadJsonFile(dir_->path() + "/" + name.get<std::string>() + ".json");
      ASSERT_TRUE(expected.ok()) << expected.status().ToString();
      CheckArrowJsCase(dir_->path(), *expected, "stream", covered);
      CheckArrowJsCase(dir_->path(), *expected, "file", covered);
    }
  }

  static TempDir* dir_;
  static CommandResult* run_;
  Json manifest_;
};
TempDir* ArrowJsWrittenTest::dir_ = nullptr;
CommandResult* ArrowJsWrittenTest::run_ = nullptr;

TEST_F(ArrowJsWrittenTest, QuiverReadsWhatArrowJsWrites) {
  ASSERT_GE(manifest_["cases"].size(), 10u) << manifest_.dump();
  std::vector<bool> covered(static_cast<size_t>(kLastTypeId) + 1, false);
  CheckCases("cases", &covered);
  EXPECT_EQ(MissingTypes(covered), "") << "type ids Arrow JS did not write";
}

// Arrow JS writes a slice of a null-type column with null_count -1 (its
// "unknown"), and Arrow C++ reads such files. The null count of the null
// type can only be its length, so Quiver must read them too.
TEST_F(ArrowJsWrittenTest, QuiverReadsArrowJsSlicedNullColumns) {
  ASSERT_EQ(manifest_["quirk_cases"], Json::array({"sliced_null_column"}));
  std::vector<bool> covered(static_cast<size_t>(kLastTypeId) + 1, false);
  CheckCases("quirk_cases", &covered);
}

// The checks above must be able to fail: a wrong expected value, type or
// metadata is reported with its case, column and row, by node and by C++.
TEST(JsInteropTest, MismatchesAreReportedWithTheirLocation) {
  auto cases = MakeJsInteropCases();
  ASSERT_TRUE(cases.ok()) << cases.status().ToString();
  InteropCase c = (*cases)[0];
  ASSERT_GE(c.batches.size(), 2u);
  auto dir = TempDir::Make("quiver-js-mismatch");
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  WriteQuiverCase(c, dir->path());
  ASSERT_FALSE(::testing::Test::HasFailure());

  // Corrupt row 3 of column 4 (int32) in batch 1 and the type of column 2.
  Json wrong = CaseToJson(c, c.name + ".arrows", c.name + ".arrow");
  wrong["batches"][1]["columns"][4][3] = "12345678";
  wrong["schema"]["fields"][2]["type"] = "uint8";
  ASSERT_TRUE(WriteJsonFile(dir->path() + "/" + c.name + ".json", wrong).ok());
  Json manifest = Json::object();
  manifest["cases"] = Json::array({c.name});
  ASSERT_TRUE(WriteJsonFile(dir->path() + "/manifest.json", manifest).ok());

  const CommandResult run = RunNodeScript("read_check.mjs", dir->path());
  EXPECT_EQ(run.exit_code, 1) << run.output;
  const std::string row_failure = "FAIL case=" + c.name +
                                  " format=stream batch=1 column=4 (int32) row=3: value: "
                                  "expected \"12345678\", got";
  EXPECT_NE(run.output.find(row_failure), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("FAIL case=" + c.name +
                            " format=file schema field=2 (int8): "
                            "type value: expected \"uint8\", got \"int8\""),
            std::string::npos)
      << run.output;

  // The C++ comparison reports the same kind of mistake the same way.
  auto read =
      ReadIpcFile(dir->path() + "/" + c.name + ".arrows", ipc::IpcFormat::kStream);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  auto problems =
      CompareBatches(wrong["batches"], read->batches, *read->schema, "case=x");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].rfind("case=x batch=1 column=4 (int32) row=3: value: expected "
                              "\"12345678\", got",
                              0),
            0u)
      << problems[0];
  problems = CompareSchema(wrong["schema"], *read->schema, "case=x");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0],
            "case=x schema field=2 (int8): type value: expected \"uint8\", got "
            "\"int8\"");
}

// What the tests rely on to prove the peer is real: the banner check rejects
// another version or another install of the package.
TEST(JsInteropTest, BannerCheckRejectsOtherArrowJs) {
  const std::string dir = std::string(QUIVER_SOURCE_DIR) + "/node_modules/apache-arrow";
  EXPECT_TRUE(CheckArrowJsBanner(std::string("apache-arrow ") + kPinnedArrowJsVersion +
                                 " " + dir + "\n")
                  .empty());
  EXPECT_FALSE(CheckArrowJsBanner("apache-arrow 20.0.0 " + dir + "\n").empty());
  EXPECT_FALSE(CheckArrowJsBanner(std::string("apache-arrow ") + kPinnedArrowJsVersion +
                                  " /elsewhere/node_modules/apache-arrow\n")
                   .empty());
  EXPECT_FALSE(CheckArrowJsBanner("node: not found\n").empty());
}

}  // namespace
}  // namespace quiver::interop::js
