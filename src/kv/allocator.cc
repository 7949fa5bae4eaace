#include "kv/allocator.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "base/size_parse.h"

namespace kvengine {

Result<void*> HostAllocator::Allocate(size_t bytes, size_t alignment) {
  if (bytes == 0) return static_cast<void*>(nullptr);
  if (alignment > 4096) return InvalidArgument("host allocator aligns to at most 4096 bytes");
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return Internal("cannot map " + FormatBytes(bytes) + " for the KV pool: " +
                    std::strerror(errno));
  }
  // Transparent huge pages cut TLB misses when attention streams a large pool; advisory only.
  if (bytes >= (size_t{2} << 20)) madvise(p, bytes, MADV_HUGEPAGE);
  return p;
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
