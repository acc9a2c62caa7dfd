#include "control/tls/tls_context.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include <optional>
#include <string_view>
#include <utility>

namespace quiver::control {

std::string TlsErrorText(const std::string& what) {
  std::string text = what;
  bool first = true;
  const char* data = nullptr;
  int flags = 0;
  while (const unsigned long e =
             ERR_get_error_all(nullptr, nullptr, nullptr, &data, &flags)) {
    text += first ? ": " : "; ";
    first = false;
    if (const char* reason = ERR_reason_error_string(e)) {
      text += reason;
    } else {
      char buf[256];
      ERR_error_string_n(e, buf, sizeof(buf));
      text += buf;
    }
    if ((flags & ERR_TXT_STRING) != 0 && data != nullptr && *data != 0) {
      text += std::string(" (") + data + ")";
    }
  }
  if (first) text += ": no detail from OpenSSL";
  return text;
}

namespace {

// Never prompts: an encrypted key is an error, not a question on the terminal.
int NoPassword(char*, int, int, void*) { return -1; }

Result<OsslPtr<X509>> LoadCertificate(const std::string& path) {
  QUIVER_ASSIGN_OR_RAISE(std::string pem, ReadCredentialFile(path, /*secret=*/false));
  OsslPtr<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  OsslPtr<X509> cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, NoPassword, nullptr)
                         : nullptr);
  if (!cert) {
    return Status::Invalid(TlsErrorText("'" + path + "' holds no PEM certificate"));
  }
  return cert;
}

Result<OsslPtr<EVP_PKEY>> LoadKey(const std::string& path) {
  QUIVER_ASSIGN_OR_RAISE(std::string pem, ReadCredentialFile(path, /*secret=*/true));
  OsslPtr<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  OsslPtr<EVP_PKEY> key(
      bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassword, nullptr) : nullptr);
  OPENSSL_cleanse(pem.data(), pem.size());
  if (!key) {
    return Status::Invalid(TlsErrorText("'" + path + "' holds no valid PEM private key"));
  }
  return key;
}

// The O= of a certificate's subject, or "" if it has none.
std::string Organization(X509* cert) {
  char buf[128];
  const int n = X509_NAME_get_text_by_NID(X509_get_subject_name(cert),
                                          NID_organizationName, buf, sizeof(buf));
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// The trust anchor must be this cluster's self-signed CA.
Status CheckCa(X509* ca, const std::string& cluster, const std::string& path) {
  if (X509_check_ca(ca) == 0 || X509_self_signed(ca, /*verify_signature=*/1) != 1) {
    ERR_clear_error();
    return Status::Invalid("'", path, "' is not a self-signed CA certificate");
  }
  const std::string org = Organization(ca);
  if (org != cluster) {
    return Status::Invalid("'", path, "' is the CA of cluster '", org, "', not of '",
                           cluster, "'");
  }
  return Status::OK();
}

// Verifies `cert` against `ca` now, as the peer will: signature, validity
// period, strict X.509 rules and the purpose of this side.
Status CheckSignedBy(X509* cert, X509* ca, bool server, const std::string& cert_path,
                     const std::string& ca_path) {
  OsslPtr<X509_STORE> store(X509_STORE_new());
  OsslPtr<X509_STORE_CTX> ctx(X509_STORE_CTX_new());
  if (!store || !ctx || X509_STORE_add_cert(store.get(), ca) != 1 ||
      X509_STORE_CTX_init(ctx.get(), store.get(), cert, nullptr) != 1 ||
      X509_STORE_CTX_set_purpose(
          ctx.get(), server ? X509_PURPOSE_SSL_SERVER : X509_PURPOSE_SSL_CLIENT) != 1) {
    return Status::UnknownError(TlsErrorText("setting up verification"));
  }
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx.get());
  X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_X509_STRICT);
  X509_VERIFY_PARAM_set_depth(param, 1);
  if (X509_verify_cert(ctx.get()) == 1) return Status::OK();
  ERR_clear_error();
  return Status::Invalid(
      "'", cert_path, "' does not verify against '", ca_path, "' for a TLS ",
      server ? "server" : "client", ": ",
      X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get())));
}

