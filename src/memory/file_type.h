// What kind of file a stat mode describes, worded for error messages about
// backing files and paths in the cluster file.
#pragma once

#include <sys/stat.h>

namespace quiver::memory::internal {

inline const char* FileTypeName(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "of an unknown type";
}

}  // namespace quiver::memory::internal
