// Builds the server's OpenSSL context (see tls_context.hpp).
#include "http/tls_context.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace cua_s1 {
namespace {

namespace ssl = boost::asio::ssl;

// TLS 1.2 suites: ECDHE key exchange (forward secrecy) with AES-GCM or ChaCha20-Poly1305 only;
// TLS 1.3 keeps OpenSSL's defaults, which are all of that kind.
constexpr const char* tls12_ciphers = "ECDHE+AESGCM:ECDHE+CHACHA20";

// The reason of OpenSSL's latest error, and clears its error queue.
std::string openssl_reason() {
  const unsigned long code = ERR_peek_last_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  const char* reason = ERR_reason_error_string(code);
  return reason ? reason : "OpenSSL error " + std::to_string(code);
}

// An unreadable file is named with the system's reason, before OpenSSL gives a vaguer one.
std::string unreadable_reason(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) return std::strerror(errno);
  std::fclose(file);
  return {};
}

// Selects http/1.1 when the client offers it; a client offering only other protocols (h2) gets
// no ALPN answer and may still speak HTTP/1.1.
int select_http11(SSL*, const unsigned char** out, unsigned char* out_length,
                  const unsigned char* offered, unsigned int offered_length, void*) {
  constexpr std::string_view http11 = "http/1.1";
  for (unsigned int i = 0; i < offered_length;) {
    const unsigned int length = offered[i];
    if (i + 1 + length > offered_length) break;
    if (std::string_view(reinterpret_cast<const char*>(offered + i + 1), length) == http11) {
      *out = offered + i + 1;
      *out_length = static_cast<unsigned char>(length);
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + length;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

// An encrypted key would make OpenSSL prompt on the terminal: refuse it instead.
int no_passphrase(char*, int, int, void*) { return 0; }

failure tls_error(const std::string& what) { return {2, what}; }

}  // namespace

outcome<std::shared_ptr<ssl::context>> make_server_tls_context(
    const std::string& certificate_chain_file, const std::string& private_key_file) {
  for (const auto& [path, what] :
       {std::pair{&certificate_chain_file, "certificate"}, std::pair{&private_key_file, "key"}})
    if (std::string reason = unreadable_reason(*path); !reason.empty())
      return tls_error(std::string("cannot read the TLS ") + what + " " + *path + ": " + reason);

  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* native = context->native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  SSL_CTX_set_options(
      native, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_set_cipher_list(native, tls12_ciphers) != 1)
    return tls_error("cannot set the TLS ciphers: " + openssl_reason());
  SSL_CTX_set_alpn_select_cb(native, select_http11, nullptr);
  SSL_CTX_set_default_passwd_cb(native, no_passphrase);

  if (SSL_CTX_use_certificate_chain_file(native, certificate_chain_file.c_str()) != 1)
    return tls_error("the TLS certificate " + certificate_chain_file +
                     " is not a usable PEM certificate chain: " + openssl_reason());
  const std::string mismatch = "the TLS key " + private_key_file +
                               " does not belong to the certificate " + certificate_chain_file;
  if (SSL_CTX_use_PrivateKey_file(native, private_key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    // OpenSSL checks the key against the certificate already loaded.
    if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
      ERR_clear_error();
      return tls_error(mismatch);
    }
    return tls_error("the TLS key " + private_key_file +
                     " is not a usable unencrypted PEM private key: " + openssl_reason());
  }
  if (SSL_CTX_check_private_key(native) != 1) return tls_error(mismatch + ": " + openssl_reason());
  return context;
}

}  // namespace cua_s1
