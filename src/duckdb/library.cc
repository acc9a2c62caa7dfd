#include "duckdb/library.h"

#include <dlfcn.h>

#include <cstdlib>

namespace quiver::duckdb {

namespace {

std::string DlError() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown dlopen error";
}

// Resolves `name` into `*slot` (a function pointer of any type).
template <typename Fn>
Status Resolve(void* handle, const std::string& path, const char* name, Fn* slot) {
  dlerror();
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) {
    return Status::NotFound("DuckDB library '", path, "' lacks the function ", name, " (",
                            DlError(), "); Quiver needs DuckDB 1.5");
  }
  *slot = reinterpret_cast<Fn>(symbol);
  return Status::OK();
}

// Resolves the function "duckdb_<field>" into api->field.
#define QUIVER_DUCKDB_RESOLVE(field) \
  QUIVER_RETURN_NOT_OK(Resolve(h, path, "duckdb_" #field, &api->field))

Status ResolveAll(void* h, const std::string& path, capi::Api* api) {
  QUIVER_DUCKDB_RESOLVE(open_ext);
  QUIVER_DUCKDB_RESOLVE(close);
  QUIVER_DUCKDB_RESOLVE(connect);
  QUIVER_DUCKDB_RESOLVE(disconnect);
  QUIVER_DUCKDB_RESOLVE(connection_get_client_context);
  QUIVER_DUCKDB_RESOLVE(client_context_get_connection_id);
  QUIVER_DUCKDB_RESOLVE(destroy_client_context);
  QUIVER_DUCKDB_RESOLVE(query);
  QUIVER_DUCKDB_RESOLVE(destroy_result);
  QUIVER_DUCKDB_RESOLVE(result_error);
  QUIVER_DUCKDB_RESOLVE(result_error_type);
  QUIVER_DUCKDB_RESOLVE(column_count);
  QUIVER_DUCKDB_RESOLVE(column_name);
  QUIVER_DUCKDB_RESOLVE(column_logical_type);
  QUIVER_DUCKDB_RESOLVE(fetch_chunk);
  QUIVER_DUCKDB_RESOLVE(prepare);
  QUIVER_DUCKDB_RESOLVE(prepare_error);
  QUIVER_DUCKDB_RESOLVE(destroy_prepare);
  QUIVER_DUCKDB_RESOLVE(pending_prepared_streaming);
  QUIVER_DUCKDB_RESOLVE(pending_error);
  QUIVER_DUCKDB_RESOLVE(execute_pending);
  QUIVER_DUCKDB_RESOLVE(destroy_pending);
  QUIVER_DUCKDB_RESOLVE(interrupt);
  QUIVER_DUCKDB_RESOLVE(query_progress);
  QUIVER_DUCKDB_RESOLVE(prepared_statement_column_count);
  QUIVER_DUCKDB_RESOLVE(prepared_statement_column_name);
  QUIVER_DUCKDB_RESOLVE(prepared_statement_column_logical_type);
  QUIVER_DUCKDB_RESOLVE(connection_get_arrow_options);
  QUIVER_DUCKDB_RESOLVE(create_logical_type);
  QUIVER_DUCKDB_RESOLVE(destroy_logical_type);
  QUIVER_DUCKDB_RESOLVE(get_varchar);
  QUIVER_DUCKDB_RESOLVE(create_varchar);
  QUIVER_DUCKDB_RESOLVE(add_replacement_scan);
  QUIVER_DUCKDB_RESOLVE(replacement_scan_set_function_name);
  QUIVER_DUCKDB_RESOLVE(replacement_scan_add_parameter);
  QUIVER_DUCKDB_RESOLVE(replacement_scan_set_error);
  QUIVER_DUCKDB_RESOLVE(destroy_value);
  QUIVER_DUCKDB_RESOLVE(destroy_data_chunk);
  QUIVER_DUCKDB_RESOLVE(data_chunk_get_column_count);
  QUIVER_DUCKDB_RESOLVE(data_chunk_get_vector);
  QUIVER_DUCKDB_RESOLVE(data_chunk_set_size);
  QUIVER_DUCKDB_RESOLVE(vector_get_column_type);
  QUIVER_DUCKDB_RESOLVE(vector_reference_vector);
  QUIVER_DUCKDB_RESOLVE(vector_size);
  QUIVER_DUCKDB_RESOLVE(result_get_arrow_options);
  QUIVER_DUCKDB_RESOLVE(destroy_arrow_options);
  QUIVER_DUCKDB_RESOLVE(to_arrow_schema);
  QUIVER_DUCKDB_RESOLVE(data_chunk_to_arrow);
  QUIVER_DUCKDB_RESOLVE(schema_from_arrow);
  QUIVER_DUCKDB_RESOLVE(data_chunk_from_arrow);
  QUIVER_DUCKDB_RESOLVE(destroy_arrow_converted_schema);
  QUIVER_DUCKDB_RESOLVE(error_data_message);
  QUIVER_DUCKDB_RESOLVE(error_data_error_type);
  QUIVER_DUCKDB_RESOLVE(destroy_error_data);
  QUIVER_DUCKDB_RESOLVE(create_table_function);
  QUIVER_DUCKDB_RESOLVE(destroy_table_function);
  QUIVER_DUCKDB_RESOLVE(table_function_set_name);
  QUIVER_DUCKDB_RESOLVE(table_function_add_parameter);
  QUIVER_DUCKDB_RESOLVE(table_function_set_extra_info);
  QUIVER_DUCKDB_RESOLVE(table_function_set_bind);
  QUIVER_DUCKDB_RESOLVE(table_function_set_init);
  QUIVER_DUCKDB_RESOLVE(table_function_set_function);
  QUIVER_DUCKDB_RESOLVE(table_function_set_local_init);
  QUIVER_DUCKDB_RESOLVE(table_function_supports_projection_pushdown);
  QUIVER_DUCKDB_RESOLVE(register_table_function);
  QUIVER_DUCKDB_RESOLVE(bind_get_extra_info);
  QUIVER_DUCKDB_RESOLVE(table_function_get_client_context);
  QUIVER_DUCKDB_RESOLVE(bind_get_parameter);
  QUIVER_DUCKDB_RESOLVE(bind_add_result_column);
  QUIVER_DUCKDB_RESOLVE(bind_set_cardinality);
  QUIVER_DUCKDB_RESOLVE(bind_set_bind_data);
  QUIVER_DUCKDB_RESOLVE(bind_set_error);
  QUIVER_DUCKDB_RESOLVE(init_get_bind_data);
  QUIVER_DUCKDB_RESOLVE(init_get_column_count);
  QUIVER_DUCKDB_RESOLVE(init_get_column_index);
  QUIVER_DUCKDB_RESOLVE(init_set_init_data);
  QUIVER_DUCKDB_RESOLVE(init_set_error);
  QUIVER_DUCKDB_RESOLVE(init_set_max_threads);
  QUIVER_DUCKDB_RESOLVE(function_get_bind_data);
  QUIVER_DUCKDB_RESOLVE(function_get_init_data);
  QUIVER_DUCKDB_RESOLVE(function_get_local_init_data);
  QUIVER_DUCKDB_RESOLVE(function_set_error);
  QUIVER_DUCKDB_RESOLVE(free);
  QUIVER_DUCKDB_RESOLVE(library_version);
  return Status::OK();
}

#undef QUIVER_DUCKDB_RESOLVE

// The string value of `"key":"..."` in DuckDB's JSON error text, unescaped
// (only the escapes DuckDB writes: \" \\ \n \t), or "" if absent.
std::string JsonField(const std::string& json, const std::string& key) {
  const std::string needle = "\"" + key + "\":\"";
  size_t pos = json.find(needle);
  if (pos == std::string::npos) return "";
  std::string out;
  for (pos += needle.size(); pos < json.size() && json[pos] != '"'; ++pos) {
    if (json[pos] == '\\' && pos + 1 < json.size()) {
      const char c = json[++pos];
      out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
    } else {
      out += json[pos];
    }
  }
  return out;
}

// DuckDB's message for humans. Some C API calls return the exception as
// JSON ({"exception_type":...,"exception_message":...,"stack_trace...});
// the type and message are kept, the rest dropped.
std::string ReadableMessage(const char* message) {
  if (message == nullptr) return "(no message)";
  const std::string text = message;
  if (text.empty() || text.front() != '{') return text;
  const std::string what = JsonField(text, "exception_message");
  if (what.empty()) return text;
  const std::string type = JsonField(text, "exception_type");
  return type.empty() ? what : type + " Error: " + what;
}

}  // namespace

Status FromDuckDBError(capi::duckdb_error_type type, const char* message,
                       const std::string& context) {
  const std::string text = context + ": " + ReadableMessage(message);
  switch (type) {
    case capi::kErrorOutOfMemory:
      return Status::OutOfMemory(text);
    case capi::kErrorIO:
    case capi::kErrorNetwork:
    case capi::kErrorHttp:
      return Status::IOError(text);
    case capi::kErrorNotImplemented:
      return Status::NotImplemented(text);
    case capi::kErrorInterrupt:
      return Status::Cancelled(text);
    case capi::kErrorPermission:
      return Status::PermissionDenied(text);
    case capi::kErrorInternal:
    case capi::kErrorFatal:
      return Status::UnknownError(text);
    default:
      return Status::Invalid(text);
  }
}

Result<std::shared_ptr<const Library>> Library::Open(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return Status::IOError("cannot load DuckDB's C library from '", path,
                           "': ", DlError(),
                           " (set QUIVER_DUCKDB_LIBRARY or run scripts/setup.sh)");
  }
  std::shared_ptr<Library> lib(new Library());
  lib->path_ = path;
  QUIVER_RETURN_NOT_OK(ResolveAll(handle, path, &lib->api_));
  return std::shared_ptr<const Library>(std::move(lib));
}

Result<std::shared_ptr<const Library>> Library::Default() {
  static const Result<std::shared_ptr<const Library>> library = Open(DefaultPath());
  return library;
}

std::string Library::DefaultPath() {
  const char* env = std::getenv("QUIVER_DUCKDB_LIBRARY");
  if (env != nullptr && env[0] != '\0') return env;
  return QUIVER_DEFAULT_DUCKDB_LIBRARY;
}

std::string Library::version() const {
  const char* v = api_.library_version();
  return v != nullptr ? v : "";
}

}  // namespace quiver::duckdb
