#include "kv/allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "base/huge_pages.h"
#include "base/size_parse.h"

namespace kvengine {

Result<void*> HostAllocator::Allocate(size_t bytes, size_t alignment) {
  if (bytes == 0) return static_cast<void*>(nullptr);
  if (alignment > 4096) return InvalidArgument("host allocator aligns to at most 4096 bytes");
  // Regions of 2 MiB or more start on a 2 MiB boundary and are advised for transparent huge pages
  // (attention streams the pool; 4 KiB pages would miss the TLB every 4 KiB, base/huge_pages.h).
  // Map with a huge page of slack, then unmap the slack on both sides, so that Free can unmap
  // exactly [ptr, ptr + bytes).
  const size_t huge = kHugePageBytes;
  const bool want_huge = bytes >= huge;
  const size_t map_bytes = want_huge ? bytes + huge : bytes;
  void* p = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return Internal("cannot map " + FormatBytes(bytes) + " for the KV pool: " +
                    std::strerror(errno));
  }
  if (!want_huge) return p;
  const uintptr_t start = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (start + huge - 1) & ~uintptr_t(huge - 1);
  const size_t head = aligned - start;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t kept = (bytes + page - 1) / page * page;  // What Free's munmap(ptr, bytes) covers.
  const size_t tail = map_bytes - head - kept;
  if (head > 0) munmap(p, head);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + kept), tail);
  void* region = reinterpret_cast<void*>(aligned);
  madvise(region, bytes, MADV_HUGEPAGE);  // Advisory only.
  return region;
}

void HostAllocator::Free(void* ptr, size_t bytes) {
  if (ptr != nullptr) munmap(ptr, bytes);
}

HostAllocator& HostAllocator::Get() {
  static HostAllocator allocator;
  return allocator;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    Reset();
    allocator_ = std::exchange(o.allocator_, nullptr);
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::Reset() {
  if (allocator_ != nullptr && ptr_ != nullptr) allocator_->Free(ptr_, bytes_);
  allocator_ = nullptr;
  ptr_ = nullptr;
  bytes_ = 0;
}

Result<DeviceBuffer> AllocateBuffer(DeviceAllocator* allocator, size_t bytes, size_t alignment) {
  KV_ASSIGN_OR_RETURN(void* p, allocator->Allocate(bytes, alignment));
  return DeviceBuffer(allocator, p, bytes);
}

}  // namespace kvengine
