// Reading the weights lock and verifying the model directories against it (size + SHA-256).
#include "model/weight_lock.hpp"
#include "model/json_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <tuple>

#include "common/sha256.hpp"

namespace cua_s1 {
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

constexpr size_t hash_chunk_bytes = 8u << 20;         // 8 MiB reads
constexpr uint64_t progress_interval = 256ull << 20;  // report about every 256 MiB

bool is_lower_hex_digest(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// A relative name without empty, "." or ".." components.
bool is_plain_relative(std::string_view name) {
  if (name.empty() || name.front() == '/' || name.back() == '/') return false;
  size_t start = 0;
  while (start <= name.size()) {
    size_t slash = name.find('/', start);
    if (slash == std::string_view::npos) slash = name.size();
    const std::string_view part = name.substr(start, slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = slash + 1;
  }
  return true;
}

std::optional<std::string> string_field(const json::object& object, std::string_view key) {
  const json::value* value = object.if_contains(key);
  if (!value || !value->is_string()) return std::nullopt;
  return std::string(value->get_string());
}

fs::path normalized(const fs::path& dir) {
  fs::path out = dir.lexically_normal();
  if (!out.empty() && out.filename().empty()) out = out.parent_path();
  return out;
}

}  // namespace

std::string adapter_dir_name(const fs::path& adapter_dir) {
  fs::path dir = normalized(adapter_dir);
  if (dir.filename() == "." || dir.filename() == ".." || dir.empty())
    dir = normalized(fs::absolute(adapter_dir));
  return dir.filename().string();
}

outcome<weight_lock> weight_lock::read(const fs::path& lock_file) {
  const std::string file = lock_file.string();
  auto fail = [&](const std::string& problem) -> failure {
    return failure{500, "lock file " + file + ": " + problem};
  };
  auto root = read_json_object_file(lock_file, "lock file");
  if (!root) return root.error();
  const json::object& top = *root;
  const auto schema = string_field(top, "schema");
  if (!schema) return fail("schema is missing");
  if (*schema != weight_lock_schema)
    return fail("schema is \"" + *schema + "\", not \"" + weight_lock_schema + "\"");
  const json::value* artifacts = top.if_contains("artifacts");
  if (!artifacts || !artifacts->is_array()) return fail("artifacts must be an array");

  weight_lock lock;
  lock.path_ = lock_file;
  std::optional<size_t> base, adapter;
  for (const json::value& item : artifacts->get_array()) {
    const std::string where = "artifacts[" + std::to_string(lock.artifacts_.size()) + "]";
    if (!item.is_object()) return fail(where + " must be an object");
    const json::object& object = item.get_object();
    lock_artifact artifact;
    artifact.name = string_field(object, "name").value_or("");
    for (auto [key, target] :
         {std::pair{"repo_id", &artifact.repo_id}, std::pair{"revision", &artifact.revision},
          std::pair{"role", &artifact.role}}) {
      auto value = string_field(object, key);
      if (!value || value->empty()) return fail(where + "." + key + " must be a non-empty string");
      *target = *value;
    }
    if (artifact.role != "base" && artifact.role != "adapter")
      return fail(where + ".role is \"" + artifact.role + "\", not \"base\" or \"adapter\"");
    std::optional<size_t>& slot = artifact.role == "base" ? base : adapter;
    if (slot) return fail("more than one artifact has the role \"" + artifact.role + "\"");
    slot = lock.artifacts_.size();

    const json::value* files = object.if_contains("files");
    if (!files || !files->is_object()) return fail(where + ".files must be an object");
    for (const auto& [key, entry] : files->get_object()) {
      const std::string name(key);
      const std::string file_where = where + ".files[\"" + name + "\"]";
      if (!is_plain_relative(name)) return fail(file_where + " is not a plain relative path");
      if (!entry.is_object()) return fail(file_where + " must be an object");
      const json::object& fields = entry.get_object();
      const json::value* size = fields.if_contains("size");
      locked_file locked;
      if (size && size->is_uint64()) {
        locked.size = size->get_uint64();
      } else if (size && size->is_int64() && size->get_int64() >= 0) {
        locked.size = uint64_t(size->get_int64());
      } else {
        return fail(file_where + ".size must be a non-negative integer");
      }
      const auto digest = string_field(fields, "sha256");
      if (!digest || !is_lower_hex_digest(*digest))
        return fail(file_where + ".sha256 must be 64 lowercase hex digits");
      locked.sha256 = *digest;
      if (fields.size() != 2) return fail(file_where + " must have exactly size and sha256");
      artifact.files.emplace(name, std::move(locked));
    }
    lock.artifacts_.push_back(std::move(artifact));
  }
  if (!base) return fail("no artifact has the role \"base\"");
  if (!adapter) return fail("no artifact has the role \"adapter\"");
  lock.base_ = *base;
  lock.adapter_ = *adapter;
  return lock;
}

std::string weight_lock::adapter_identity(const fs::path& adapter_dir) const {
  return adapter().repo_id + "@" + adapter().revision + ":" + adapter_dir_name(adapter_dir);
}

outcome<std::string> sha256_file_hex(const fs::path& path,
                                     const std::function<void(uint64_t)>& on_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return failure{500, "cannot open " + path.string() + ": " + std::strerror(errno)};
  std::unique_ptr<int, void (*)(int*)> closer(new int(fd), [](int* p) {
    ::close(*p);
    delete p;
  });
  std::unique_ptr<char[]> buffer(new char[hash_chunk_bytes]);
  sha256_hasher hasher;
  for (;;) {
    const ssize_t got = ::read(fd, buffer.get(), hash_chunk_bytes);
    if (got < 0) {
      if (errno == EINTR) continue;
      return failure{500, "cannot read " + path.string() + ": " + std::strerror(errno)};
    }
    if (got == 0) break;
    hasher.update(buffer.get(), size_t(got));
    if (on_bytes) on_bytes(uint64_t(got));
  }
  return hasher.finish_hex();
}

outcome<verified_files> verify_weight_files(const weight_lock& lock, const fs::path& base_dir,
                                            const fs::path& adapter_dir,
                                            const verify_options& options) {
  const std::string lock_name = lock.path().string();
  const std::string prefix = adapter_dir_name(adapter_dir);
  struct pending {
    fs::path path;
    std::string lock_key;
    const locked_file* locked;
  };
  std::vector<pending> to_hash;
  verified_files verified;

  // Pass 1: every file is listed and has the locked size (cheap, before hours of hashing).
  struct tree {
    fs::path dir;
    const lock_artifact* artifact;
    std::string key_prefix;
    std::set<std::string>* names;
  };
  for (const tree& t : {tree{base_dir, &lock.base(), "", &verified.base},
                        tree{adapter_dir, &lock.adapter(), prefix + "/", &verified.adapter}}) {
    std::error_code ec;
    if (!fs::is_directory(t.dir, ec))
      return failure{500, "directory " + t.dir.string() + " does not exist"};
    fs::recursive_directory_iterator it(t.dir, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      const fs::directory_entry& entry = *it;
      if (it.depth() == 0 && entry.path().filename() == ".cache" && entry.is_directory(ec)) {
        it.disable_recursion_pending();
        continue;
      }
      if (!entry.is_regular_file(ec)) continue;
      const std::string relative = entry.path().lexically_relative(t.dir).generic_string();
      const std::string key = t.key_prefix + relative;
      auto listed = t.artifact->files.find(key);
      if (listed == t.artifact->files.end())
        return failure{500, entry.path().string() + " is not in the lock file " + lock_name};
      const uint64_t size = entry.file_size(ec);
      if (ec) return failure{500, "cannot stat " + entry.path().string() + ": " + ec.message()};
      if (size != listed->second.size)
        return failure{500, entry.path().string() + " is " + std::to_string(size) +
                                " bytes; the lock file " + lock_name + " says " +
                                std::to_string(listed->second.size)};
      to_hash.push_back({entry.path(), key, &listed->second});
      t.names->insert(relative);
      verified.bytes += size;
    }
    if (ec) return failure{500, "cannot list " + t.dir.string() + ": " + ec.message()};
  }

  // The files the loader reads must be there.
  for (const auto& [dir, names, required, artifact, key_prefix] :
       {std::tuple{base_dir, &verified.base, &options.required_base, &lock.base(), std::string()},
        std::tuple{adapter_dir, &verified.adapter, &options.required_adapter, &lock.adapter(),
                   prefix + "/"}}) {
    for (const std::string& name : *required) {
      if (names->count(name)) continue;
      const bool listed = artifact->files.count(key_prefix + name) != 0;
      return failure{500, (dir / name).string() + " is missing" +
                              (listed ? " (it is listed in the lock file " + lock_name + ")"
                                      : " and not in the lock file " + lock_name)};
    }
  }

  // Pass 2: stream every file through SHA-256.
  uint64_t done = 0, reported = 0;
  for (const pending& file : to_hash) {
    uint64_t file_bytes = 0;
    auto digest = sha256_file_hex(file.path, [&](uint64_t n) {
      done += n;
      file_bytes += n;
      if (options.progress && done - reported >= progress_interval && done < verified.bytes) {
        reported = done;
        options.progress(done, verified.bytes);
      }
    });
    if (!digest) return digest.error();
    if (file_bytes != file.locked->size)
      return failure{500, file.path.string() + " changed size while it was verified"};
    if (*digest != file.locked->sha256)
      return failure{500, file.path.string() + " has SHA-256 " + *digest + "; the lock file " +
                              lock_name + " says " + file.locked->sha256};
  }
  if (options.progress) options.progress(done, verified.bytes);
  return verified;
}

}  // namespace cua_s1
