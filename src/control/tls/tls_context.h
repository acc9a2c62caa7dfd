// TLS contexts for mutual authentication inside a cluster, and the identity
// of a verified peer (docs/security.md).
//
// A TlsContext is an OpenSSL SSL_CTX that trusts exactly one CA (the
// cluster's ca.crt), presents exactly one identity, speaks only TLS 1.3,
// requires a certificate from the peer on both sides, and never resumes a
// session: every connection proves its identity with a full handshake. The
// RPC layer makes one SSL per connection from it (SSL_new, SSL_set_fd) and,
// once the handshake completes, asks PeerIdentityOf who is on the other side.
#pragma once

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string>

#include "control/tls/credentials.h"
#include "quiver/util/result.h"

namespace quiver::control {

// Frees any OpenSSL object this layer owns; OsslPtr<X509> and friends are
// the RAII owners used on every path.
struct OsslFree {
  void operator()(SSL_CTX* p) const { SSL_CTX_free(p); }
  void operator()(SSL* p) const { SSL_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(X509_NAME* p) const { X509_NAME_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
  void operator()(X509_STORE* p) const { X509_STORE_free(p); }
  void operator()(X509_STORE_CTX* p) const { X509_STORE_CTX_free(p); }
  void operator()(GENERAL_NAMES* p) const { GENERAL_NAMES_free(p); }
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(BIO* p) const { BIO_free_all(p); }
  void operator()(BIGNUM* p) const { BN_free(p); }
  void operator()(ASN1_INTEGER* p) const { ASN1_INTEGER_free(p); }
};
template <typename T>
using OsslPtr = std::unique_ptr<T, OsslFree>;

// An OpenSSL SSL_CTX for one identity of one cluster. Move-only RAII. Once
// made it is never changed, so SSL_new from many threads at once is safe;
// the SSL objects made from it are not shared between threads.
class TlsContext {
 public:
  // Loads dir/ca.crt and this identity's certificate and key (through
  // ReadCredentialFile), and checks before any connection that the
  // certificate is signed by the CA, is valid now and for this side (a
  // server needs serverAuth, so a client identity cannot serve), names this
  // cluster, role and node, and matches the key. TLS 1.3 only; peer
  // verification required on both sides; verify depth 1; no session
  // tickets, cache or resumption; no renegotiation. `server` selects the
  // side. Errors name the offending file. Blocks on file I/O only.
  static Result<TlsContext> Make(const std::string& dir, const std::string& cluster,
                                 PeerRole role, uint32_t node, bool server);

  TlsContext(TlsContext&&) noexcept;
  TlsContext& operator=(TlsContext&&) noexcept;
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  ~TlsContext();

  // The context; owned by this object (SSL objects made from it keep their
  // own reference, so they may outlive it). Null after a move.
  SSL_CTX* get() const { return ctx_.get(); }
  // The identity this context presents.
  const PeerIdentity& self() const { return self_; }

 private:
  TlsContext(OsslPtr<SSL_CTX> ctx, PeerIdentity self);

  OsslPtr<SSL_CTX> ctx_;
  PeerIdentity self_;
};

// After a completed handshake: the peer's identity from its verified
// certificate. Unauthenticated, with a clear message, if the handshake is not
// complete, verification did not succeed (SSL_get_verify_result), there is no
// certificate, or the certificate's quiver: URI subjectAltName is missing,
// repeated, malformed or names another cluster. Does not take ownership.
Result<PeerIdentity> PeerIdentityOf(SSL* ssl, const std::string& cluster);

// The identity a certificate names, checked against `cluster` (as above, but
// without any check of who signed it). `what` names the certificate in
// errors.
Result<PeerIdentity> IdentityOfCertificate(X509* cert, const std::string& cluster,
                                           const std::string& what);

// OpenSSL's error queue of this thread as text, draining it, for error
// messages: "what: reason; reason".
std::string TlsErrorText(const std::string& what);

}  // namespace quiver::control
