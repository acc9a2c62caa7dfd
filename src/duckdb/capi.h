// The few types and functions of DuckDB's C API (duckdb.h) that Quiver uses.
//
// Quiver loads libduckdb at run time (library.h) instead of building
// against DuckDB, so it declares what it needs itself, following duckdb.h of
// DuckDB 1.5.x (the layouts and signatures below are identical from 1.5.0
// to 1.5.6). C enums are passed as int32_t, which is their size on every
// platform DuckDB supports. The Arrow structures come from c_abi.h, whose
// canonical guards make them the same types DuckDB's own header declares.
#pragma once

#include <cstdint>

#include "quiver/columnar/c_abi.h"

namespace quiver::duckdb::capi {

using idx_t = uint64_t;

// duckdb_state.
using duckdb_state = int32_t;
constexpr duckdb_state kDuckDBSuccess = 0;

// duckdb_error_type: the values Quiver maps to its status codes.
using duckdb_error_type = int32_t;
constexpr duckdb_error_type kErrorInvalid = 0;
constexpr duckdb_error_type kErrorNotImplemented = 11;
constexpr duckdb_error_type kErrorCatalog = 13;
constexpr duckdb_error_type kErrorFatal = 30;
constexpr duckdb_error_type kErrorInternal = 31;
constexpr duckdb_error_type kErrorNetwork = 25;
constexpr duckdb_error_type kErrorIO = 28;
constexpr duckdb_error_type kErrorInterrupt = 29;
constexpr duckdb_error_type kErrorOutOfMemory = 33;
constexpr duckdb_error_type kErrorPermission = 34;
constexpr duckdb_error_type kErrorHttp = 38;

// Opaque handles: pointers to a struct holding one internal pointer.
struct OpaqueHandle {
  void* internal_ptr;
};
using duckdb_database = OpaqueHandle*;
using duckdb_connection = OpaqueHandle*;
using duckdb_config = OpaqueHandle*;
using duckdb_logical_type = OpaqueHandle*;
using duckdb_data_chunk = OpaqueHandle*;
using duckdb_arrow_options = OpaqueHandle*;
using duckdb_error_data = OpaqueHandle*;
using duckdb_arrow_converted_schema = OpaqueHandle*;
using duckdb_client_context = OpaqueHandle*;
using duckdb_table_function = OpaqueHandle*;
using duckdb_bind_info = OpaqueHandle*;
using duckdb_init_info = OpaqueHandle*;
using duckdb_function_info = OpaqueHandle*;
using duckdb_value = OpaqueHandle*;
using duckdb_vector = OpaqueHandle*;
using duckdb_prepared_statement = OpaqueHandle*;
using duckdb_pending_result = OpaqueHandle*;
using duckdb_replacement_scan_info = OpaqueHandle*;

// duckdb_type: the one value Quiver creates a type from.
using duckdb_type = int32_t;
constexpr duckdb_type kTypeVarchar = 17;

using duckdb_delete_callback_t = void (*)(void* data);
using duckdb_replacement_callback_t = void (*)(duckdb_replacement_scan_info info,
                                               const char* table_name, void* data);
using duckdb_table_function_bind_t = void (*)(duckdb_bind_info info);
using duckdb_table_function_init_t = void (*)(duckdb_init_info info);
using duckdb_table_function_t = void (*)(duckdb_function_info info,
                                         duckdb_data_chunk output);

// struct duckdb_column: only its size matters (results are read through
// functions), but it is spelled out so the layout of duckdb_result is.
struct duckdb_column {
  void* deprecated_data;
  bool* deprecated_nullmask;
  int32_t deprecated_type;
  char* deprecated_name;
  void* internal_data;
};

// What duckdb_query_progress returns: percentage is -1 when unknown.
struct duckdb_query_progress_type {
  double percentage;
  uint64_t rows_processed;
  uint64_t total_rows_to_process;
};

// struct duckdb_result, passed by value to duckdb_fetch_chunk.
struct duckdb_result {
  idx_t deprecated_column_count;
  idx_t deprecated_row_count;
  idx_t deprecated_rows_changed;
  duckdb_column* deprecated_columns;
  char* deprecated_error_message;
  void* internal_data;
};
static_assert(sizeof(duckdb_result) == 48, "duckdb_result layout");

// The functions, as resolved from the library: each field is the C
// function of the same name with the "duckdb_" prefix.
struct Api {
  // Databases, connections, queries.
  duckdb_state (*open_ext)(const char* path, duckdb_database* out, duckdb_config config,
                           char** out_error);
  void (*close)(duckdb_database* database);
  duckdb_state (*connect)(duckdb_database database, duckdb_connection* out);
  void (*disconnect)(duckdb_connection* connection);
  void (*connection_get_client_context)(duckdb_connection connection,
                                        duckdb_client_context* out);
  idx_t (*client_context_get_connection_id)(duckdb_client_context context);
  void (*destroy_client_context)(duckdb_client_context* context);
  duckdb_state (*query)(duckdb_connection connection, const char* sql,
                        duckdb_result* out);
  void (*destroy_result)(duckdb_result* result);
  const char* (*result_error)(duckdb_result* result);
  duckdb_error_type (*result_error_type)(duckdb_result* result);
  idx_t (*column_count)(duckdb_result* result);
  const char* (*column_name)(duckdb_result* result, idx_t column);
  duckdb_logical_type (*column_logical_type)(duckdb_result* result, idx_t column);
  duckdb_data_chunk (*fetch_chunk)(duckdb_result result);
  // Streaming results: prepared, then executed as a pending streaming
  // result, whose chunks fetch_chunk computes one at a time.
  duckdb_state (*prepare)(duckdb_connection connection, const char* sql,
                          duckdb_prepared_statement* out);
  const char* (*prepare_error)(duckdb_prepared_statement prepared);
  void (*destroy_prepare)(duckdb_prepared_statement* prepared);
  duckdb_state (*pending_prepared_streaming)(duckdb_prepared_statement prepared,
                                             duckdb_pending_result* out);
  const char* (*pending_error)(duckdb_pending_result pending);
  duckdb_state (*execute_pending)(duckdb_pending_result pending, duckdb_result* out);
  void (*destroy_pending)(duckdb_pending_result* pending);
  void (*interrupt)(duckdb_connection connection);
  duckdb_query_progress_type (*query_progress)(duckdb_connection connection);
  idx_t (*prepared_statement_column_count)(duckdb_prepared_statement prepared);
  char* (*prepared_statement_column_name)(duckdb_prepared_statement prepared,
                                          idx_t column);  // freed with free
  duckdb_logical_type (*prepared_statement_column_logical_type)(
      duckdb_prepared_statement prepared, idx_t column);
  void (*connection_get_arrow_options)(duckdb_connection connection,
                                       duckdb_arrow_options* out);
  // Types, values, chunks, vectors.
  duckdb_logical_type (*create_logical_type)(duckdb_type type);
  void (*destroy_logical_type)(duckdb_logical_type* type);
  char* (*get_varchar)(duckdb_value value);
  duckdb_value (*create_varchar)(const char* text);
  void (*destroy_value)(duckdb_value* value);
  void (*destroy_data_chunk)(duckdb_data_chunk* chunk);
  idx_t (*data_chunk_get_column_count)(duckdb_data_chunk chunk);
  duckdb_vector (*data_chunk_get_vector)(duckdb_data_chunk chunk, idx_t column);
  void (*data_chunk_set_size)(duckdb_data_chunk chunk, idx_t size);
  duckdb_logical_type (*vector_get_column_type)(duckdb_vector vector);
  void (*vector_reference_vector)(duckdb_vector to, duckdb_vector from);
  idx_t (*vector_size)();
  // Arrow conversions, both ways.
  duckdb_arrow_options (*result_get_arrow_options)(duckdb_result* result);
  void (*destroy_arrow_options)(duckdb_arrow_options* options);
  duckdb_error_data (*to_arrow_schema)(duckdb_arrow_options options,
                                       duckdb_logical_type* types, const char** names,
                                       idx_t column_count, ArrowSchema* out);
  duckdb_error_data (*data_chunk_to_arrow)(duckdb_arrow_options options,
                                           duckdb_data_chunk chunk, ArrowArray* out);
  duckdb_error_data (*schema_from_arrow)(duckdb_connection connection,
                                         ArrowSchema* schema,
                                         duckdb_arrow_converted_schema* out);
  duckdb_error_data (*data_chunk_from_arrow)(duckdb_connection connection,
                                             ArrowArray* array,
                                             duckdb_arrow_converted_schema schema,
                                             duckdb_data_chunk* out);
  void (*destroy_arrow_converted_schema)(duckdb_arrow_converted_schema* schema);
  // Errors.
  const char* (*error_data_message)(duckdb_error_data error);
  duckdb_error_type (*error_data_error_type)(duckdb_error_data error);
  void (*destroy_error_data)(duckdb_error_data* error);
  // Replacement scans: what a name no table has stands for.
  void (*add_replacement_scan)(duckdb_database db, duckdb_replacement_callback_t callback,
                               void* extra_data, duckdb_delete_callback_t destroy);
  void (*replacement_scan_set_function_name)(duckdb_replacement_scan_info info,
                                             const char* function_name);
  void (*replacement_scan_add_parameter)(duckdb_replacement_scan_info info,
                                         duckdb_value parameter);
  void (*replacement_scan_set_error)(duckdb_replacement_scan_info info,
                                     const char* error);
  // Table functions.
  duckdb_table_function (*create_table_function)();
  void (*destroy_table_function)(duckdb_table_function* function);
  void (*table_function_set_name)(duckdb_table_function function, const char* name);
  void (*table_function_add_parameter)(duckdb_table_function function,
                                       duckdb_logical_type type);
  void (*table_function_set_extra_info)(duckdb_table_function function, void* extra_info,
                                        duckdb_delete_callback_t destroy);
  void (*table_function_set_bind)(duckdb_table_function function,
                                  duckdb_table_function_bind_t bind);
  void (*table_function_set_init)(duckdb_table_function function,
                                  duckdb_table_function_init_t init);
  void (*table_function_set_function)(duckdb_table_function function,
                                      duckdb_table_function_t fn);
  void (*table_function_set_local_init)(duckdb_table_function function,
                                        duckdb_table_function_init_t init);
  void (*table_function_supports_projection_pushdown)(duckdb_table_function function,
                                                      bool pushdown);
  duckdb_state (*register_table_function)(duckdb_connection connection,
                                          duckdb_table_function function);
  void* (*bind_get_extra_info)(duckdb_bind_info info);
  void (*table_function_get_client_context)(duckdb_bind_info info,
                                            duckdb_client_context* out);
  duckdb_value (*bind_get_parameter)(duckdb_bind_info info, idx_t index);
  void (*bind_add_result_column)(duckdb_bind_info info, const char* name,
                                 duckdb_logical_type type);
  void (*bind_set_cardinality)(duckdb_bind_info info, idx_t cardinality, bool is_exact);
  void (*bind_set_bind_data)(duckdb_bind_info info, void* data,
                             duckdb_delete_callback_t destroy);
  void (*bind_set_error)(duckdb_bind_info info, const char* error);
  void* (*init_get_bind_data)(duckdb_init_info info);
  idx_t (*init_get_column_count)(duckdb_init_info info);
  idx_t (*init_get_column_index)(duckdb_init_info info, idx_t index);
  void (*init_set_init_data)(duckdb_init_info info, void* data,
                             duckdb_delete_callback_t destroy);
  void (*init_set_error)(duckdb_init_info info, const char* error);
  void (*init_set_max_threads)(duckdb_init_info info, idx_t max_threads);
  void* (*function_get_bind_data)(duckdb_function_info info);
  void* (*function_get_init_data)(duckdb_function_info info);
  void* (*function_get_local_init_data)(duckdb_function_info info);
  void (*function_set_error)(duckdb_function_info info, const char* error);
  // Miscellaneous.
  void (*free)(void* ptr);
  const char* (*library_version)();
};

}  // namespace quiver::duckdb::capi
