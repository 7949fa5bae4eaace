#include "server/connection_stream.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace kvengine::server {
namespace {

using Clock = std::chrono::steady_clock;

// poll() for `events` until one is ready or `timeout` has passed (EINTR and early wake-ups
// poll again for what is left).
bool WaitFor(int fd, short events, std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  while (true) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, int(std::max<int64_t>(0, left.count())));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
    if (Clock::now() >= deadline) return false;
  }
}

// Numeric host and port of a socket address, as httplib writes them (ConnectionWatch reads
// them back).
void IpAndPort(const sockaddr_storage& addr, socklen_t len, std::string& ip, int& port) {
  char host[NI_MAXHOST] = {0};
  char serv[NI_MAXSERV] = {0};
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host, sizeof(host), serv,
                  sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return;
  }
  ip = host;
  port = std::atoi(serv);
}

}  // namespace

bool WaitReadable(int fd, std::chrono::milliseconds timeout) {
  return WaitFor(fd, POLLIN, timeout);
}

bool ConnectionStream::is_readable() const {
  return has_buffered() || WaitFor(fd_, POLLIN, read_timeout_);
}

bool ConnectionStream::is_writable() const { return WaitFor(fd_, POLLOUT, write_timeout_); }

ssize_t ConnectionStream::read(char* ptr, size_t size) {
  if (size == 0) return 0;
  if (budget_ == 0) {
    exceeded_ = true;
    return -1;
  }
  size = size_t(std::min<uint64_t>(size, budget_));
  if (!has_buffered()) {
    if (!is_readable()) return -1;
    ssize_t n;
    do {
      n = recv(fd_, buffer_, kBufferBytes, 0);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return n;
    begin_ = 0;
    end_ = size_t(n);
  }
  const size_t n = std::min(size, end_ - begin_);
  std::memcpy(ptr, buffer_ + begin_, n);
  begin_ += n;
  budget_ -= n;
  return ssize_t(n);
}

ssize_t ConnectionStream::write(const char* ptr, size_t size) {
  while (true) {
    if (!is_writable()) return -1;
    // Non-blocking: a partial write returns at once and the next call waits again, so no write
    // outlasts write_timeout without progress.
    const ssize_t n = send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return n;
    if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) return -1;
  }
}

void ConnectionStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    IpAndPort(addr, len, ip, port);
  }
}

void ConnectionStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    IpAndPort(addr, len, ip, port);
  }
}

void LingeringClose(int fd, std::chrono::milliseconds linger) {
  shutdown(fd, SHUT_WR);
  const Clock::time_point deadline = Clock::now() + linger;
  char sink[16384];
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0 || !WaitReadable(fd, left)) break;
    const ssize_t n = recv(fd, sink, sizeof(sink), 0);
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }
  close(fd);
}

}  // namespace kvengine::server
