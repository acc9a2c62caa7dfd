#include "control/tls/credentials.h"

#include <dirent.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <set>
#include <utility>

#include "control/tls/tls_context.h"

namespace quiver::control {

namespace {

constexpr std::string_view kUriScheme = "quiver:";
constexpr size_t kMaxUriBytes = 256;

// Owns a file descriptor; closes it on destruction.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~UniqueFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string Octal(mode_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

std::string Join(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

// Parses canonical decimal: digits only, no leading zero, at most `max`.
bool ParseNode(std::string_view text, uint32_t max, uint32_t* out) {
  if (text.empty() || text.size() > 5 || (text.size() > 1 && text[0] == '0')) {
    return false;
  }
  uint32_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  if (v > max) return false;
  *out = v;
  return true;
}

// The reason an open() of a credential path failed, as a Status naming it.
Status OpenError(const std::string& what, const std::string& path, int err) {
  struct stat st;
  // O_NOFOLLOW reports a final symlink as ELOOP, or as ENOTDIR with O_DIRECTORY.
  if ((err == ELOOP || err == ENOTDIR) && ::lstat(path.c_str(), &st) == 0 &&
      S_ISLNK(st.st_mode)) {
    return Status::PermissionDenied(what, " '", path,
                                    "' is a symbolic link; name the real file");
  }
  if (err == ENOENT) return Status::NotFound(what, " '", path, "' does not exist");
  if (err == ENOTDIR) return Status::Invalid(what, " '", path, "' is not a directory");
  return Status::FromErrno(err, "opening " + what + " '" + path + "'");
}

}  // namespace

// ---------------------------------------------------------------------------
// Names and identities

const char* PeerRoleName(PeerRole role) {
  return role == PeerRole::kDaemon ? "daemon" : "client";
}

std::string PeerIdentity::ToString() const {
  return std::string(PeerRoleName(role)) + " of node " + std::to_string(node);
}

std::string IdentityUri(const PeerIdentity& identity) {
  return std::string(kUriScheme) + identity.cluster + ":" + PeerRoleName(identity.role) +
         ":" + std::to_string(identity.node);
}

Result<PeerIdentity> ParseIdentityUri(std::string_view uri) {
  // The URI is echoed in errors only once it is known to be short and printable.
  if (uri.size() > kMaxUriBytes) {
    return Status::Unauthenticated("certificate URI is longer than ", kMaxUriBytes,
                                   " bytes");
  }
  for (char c : uri) {
    if (c <= ' ' || c > '~') {
      return Status::Unauthenticated("certificate URI has a non-printable character");
    }
  }
  auto bad = [uri](std::string_view why) {
    return Status::Unauthenticated("certificate URI '", uri, "' ", why);
  };
  if (!uri.starts_with(kUriScheme)) return bad("is not a quiver: URI");
  std::vector<std::string_view> fields;
  std::string_view rest = uri.substr(kUriScheme.size());
  for (size_t colon; (colon = rest.find(':')) != std::string_view::npos;) {
    fields.push_back(rest.substr(0, colon));
    rest.remove_prefix(colon + 1);
  }
  fields.push_back(rest);
  if (fields.size() != 3) return bad("is not quiver:<cluster>:<role>:<node>");
  PeerIdentity id;
  id.cluster = std::string(fields[0]);
  if (id.cluster.empty()) return bad("has an empty cluster name");
  if (fields[1] == "daemon") {
    id.role = PeerRole::kDaemon;
  } else if (fields[1] != "client") {
    return bad("has an unknown role");
  }
  if (!ParseNode(fields[2], kMaxCertifiedNode, &id.node)) {
    return bad("has a node that is not a decimal number in [0, 65534]");
  }
  return id;
}

Status CheckClusterName(const std::string& cluster) {
  if (cluster.empty() || cluster.size() > 63) {
    return Status::Invalid("cluster name must have 1 to 63 characters");
  }
  for (char c : cluster) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    if (!ok) {
      return Status::Invalid("cluster name '", cluster,
                             "' may contain only letters, digits, '-', '_' and '.'");
    }
  }
  return Status::OK();
}

std::string CaCertPath(const std::string& dir) { return Join(dir, "ca.crt"); }
std::string CaKeyPath(const std::string& dir) { return Join(dir, "ca.key"); }

std::string CertPath(const std::string& dir, PeerRole role, uint32_t node) {
  return Join(dir, std::string(PeerRoleName(role)) + "-" + std::to_string(node) + ".crt");
}

std::string KeyPath(const std::string& dir, PeerRole role, uint32_t node) {
  return Join(dir, std::string(PeerRoleName(role)) + "-" + std::to_string(node) + ".key");
}

// ---------------------------------------------------------------------------
// Reading

namespace {

Status CheckCredentialStat(const std::string& path, const struct stat& st, bool secret,
                           size_t max_bytes) {
  if (!S_ISREG(st.st_mode)) {
    return Status::Invalid("credential file '", path, "' is not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return Status::Invalid("credential file '", path, "' is larger than ", max_bytes,
                           " bytes");
  }
  const mode_t mode = st.st_mode & 07777;
  // Whoever owns a credential can rewrite it (and make this process trust
  // another CA, or be another node): only this user or root may.
  if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    return Status::PermissionDenied(secret ? "key file '" : "credential file '", path,
                                    "' is owned by uid ", st.st_uid,
                                    ", not by this user (uid ", ::geteuid(), ") or root");
  }
  if (!secret) {
    if ((mode & 022) != 0) {
      return Status::PermissionDenied("credential file '", path,
                                      "' is writable by other users (mode ", Octal(mode),
                                      "); chmod 644 it");
    }
    return Status::OK();
  }
  if ((mode & 077) != 0) {
    return Status::PermissionDenied(
        "key file '", path, "' is ", (mode & 044) != 0 ? "readable" : "accessible",
        " by other users (mode ", Octal(mode), "); chmod 600 it");
  }
  return Status::OK();
}

// Reads to the end, refusing more than `max_bytes` even if the file grew
// after fstat.
Result<std::string> ReadAll(int fd, const std::string& path, size_t max_bytes) {
  std::string data;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno(errno, "reading '" + path + "'");
    if (n == 0) return data;
    if (data.size() + static_cast<size_t>(n) > max_bytes) {
      OPENSSL_cleanse(data.data(), data.size());
      return Status::Invalid("credential file '", path, "' is larger than ", max_bytes,
                             " bytes");
    }
    data.append(buf, static_cast<size_t>(n));
    OPENSSL_cleanse(buf, sizeof(buf));
  }
}

}  // namespace

