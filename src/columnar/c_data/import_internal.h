// Internals of the C Data importer shared by its files: moving the caller's
// structures into guards, and importing from a structure already moved.
#pragma once

#include "quiver/columnar/c_abi.h"
#include "quiver/columnar/record_batch.h"

namespace quiver::internal {

// Owns a schema moved out of the caller's structure (which is marked
// released) and releases it when destroyed. A NULL or released source gives
// a guard whose CheckLive() fails.
class SchemaGuard {
 public:
  explicit SchemaGuard(ArrowSchema* source);
  ~SchemaGuard();
  SchemaGuard(const SchemaGuard&) = delete;
  SchemaGuard& operator=(const SchemaGuard&) = delete;

  Status CheckLive(const char* what) const;
  const ArrowSchema& get() const { return schema_; }

 private:
  ArrowSchema schema_;
};

Result<TypePtr> ImportTypeFrom(const ArrowSchema& schema);
Result<FieldPtr> ImportFieldFrom(const ArrowSchema& schema);
Result<SchemaPtr> ImportSchemaFrom(const ArrowSchema& schema);

}  // namespace quiver::internal
