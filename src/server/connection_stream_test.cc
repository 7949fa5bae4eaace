// ConnectionStream over a socket pair: the per-request read budget, buffering across requests,
// read and write timeouts, and the lingering close.
#include "server/connection_stream.h"

#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "server/server_test_util.h"

namespace kvengine::server {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kTimeout{100};

class ConnectionStreamTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds_), 0); }
  void TearDown() override {
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
  }
  int server() const { return fds_[0]; }
  int client() const { return fds_[1]; }

  int fds_[2] = {-1, -1};
};

std::string ReadAll(ConnectionStream& s, size_t at_most) {
  std::string out;
  char buf[64];
  while (out.size() < at_most) {
    const ssize_t n = s.read(buf, std::min(sizeof(buf), at_most - out.size()));
    if (n <= 0) break;
    out.append(buf, size_t(n));
  }
  return out;
}

TEST_F(ConnectionStreamTest, ReadsStopAtTheRequestBudget) {
  ConnectionStream s(server(), kTimeout, kTimeout);
  ASSERT_TRUE(testing::SendAll(client(), std::string(100, 'a') + std::string(50, 'b')));
  s.BeginRequest(100);
  EXPECT_EQ(ReadAll(s, 1000), std::string(100, 'a'));
  char c;
  EXPECT_EQ(s.read(&c, 1), -1);
  EXPECT_TRUE(s.exceeded());
  // The next request starts with a new budget and the bytes already received.
  s.BeginRequest(100);
  EXPECT_FALSE(s.exceeded());
  EXPECT_TRUE(s.has_buffered());
  EXPECT_EQ(ReadAll(s, 50), std::string(50, 'b'));
  EXPECT_FALSE(s.exceeded());
}

TEST_F(ConnectionStreamTest, ReadTimesOutAndSeesEof) {
  ConnectionStream s(server(), kTimeout, kTimeout);
  s.BeginRequest(1000);
  char c;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(s.read(&c, 1), -1);  // Nothing sent: the read timeout.
  EXPECT_GE(std::chrono::steady_clock::now() - start, kTimeout);
  EXPECT_FALSE(s.exceeded());
  shutdown(client(), SHUT_WR);
  EXPECT_EQ(s.read(&c, 1), 0);  // EOF.
}

TEST_F(ConnectionStreamTest, WriteGivesUpOnAPeerThatDoesNotRead) {
  ConnectionStream s(server(), kTimeout, kTimeout);
  const std::string block(1 << 16, 'x');
  const auto start = std::chrono::steady_clock::now();
  ssize_t n = 0;
  int64_t written = 0;
  while ((n = s.write(block.data(), block.size())) > 0) {
    written += n;
    ASSERT_LT(written, int64_t{1} << 30) << "the socket buffer never filled";
  }
  EXPECT_EQ(n, -1);
  EXPECT_GT(written, 0);
  // It returned after one write timeout without progress, not blocked in send().
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(5000));
}

TEST_F(ConnectionStreamTest, LingeringCloseLetsThePeerReadTheAnswer) {
  ASSERT_TRUE(testing::SendAll(server(), "HTTP/1.1 413 Payload Too Large\r\n\r\n"));
  // The peer keeps sending; the closing side drains it, then closes after the linger time.
  std::thread sender([fd = client()] {
    const std::string block(4096, 'z');
    for (int i = 0; i < 64; ++i) send(fd, block.data(), block.size(), MSG_NOSIGNAL);
  });
  const auto start = std::chrono::steady_clock::now();
  LingeringClose(server(), milliseconds(300));
  fds_[0] = -1;
  sender.join();
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(250));
  const std::string got = testing::ReadUntil(client(), "\r\n\r\n", milliseconds(1000));
  EXPECT_EQ(got, "HTTP/1.1 413 Payload Too Large\r\n\r\n");
}

}  // namespace
}  // namespace kvengine::server