Status CheckCredentialDir(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    return Status::FromErrno(errno, "credentials directory '" + dir + "'");
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status::Invalid("credentials directory '", dir, "' is not a directory");
  }
  if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    return Status::PermissionDenied(
        "credentials directory '", dir, "' is owned by uid ", st.st_uid,
        ", not by this user (uid ", ::geteuid(),
        ") or root: its owner could replace every file in it");
  }
  if ((st.st_mode & 022) != 0) {
    return Status::PermissionDenied(
        "credentials directory '", dir, "' can be written by other users (mode ",
        Octal(st.st_mode & 07777), "): they could replace the CA; chmod 700 it");
  }
  return Status::OK();
}

Result<std::string> ReadCredentialFile(const std::string& path, bool secret,
                                       size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever.
  UniqueFd fd(
      ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (fd.get() < 0) return OpenError("credential file", path, errno);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    return Status::FromErrno(errno, "fstat '" + path + "'");
  }
  QUIVER_RETURN_NOT_OK(CheckCredentialStat(path, st, secret, max_bytes));
  return ReadAll(fd.get(), path, max_bytes);
}

// ---------------------------------------------------------------------------
// Generation

namespace {

// One file to write: its name in the directory, bytes and mode.
struct PendingFile {
  std::string name;
  std::string content;
  mode_t mode = 0600;
};

Status TlsFailure(const std::string& what) {
  return Status::UnknownError(TlsErrorText(what));
}

Result<OsslPtr<EVP_PKEY>> GenerateKey() {
  OsslPtr<EVP_PKEY> key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (!key) return TlsFailure("generating an EC P-256 key");
  return key;
}

// A positive random 128-bit serial number, so that no two certificates of a
// cluster (even of two `init` runs) share one.
Status SetRandomSerial(X509* cert) {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) return TlsFailure("random serial");
  bytes[0] |= 0x01;  // never zero
  OsslPtr<BIGNUM> bn(BN_bin2bn(bytes, sizeof(bytes), nullptr));
  OsslPtr<ASN1_INTEGER> serial(bn ? BN_to_ASN1_INTEGER(bn.get(), nullptr) : nullptr);
  if (!serial || X509_set_serialNumber(cert, serial.get()) != 1) {
    return TlsFailure("setting the serial number");
  }
  return Status::OK();
}

