#include "base/sha256.h"

#include <openssl/evp.h>

#include <utility>

#include "base/check.h"

namespace kvengine {
namespace {
EVP_MD_CTX* Ctx(void* p) { return static_cast<EVP_MD_CTX*>(p); }
}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  KV_CHECK(ctx_ != nullptr);
  KV_CHECK(EVP_DigestInit_ex(Ctx(ctx_), EVP_sha256(), nullptr) == 1);
}

Sha256::~Sha256() {
  if (ctx_ != nullptr) EVP_MD_CTX_free(Ctx(ctx_));
}

Sha256::Sha256(Sha256&& other) noexcept : ctx_(std::exchange(other.ctx_, nullptr)) {}

Sha256& Sha256::operator=(Sha256&& other) noexcept {
  if (this != &other) {
    if (ctx_ != nullptr) EVP_MD_CTX_free(Ctx(ctx_));
    ctx_ = std::exchange(other.ctx_, nullptr);
  }
  return *this;
}

void Sha256::Update(const void* data, size_t size) {
  KV_CHECK(EVP_DigestUpdate(Ctx(ctx_), data, size) == 1);
}

void Sha256::UpdateU64(uint64_t v) {
  uint8_t bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(v >> (8 * i));
  Update(bytes, sizeof(bytes));
}

Digest256 Sha256::Finish() {
  Digest256 out{};
  unsigned int len = 0;
  KV_CHECK(EVP_DigestFinal_ex(Ctx(ctx_), out.data(), &len) == 1 && len == out.size());
  KV_CHECK(EVP_DigestInit_ex(Ctx(ctx_), EVP_sha256(), nullptr) == 1);
  return out;
}

Digest256 Sha256Of(std::string_view data) {
  Sha256 h;
  h.Update(data);
  return h.Finish();
}

std::string HexOf(std::span<const uint8_t> bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    s.push_back(kHex[b >> 4]);
    s.push_back(kHex[b & 15]);
  }
  return s;
}

}  // namespace kvengine
