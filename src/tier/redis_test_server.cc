#include "tier/redis_test_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <hiredis/hiredis.h>

extern char** environ;

namespace kvengine::tier_test {
namespace {

int FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

redisContext* ConnectTo(const std::string& endpoint) {
  timeval tv = {1, 0};
  redisContext* c =
      endpoint.starts_with("unix:")
          ? redisConnectUnixWithTimeout(endpoint.c_str() + 5, tv)
          : redisConnectWithTimeout("127.0.0.1",
                                    std::atoi(endpoint.c_str() + endpoint.rfind(':') + 1), tv);
  if (c != nullptr) redisSetTimeout(c, tv);
  return c;
}

}  // namespace

TempDir::TempDir() {
  char tmpl[] = "/tmp/kvtier-XXXXXX";
  char* p = ::mkdtemp(tmpl);
  path_ = p != nullptr ? p : "";
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add, ec);
  std::filesystem::remove_all(path_, ec);
}

bool RedisServerOnPath() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && ::access((dir + "/redis-server").c_str(), X_OK) == 0) return true;
  }
  return false;
}

bool InCi() {
  const char* ci = std::getenv("CI");
  if (ci == nullptr) return false;
  std::string v = ci;
  return !v.empty() && v != "0" && v != "false";
}

RedisServer::RedisServer(Transport transport, std::string dir)
    : transport_(transport), dir_(std::move(dir)) {}

RedisServer::~RedisServer() { Kill(); }

std::string RedisServer::endpoint() const {
  if (transport_ == Transport::kUnix) return "unix:" + dir_ + "/redis.sock";
  return "127.0.0.1:" + std::to_string(port_);
}

Status RedisServer::Start() {
  if (pid_ > 0) return Status::Ok();
  if (transport_ == Transport::kUnix || port_ != 0) return StartOnce();  // A restart: same port.
  // The free port may be taken by another test process before the server binds it: retry.
  Status s;
  for (int attempt = 0; attempt < 3; ++attempt) {
    port_ = FreeLoopbackPort();
    s = StartOnce();
    if (s.ok()) return s;
  }
  port_ = 0;
  return s;
}

Status RedisServer::StartOnce() {
  std::vector<std::string> args = {"redis-server", "--save",    "",   "--appendonly",
                                   "no",           "--dir",     dir_, "--daemonize",
                                   "no",           "--logfile", ""};
  if (transport_ == Transport::kUnix) {
    args.insert(args.end(),
                {"--port", "0", "--unixsocket", dir_ + "/redis.sock", "--unixsocketperm", "700"});
  } else {
    args.insert(args.end(), {"--port", std::to_string(port_), "--bind", "127.0.0.1"});
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string log = dir_ + "/redis.log";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  int rc = ::posix_spawnp(&pid_, "redis-server", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    pid_ = -1;
    return Unavailable(std::string("posix_spawnp redis-server: ") + std::strerror(rc));
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      std::ifstream in(log);
      std::stringstream text;
      text << in.rdbuf();
      return Unavailable("redis-server exited at start:\n" + text.str());
    }
    if (Command({"PING"}) == "PONG") return Status::Ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Kill();
  return Unavailable("redis-server did not answer PING within 10 s");
}

void RedisServer::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string RedisServer::Command(const std::vector<std::string>& argv) const {
  redisContext* c = ConnectTo(endpoint());
  if (c == nullptr || c->err != 0) {
    if (c != nullptr) redisFree(c);
    return "(no connection)";
  }
  std::vector<const char*> args;
  std::vector<size_t> lens;
  for (const std::string& a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* r =
      static_cast<redisReply*>(redisCommandArgv(c, int(args.size()), args.data(), lens.data()));
  std::string out;
  if (r == nullptr) {
    out = "(no reply)";
  } else if (r->type == REDIS_REPLY_NIL) {
    out = "(nil)";
  } else if (r->type == REDIS_REPLY_INTEGER) {
    out = std::to_string(r->integer);
  } else if (r->str != nullptr) {
    out.assign(r->str, r->len);
  }
  if (r != nullptr) freeReplyObject(r);
  redisFree(c);
  return out;
}

FakeRedisServer::FakeRedisServer(std::string reply, Mode mode)
    : reply_(std::move(reply)), mode_(mode) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::listen(listen_fd_, 8) == 0 &&
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port_ = ntohs(addr.sin_port);
  }
  thread_ = std::thread([this] { Serve(); });
}

FakeRedisServer::~FakeRedisServer() {
  stop_ = true;
  thread_.join();
  ::close(listen_fd_);
}

void FakeRedisServer::Serve() {
  auto send_all = [](int fd, const std::string& s) {
    size_t done = 0;
    while (done < s.size()) {
      ssize_t n = ::send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return;
      done += size_t(n);
    }
  };
  while (!stop_) {
    pollfd lp = {listen_fd_, POLLIN, 0};
    if (::poll(&lp, 1, 20) <= 0) continue;
    int conn = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    char buf[65536];
    while (!stop_) {
      pollfd cp = {conn, POLLIN, 0};
      if (::poll(&cp, 1, 20) <= 0) continue;
      ssize_t n = ::recv(conn, buf, sizeof(buf), 0);
      if (n <= 0) break;
      if (mode_ == Mode::kOnceThenClose) {
        send_all(conn, reply_);
        break;
      }
      for (ssize_t i = 0; i < n; ++i) {
        if (buf[i] == '*') send_all(conn, reply_);  // One RESP command header each.
      }
    }
    ::close(conn);
  }
}

}  // namespace kvengine::tier_test
