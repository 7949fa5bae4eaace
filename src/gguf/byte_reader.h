// ByteReader: a bounds-checked little-endian cursor over untrusted bytes. Internal to gguf/.
// Every read checks the bytes left first and reports what it was reading and where; nothing
// reads past the end, and no length from the input is trusted before it is compared with
// remaining().
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

#include "kvengine/status.h"

namespace kvengine::gguf_internal {

// GGUF is little-endian; this code reads it with memcpy, so it needs a little-endian host.
static_assert(std::endian::native == std::endian::little, "GGUF reading assumes little-endian");

class ByteReader {
 public:
  // `base_offset` is added to positions in messages, so that a reader over a sub-span (one
  // metadata value) reports positions in the whole file.
  explicit ByteReader(std::span<const uint8_t> bytes, uint64_t base_offset = 0)
      : bytes_(bytes), base_offset_(base_offset) {}

  // Position in the file (base_offset + bytes consumed).
  uint64_t position() const { return base_offset_ + pos_; }
  // Bytes consumed from this reader's span.
  uint64_t consumed() const { return pos_; }
  uint64_t remaining() const { return bytes_.size() - pos_; }
  // The bytes not yet consumed.
  std::span<const uint8_t> rest() const { return bytes_.subspan(pos_); }

  Status Skip(uint64_t n, std::string_view what) {
    std::span<const uint8_t> skipped;
    return ReadBytes(n, &skipped, what);
  }

  // Reads a trivially copyable little-endian value. `what` names it in errors.
  template <typename T>
  Status Read(T* out, std::string_view what) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (remaining() < sizeof(T)) {
      return Corrupt(fmt::format("{} at byte {}: needs {} bytes, only {} left", what, position(),
                                 sizeof(T), remaining()));
    }
    std::memcpy(out, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }

  // Takes the next `n` bytes as a view.
  Status ReadBytes(uint64_t n, std::span<const uint8_t>* out, std::string_view what) {
    if (n > remaining()) {
      return Corrupt(fmt::format("{} at byte {}: needs {} bytes, only {} left", what, position(), n,
                                 remaining()));
    }
    *out = bytes_.subspan(pos_, n);
    pos_ += n;
    return Status::Ok();
  }

  // Reads a GGUF string (u64 length, then the bytes) as a view into the input. `max_bytes`
  // bounds the length beyond the bytes left (key and tensor-name limits).
  Status ReadString(std::string_view* out, std::string_view what, uint64_t max_bytes = UINT64_MAX) {
    uint64_t start = position();
    uint64_t length = 0;
    KV_RETURN_IF_ERROR(Read(&length, what));
    if (length > remaining()) {
      return Corrupt(fmt::format("{} at byte {}: string length {} exceeds the {} bytes left", what,
                                 start, length, remaining()));
    }
    if (length > max_bytes) {
      return Corrupt(fmt::format("{} at byte {}: string length {} exceeds the limit of {}", what,
                                 start, length, max_bytes));
    }
    *out = std::string_view(reinterpret_cast<const char*>(bytes_.data() + pos_), length);
    pos_ += length;
    return Status::Ok();
  }

 private:
  std::span<const uint8_t> bytes_;
  uint64_t base_offset_;
  uint64_t pos_ = 0;  // Invariant: pos_ <= bytes_.size().
};

// `status` with `context` put in front of its message ("tensor 3 'x': " + message).
inline Status WithContext(const Status& status, std::string_view context) {
  if (status.ok()) return status;
  return Status(status.code(), std::string(context) + status.message());
}

// A name from the input made safe to print: at most `max_chars` bytes, bytes outside printable
// ASCII as \xNN, so that a hostile name cannot inject newlines or terminal escapes into logs.
inline std::string Printable(std::string_view text, size_t max_chars = 80) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < max_chars; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (text.size() > max_chars) out += "...";
  return out;
}

}  // namespace kvengine::gguf_internal
