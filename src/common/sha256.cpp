// SHA-256 through OpenSSL's EVP interface.
#include "common/sha256.hpp"

#include <openssl/evp.h>

namespace cua_s1 {
namespace {

std::string to_hex(const unsigned char* digest, unsigned int length) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    out.push_back(hex[digest[i] >> 4]);
    out.push_back(hex[digest[i] & 15]);
  }
  return out;
}

}  // namespace

std::string sha256_hex(const void* data, size_t size) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data, size, digest, &length, EVP_sha256(), nullptr);
  return to_hex(digest, length);
}

void sha256_hasher::context_deleter::operator()(evp_md_ctx_st* context) const {
  EVP_MD_CTX_free(context);
}

sha256_hasher::sha256_hasher() : context_(EVP_MD_CTX_new()) {
  EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr);
}

sha256_hasher::~sha256_hasher() = default;
sha256_hasher::sha256_hasher(sha256_hasher&&) noexcept = default;
sha256_hasher& sha256_hasher::operator=(sha256_hasher&&) noexcept = default;

void sha256_hasher::update(const void* data, size_t size) {
  if (size > 0) EVP_DigestUpdate(context_.get(), data, size);
}

std::string sha256_hasher::finish_hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(context_.get(), digest, &length);
  EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr);
  return to_hex(digest, length);
}

}  // namespace cua_s1
