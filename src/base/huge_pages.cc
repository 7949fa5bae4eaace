#include "base/huge_pages.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace kvengine {

HugePageRegion& HugePageRegion::operator=(HugePageRegion&& o) noexcept {
  if (this != &o) {
    Reset();
    map_ = std::exchange(o.map_, nullptr);
    map_bytes_ = std::exchange(o.map_bytes_, 0);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

Result<HugePageRegion> HugePageRegion::Allocate(size_t bytes) {
  if (bytes == 0) return InvalidArgument("a huge-page region of 0 bytes");
  // Over-allocate by one huge page so that a 2 MiB boundary with `bytes` after it exists.
  if (bytes > SIZE_MAX - kHugePageBytes) {
    return OutOfRange("cannot map " + std::to_string(bytes) + " bytes: too large");
  }
  const size_t map_bytes = bytes + kHugePageBytes;
  void* p = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return Internal("cannot map " + std::to_string(bytes) + " bytes: " + std::strerror(errno));
  }
  HugePageRegion r;
  r.map_ = p;
  r.map_bytes_ = map_bytes;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  r.data_ = reinterpret_cast<uint8_t*>((a + kHugePageBytes - 1) & ~uintptr_t(kHugePageBytes - 1));
  r.size_ = bytes;
  if (bytes >= kHugePageBytes) madvise(r.data_, bytes, MADV_HUGEPAGE);  // Advisory only.
  return r;
}

void HugePageRegion::Reset() {
  if (map_ != nullptr) munmap(map_, map_bytes_);
  map_ = nullptr;
  map_bytes_ = 0;
  data_ = nullptr;
  size_ = 0;
}

}  // namespace kvengine
