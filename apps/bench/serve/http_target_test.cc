#include "bench/serve/http_target.h"

#include <gtest/gtest.h>

namespace kvengine::loadgen {
namespace {

TEST(HttpTargetTest, ParsesBaseUrls) {
  Result<HttpTarget> t = ParseBaseUrl("http://127.0.0.1:8080");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->scheme_host_port, "http://127.0.0.1:8080");
  EXPECT_EQ(t->base_path, "");
  t = ParseBaseUrl("localhost:9000/");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->scheme_host_port, "http://localhost:9000");
  EXPECT_EQ(t->base_path, "");
  t = ParseBaseUrl("https://example.com/api/v0/");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->scheme_host_port, "https://example.com");
  EXPECT_EQ(t->base_path, "/api/v0");
  EXPECT_TRUE(ParseBaseUrl("http://[::1]:8000").ok());
  EXPECT_TRUE(ParseBaseUrl("http://[::1]").ok());
  for (const char* bad : {"ftp://host", "http://", "http://:80", "http://h:0", "http://h:65536",
                          "http://h:80x", "http://h:"}) {
    EXPECT_FALSE(ParseBaseUrl(bad).ok()) << bad;
  }
}

TEST(HttpTargetTest, ErrorMessages) {
  EXPECT_EQ(
      HttpErrorMessage(400, R"({"error": {"message": "prompt is empty", "param": "prompt"}})"),
      "HTTP 400: prompt is empty");
  EXPECT_EQ(HttpErrorMessage(502, "Bad Gateway"), "HTTP 502: Bad Gateway");
  EXPECT_EQ(HttpErrorMessage(500, ""), "HTTP 500");
}

}  // namespace
}  // namespace kvengine::loadgen
