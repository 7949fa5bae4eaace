// Soak (label slow, well under 60 s): 200 concurrent streamed requests against the real engine
// on the `tiny` model, a third of them dropped by their clients at random points; then no
// crash, no KV block left in use, the server still answering. Run it in the sanitizer build.
#include <httplib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <random>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

#include "model/model.h"
#include "runtime/engine.h"
#include "server/backend.h"
#include "server/http_server.h"
#include "server/server_test_util.h"
#include "synth/model_cache.h"
#include "synth/synthetic_spec.h"

namespace kvengine::server {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

int64_t SumMetric(const std::string& body, const std::string& name) {
  const std::regex re("^kvengine:" + name + "\\{[^}]*\\} ([0-9.e+]+)$");
  int64_t sum = 0;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, re)) sum += int64_t(std::stod(m[1]));
  }
  return sum;
}

TEST(ServerSoakTest, ManyStreamsWithRandomDisconnects) {
  Result<SyntheticModelSpec> spec = FindSyntheticPreset("tiny");
  ASSERT_TRUE(spec.ok());
  Result<std::string> path = EnsureSyntheticModel(
      *spec, (std::filesystem::path(::testing::TempDir()) / "kvengine_server_soak").string());
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  Result<std::unique_ptr<GgufFile>> file = GgufFile::Open(*path);
  ASSERT_TRUE(file.ok());
  std::shared_ptr<const GgufFile> gguf(std::move(file).value());
  Result<std::unique_ptr<Model>> model = LoadModel(gguf, "tiny");
  ASSERT_TRUE(model.ok());
  Result<std::unique_ptr<Tokenizer>> tokenizer = Tokenizer::FromGguf(*gguf);
  ASSERT_TRUE(tokenizer.ok());

  EngineOptions o;
  o.kv.block_size = 16;
  o.kv.num_blocks = 256;
  o.kv.max_model_len = 512;
  o.threads = 1;
  o.max_num_seqs = 16;
  o.max_num_batched_tokens = 128;
  o.max_queued_requests = 256;
  o.eos_token_ids = {(*tokenizer)->eos()};
  Result<std::unique_ptr<Engine>> engine =
      Engine::Create(std::shared_ptr<const Model>(std::move(model).value()), o);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  (*engine)->Start();
  EngineBackend backend(**engine);
  HttpServerOptions h;
  h.port = 0;
  h.max_threads = 400;
  h.poll_interval = milliseconds(20);
  Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(h);
  ASSERT_TRUE(server.ok());
  ServedModel m;
  m.name = "tiny";
  m.backend = &backend;
  m.tokenizer = tokenizer->get();
  m.max_model_len = 512;
  (*server)->SetModel(m);
  const int port = (*server)->port();

  constexpr int kClients = 200;
  std::atomic<int> completed{0}, dropped{0}, refused{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      std::mt19937 rng{uint32_t(i)};
      const bool drop = rng() % 3 == 0;
      const json req = {{"prompt", "story number " + std::to_string(i)},
                        {"max_tokens", 16 + int(rng() % 128)},
                        {"stream", true},
                        {"ignore_eos", true},
                        {"stop", rng() % 4 == 0 ? "e" : "\x01"}};
      const int fd = testing::ConnectLoopback(port);
      if (fd < 0 || !testing::SendAll(fd, testing::PostRequest("/v1/completions", req.dump()))) {
        ADD_FAILURE() << "connect/send failed";
        if (fd >= 0) close(fd);
        return;
      }
      if (drop) {
        testing::ReadUntil(fd, std::string(1 + rng() % 3, 'x'), milliseconds(rng() % 200));
        close(fd);
        ++dropped;
        return;
      }
      const std::string got = testing::ReadUntil(fd, "data: [DONE]", milliseconds(50000));
      close(fd);
      if (got.find(" 503 ") != std::string::npos) {
        ++refused;
      } else {
        EXPECT_NE(got.find("data: [DONE]"), std::string::npos) << got.substr(0, 200);
        ++completed;
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(completed + dropped + refused, kClients);
  EXPECT_GT(completed.load(), kClients / 2);

  httplib::Client c("127.0.0.1", port);
  int64_t used = -1;
  for (int i = 0; i < 500 && used != 0; ++i) {
    auto r = c.Get("/metrics");
    ASSERT_TRUE(r);
    used = SumMetric(r->body, "kv_blocks_used") + SumMetric(r->body, "num_requests_running") +
           SumMetric(r->body, "num_requests_waiting");
    if (used != 0) std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(used, 0);
  auto r =
      c.Post("/v1/completions", R"({"prompt": "still here", "max_tokens": 4})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  (*server)->Shutdown(milliseconds(2000));
  (*engine)->Stop();
}

}  // namespace
}  // namespace kvengine::server
