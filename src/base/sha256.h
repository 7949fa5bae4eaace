// SHA-256 over OpenSSL's EVP interface. Used for prefix-cache block hashes: deterministic across
// processes (instances sharing a remote tier agree) and collision-resistant (one tenant's KV is
// never served to another through a crafted collision).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace kvengine {

using Digest256 = std::array<uint8_t, 32>;

// Incremental hasher. Not thread-safe; one per thread. Move-only.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&& other) noexcept;
  Sha256& operator=(Sha256&& other) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(const void* data, size_t size);
  void Update(std::string_view s) { Update(s.data(), s.size()); }
  // Appends a fixed-width little-endian integer (a type-stable encoding, unlike text).
  void UpdateU64(uint64_t v);
  // Finishes the digest; the hasher is reset and can be reused.
  Digest256 Finish();

 private:
  void* ctx_;  // EVP_MD_CTX*, kept opaque so OpenSSL headers stay out of this header.
};

Digest256 Sha256Of(std::string_view data);
std::string HexOf(std::span<const uint8_t> bytes);

}  // namespace kvengine
