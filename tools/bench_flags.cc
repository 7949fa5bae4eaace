#include "bench_flags.h"

#include <filesystem>
#include <fstream>
#include <system_error>

#include "base/size_parse.h"
#include "input_files.h"

namespace kvengine::cli {

Result<std::vector<KvDtype>> ParseKvDtypeList(const std::vector<std::string>& names,
                                              const std::string& flag) {
  std::vector<KvDtype> out;
  for (const std::string& n : names) {
    Result<KvDtype> d = ParseKvDtype(n);
    if (!d.ok()) return InvalidArgument(flag + ": " + d.status().message());
    out.push_back(*d);
  }
  return out;
}

Result<std::vector<int64_t>> ParseTokenCountList(const std::vector<std::string>& items,
                                                 const std::string& flag, int64_t min) {
  std::vector<int64_t> out;
  for (const std::string& s : items) {
    Result<uint64_t> n = ParseTokenCount(s);
    if (!n.ok()) return InvalidArgument(flag + ": " + n.status().message());
    if (*n > (uint64_t{1} << 24) || int64_t(*n) < min) {
      return OutOfRange(flag + ": " + s + " must be " + std::to_string(min) + "..16777216");
    }
    out.push_back(int64_t(*n));
  }
  return out;
}

Result<uint64_t> ParseBufferSize(const std::string& text, const std::string& flag) {
  Result<uint64_t> n = ParseSize(text);
  if (!n.ok()) return InvalidArgument(flag + ": " + n.status().message());
  if (*n < (uint64_t{1} << 20) || *n > (uint64_t{1} << 40)) {
    return OutOfRange(flag + ": " + text + " must be 1MiB..1TiB");
  }
  return *n;
}

Result<uint64_t> ParseBufferSizeOrAuto(const std::string& text, const std::string& flag,
                                       uint64_t auto_bytes) {
  if (text == "auto") return auto_bytes;
  return ParseBufferSize(text, flag);
}

Status CheckWritable(const std::string& path, const std::string& flag) {
  KV_RETURN_IF_ERROR(CheckOutputFile(path, flag));  // A FIFO would block the probe below.
  std::error_code ec;
  const bool existed = std::filesystem::exists(path, ec);
  {
    std::ofstream probe(path, std::ios::app);
    if (!probe) return Unavailable(flag + ": cannot write " + path);
  }
  if (!existed) std::filesystem::remove(path, ec);
  return Status::Ok();
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return Unavailable("cannot write " + path);
  return Status::Ok();
}

}  // namespace kvengine::cli