// A v3 certificate for `key` with subject O=<cluster>, CN=<common_name>,
// valid from an hour ago for `days`; issuer, extensions and signature follow.
Result<OsslPtr<X509>> NewCertificate(const std::string& cluster,
                                     const std::string& common_name, EVP_PKEY* key,
                                     int days) {
  OsslPtr<X509> cert(X509_new());
  if (!cert || X509_set_version(cert.get(), X509_VERSION_3) != 1) {
    return TlsFailure("X509_new");
  }
  QUIVER_RETURN_NOT_OK(SetRandomSerial(cert.get()));
  if (X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) == nullptr ||
      X509_time_adj_ex(X509_getm_notAfter(cert.get()), days, 0, nullptr) == nullptr) {
    return TlsFailure("setting the validity period");
  }
  X509_NAME* name = X509_get_subject_name(cert.get());
  auto add = [name](const char* field, const std::string& value) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(value.c_str());
    return X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, bytes, -1, -1, 0) == 1;
  };
  if (!add("O", cluster) || !add("CN", common_name) ||
      X509_set_pubkey(cert.get(), key) != 1) {
    return TlsFailure("setting the subject");
  }
  return cert;
}

// Adds extensions written as in openssl.cnf (nid, "critical,CA:TRUE").
Status AddExtensions(X509* cert, X509* issuer,
                     const std::vector<std::pair<int, std::string>>& extensions) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  for (const auto& [nid, value] : extensions) {
    OsslPtr<X509_EXTENSION> ext(X509V3_EXT_nconf_nid(nullptr, &ctx, nid, value.c_str()));
    if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) {
      return TlsFailure(std::string("adding extension ") + OBJ_nid2sn(nid) + " = " +
                        value);
    }
  }
  return Status::OK();
}

Status Sign(X509* cert, X509* issuer, EVP_PKEY* issuer_key) {
  if (X509_set_issuer_name(cert, X509_get_subject_name(issuer)) != 1 ||
      X509_sign(cert, issuer_key, EVP_sha256()) <= 0) {
    return TlsFailure("signing a certificate");
  }
  return Status::OK();
}

