#include "transport/ucx_files.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string_view>

#include "util/private_dir.h"

namespace quiver::transport {

namespace {

bool AllDigits(const char* s) {
  if (*s == '\0') return false;
  for (; *s != '\0'; ++s) {
    if (*s < '0' || *s > '9') return false;
  }
  return true;
}

// The paths under `dir` that some process has open (as far as this user
// may look: another user's processes cannot have files in a 0700
// directory of ours).
std::set<std::string> OpenUnder(const std::string& dir) {
  std::set<std::string> open;
  const std::string prefix = dir + "/";
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return open;
  while (const dirent* p = ::readdir(proc)) {
    if (!AllDigits(p->d_name)) continue;
    const std::string fds = std::string("/proc/") + p->d_name + "/fd";
    DIR* d = ::opendir(fds.c_str());
    if (d == nullptr) continue;  // gone meanwhile, or not ours to see
    while (const dirent* f = ::readdir(d)) {
      if (!AllDigits(f->d_name)) continue;
      char target[4096];
      const ssize_t n = ::readlinkat(::dirfd(d), f->d_name, target, sizeof(target) - 1);
      if (n <= 0) continue;
      const std::string_view t(target, static_cast<size_t>(n));
      if (t.substr(0, prefix.size()) == prefix) open.emplace(t);
    }
    ::closedir(d);
  }
  ::closedir(proc);
  return open;
}

bool ProcLinksOff() {
  const char* v = std::getenv("UCX_POSIX_USE_PROC_LINK");
  if (v == nullptr) return false;
  const std::string_view s(v);
  return s == "n" || s == "no" || s == "N" || s == "NO" || s == "0" || s == "off" ||
         s == "false";
}

}  // namespace

std::string UcxFileDir() {
  struct stat st {};
  if (::stat("/dev/shm", &st) != 0 || !S_ISDIR(st.st_mode)) return "";
  const std::string dir = "/dev/shm/quiver-ucx-" + std::to_string(::geteuid());
  return util::MakePrivateDir(dir, "UCX file directory").ok() ? dir : "";
}

size_t SweepUcxFiles(const std::string& dir) {
  if (dir.empty() || ProcLinksOff()) return 0;
  std::set<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 0;
  while (const dirent* e = ::readdir(d)) {
    if (std::strncmp(e->d_name, "ucx_", 4) == 0) names.insert(e->d_name);
  }
  ::closedir(d);
  if (names.empty()) return 0;  // the usual case: UCX unlinks its files early
  // Listed first, then looked for: a file created after the listing is not
  // touched, and one listed is open in its creator until UCX unlinks it.
  const std::set<std::string> open = OpenUnder(dir);
  size_t removed = 0;
  for (const auto& name : names) {
    const std::string path = dir + "/" + name;
    if (open.count(path) != 0) continue;
    if (::unlink(path.c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace quiver::transport
