// Prefix-cache keys. A full block of tokens is identified by a chained SHA-256:
//
//   root        = SHA256("kvengine.prefix.v1" | namespace | salt)
//   hash(b_0)   = SHA256(root        | tokens of block 0)
//   hash(b_i)   = SHA256(hash(b_i-1) | tokens of block i)
//
// `namespace` carries every extra key that changes what a block's KV bytes mean: the model
// fingerprint, the KV dtype map and the block size (KvCacheManager builds it). `salt` is the
// per-request cache_salt, so tenants that use different salts never share blocks. Every field is
// length-prefixed, so no two distinct inputs encode to the same byte string.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "base/sha256.h"

namespace kvengine {

struct BlockHash {
  Digest256 bytes{};

  friend bool operator==(const BlockHash& a, const BlockHash& b) { return a.bytes == b.bytes; }
  std::string Hex() const { return HexOf(bytes); }
};

struct BlockHashHasher {
  size_t operator()(const BlockHash& h) const {
    // The digest is uniformly distributed already; its first 8 bytes are a fine bucket key.
    uint64_t v;
    std::memcpy(&v, h.bytes.data(), sizeof(v));
    return static_cast<size_t>(v);
  }
};

BlockHash PrefixRootHash(std::string_view cache_namespace, std::string_view salt);
BlockHash ChainBlockHash(const BlockHash& parent, std::span<const int32_t> tokens);

}  // namespace kvengine
