// quiver_scan (see scan_function.h): sources, registry and the table
// function's callbacks.
#include "duckdb/scan_function.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "quiver/columnar/bit_util.h"
#include "quiver/columnar/c_data.h"

namespace quiver::duckdb {

namespace {

// The callbacks are plain C functions that receive only DuckDB's handles,
// so they find the C API through this process-wide pointer, set when
// quiver_scan is first registered (every database must use the same
// library).
std::mutex g_library_mu;
std::shared_ptr<const Library> g_library;

const capi::Api& ScanApi() { return g_library->api(); }

Status TakeError(const capi::Api& api, capi::duckdb_error_data error,
                 const std::string& context) {
  Status st = FromDuckDBError(api.error_data_error_type(error),
                              api.error_data_message(error), context);
  api.destroy_error_data(&error);
  return st;
}

// DuckDB's conversion of `schema`; the caller destroys *out.
Status ConvertSchema(const capi::Api& api, capi::duckdb_connection conn,
                     const Schema& schema, const std::string& name,
                     capi::duckdb_arrow_converted_schema* out) {
  ArrowSchema c_schema;
  QUIVER_RETURN_NOT_OK(ExportSchema(schema, &c_schema));
  *out = nullptr;
  capi::duckdb_error_data error = api.schema_from_arrow(conn, &c_schema, out);
  c_schema.release(&c_schema);
  if (error == nullptr) return Status::OK();
  if (*out != nullptr) api.destroy_arrow_converted_schema(out);
  return TakeError(api, error, "DuckDB cannot scan the Arrow stream '" + name + "'");
}

// `*array` (a struct array of a batch's columns, released here or by
// DuckDB) as a DuckDB data chunk (the caller destroys *out).
Status ConvertArray(const capi::Api& api, capi::duckdb_connection conn,
                    capi::duckdb_arrow_converted_schema converted, ArrowArray* array,
                    capi::duckdb_data_chunk* out) {
  *out = nullptr;
  capi::duckdb_error_data error = api.data_chunk_from_arrow(conn, array, converted, out);
  // DuckDB takes the array over on success; on failure it may not have.
  if (array->release != nullptr) array->release(array);
  if (error == nullptr) return Status::OK();
  if (*out != nullptr) api.destroy_data_chunk(out);
  return TakeError(api, error, "DuckDB could not convert a Quiver batch");
}

}  // namespace

// ---- ScanSource ----

Result<std::shared_ptr<ScanSource>> ScanSource::Make(
    std::shared_ptr<const Library> library, capi::duckdb_connection conn,
    uint64_t conn_id, std::string name, std::shared_ptr<RecordBatchReader> reader,
    TablePtr table) {
  std::shared_ptr<ScanSource> s(new ScanSource());
  s->library_ = std::move(library);
  s->conn_ = conn;
  s->conn_id_ = conn_id;
  s->name_ = std::move(name);
  s->schema_ = table ? table->schema() : reader ? reader->schema() : nullptr;
  if (s->schema_ == nullptr) {
    return Status::Invalid("nothing to register as '", s->name_, "'");
  }
  if (s->schema_->num_fields() == 0) {
    return Status::Invalid("DuckDB cannot scan '", s->name_, "': it has no columns");
  }
  s->table_ = std::move(table);
  s->reader_ = std::move(reader);
  QUIVER_RETURN_NOT_OK(s->ComputeTypes());
  return s;
}

ScanSource::~ScanSource() {
  for (auto& type : types_) api().destroy_logical_type(&type);
}

// DuckDB's types, from DuckDB's own conversion of a one-row all-null batch
// (the C API has no call that returns the types of a converted schema).
Status ScanSource::ComputeTypes() {
  std::vector<ArrayPtr> nulls;
  for (const FieldPtr& f : schema_->fields()) {
    QUIVER_ASSIGN_OR_RAISE(auto column, MakeArrayOfNull(f->type(), 1));
    nulls.push_back(std::move(column));
  }
  auto batch = RecordBatch::Make(schema_, 1, nulls);
  capi::duckdb_arrow_converted_schema converted;
  QUIVER_RETURN_NOT_OK(ConvertSchema(api(), conn_, *schema_, name_, &converted));
  capi::duckdb_data_chunk chunk;
  ArrowArray array;
  Status st = ExportRecordBatch(*batch, &array);
  if (st.ok()) st = ConvertArray(api(), conn_, converted, &array, &chunk);
  api().destroy_arrow_converted_schema(&converted);
  QUIVER_RETURN_NOT_OK(st);
  for (int i = 0; i < schema_->num_fields(); ++i) {
    types_.push_back(api().vector_get_column_type(
        api().data_chunk_get_vector(chunk, static_cast<capi::idx_t>(i))));
  }
  api().destroy_data_chunk(&chunk);
  return Status::OK();
}

Result<std::shared_ptr<RecordBatchReader>> ScanSource::OpenScan() {
  if (table_ != nullptr) {
    QUIVER_ASSIGN_OR_RAISE(auto batches, table_->ToRecordBatches());
    return RecordBatchReader::FromBatches(schema_, std::move(batches));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (reader_ == nullptr) {
    return Status::Invalid(
        "the Quiver stream registered as '", name_,
        "' was already scanned; a stream can be read once, register it "
        "again (or register a table) to query it again");
  }
  return std::move(reader_);
}

// ---- ScanRegistry ----

std::string ScanRegistry::Add(std::shared_ptr<ScanSource> source) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string key = "q" + std::to_string(next_key_++);
  sources_[key] = std::move(source);
  return key;
}

void ScanRegistry::Remove(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  sources_.erase(key);
}

std::shared_ptr<ScanSource> ScanRegistry::Find(const std::string& key,
                                               uint64_t conn_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sources_.find(key);
  if (it == sources_.end() || it->second->connection_id() != conn_id) return nullptr;
  return it->second;
}

uint64_t ConnectionId(const capi::Api& api, capi::duckdb_connection conn) {
  capi::duckdb_client_context ctx = nullptr;
  api.connection_get_client_context(conn, &ctx);
  const uint64_t id = api.client_context_get_connection_id(ctx);
  api.destroy_client_context(&ctx);
  return id;
}

// ---- The table function ----

namespace {

// Rows [start, start + length) of one batch of a table: the unit DuckDB's
// threads claim in turn.
struct Morsel {
  size_t batch = 0;
  int64_t start = 0, length = 0;
};

// One scan (DuckDB's global state): the projected columns and DuckDB's
// conversion of them; a table's batches cut into morsels that any number of
// threads claim, or a stream's reader, which one thread reads.
struct ScanState {
  std::shared_ptr<ScanSource> source;
  std::vector<int> columns;
  SchemaPtr projected;
  capi::duckdb_arrow_converted_schema converted = nullptr;
  std::vector<RecordBatchPtr> batches;
  std::vector<Morsel> morsels;
  std::atomic<size_t> next_morsel{0};
  std::shared_ptr<RecordBatchReader> reader;  // streams only

