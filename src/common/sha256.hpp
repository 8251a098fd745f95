// SHA-256 digests (OpenSSL libcrypto) as lowercase hex: one-shot and incremental.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX

namespace cua_s1 {

std::string sha256_hex(const void* data, size_t size);

// Streams data through SHA-256 (e.g. a multi-GiB weight file read in chunks).
class sha256_hasher {
 public:
  sha256_hasher();
  ~sha256_hasher();
  sha256_hasher(sha256_hasher&&) noexcept;
  sha256_hasher& operator=(sha256_hasher&&) noexcept;

  void update(const void* data, size_t size);
  // The digest of everything passed to update(); the hasher then starts over.
  std::string finish_hex();

 private:
  struct context_deleter {
    void operator()(evp_md_ctx_st* context) const;
  };
  std::unique_ptr<evp_md_ctx_st, context_deleter> context_;
};

}  // namespace cua_s1
