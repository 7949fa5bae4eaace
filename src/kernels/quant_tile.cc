// The tiled activation layout of the quantized token tiles (quant_tile.h).
#include "kernels/quant_tile.h"

#include <cstring>

#include "base/check.h"

namespace kvengine {
namespace {

int64_t Groups(int64_t cols) { return (cols + 255) / 256; }

size_t RoundUp64(size_t n) { return (n + 63) / 64 * 64; }

}  // namespace

size_t TiledActivationRowBytes(ActivationFormat format, int64_t cols) {
  const auto g = static_cast<size_t>(Groups(cols));
  if (format == ActivationFormat::kQ8_K) {
    return RoundUp64(256 * g + sizeof(float) * g + sizeof(int16_t) * 16 * g);
  }
  return RoundUp64(256 * g + 2 * sizeof(float) * 8 * g);
}

void TileActivations(ActivationFormat format, const uint8_t* xq, int64_t cols, uint8_t* dst) {
  const int64_t g = Groups(cols);
  std::memset(dst, 0, TiledActivationRowBytes(format, cols));
  if (format == ActivationFormat::kQ8_K) {
    KV_CHECK(cols % 256 == 0) << cols;
    const auto* blocks = reinterpret_cast<const Q8KBlock*>(xq);
    auto* d = reinterpret_cast<float*>(dst + 256 * g);
    auto* bsums = reinterpret_cast<int16_t*>(dst + 256 * g + sizeof(float) * g);
    for (int64_t b = 0; b < g; ++b) {
      for (int64_t e = 0; e < 256; e += 4) {
        std::memcpy(dst + 256 * b + TiledOffset(e), blocks[b].qs + e, 4);
      }
      d[b] = blocks[b].d;
      std::memcpy(bsums + 16 * b, blocks[b].bsums, sizeof(blocks[b].bsums));
    }
    return;
  }
  KV_CHECK(cols % 32 == 0) << cols;
  const int64_t nb = cols / 32;
  for (int64_t c = 0; c < 256 * g; c += 4) {  // 4 codes at a time, each + 128.
    uint32_t codes = 0;
    if (c < cols) std::memcpy(&codes, xq + c, 4);
    codes ^= 0x80808080u;
    std::memcpy(dst + 256 * (c / 256) + TiledOffset(c % 256), &codes, 4);
  }
  // The quantized row's d[nb] and s[nb] follow its codes; padding stays +0.
  std::memcpy(dst + 256 * g, xq + cols, sizeof(float) * nb);
  std::memcpy(dst + 256 * g + sizeof(float) * 8 * g, xq + cols + sizeof(float) * nb,
              sizeof(float) * nb);
}

}  // namespace kvengine
