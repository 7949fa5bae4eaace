#include "gguf/gguf_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/checked_math.h"
#include "base/huge_pages.h"
#include "gguf/gguf_layout.h"
#include "gguf/gguf_parse.h"

namespace kvengine {

// The bytes of an open file: a read-only private mapping (Open, kMap), a huge-page copy (Open,
// kRead) or an aligned heap copy (FromBytes); `bytes` covers exactly the file.
struct GgufFile::Storage {
  void* map_addr = nullptr;  // From mmap, or nullptr.
  size_t map_size = 0;
  HugePageRegion region;  // The kRead copy, or empty.
  void* heap = nullptr;   // From aligned_alloc, or nullptr.
  std::span<const uint8_t> bytes;

  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() {
    if (map_addr != nullptr) munmap(map_addr, map_size);
    std::free(heap);
  }
};

namespace {

// Alignment of FromBytes copies, so that tensor data keeps the alignment it has in the file
// (offsets are multiples of general.alignment, commonly 32) for alignments up to this.
constexpr size_t kCopyAlignment = 64;

// Puts the metadata key in front of a getter's error.
template <typename T>
Result<T> ForKey(std::string_view key, Result<T> result) {
  if (result.ok()) return result;
  return Status(result.status().code(),
                fmt::format("metadata key '{}': {}", key, result.status().message()));
}

}  // namespace

GgufFile::GgufFile(std::unique_ptr<Storage> storage, GgufContents contents)
    : storage_(std::move(storage)), bytes_(storage_->bytes), contents_(std::move(contents)) {}

GgufFile::~GgufFile() = default;

namespace {

// Stores the tensors of `contents` whose layout `options` asks for in column blocks, in place in
// `bytes` (an owned copy of the file that contents points into).
Status ApplyColumnBlocks(const GgufLoadOptions& options, uint8_t* bytes, GgufContents* contents) {
  std::vector<uint8_t> rows;  // One tensor's bytes in the file's layout, while it is repacked.
  for (GgufTensor& t : contents->tensors) {
    const int64_t block = options.column_block(t);
    if (block <= 0 || block >= t.dims[0]) continue;
    if (!ColumnBlockType(t.type) || t.n_dims != 2) {
      return InvalidArgument(fmt::format(
          "tensor '{}' ({}, {} dims) cannot be stored in column blocks: only 2-D f32, f16, bf16 "
          "and q8_0 ... q6_K tensors can",
          t.name, GgmlTypeName(t.type), t.n_dims));
    }
    if (block % ColumnBlockAlign(t.type) != 0) {
      return InvalidArgument(
          fmt::format("tensor '{}' ({}): column blocks of {} columns, not a multiple of {}", t.name,
                      GgmlTypeName(t.type), block, ColumnBlockAlign(t.type)));
    }
    // In units of the type's blocks (one column each for the float types).
    const GgmlTypeTraits traits = GetGgmlTypeTraits(t.type);
    if (t.dims[0] % traits.block_size != 0) {
      return InvalidArgument(
          fmt::format("tensor '{}' ({}): rows of {} columns are not whole blocks", t.name,
                      GgmlTypeName(t.type), t.dims[0]));
    }
    uint8_t* data = bytes + (t.data.data() - bytes);  // The tensor, writable.
    rows.assign(t.data.begin(), t.data.end());
    PackColumnBlocks(rows.data(), t.dims[1], t.dims[0] / traits.block_size, traits.bytes_per_block,
                     block / traits.block_size, data);
    t.column_block = block;
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<GgufFile>> GgufFile::Parse(std::unique_ptr<Storage> storage,
                                                  const GgufLoadOptions& options) {
  KV_ASSIGN_OR_RETURN(GgufContents contents, gguf_internal::ParseGguf(storage->bytes));
  // Only an owned copy can be rewritten; a mapping keeps the file's layout.
  uint8_t* owned =
      storage->heap != nullptr ? static_cast<uint8_t*>(storage->heap) : storage->region.data();
  if (options.column_block && owned != nullptr && storage->map_addr == nullptr) {
    KV_RETURN_IF_ERROR(ApplyColumnBlocks(options, owned, &contents));
  }
  return std::unique_ptr<GgufFile>(new GgufFile(std::move(storage), std::move(contents)));
}

namespace {

// Reads the whole file at `fd` (`size` bytes) into `dst`.
Status ReadAll(int fd, const std::string& path, uint8_t* dst, size_t size) {
  size_t done = 0;
  while (done < size) {
    const ssize_t got = pread(fd, dst + done, size - done, static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Internal(fmt::format("{}: read failed: {}", path, std::strerror(errno)));
    if (got == 0) {
      return InvalidArgument(
          fmt::format("{}: file shrank while reading ({} of {} bytes)", path, done, size));
    }
    done += static_cast<size_t>(got);
  }
  return Status::Ok();
}

// Fills `storage` with the file's bytes as `mode` says.
Status LoadBytes(int fd, const std::string& path, size_t size, GgufFile::LoadMode mode,
                 void** map_addr, size_t* map_size, HugePageRegion* region,
                 std::span<const uint8_t>* bytes) {
  switch (mode) {
    case GgufFile::LoadMode::kMap: {
      void* addr = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (addr == MAP_FAILED) {
        return Internal(
            fmt::format("{}: mmap of {} bytes failed: {}", path, size, std::strerror(errno)));
      }
      *map_addr = addr;
      *map_size = size;
      *bytes = std::span<const uint8_t>(static_cast<const uint8_t*>(addr), size);
      return Status::Ok();
    }
    case GgufFile::LoadMode::kRead: {
      Result<HugePageRegion> r = HugePageRegion::Allocate(size);
      if (!r.ok()) return Status(r.status().code(), path + ": " + r.status().message());
      KV_RETURN_IF_ERROR(ReadAll(fd, path, r->data(), size));
      *region = std::move(r).value();
      *bytes = std::span<const uint8_t>(region->data(), size);
      return Status::Ok();
    }
  }
  return Internal("unknown load mode");
}

}  // namespace

Result<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path, LoadMode mode,
                                                 const GgufLoadOptions& options) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    std::string message = fmt::format("{}: cannot open: {}", path, std::strerror(err));
    return err == ENOENT ? NotFound(message) : InvalidArgument(message);
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return InvalidArgument(fmt::format("{}: not a regular file", path));
  }
  auto storage = std::make_unique<Storage>();
  const size_t size = static_cast<size_t>(st.st_size);
  // A file that is not GGUF is refused from its first bytes, before a large one is read whole.
  uint8_t prefix[gguf_internal::kGgufPrefixBytes];
  if (size >= sizeof(prefix)) {
    Status header = pread(fd, prefix, sizeof(prefix), 0) == ssize_t(sizeof(prefix))
                        ? gguf_internal::CheckGgufPrefix(prefix)
                        : InvalidArgument(fmt::format("cannot read: {}", std::strerror(errno)));
    if (!header.ok()) {
      close(fd);
      return Status(header.code(), fmt::format("{}: {}", path, header.message()));
    }
  }
  if (size > 0) {
    const Status loaded = LoadBytes(fd, path, size, mode, &storage->map_addr,
                                    &storage->map_size, &storage->region, &storage->bytes);
    if (!loaded.ok()) {
      close(fd);
      return loaded;
    }
  }
  close(fd);  // A mapping keeps the file's pages reachable; a copy needs the file no more.
  Result<std::unique_ptr<GgufFile>> file = Parse(std::move(storage), options);
  if (!file.ok()) {
    return Status(file.status().code(), fmt::format("{}: {}", path, file.status().message()));
  }
  return file;
}

Result<std::unique_ptr<GgufFile>> GgufFile::FromBytes(std::span<const uint8_t> bytes,
                                                      const GgufLoadOptions& options) {
  auto storage = std::make_unique<Storage>();
  if (!bytes.empty()) {
    uint64_t padded = 0;  // aligned_alloc wants a multiple of the alignment.
    if (!CheckedAlignUp(bytes.size(), kCopyAlignment, &padded)) {
      return OutOfRange("input too large to copy");
    }
    storage->heap = std::aligned_alloc(kCopyAlignment, padded);
    if (storage->heap == nullptr) {
      return Internal(fmt::format("cannot allocate {} bytes for a GGUF copy", padded));
    }
    std::memcpy(storage->heap, bytes.data(), bytes.size());
    storage->bytes =
        std::span<const uint8_t>(static_cast<const uint8_t*>(storage->heap), bytes.size());
  }
  return Parse(std::move(storage), options);
}

bool GgufFile::Has(std::string_view key) const { return Find(key) != nullptr; }

const GgufValue* GgufFile::Find(std::string_view key) const {
  auto it = contents_.key_index.find(key);
  return it == contents_.key_index.end() ? nullptr : &contents_.kvs[it->second].value;
}

Result<GgufValue> GgufFile::Get(std::string_view key) const {
  const GgufValue* value = Find(key);
  if (value == nullptr) return NotFound(fmt::format("metadata key '{}' not found", key));
  return *value;
}

template <typename T>
Result<T> GgufFile::GetAs(std::string_view key) const {
  KV_ASSIGN_OR_RETURN(GgufValue value, Get(key));
  return ForKey(key, value.As<T>());
}

Result<uint8_t> GgufFile::GetU8(std::string_view key) const { return GetAs<uint8_t>(key); }
Result<int8_t> GgufFile::GetI8(std::string_view key) const { return GetAs<int8_t>(key); }
Result<uint16_t> GgufFile::GetU16(std::string_view key) const { return GetAs<uint16_t>(key); }
Result<int16_t> GgufFile::GetI16(std::string_view key) const { return GetAs<int16_t>(key); }
Result<uint32_t> GgufFile::GetU32(std::string_view key) const { return GetAs<uint32_t>(key); }
Result<int32_t> GgufFile::GetI32(std::string_view key) const { return GetAs<int32_t>(key); }
Result<uint64_t> GgufFile::GetU64(std::string_view key) const { return GetAs<uint64_t>(key); }
Result<int64_t> GgufFile::GetI64(std::string_view key) const { return GetAs<int64_t>(key); }
Result<float> GgufFile::GetF32(std::string_view key) const { return GetAs<float>(key); }
Result<double> GgufFile::GetF64(std::string_view key) const { return GetAs<double>(key); }
Result<bool> GgufFile::GetBool(std::string_view key) const { return GetAs<bool>(key); }
Result<std::string_view> GgufFile::GetString(std::string_view key) const {
  return GetAs<std::string_view>(key);
}

Result<int64_t> GgufFile::GetInt(std::string_view key) const {
  KV_ASSIGN_OR_RETURN(GgufValue value, Get(key));
  return ForKey(key, value.AsInt());
}

Result<double> GgufFile::GetFloat(std::string_view key) const {
  KV_ASSIGN_OR_RETURN(GgufValue value, Get(key));
  return ForKey(key, value.AsFloat());
}

Result<std::vector<std::string_view>> GgufFile::GetStringArray(std::string_view key) const {
  KV_ASSIGN_OR_RETURN(GgufValue value, Get(key));
  return ForKey(key, value.AsStringArray());
}

Result<std::vector<int64_t>> GgufFile::GetIntArray(std::string_view key) const {
  KV_ASSIGN_OR_RETURN(GgufValue value, Get(key));
  return ForKey(key, value.AsIntArray());
}

Result<std::vector<float>> GgufFile::GetF32Array(std::string_view key) const {
  KV_ASSIGN_OR_RETURN(GgufValue value, Get(key));
  return ForKey(key, value.AsF32Array());
}

Result<std::string_view> GgufFile::Architecture() const { return GetString(kGgufArchitectureKey); }

const GgufTensor* GgufFile::FindTensor(std::string_view name) const {
  auto it = contents_.tensor_index.find(name);
  return it == contents_.tensor_index.end() ? nullptr : &contents_.tensors[it->second];
}

}  // namespace kvengine