// The cluster's CA: may sign end-entity certificates only (pathlen:0).
Result<OsslPtr<X509>> MakeCaCertificate(const std::string& cluster, EVP_PKEY* key,
                                        int days) {
  QUIVER_ASSIGN_OR_RAISE(OsslPtr<X509> ca,
                         NewCertificate(cluster, "quiver CA", key, days));
  QUIVER_RETURN_NOT_OK(
      AddExtensions(ca.get(), ca.get(),
                    {{NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
                     {NID_key_usage, "critical,keyCertSign"},
                     {NID_subject_key_identifier, "hash"}}));
  QUIVER_RETURN_NOT_OK(Sign(ca.get(), ca.get(), key));
  return ca;
}

// A daemon or client certificate; the URI subjectAltName is its identity.
Result<OsslPtr<X509>> MakePeerCertificate(const PeerIdentity& id, EVP_PKEY* key, X509* ca,
                                          EVP_PKEY* ca_key, int days) {
  const std::string cn =
      std::string("quiver ") + PeerRoleName(id.role) + " " + std::to_string(id.node);
  QUIVER_ASSIGN_OR_RAISE(OsslPtr<X509> cert, NewCertificate(id.cluster, cn, key, days));
  // A daemon serves its clients and peers and is itself a client of its peers.
  const char* usage =
      id.role == PeerRole::kDaemon ? "serverAuth,clientAuth" : "clientAuth";
  QUIVER_RETURN_NOT_OK(AddExtensions(cert.get(), ca,
                                     {{NID_basic_constraints, "critical,CA:FALSE"},
                                      {NID_key_usage, "critical,digitalSignature"},
                                      {NID_ext_key_usage, usage},
                                      {NID_subject_alt_name, "URI:" + IdentityUri(id)},
                                      {NID_subject_key_identifier, "hash"},
                                      {NID_authority_key_identifier, "keyid:always"}}));
  QUIVER_RETURN_NOT_OK(Sign(cert.get(), ca, ca_key));
  return cert;
}

Result<std::string> BioText(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  if (size <= 0) return TlsFailure("writing PEM");
  return std::string(data, static_cast<size_t>(size));
}

Result<std::string> CertPem(X509* cert) {
  OsslPtr<BIO> bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return TlsFailure("writing PEM");
  return BioText(bio.get());
}

// Unencrypted PKCS#8, through a BIO that clears its memory when freed.
Result<std::string> KeyPem(EVP_PKEY* key) {
  OsslPtr<BIO> bio(BIO_new(BIO_s_secmem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr,
                                       nullptr) != 1) {
    return TlsFailure("writing PEM");
  }
  return BioText(bio.get());
}

Status AddPair(std::vector<PendingFile>* files, const std::string& stem, X509* cert,
               EVP_PKEY* key) {
  QUIVER_ASSIGN_OR_RAISE(std::string key_pem, KeyPem(key));
  QUIVER_ASSIGN_OR_RAISE(std::string cert_pem, CertPem(cert));
  files->push_back({stem + ".key", std::move(key_pem), 0600});
  files->push_back({stem + ".crt", std::move(cert_pem), 0644});
  return Status::OK();
}

// Every file of a fresh set of credentials, made in memory before anything is
// written so that a failure of OpenSSL writes nothing.
Status MakeAllFiles(const std::string& cluster, const std::vector<uint32_t>& nodes,
                    int days, std::vector<PendingFile>* files) {
  QUIVER_ASSIGN_OR_RAISE(OsslPtr<EVP_PKEY> ca_key, GenerateKey());
  QUIVER_ASSIGN_OR_RAISE(OsslPtr<X509> ca,
                         MakeCaCertificate(cluster, ca_key.get(), days));
  QUIVER_RETURN_NOT_OK(AddPair(files, "ca", ca.get(), ca_key.get()));
  for (uint32_t node : nodes) {
    for (PeerRole role : {PeerRole::kDaemon, PeerRole::kClient}) {
      const PeerIdentity id{cluster, role, node};
      QUIVER_ASSIGN_OR_RAISE(OsslPtr<EVP_PKEY> key, GenerateKey());
      QUIVER_ASSIGN_OR_RAISE(
          OsslPtr<X509> cert,
          MakePeerCertificate(id, key.get(), ca.get(), ca_key.get(), days));
      const std::string stem =
          std::string(PeerRoleName(role)) + "-" + std::to_string(node);
      QUIVER_RETURN_NOT_OK(AddPair(files, stem, cert.get(), key.get()));
    }
  }
  return Status::OK();
}

Status CheckInitArguments(const std::string& cluster, const std::vector<uint32_t>& nodes,
                          const CredentialOptions& options) {
  QUIVER_RETURN_NOT_OK(CheckClusterName(cluster));
  if (nodes.empty()) return Status::Invalid("no nodes to make credentials for");
  std::set<uint32_t> seen;
  for (uint32_t node : nodes) {
    if (node > kMaxCertifiedNode) {
      return Status::Invalid("node id ", node, " is larger than ", kMaxCertifiedNode);
    }
    if (!seen.insert(node).second)
      return Status::Invalid("node id ", node, " is repeated");
  }
  if (options.validity_days < 1 || options.validity_days > 36500) {
    return Status::Invalid("validity_days ", options.validity_days,
                           " is not in [1, 36500]");
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------
// The directory

// Creates `dir` or opens the existing one, and checks through the open
// descriptor (so the path cannot be swapped after the check) that it is a
// directory of this user that nobody else can enter.
Result<UniqueFd> OpenCredentialDir(const std::string& dir) {
  const bool created = ::mkdir(dir.c_str(), 0700) == 0;
  if (!created && errno != EEXIST) {
    return Status::FromErrno(errno, "creating credentials directory '" + dir + "'");
  }
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) return OpenError("credentials directory", dir, errno);
  // The umask may have taken bits from a directory made just now.
  if (created && ::fchmod(fd.get(), 0700) != 0) {
    return Status::FromErrno(errno, "chmod '" + dir + "'");
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Status::FromErrno(errno, "fstat '" + dir + "'");
  if (st.st_uid != ::geteuid()) {
    return Status::PermissionDenied("credentials directory '", dir, "' is owned by uid ",
                                    st.st_uid, ", not by this user (uid ", ::geteuid(),
                                    ")");
  }
  if ((st.st_mode & 077) != 0) {
    return Status::PermissionDenied("credentials directory '", dir,
                                    "' is accessible by other users (mode ",
                                    Octal(st.st_mode), "); chmod 700 it");
  }
  return fd;
}

// AlreadyExists naming the first *.crt or *.key file in the directory.
Status RefuseExistingCredentials(int dir_fd, const std::string& dir) {
  DIR* d = ::fdopendir(::dup(dir_fd));
  if (d == nullptr) return Status::FromErrno(errno, "listing '" + dir + "'");
  std::string found;
  while (const struct dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name.ends_with(".crt") || name.ends_with(".key")) {
      found = std::string(name);
      break;
    }
  }
  ::closedir(d);
  if (found.empty()) return Status::OK();
  return Status::AlreadyExists(
      "'", dir, "' already holds credentials (", found,
      "); overwrite them explicitly (quiver cluster init --force)");
}

Status WriteAll(int fd, const std::string& content, const std::string& path) {
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno(errno, "writing '" + path + "'");
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return Status::FromErrno(errno, "fsync '" + path + "'");
  return Status::OK();
}

// Moves `tmp` to `name`; without `overwrite`, fails rather than replace a file
// that appeared since the directory was checked.
Status RenameInto(int dir_fd, const std::string& tmp, const std::string& name,
                  bool overwrite, const std::string& path) {
  int rc = overwrite
               ? ::renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str())
               : ::renameat2(dir_fd, tmp.c_str(), dir_fd, name.c_str(), RENAME_NOREPLACE);
  if (rc != 0 && !overwrite && errno == EINVAL) {
    // A file system without RENAME_NOREPLACE: link() never replaces either.
    rc = ::linkat(dir_fd, tmp.c_str(), dir_fd, name.c_str(), 0);
    if (rc == 0) ::unlinkat(dir_fd, tmp.c_str(), 0);
  }
  if (rc == 0) return Status::OK();
  if (errno == EEXIST) return Status::AlreadyExists("'", path, "' appeared meanwhile");
  return Status::FromErrno(errno, "renaming into '" + path + "'");
}

// Writes one file under a temporary name, then renames it into place.
Status WriteFileAt(int dir_fd, const std::string& dir, const PendingFile& file,
                   bool overwrite) {
  unsigned char rnd[6];
  if (RAND_bytes(rnd, sizeof(rnd)) != 1) return TlsFailure("random file name");
  char suffix[16];
  std::snprintf(suffix, sizeof(suffix), "%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1],
                rnd[2], rnd[3], rnd[4], rnd[5]);
  const std::string tmp = "." + file.name + ".tmp-" + suffix;
  const std::string path = Join(dir, file.name);
  UniqueFd fd(::openat(dir_fd, tmp.c_str(),
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, file.mode));
  if (fd.get() < 0) return Status::FromErrno(errno, "creating '" + Join(dir, tmp) + "'");
  // Exact modes whatever the umask.
  Status st = ::fchmod(fd.get(), file.mode) == 0
                  ? WriteAll(fd.get(), file.content, path)
                  : Status::FromErrno(errno, "chmod '" + Join(dir, tmp) + "'");
  if (st.ok()) st = RenameInto(dir_fd, tmp, file.name, overwrite, path);
  if (!st.ok()) ::unlinkat(dir_fd, tmp.c_str(), 0);
  return st;
}

}  // namespace

Status InitCredentials(const std::string& dir, const std::string& cluster,
                       const std::vector<uint32_t>& nodes,
                       const CredentialOptions& options) {
  QUIVER_RETURN_NOT_OK(CheckInitArguments(cluster, nodes, options));
  QUIVER_ASSIGN_OR_RAISE(UniqueFd dir_fd, OpenCredentialDir(dir));
  if (!options.overwrite) {
    QUIVER_RETURN_NOT_OK(RefuseExistingCredentials(dir_fd.get(), dir));
  }
  std::vector<PendingFile> files;
  Status st = MakeAllFiles(cluster, nodes, options.validity_days, &files);
  for (size_t i = 0; st.ok() && i < files.size(); ++i) {
    st = WriteFileAt(dir_fd.get(), dir, files[i], options.overwrite);
  }
  for (PendingFile& f : files) OPENSSL_cleanse(f.content.data(), f.content.size());
  // The renames are durable only once the directory itself is synced.
  if (st.ok() && ::fsync(dir_fd.get()) != 0) {
    st = Status::FromErrno(errno, "fsync '" + dir + "'");
  }
  return st;
}

}  // namespace quiver::control