// TLS 1.3 only, mutual verification against `ca` alone, no resumption.
Result<OsslPtr<SSL_CTX>> NewSslContext(bool server, X509* ca, X509* cert, EVP_PKEY* key) {
  OsslPtr<SSL_CTX> ctx(SSL_CTX_new(server ? TLS_server_method() : TLS_client_method()));
  if (!ctx) return Status::UnknownError(TlsErrorText("SSL_CTX_new"));
  SSL_CTX* c = ctx.get();
  if (SSL_CTX_set_min_proto_version(c, TLS1_3_VERSION) != 1 ||
      SSL_CTX_set_max_proto_version(c, TLS1_3_VERSION) != 1) {
    return Status::UnknownError(TlsErrorText("restricting the context to TLS 1.3"));
  }
  // Every connection proves its identity with a full handshake: no tickets,
  // no session cache, no early data.
  SSL_CTX_set_options(c,
                      SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(c, 0);
  SSL_CTX_set_max_early_data(c, 0);
  SSL_CTX_set_verify(c, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  SSL_CTX_set_verify_depth(c, 1);
  // A server checks its peers for clientAuth; a client checks for serverAuth.
  SSL_CTX_set_purpose(c, server ? X509_PURPOSE_SSL_CLIENT : X509_PURPOSE_SSL_SERVER);
  X509_VERIFY_PARAM_set_flags(SSL_CTX_get0_param(c), X509_V_FLAG_X509_STRICT);
  // Only the cluster's CA is trusted; the system's CAs are never loaded.
  if (X509_STORE_add_cert(SSL_CTX_get_cert_store(c), ca) != 1 ||
      SSL_CTX_use_certificate(c, cert) != 1 || SSL_CTX_use_PrivateKey(c, key) != 1 ||
      SSL_CTX_check_private_key(c) != 1) {
    return Status::UnknownError(TlsErrorText("setting up the TLS context"));
  }
  return ctx;
}

}  // namespace

TlsContext::TlsContext(OsslPtr<SSL_CTX> ctx, PeerIdentity self)
    : ctx_(std::move(ctx)), self_(std::move(self)) {}
TlsContext::TlsContext(TlsContext&&) noexcept = default;
TlsContext& TlsContext::operator=(TlsContext&&) noexcept = default;
TlsContext::~TlsContext() = default;

Result<TlsContext> TlsContext::Make(const std::string& dir, const std::string& cluster,
                                    PeerRole role, uint32_t node, bool server) {
  QUIVER_RETURN_NOT_OK(CheckClusterName(cluster));
  if (node > kMaxCertifiedNode) {
    return Status::Invalid("node id ", node, " is larger than ", kMaxCertifiedNode);
  }
  if (server && role == PeerRole::kClient) {
    return Status::Invalid("a client identity cannot be a TLS server");
  }
  const PeerIdentity self{cluster, role, node};
  QUIVER_RETURN_NOT_OK(CheckCredentialDir(dir));
  const std::string ca_path = CaCertPath(dir);
  const std::string cert_path = CertPath(dir, role, node);
  const std::string key_path = KeyPath(dir, role, node);
  QUIVER_ASSIGN_OR_RAISE(OsslPtr<X509> ca, LoadCertificate(ca_path));
  QUIVER_ASSIGN_OR_RAISE(OsslPtr<X509> cert, LoadCertificate(cert_path));
  QUIVER_ASSIGN_OR_RAISE(OsslPtr<EVP_PKEY> key, LoadKey(key_path));
  QUIVER_RETURN_NOT_OK(CheckCa(ca.get(), cluster, ca_path));
  QUIVER_RETURN_NOT_OK(CheckSignedBy(cert.get(), ca.get(), server, cert_path, ca_path));
  QUIVER_ASSIGN_OR_RAISE(
      PeerIdentity named,
      IdentityOfCertificate(cert.get(), cluster, "'" + cert_path + "'"));
  if (named != self) {
    return Status::Invalid("'", cert_path, "' names the ", named.ToString(), ", not the ",
                           self.ToString());
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    return Status::Invalid(
        TlsErrorText("'" + key_path + "' is not the key of '" + cert_path + "'"));
  }
  QUIVER_ASSIGN_OR_RAISE(OsslPtr<SSL_CTX> ctx,
                         NewSslContext(server, ca.get(), cert.get(), key.get()));
  return TlsContext(std::move(ctx), self);
}

Result<PeerIdentity> IdentityOfCertificate(X509* cert, const std::string& cluster,
                                           const std::string& what) {
  int critical = 0;
  OsslPtr<GENERAL_NAMES> names(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert, NID_subject_alt_name, &critical, nullptr)));
  if (!names) {
    ERR_clear_error();
    // -2: several subjectAltName extensions, which RFC 5280 forbids.
    return Status::Unauthenticated(what, critical == -2
                                             ? " has more than one subjectAltName"
                                             : " has no subjectAltName");
  }
  std::optional<std::string_view> uri;
  for (int i = 0; i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    if (name->type != GEN_URI) continue;
    const ASN1_IA5STRING* s = name->d.uniformResourceIdentifier;
    const std::string_view text(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                                static_cast<size_t>(ASN1_STRING_length(s)));
    if (!text.starts_with("quiver:")) continue;
    if (uri) return Status::Unauthenticated(what, " has more than one quiver: URI");
    uri = text;
  }
  if (!uri) return Status::Unauthenticated(what, " has no quiver: URI subjectAltName");
  Result<PeerIdentity> id = ParseIdentityUri(*uri);
  if (!id.ok()) return id.status().WithContext(what);
  if (id->cluster != cluster) {
    return Status::Unauthenticated(what, " belongs to cluster '", id->cluster,
                                   "', not to '", cluster, "'");
  }
  return id;
}

Result<PeerIdentity> PeerIdentityOf(SSL* ssl, const std::string& cluster) {
  if (ssl == nullptr || SSL_is_init_finished(ssl) != 1) {
    return Status::Unauthenticated("the TLS handshake is not complete");
  }
  // Under SSL_VERIFY_NONE a bad certificate does not stop the handshake;
  // such a connection is refused here rather than trusted on its record.
  if ((SSL_get_verify_mode(ssl) & SSL_VERIFY_PEER) == 0) {
    return Status::Unauthenticated("peer verification is off on this connection");
  }
  X509* cert = SSL_get0_peer_certificate(ssl);
  if (cert == nullptr) return Status::Unauthenticated("the peer sent no certificate");
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) {
    return Status::Unauthenticated("the peer's certificate did not verify: ",
                                   X509_verify_cert_error_string(verify));
  }
  return IdentityOfCertificate(cert, cluster, "the peer's certificate");
}

}  // namespace quiver::control
