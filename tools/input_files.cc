#include "input_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/size_parse.h"

namespace kvengine::cli {
namespace {

std::string FileKindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

Status NotRegularFile(const std::string& path, const std::string& what, mode_t mode) {
  return InvalidArgument(what + ": " + path + " is " + FileKindOf(mode) +
                         ", not a regular file");
}

Status FileOpenError(const std::string& path, const std::string& what, int err) {
  const std::string m = what + ": cannot read " + path + ": " + std::strerror(err);
  return err == ENOENT ? NotFound(m) : Unavailable(m);
}

}  // namespace

Status CheckRegularFile(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return FileOpenError(path, what, errno);
  if (!S_ISREG(st.st_mode)) return NotRegularFile(path, what, st.st_mode);
  return Status::Ok();
}

Result<std::string> ReadSmallFile(const std::string& path, uint64_t max_bytes,
                                  const std::string& what) {
  // O_NONBLOCK: opening a FIFO for reading does not wait for a writer; fstat then refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return FileOpenError(path, what, errno);
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return FileOpenError(path, what, errno);
  if (!S_ISREG(st.st_mode)) return NotRegularFile(path, what, st.st_mode);
  const std::string too_large = what + ": " + path + " is larger than " + FormatBytes(max_bytes);
  if (uint64_t(st.st_size) > max_bytes) return OutOfRange(too_large);
  std::string text;
  char buf[16384];
  for (;;) {  // Bounded even if the file grows while it is read.
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FileOpenError(path, what, errno);
    if (n == 0) break;
    if (text.size() + size_t(n) > max_bytes) return OutOfRange(too_large);
    text.append(buf, size_t(n));
  }
  return text;
}

bool IsModelPath(const std::string& model) {
  if (model.size() > 5 && model.compare(model.size() - 5, 5, ".gguf") == 0) return true;
  if (model.find('/') != std::string::npos) return true;
  struct stat st {};
  return ::stat(model.c_str(), &st) == 0 && !S_ISDIR(st.st_mode);
}

Status CheckOutputFile(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status::Ok();  // Created when written.
  if (!S_ISREG(st.st_mode)) return NotRegularFile(path, what, st.st_mode);
  return Status::Ok();
}

}  // namespace kvengine::cli
