// Credentials of a cluster: one CA, and for every node a daemon and a client
// certificate with its private key, all in one directory (docs/security.md).
//
// InitCredentials makes them (`quiver cluster init`); ReadCredentialFile is
// the only way the control plane reads them, so that a symbolic link, a FIFO,
// a huge file or a key other users can read is refused with a clear error
// before any byte is parsed. A certificate carries its holder's identity as
// the URI subjectAltName "quiver:<cluster>:<role>:<node>"; that URI, checked
// after a verified handshake (tls_context.h), is the only source of a peer's
// identity.
//
// Functions here are thread-safe: they share no state. This header includes
// no OpenSSL header on purpose: the daemon and client code that only names
// identities need not see OpenSSL.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "quiver/util/result.h"
#include "quiver/util/status.h"

namespace quiver::control {

// What a certificate's holder is. A daemon serves RPCs and is also a client
// of its peers; a client (a process using Quiver) only connects.
enum class PeerRole : uint8_t { kDaemon, kClient };
const char* PeerRoleName(PeerRole role);  // "daemon" / "client"

// The largest node id a certificate may name (65535 is left out so that it
// can mean "no node" on the wire).
constexpr uint32_t kMaxCertifiedNode = 65534;

// Who the peer of a connection is, as its verified certificate says.
struct PeerIdentity {
  std::string cluster;  // cluster name from the certificate
  PeerRole role = PeerRole::kClient;
  uint32_t node = 0;

  std::string ToString() const;  // e.g. "daemon of node 3"
  bool operator==(const PeerIdentity&) const = default;
};

// The subjectAltName URI of an identity: "quiver:<cluster>:<role>:<node>".
std::string IdentityUri(const PeerIdentity& identity);
// Parses such a URI. Strict, so that one identity has one spelling: exactly
// four ':'-separated fields, a known role, and a node in canonical decimal
// (no sign, no leading zero) no larger than kMaxCertifiedNode. Unauthenticated
// naming what is wrong otherwise. The cluster is not compared here.
Result<PeerIdentity> ParseIdentityUri(std::string_view uri);

// Names a cluster may have (the config validator's rule): 1 to 63 letters,
// digits, '-', '_' or '.'. They never contain ':', which keeps the URI
// unambiguous, and fit in a certificate's O= field (at most 64).
Status CheckClusterName(const std::string& cluster);

// File names inside a credentials directory.
std::string CaCertPath(const std::string& dir);  // dir/ca.crt
std::string CaKeyPath(const std::string& dir);   // dir/ca.key
// dir/daemon-3.crt, dir/client-3.crt
std::string CertPath(const std::string& dir, PeerRole role, uint32_t node);
// dir/daemon-3.key, dir/client-3.key
std::string KeyPath(const std::string& dir, PeerRole role, uint32_t node);

struct CredentialOptions {
  // Lifetime of every certificate, from an hour before now (to tolerate
  // clocks of other nodes that run a little behind).
  int validity_days = 3650;
  // Replace credentials already in the directory; otherwise AlreadyExists.
  bool overwrite = false;
};

// Creates `dir` (mode 0700; an existing dir must be a real directory, not a
// symlink, owned by this user, with no group/other permissions) and writes a
// fresh CA (ca.crt, ca.key) and, for every node id, a daemon and a client
// certificate and key signed by that CA. Keys are EC P-256, freshly random on
// every call. Key files have mode 0600, certificates 0644; each is written to
// a temporary name with O_CREAT|O_EXCL|O_NOFOLLOW, synced and renamed, so a
// crash never leaves a half-written file under a final name (it may leave a
// mix of old and new complete files when `overwrite`; run again then).
//
// Without `overwrite`, a directory that already holds any *.crt or *.key
// file is refused (AlreadyExists) and nothing is written. Blocks on file
// I/O; writes nothing outside `dir`.
Status InitCredentials(const std::string& dir, const std::string& cluster,
                       const std::vector<uint32_t>& nodes,
                       const CredentialOptions& options = {});

// Reads a credential file safely. It must be a regular file (opened with
// O_NOFOLLOW|O_NONBLOCK, so a FIFO or a device never blocks, and checked
// with fstat on the open descriptor, so it cannot be swapped in between), at
// most `max_bytes` long, owned by this process's effective uid or by root,
// and not writable by group or other users (anyone who can rewrite a
// certificate can make the cluster trust another CA). When `secret`, it
// must also have no group/other permission bits at all, as ssh requires of
// its keys. Every
// refusal names the file and the reason ("is a symbolic link", "is not a
// regular file", "is readable by other users (mode 0644); chmod 600 it",
// "is larger than 65536 bytes").
Result<std::string> ReadCredentialFile(const std::string& path, bool secret,
                                       size_t max_bytes = 64 * 1024);

// The directory credentials are read from, checked each time they are
// loaded: a directory (symbolic links to one are followed), owned by this
// process's effective uid or by root, writable by no one else
// (PermissionDenied naming it and its mode or owner).
Status CheckCredentialDir(const std::string& dir);

}  // namespace quiver::control
