// DeviceAllocator: where block storage comes from. The pool asks for one region and carves it
// into blocks; a CUDA pool later implements the same interface with cudaMalloc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "kvengine/status.h"

namespace kvengine {

// A region owned by an allocator; freed through the allocator that made it.
class DeviceAllocator {
 public:
  virtual ~DeviceAllocator() = default;
  virtual std::string_view name() const = 0;
  // Returns `bytes` of memory aligned to `alignment` (a power of two), or an error.
  virtual Result<void*> Allocate(size_t bytes, size_t alignment) = 0;
  virtual void Free(void* ptr, size_t bytes) = 0;
};

// Host memory from mmap (page-aligned, lazily committed, huge-page advised for large regions).
class HostAllocator final : public DeviceAllocator {
 public:
  std::string_view name() const override { return "host"; }
  Result<void*> Allocate(size_t bytes, size_t alignment) override;
  void Free(void* ptr, size_t bytes) override;
  static HostAllocator& Get();
};

// RAII ownership of one region.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceAllocator* allocator, void* ptr, size_t bytes)
      : allocator_(allocator), ptr_(ptr), bytes_(bytes) {}
  ~DeviceBuffer() { Reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  uint8_t* data() const { return static_cast<uint8_t*>(ptr_); }
  size_t size() const { return bytes_; }
  void Reset();

 private:
  DeviceAllocator* allocator_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

Result<DeviceBuffer> AllocateBuffer(DeviceAllocator* allocator, size_t bytes, size_t alignment);

}  // namespace kvengine
