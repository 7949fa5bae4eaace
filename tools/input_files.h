// Files the CLI reads or writes, checked when they are used (not in the flag parser, so that an
// unusable file exits 1 while a malformed command line exits 2): a path must name a regular
// file — never a FIFO, a device or a directory, which would block or never end — and the small
// config files are read with a size cap.
#pragma once

#include <cstdint>
#include <string>

#include "kvengine/status.h"

namespace kvengine::cli {

// The cap on small config files (the KV dtype map): 1 MiB.
inline constexpr uint64_t kMaxConfigFileBytes = uint64_t{1} << 20;

// OK when `path` names a regular file (after following links). `what` names the file in the
// message ("--kv-dtype-map", "model").
Status CheckRegularFile(const std::string& path, const std::string& what);

// The whole of a regular file of at most `max_bytes` bytes. The file is opened without blocking
// and checked on the open descriptor, so a FIFO or a device is refused, never waited on.
Result<std::string> ReadSmallFile(const std::string& path, uint64_t max_bytes,
                                  const std::string& what);

// Whether -m names a file rather than a preset: it ends in .gguf, has a '/', or exists (and is
// not a directory). Preset names have none of these, so `-m /dev/zero` is refused as a file.
bool IsModelPath(const std::string& model);

// OK when `path` may be written as an output file: it does not exist yet or is a regular file
// (a FIFO would block the writer, a device would swallow the report).
Status CheckOutputFile(const std::string& path, const std::string& what);

}  // namespace kvengine::cli