  ~ScanState() {
    if (converted != nullptr) source->api().destroy_arrow_converted_schema(&converted);
  }
};

// A batch's projected columns exported once through the C Data Interface,
// shared by the views of its vectors (VectorView), released after the last.
struct ExportedBatch {
  RecordBatchPtr batch;  // the batch it was exported from
  ArrowArray array{};
  std::vector<TypeId> types;  // of each column
  ~ExportedBatch() {
    if (array.release != nullptr) array.release(&array);
  }
};

// Rows [offset, offset + length) of an exported batch as a C Data array of
// their own, made without exporting anything: the top-level columns are
// shallow copies of the exported ones with their offset and length moved;
// everything below them (buffers, nested children, dictionaries) is the
// exported batch's, kept alive by `base` until DuckDB releases the view.
struct VectorView {
  std::shared_ptr<ExportedBatch> base;
  std::vector<ArrowArray> columns;
  std::vector<ArrowArray*> column_pointers;
};

// The nulls among the rows a column view covers, counted exactly (DuckDB
// reads a dictionary column's validity only for a positive count).
int64_t NullCount(const ArrowArray& column, TypeId type) {
  if (column.null_count == 0) return 0;
  if (type == TypeId::kNull) return column.length;
  // Unions and run-end encoded arrays have no validity bitmap of their own.
  if (type == TypeId::kSparseUnion || type == TypeId::kDenseUnion ||
      type == TypeId::kRunEndEncoded) {
    return 0;
  }
  if (column.n_buffers < 1 || column.buffers[0] == nullptr) return 0;
  return column.length -
         bit_util::CountSetBits(static_cast<const uint8_t*>(column.buffers[0]),
                                column.offset, column.length);
}

// The columns' release: their contents belong to the base export.
void ReleaseColumnView(ArrowArray* array) { array->release = nullptr; }
void ReleaseVectorView(ArrowArray* array) {
  delete static_cast<VectorView*>(array->private_data);
  array->release = nullptr;
}

ArrowArray MakeVectorView(std::shared_ptr<ExportedBatch> base, int64_t offset,
                          int64_t length) {
  auto* view = new VectorView{std::move(base), {}, {}};
  const ArrowArray& whole = view->base->array;
  const auto n = static_cast<size_t>(whole.n_children);
  view->columns.resize(n);
  view->column_pointers.resize(n);
  for (size_t i = 0; i < n; ++i) {
    ArrowArray column = *whole.children[i];
    column.offset += offset;
    column.length = length;
    column.null_count = NullCount(column, view->base->types[i]);
    column.release = &ReleaseColumnView;
    column.private_data = nullptr;
    view->columns[i] = column;
    view->column_pointers[i] = &view->columns[i];
  }
  ArrowArray top = whole;
  top.length = length;
  top.children = view->column_pointers.data();
  top.release = &ReleaseVectorView;
  top.private_data = view;
  return top;
}

// One thread's part of a scan (DuckDB's local state): the rows it is
// cutting into vectors.
struct ThreadState {
  RecordBatchPtr batch;
  int64_t position = 0, end = 0;
  std::shared_ptr<ExportedBatch> exported;  // of `batch`'s projected columns
};

// Vectors per morsel: large enough that claiming costs nothing, small
// enough that both of two threads get work from a table of a few batches.
constexpr int64_t kVectorsPerMorsel = 64;
// Tables of at least this many rows are scanned by every thread DuckDB has;
// their rows then come in no particular order (as from any parallel scan:
// ORDER BY fixes one). Smaller ones are scanned by one thread, in order.
constexpr int64_t kParallelRows = int64_t{1} << 20;

void DeleteRegistryRef(void* p) { delete static_cast<std::shared_ptr<ScanRegistry>*>(p); }
void DeleteSourceRef(void* p) { delete static_cast<std::shared_ptr<ScanSource>*>(p); }
void DeleteScanState(void* p) { delete static_cast<ScanState*>(p); }
void DeleteThreadState(void* p) { delete static_cast<ThreadState*>(p); }

// The key argument of quiver_scan('<key>').
std::string KeyArgument(const capi::Api& api, capi::duckdb_bind_info info) {
  capi::duckdb_value value = api.bind_get_parameter(info, 0);
  char* text = value != nullptr ? api.get_varchar(value) : nullptr;
  std::string key = text != nullptr ? text : "";
  if (text != nullptr) api.free(text);
  if (value != nullptr) api.destroy_value(&value);
  return key;
}

void Bind(capi::duckdb_bind_info info) {
  const capi::Api& api = ScanApi();
  auto* registry =
      static_cast<std::shared_ptr<ScanRegistry>*>(api.bind_get_extra_info(info));
  const std::string key = KeyArgument(api, info);
  capi::duckdb_client_context ctx = nullptr;
  api.table_function_get_client_context(info, &ctx);
  const uint64_t conn_id = api.client_context_get_connection_id(ctx);
  api.destroy_client_context(&ctx);
  std::shared_ptr<ScanSource> source = (*registry)->Find(key, conn_id);
  if (source == nullptr) {
    const std::string error = std::string(kScanFunctionName) + ": no Quiver stream '" +
                              key + "' is registered on this connection";
    api.bind_set_error(info, error.c_str());
    return;
  }
  const Schema& schema = *source->schema();
  for (int i = 0; i < schema.num_fields(); ++i) {
    std::string name = schema.field(i)->name();
    if (name.empty()) name = "v" + std::to_string(i);
    api.bind_add_result_column(info, name.c_str(), source->types()[i]);
  }
  if (source->rows() >= 0) {
    api.bind_set_cardinality(info, static_cast<capi::idx_t>(source->rows()), true);
  }
  api.bind_set_bind_data(info, new std::shared_ptr<ScanSource>(std::move(source)),
                         &DeleteSourceRef);
}

Status InitScan(const capi::Api& api, capi::duckdb_init_info info, ScanState* state) {
  const Schema& schema = *state->source->schema();
  const capi::idx_t n = api.init_get_column_count(info);
  FieldVector fields;
  for (capi::idx_t k = 0; k < n; ++k) {
    const capi::idx_t index = api.init_get_column_index(info, k);
    if (index >= static_cast<capi::idx_t>(schema.num_fields())) {
      return Status::NotImplemented(kScanFunctionName, ": virtual column ", index,
                                    " is not supported");
    }
    state->columns.push_back(static_cast<int>(index));
    fields.push_back(schema.field(static_cast<int>(index)));
  }
  state->projected = quiver::schema(std::move(fields));
  if (!state->columns.empty()) {
    QUIVER_RETURN_NOT_OK(ConvertSchema(api, state->source->connection(),
                                       *state->projected, state->source->name(),
                                       &state->converted));
  }
  if (const TablePtr& table = state->source->table(); table != nullptr) {
    QUIVER_ASSIGN_OR_RAISE(state->batches, table->ToRecordBatches());
    const int64_t step = kVectorsPerMorsel * static_cast<int64_t>(api.vector_size());
    for (size_t b = 0; b < state->batches.size(); ++b) {
      const int64_t rows = state->batches[b]->num_rows();
      for (int64_t start = 0; start < rows; start += step) {
        state->morsels.push_back(Morsel{b, start, std::min(step, rows - start)});
      }
    }
    if (table->num_rows() >= kParallelRows) {
      api.init_set_max_threads(info, std::max<capi::idx_t>(1, state->morsels.size()));
    }
    return Status::OK();
  }
  QUIVER_ASSIGN_OR_RAISE(state->reader, state->source->OpenScan());
  return Status::OK();
}

void Init(capi::duckdb_init_info info) {
  const capi::Api& api = ScanApi();
  auto state = std::make_unique<ScanState>();
  state->source =
      *static_cast<std::shared_ptr<ScanSource>*>(api.init_get_bind_data(info));
  Status st = InitScan(api, info, state.get());
  if (!st.ok()) {
    api.init_set_error(info, st.ToString().c_str());
    return;
  }
  api.init_set_init_data(info, state.release(), &DeleteScanState);
}

void LocalInit(capi::duckdb_init_info info) {
  ScanApi().init_set_init_data(info, new ThreadState(), &DeleteThreadState);
}

// Points `local` at rows still to scan: the next morsel of a table, or the
// next batch of a stream. False at the end.
Result<bool> Claim(ScanState* state, ThreadState* local) {
  while (local->batch == nullptr || local->position >= local->end) {
    if (state->reader == nullptr) {
      const size_t k = state->next_morsel.fetch_add(1);
      if (k >= state->morsels.size()) return false;
      const Morsel& m = state->morsels[k];
      local->batch = state->batches[m.batch];
      local->position = m.start;
      local->end = m.start + m.length;
      continue;
    }
    QUIVER_ASSIGN_OR_RAISE(local->batch, state->reader->Next());
    if (local->batch == nullptr) return false;
    if (!local->batch->schema()->Equals(*state->source->schema())) {
      return Status::Invalid("the stream produced a batch of another schema");
    }
    local->position = 0;
    local->end = local->batch->num_rows();
  }
  return true;
}

// Fills `output` with this thread's next rows (at most one DuckDB vector's
// worth); sets no rows at the end.
Status Produce(const capi::Api& api, ScanState* state, ThreadState* local,
               capi::duckdb_data_chunk output) {
  QUIVER_ASSIGN_OR_RAISE(const bool more, Claim(state, local));
  if (!more) {
    api.data_chunk_set_size(output, 0);
    return Status::OK();
  }
  const int64_t rows =
      std::min(local->end - local->position, static_cast<int64_t>(api.vector_size()));
  if (!state->columns.empty()) {
    // The batch's projected columns are exported once per thread; each
    // vector is a view of them (no slicing, no export per vector).
    if (local->exported == nullptr || local->exported->batch != local->batch) {
      std::vector<ArrayPtr> columns;
      for (int c : state->columns) columns.push_back(local->batch->column(c));
      auto exported = std::make_shared<ExportedBatch>();
      exported->batch = local->batch;
      QUIVER_RETURN_NOT_OK(ExportRecordBatch(
          *RecordBatch::Make(state->projected, local->batch->num_rows(), columns),
          &exported->array));
      for (const auto& f : state->projected->fields()) {
        exported->types.push_back(f->type()->id());
      }
      local->exported = std::move(exported);
    }
    ArrowArray view = MakeVectorView(local->exported, local->position, rows);
    capi::duckdb_data_chunk chunk;
    QUIVER_RETURN_NOT_OK(
        ConvertArray(api, state->source->connection(), state->converted, &view, &chunk));
    for (size_t k = 0; k < state->columns.size(); ++k) {
      api.vector_reference_vector(api.data_chunk_get_vector(output, k),
                                  api.data_chunk_get_vector(chunk, k));
    }
    api.destroy_data_chunk(&chunk);
  }
  api.data_chunk_set_size(output, static_cast<capi::idx_t>(rows));
  local->position += rows;
  return Status::OK();
}

void Function(capi::duckdb_function_info info, capi::duckdb_data_chunk output) {
  const capi::Api& api = ScanApi();
  auto* state = static_cast<ScanState*>(api.function_get_init_data(info));
  auto* local = static_cast<ThreadState*>(api.function_get_local_init_data(info));
  Status st = Produce(api, state, local, output);
  if (!st.ok()) {
    const std::string error = "the Quiver stream registered as '" +
                              state->source->name() + "' failed: " + st.ToString();
    api.function_set_error(info, error.c_str());
  }
}

}  // namespace

Status RegisterScanFunction(const std::shared_ptr<const Library>& library,
                            capi::duckdb_connection conn,
                            std::shared_ptr<ScanRegistry> registry) {
  {
    std::lock_guard<std::mutex> lock(g_library_mu);
    if (g_library == nullptr) {
      g_library = library;
    } else if (g_library->api().bind_get_extra_info !=
               library->api().bind_get_extra_info) {
      return Status::NotImplemented(
          kScanFunctionName, " already uses the DuckDB library '", g_library->path(),
          "'; one process scans through one");
    }
  }
  const capi::Api& api = library->api();
  capi::duckdb_table_function f = api.create_table_function();
  api.table_function_set_name(f, kScanFunctionName);
  capi::duckdb_logical_type varchar = api.create_logical_type(capi::kTypeVarchar);
  api.table_function_add_parameter(f, varchar);
  api.destroy_logical_type(&varchar);
  api.table_function_set_extra_info(
      f, new std::shared_ptr<ScanRegistry>(std::move(registry)), &DeleteRegistryRef);
  api.table_function_set_bind(f, &Bind);
  api.table_function_set_init(f, &Init);
  api.table_function_set_local_init(f, &LocalInit);
  api.table_function_set_function(f, &Function);
  api.table_function_supports_projection_pushdown(f, true);
  const capi::duckdb_state state = api.register_table_function(conn, f);
  api.destroy_table_function(&f);
  if (state != capi::kDuckDBSuccess) {
    return Status::Invalid("DuckDB refused to register the table function ",
                           kScanFunctionName);
  }
  return Status::OK();
}

}  // namespace quiver::duckdb
