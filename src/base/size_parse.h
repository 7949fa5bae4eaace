// Byte sizes as people write them: "512MiB", "24GiB", "1.5G", "4096". Binary (KiB, MiB, GiB,
// TiB) and decimal (kB, MB, GB, TB) suffixes; a bare K/M/G/T means binary, as in llama.cpp and
// vLLM's --swap-space.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kvengine/status.h"

namespace kvengine {

Result<uint64_t> ParseSize(std::string_view text);

// "24.00 GiB", "512 B": for humans, never for parsing back.
std::string FormatBytes(uint64_t bytes);

// "32k" or "32768" -> 32768 (k = 1024, as context lengths are written); plain integers too.
Result<uint64_t> ParseTokenCount(std::string_view text);

// The inverse for labels: 32768 -> "32k" (whole multiples of 1024), 1000 -> "1000".
std::string FormatTokenCount(int64_t tokens);

}  // namespace kvengine
