// The server's TLS configuration (--tls-cert, --tls-key): an OpenSSL context that serves TLS 1.2
// and 1.3 only, with forward-secret AEAD ciphers chosen by the server, no renegotiation and no
// compression, and ALPN http/1.1.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>

#include "common/outcome.hpp"

namespace cua_s1 {

// Loads the PEM certificate chain (the server's certificate first, then its intermediates) and
// the PEM private key, and checks that they belong together. A failure (status 2) names the file
// and what is wrong with it: unreadable, not PEM, an encrypted key, a key of another certificate.
outcome<std::shared_ptr<boost::asio::ssl::context>> make_server_tls_context(
    const std::string& certificate_chain_file, const std::string& private_key_file);

}  // namespace cua_s1
