// ConnectionStream: the byte stream httplib reads requests from and writes responses to, for one
// accepted TCP connection, in place of httplib's own SocketStream (which its header does not
// expose), so that the server bounds what a client can make it read.
//
// httplib 0.11.4 enforces its payload limit only on a Content-Length body: a chunked body, a
// body without a length (read until EOF) and the request line are read into memory whatever
// their size. Here every request gets a read budget (BeginRequest): the request line, headers
// and body bytes on the wire together; once it is spent, read() fails, httplib answers 400
// (HttpServer turns it into 413) and the connection is closed. Reads and writes wait at most
// their timeouts (poll), and a write never blocks beyond its timeout: a client that stops
// reading fails the write after write_timeout even when the kernel buffer has a little room.
//
// One per connection, used by the one HTTP thread serving it.
#pragma once

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace kvengine::server {

class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(int fd, std::chrono::milliseconds read_timeout,
                   std::chrono::milliseconds write_timeout)
      : fd_(fd), read_timeout_(read_timeout), write_timeout_(write_timeout) {}

  // Starts a request: at most `budget` more bytes may be read for it.
  void BeginRequest(uint64_t budget) {
    budget_ = budget;
    exceeded_ = false;
  }
  // A read failed because the request's budget was spent.
  bool exceeded() const { return exceeded_; }
  // Bytes received but not read yet (a pipelined next request).
  bool has_buffered() const { return begin_ < end_; }

  bool is_readable() const override;
  bool is_writable() const override;
  // Up to `size` bytes; 0 at EOF; -1 on an error, a timeout or a spent budget.
  ssize_t read(char* ptr, size_t size) override;
  // Some of the bytes (httplib loops); -1 on an error or after write_timeout without progress.
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  int socket() const override { return fd_; }

 private:
  static constexpr size_t kBufferBytes = 4096;

  int fd_;
  std::chrono::milliseconds read_timeout_;
  std::chrono::milliseconds write_timeout_;
  uint64_t budget_ = 0;
  bool exceeded_ = false;
  char buffer_[kBufferBytes];  // Received bytes [begin_, end_) not read yet.
  size_t begin_ = 0;
  size_t end_ = 0;
};

// Waits until `fd` is readable (data, EOF or an error), up to `timeout`; false on timeout.
bool WaitReadable(int fd, std::chrono::milliseconds timeout);

// Closes a connection whose request was refused unread (413, 415): stops sending, then reads
// and discards what the client still sends, for at most `linger`, so that it receives the
// answer instead of a reset (closing with unread data makes the kernel send RST).
void LingeringClose(int fd, std::chrono::milliseconds linger);

}  // namespace kvengine::server
