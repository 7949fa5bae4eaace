#include "kv/block_hash.h"

namespace kvengine {

BlockHash PrefixRootHash(std::string_view cache_namespace, std::string_view salt) {
  Sha256 h;
  static constexpr std::string_view kDomain = "kvengine.prefix.v1";
  h.UpdateU64(kDomain.size());
  h.Update(kDomain);
  h.UpdateU64(cache_namespace.size());
  h.Update(cache_namespace);
  h.UpdateU64(salt.size());
  h.Update(salt);
  return BlockHash{h.Finish()};
}

BlockHash ChainBlockHash(const BlockHash& parent, std::span<const int32_t> tokens) {
  // One digest context per thread: creating an EVP context per block costs more than hashing
  // its 64 bytes of tokens.
  thread_local Sha256 h;
  h.Update(parent.bytes.data(), parent.bytes.size());
  h.UpdateU64(tokens.size());
  for (int32_t t : tokens) {
    // Fixed-width little-endian, independent of the host's byte order.
    const uint32_t u = static_cast<uint32_t>(t);
    const uint8_t b[4] = {static_cast<uint8_t>(u), static_cast<uint8_t>(u >> 8),
                          static_cast<uint8_t>(u >> 16), static_cast<uint8_t>(u >> 24)};
    h.Update(b, sizeof(b));
  }
  return BlockHash{h.Finish()};
}

}  // namespace kvengine
