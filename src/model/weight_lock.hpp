// The weights lock (schema cua-s1/weights-lock/v1): pinned artifacts, each file by size and
// SHA-256, and the verification of a base directory and an adapter directory against it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/outcome.hpp"

namespace cua_s1 {

inline constexpr const char* weight_lock_schema = "cua-s1/weights-lock/v1";

struct locked_file {
  uint64_t size = 0;
  std::string sha256;  // 64 lowercase hex digits
};

// One pinned repository snapshot. Base file names are relative to the base directory; adapter
// file names are relative to the adapter repository root ("multimodal/adapter_config.json").
struct lock_artifact {
  std::string name;
  std::string repo_id;
  std::string revision;
  std::string role;  // "base" or "adapter"
  std::map<std::string, locked_file> files;
};

class weight_lock {
 public:
  // Reads and checks the lock file: schema, exactly one base and one adapter artifact, files
  // with a size and a SHA-256 each. Errors (status 500) name the file and the field.
  static outcome<weight_lock> read(const std::filesystem::path& lock_file);

  const std::filesystem::path& path() const { return path_; }
  const lock_artifact& base() const { return artifacts_.at(base_); }
  const lock_artifact& adapter() const { return artifacts_.at(adapter_); }
  const std::vector<lock_artifact>& artifacts() const { return artifacts_; }

  // "<adapter repo_id>@<revision>:<adapter dir name>", e.g. "org/repo@abc123:multimodal".
  std::string adapter_identity(const std::filesystem::path& adapter_dir) const;

 private:
  std::filesystem::path path_;
  std::vector<lock_artifact> artifacts_;
  size_t base_ = 0;
  size_t adapter_ = 0;
};

// The adapter directory's own name (the prefix of its files in the lock), trailing '/' ignored.
std::string adapter_dir_name(const std::filesystem::path& adapter_dir);

// What verify_weight_files checked: lock names of the verified files of each directory.
struct verified_files {
  std::set<std::string> base;     // relative to the base directory
  std::set<std::string> adapter;  // relative to the adapter directory (no prefix)
  uint64_t bytes = 0;
};

struct verify_options {
  std::vector<std::string> required_base;     // must be present (and therefore listed)
  std::vector<std::string> required_adapter;  // relative to the adapter directory
  // Bytes hashed so far and the total: about every 256 MiB and once at the end.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

// Every regular file under base_dir and adapter_dir (recursively; a top-level `.cache` directory
// is skipped) must be listed in the lock with its size and SHA-256 (streamed); the required files
// must be present. Errors (status 500) name the file and, for mismatches, both values.
outcome<verified_files> verify_weight_files(const weight_lock& lock,
                                            const std::filesystem::path& base_dir,
                                            const std::filesystem::path& adapter_dir,
                                            const verify_options& options);

// Streams `path` through SHA-256 in 8 MiB chunks; `on_bytes(n)` after every chunk.
outcome<std::string> sha256_file_hex(const std::filesystem::path& path,
                                     const std::function<void(uint64_t)>& on_bytes = {});

}  // namespace cua_s1
