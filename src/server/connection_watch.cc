#include "server/connection_watch.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>

namespace kvengine::server {
namespace {

// An endpoint as /proc/net/tcp{,6} prints it: the address's 32-bit words exactly as they lie in
// memory, each printed with %08X (so on this host they compare equal to the words of an
// in_addr / in6_addr read as uint32_t), and the port in host order with %04X.
struct ProcEndpoint {
  uint32_t words[4] = {0, 0, 0, 0};
  int n_words = 0;  // 1: IPv4, 4: IPv6.
  int port = -1;
};

bool ParseProcEndpoint(std::string_view field, ProcEndpoint* out) {
  const size_t colon = field.find(':');
  if (colon == std::string_view::npos || (colon != 8 && colon != 32)) return false;
  out->n_words = int(colon / 8);
  for (int i = 0; i < out->n_words; ++i) {
    const std::string word(field.substr(size_t(i) * 8, 8));
    char* end = nullptr;
    out->words[i] = uint32_t(std::strtoul(word.c_str(), &end, 16));
    if (*end != '\0') return false;
  }
  const std::string port(field.substr(colon + 1));
  char* end = nullptr;
  out->port = int(std::strtol(port.c_str(), &end, 16));
  return *end == '\0';
}

// Whether the /proc endpoint is `addr` (numeric text, as httplib writes it) and `port`. An IPv4
// address may also appear IPv4-mapped (::ffff:a.b.c.d) in tcp6 on a dual-stack socket.
bool SameEndpoint(const ProcEndpoint& e, const std::string& addr, int port) {
  if (e.port != port) return false;
  in_addr v4{};
  in6_addr v6{};
  const bool is_v4 = inet_pton(AF_INET, addr.c_str(), &v4) == 1;
  if (!is_v4 && inet_pton(AF_INET6, addr.c_str(), &v6) != 1) return false;
  uint32_t want[4];
  if (e.n_words == 1) {
    if (!is_v4) return false;
    std::memcpy(&want[0], &v4, 4);
    return want[0] == e.words[0];
  }
  if (is_v4) {  // Compare as ::ffff:a.b.c.d.
    std::memset(&v6, 0, sizeof(v6));
    v6.s6_addr[10] = v6.s6_addr[11] = 0xff;
    std::memcpy(&v6.s6_addr[12], &v4, 4);
  }
  std::memcpy(want, &v6, 16);
  return std::memcmp(want, e.words, 16) == 0;
}

// The socket inode of the connection local <-> remote from /proc/net/tcp{,6}, or 0.
unsigned long FindSocketInode(const std::string& local_addr, int local_port,
                              const std::string& remote_addr, int remote_port) {
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // Header.
    while (std::getline(in, line)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
      std::istringstream fields(line);
      std::string sl, local, remote, st, queues, timer, retr, uid, timeout, inode;
      if (!(fields >> sl >> local >> remote >> st >> queues >> timer >> retr >> uid >> timeout >>
            inode)) {
        continue;
      }
      ProcEndpoint l, r;
      if (!ParseProcEndpoint(local, &l) || !ParseProcEndpoint(remote, &r)) continue;
      if (SameEndpoint(l, local_addr, local_port) && SameEndpoint(r, remote_addr, remote_port)) {
        // TIME_WAIT leftovers of an earlier connection with the same ports have inode 0.
        const unsigned long n = std::strtoul(inode.c_str(), nullptr, 10);
        if (n != 0) return n;
      }
    }
  }
  return 0;
}

}  // namespace

// Only paths are read (/proc/net/tcp, readlink of /proc/self/fd/N): no system call touches
// another thread's descriptors, which may be closed and reused concurrently.
int FindTcpSocket(const std::string& local_addr, int local_port, const std::string& remote_addr,
                  int remote_port) {
  const unsigned long inode = FindSocketInode(local_addr, local_port, remote_addr, remote_port);
  if (inode == 0) return -1;
  const std::string want = "socket:[" + std::to_string(inode) + "]";
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int found = -1;
  char target[64];
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t n = readlink(link.c_str(), target, sizeof(target));
    if (n > 0 && std::string_view(target, size_t(n)) == want) {
      found = std::atoi(e->d_name);
      break;
    }
  }
  closedir(dir);
  return found;
}

bool PeerClosed(int fd) {
  // POLLRDHUP reports the peer's FIN even when unread bytes precede it (a recv peek would see
  // only the bytes); POLLHUP / POLLERR report a reset.
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

bool ConnectionWatch::Closed() {
  if (!searched_) {
    searched_ = true;
    fd_ = FindTcpSocket(local_addr_, local_port_, remote_addr_, remote_port_);
  }
  return fd_ >= 0 && PeerClosed(fd_);
}

}  // namespace kvengine::server
