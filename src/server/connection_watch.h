// ConnectionWatch: notices that the client of a request has gone away, so its generation can
// be cancelled and its KV blocks freed.
//
// Debian's cpp-httplib 0.11.4 gives a handler no way to ask whether its connection is still
// open, and no access to the socket. The socket is found once per request from the request's
// endpoints (local_addr:local_port, remote_addr:remote_port), a 4-tuple that names one TCP
// connection: /proc/net/tcp (or tcp6) gives that connection's socket inode, and the entry of
// /proc/self/fd linking to "socket:[inode]" is its descriptor. Only paths are read, never
// another thread's descriptors. While the handler runs httplib keeps that descriptor open, so
// it cannot be reused under us. Closed() then polls it without waiting: POLLRDHUP (the client
// shut its side, even with unread bytes still queued, e.g. a pipelined request), POLLHUP or
// POLLERR (reset) mean the client is gone. A client that half-closes after sending and still
// reads counts as gone too; HTTP/1.1 clients do not do that.
//
// One per request, used by the thread that serves it.
#pragma once

#include <string>

namespace kvengine::server {

class ConnectionWatch {
 public:
  ConnectionWatch(std::string local_addr, int local_port, std::string remote_addr, int remote_port)
      : local_addr_(std::move(local_addr)),
        local_port_(local_port),
        remote_addr_(std::move(remote_addr)),
        remote_port_(remote_port) {}

  // True once the peer has closed or reset the connection. False when the socket cannot be
  // found (then only failed writes reveal a disconnect).
  bool Closed();
  // The descriptor found (-1 before the first Closed() or when not found).
  int fd() const { return fd_; }

 private:
  std::string local_addr_;
  int local_port_;
  std::string remote_addr_;
  int remote_port_;
  bool searched_ = false;
  int fd_ = -1;
};

// The descriptor of this process's TCP socket with these endpoints, or -1.
int FindTcpSocket(const std::string& local_addr, int local_port, const std::string& remote_addr,
                  int remote_port);

// poll(POLLRDHUP) says the peer closed or reset the connection.
bool PeerClosed(int fd);

}  // namespace kvengine::server
