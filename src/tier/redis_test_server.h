// Test fixtures for the tier tests: a temporary directory, a real redis-server child process,
// and a fake server that answers every connection with canned bytes.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "kvengine/status.h"

namespace kvengine::tier_test {

// mkdtemp under /tmp (short, so unix socket paths fit); removed recursively at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

bool RedisServerOnPath();
// CI is set to something other than "", "0" or "false".
bool InCi();

// A redis-server child: no persistence, its files (log, socket) in `dir`. Killed at destruction.
class RedisServer {
 public:
  enum class Transport { kUnix, kTcp };
  RedisServer(Transport transport, std::string dir);
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // Spawns the server (same socket / port as before on a restart) and waits until it answers
  // PING, up to 10 s.
  Status Start();
  // SIGKILL and reap; the socket file stays behind, as after a crash.
  void Kill();
  bool running() const { return pid_ > 0; }
  std::string endpoint() const;
  // One command on a fresh admin connection; the reply as text ("OK", "(nil)", "ERR …", "42").
  std::string Command(const std::vector<std::string>& argv) const;

 private:
  Status StartOnce();

  Transport transport_;
  std::string dir_;
  int port_ = 0;  // TCP only; chosen once.
  pid_t pid_ = -1;
};

// A loopback TCP server that answers like a broken or busy Redis. Serves one connection at a
// time on its own thread until destroyed.
class FakeRedisServer {
 public:
  enum class Mode {
    kPerCommand,     // `reply` once per command received (counted by RESP '*' headers).
    kOnceThenClose,  // `reply` once, then close the connection.
  };
  FakeRedisServer(std::string reply, Mode mode);
  ~FakeRedisServer();
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  void Serve();

  std::string reply_;
  Mode mode_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace kvengine::tier_test
