/* The Arrow C Data Interface and C Stream Interface structures.
 *
 * These are the ABI-frozen definitions of the Arrow specification
 * (https://arrow.apache.org/docs/format/CDataInterface.html and
 * CStreamInterface.html), written out from the specification's text. The
 * include guards are the canonical ones the specification prescribes, so that
 * another library's copy of the same definitions (DuckDB's, nanoarrow's,
 * Arrow C++'s) can be included in the same translation unit: whichever copy
 * comes first defines the structures, the others are skipped.
 *
 * This header is plain C so that C code can include it too. Quiver's
 * functions over these structures are in quiver/columnar/c_data.h.
 */
#ifndef QUIVER_COLUMNAR_C_ABI_H_
#define QUIVER_COLUMNAR_C_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

struct ArrowSchema {
  /* Type description. */
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;

  /* Release callback: NULL once released. */
  void (*release)(struct ArrowSchema*);
  /* Opaque producer-specific data. */
  void* private_data;
};

struct ArrowArray {
  /* Array data description. */
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;

  /* Release callback: NULL once released. */
  void (*release)(struct ArrowArray*);
  /* Opaque producer-specific data. */
  void* private_data;
};

#endif /* ARROW_C_DATA_INTERFACE */

#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE

struct ArrowArrayStream {
  /* Callbacks providing the stream. They return 0 or an errno value. */
  int (*get_schema)(struct ArrowArrayStream*, struct ArrowSchema* out);
  int (*get_next)(struct ArrowArrayStream*, struct ArrowArray* out);
  const char* (*get_last_error)(struct ArrowArrayStream*);

  /* Release callback: NULL once released. */
  void (*release)(struct ArrowArrayStream*);
  /* Opaque producer-specific data. */
  void* private_data;
};

#endif /* ARROW_C_STREAM_INTERFACE */

#ifdef __cplusplus
}
#endif

#endif /* QUIVER_COLUMNAR_C_ABI_H_ */
