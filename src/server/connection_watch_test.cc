#include "server/connection_watch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

namespace kvengine::server {
namespace {

struct Endpoint {
  std::string addr;
  int port = 0;
};

Endpoint Describe(const sockaddr_storage& sa) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(sa);
    inet_ntop(AF_INET, &in.sin_addr, buf, sizeof(buf));
    return {buf, ntohs(in.sin_port)};
  }
  const auto& in6 = reinterpret_cast<const sockaddr_in6&>(sa);
  inet_ntop(AF_INET6, &in6.sin6_addr, buf, sizeof(buf));
  return {buf, ntohs(in6.sin6_port)};
}

// A connected pair over loopback: {server side, client side}; -1s when the family is missing.
std::pair<int, int> Connect(int family) {
  const int listener = socket(family, SOCK_STREAM, 0);
  sockaddr_storage addr{};
  socklen_t len = 0;
  if (family == AF_INET) {
    auto& in = reinterpret_cast<sockaddr_in&>(addr);
    in.sin_family = AF_INET;
    in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof(in);
  } else {
    auto& in6 = reinterpret_cast<sockaddr_in6&>(addr);
    in6.sin6_family = AF_INET6;
    in6.sin6_addr = in6addr_loopback;
    len = sizeof(in6);
  }
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (listener >= 0) close(listener);
    return {-1, -1};
  }
  const int client = socket(family, SOCK_STREAM, 0);
  if (connect(client, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    close(client);
    close(listener);
    return {-1, -1};
  }
  const int server = accept(listener, nullptr, nullptr);
  close(listener);
  return {server, client};
}

void CheckFamily(int family) {
  const auto [server, client] = Connect(family);
  if (server < 0) GTEST_SKIP() << "no loopback for family " << family;
  sockaddr_storage local{}, peer{};
  socklen_t l = sizeof(local), p = sizeof(peer);
  ASSERT_EQ(getsockname(server, reinterpret_cast<sockaddr*>(&local), &l), 0);
  ASSERT_EQ(getpeername(server, reinterpret_cast<sockaddr*>(&peer), &p), 0);
  const Endpoint le = Describe(local), pe = Describe(peer);
  EXPECT_EQ(FindTcpSocket(le.addr, le.port, pe.addr, pe.port), server);
  // The client's own socket has the mirrored tuple, not ours.
  EXPECT_EQ(FindTcpSocket(pe.addr, pe.port, le.addr, le.port), client);
  EXPECT_EQ(FindTcpSocket(le.addr, le.port, pe.addr, pe.port + 1), -1);
  ConnectionWatch watch(le.addr, le.port, pe.addr, pe.port);
  EXPECT_FALSE(watch.Closed());
  EXPECT_EQ(watch.fd(), server);
  ASSERT_EQ(send(client, "x", 1, 0), 1);  // Pending bytes: still open.
  EXPECT_FALSE(watch.Closed());
  close(client);
  EXPECT_TRUE(watch.Closed());
  close(server);
}

TEST(ConnectionWatchTest, FindsTheSocketAndSeesTheClose4) { CheckFamily(AF_INET); }
TEST(ConnectionWatchTest, FindsTheSocketAndSeesTheClose6) { CheckFamily(AF_INET6); }

TEST(ConnectionWatchTest, UnknownConnection) {
  ConnectionWatch watch("127.0.0.1", 1, "127.0.0.1", 2);
  EXPECT_FALSE(watch.Closed());
  EXPECT_EQ(watch.fd(), -1);
  EXPECT_EQ(FindTcpSocket("not an address", 1, "127.0.0.1", 2), -1);
}

}  // namespace
}  // namespace kvengine::server
