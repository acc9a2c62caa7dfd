#include "util/private_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace quiver::util {

Status CheckPrivateDir(const std::string& path, std::string_view what) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return Status::FromErrno(errno, std::string(what) + " '" + path + "'");
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status::Invalid(what, " '", path, "' is not a directory");
  }
  if (st.st_uid != ::geteuid()) {
    return Status::PermissionDenied(what, " '", path, "' belongs to another user (uid ",
                                    st.st_uid, "): what is kept there would be theirs");
  }
  if ((st.st_mode & 022) != 0) {
    return Status::PermissionDenied(what, " '", path,
                                    "' can be written by others: make it 0700");
  }
  return Status::OK();
}

Status MakePrivateDir(const std::string& path, std::string_view what) {
  if (path.empty()) return Status::Invalid(what, " has an empty path");
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::FromErrno(errno, "creating " + std::string(what) + " '" + path + "'");
  }
  return CheckPrivateDir(path, what);
}

}  // namespace quiver::util
