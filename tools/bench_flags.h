// Flag values the `bench attention` and `bench decode` sweeps share: comma-separated lists of
// KV dtypes ("f16,int8"), token counts ("1k,32k,512") and byte sizes, parsed once at the edge,
// and the chart file they write. Errors name the flag.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvengine/status.h"
#include "quant/kv_dtype.h"

namespace kvengine::cli {

Result<std::vector<KvDtype>> ParseKvDtypeList(const std::vector<std::string>& names,
                                              const std::string& flag);
// Token counts >= `min` ("4k" = 4096).
Result<std::vector<int64_t>> ParseTokenCountList(const std::vector<std::string>& items,
                                                 const std::string& flag, int64_t min);
// A byte size >= 1 MiB ("256MiB").
Result<uint64_t> ParseBufferSize(const std::string& text, const std::string& flag);
// ParseBufferSize, or `auto_bytes` for "auto" (a size derived from this machine's caches).
Result<uint64_t> ParseBufferSizeOrAuto(const std::string& text, const std::string& flag,
                                       uint64_t auto_bytes);
inline constexpr const char* kReadBwSizeHelp =
    "Buffer of the read-bandwidth measurement; auto: 4x the last-level cache, at least 256MiB";
inline constexpr const char* kAttentionKernelHelp =
    "Force the attention kernel by name (e.g. AVX3 for f32 steps on every KV dtype, "
    "AVX3_VNNI_BF16, AVX2_I16, ref); default: the best this CPU runs";

// Whether `path` can be written, checked before a long sweep: a regular file or none yet
// (CheckOutputFile), opened for appending (an existing
// file keeps its bytes; one created for the check is removed again).
Status CheckWritable(const std::string& path, const std::string& flag);
// Replaces `path`'s contents with `text`.
Status WriteTextFile(const std::string& path, const std::string& text);

}  // namespace kvengine::cli
