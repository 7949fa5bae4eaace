#include "synth/model_cache.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "gguf/gguf_reader.h"
#include "synth/synth_test_util.h"

namespace kvengine {
namespace {

namespace fs = std::filesystem;
using synth_test::ScopedTempDir;

TEST(ModelCacheTest, WritesOnceThenReuses) {
  ScopedTempDir dir;
  const std::string cache = dir.File("nested/cache");  // Created on demand.
  const SyntheticModelSpec spec = *FindSyntheticPreset("tiny");
  int progress_calls = 0;
  auto progress = [&](uint64_t, uint64_t) { ++progress_calls; };

  Result<std::string> first = EnsureSyntheticModel(spec, cache, progress);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, SyntheticModelCachePath(spec, cache));
  EXPECT_EQ(fs::path(*first).filename().string(), "tiny-" + SyntheticSpecHash(spec) + ".gguf");
  EXPECT_GT(progress_calls, 0);
  EXPECT_TRUE(GgufFile::Open(*first).ok());

  // Backdate the file so that a rewrite, however fast, would show in its mtime.
  const auto old_time = fs::last_write_time(*first) - std::chrono::hours(1);
  fs::last_write_time(*first, old_time);
  progress_calls = 0;
  Result<std::string> second = EnsureSyntheticModel(spec, cache, progress);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(*second, *first);
  EXPECT_EQ(fs::last_write_time(*second), old_time);
  EXPECT_EQ(progress_calls, 0);

  // Nothing but the model in the folder: no temporary files left behind.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(cache)) ++entries;
  EXPECT_EQ(entries, 1);

  // A different spec is a different file beside it.
  SyntheticModelSpec other = spec;
  other.seed = 9;
  Result<std::string> third = EnsureSyntheticModel(other, cache);
  ASSERT_TRUE(third.ok());
  EXPECT_NE(*third, *first);
  EXPECT_EQ(fs::last_write_time(*first), old_time);
}

TEST(ModelCacheTest, TruncatedOrCorruptFileIsRegenerated) {
  ScopedTempDir dir;
  const SyntheticModelSpec spec = *FindSyntheticPreset("mistral-tiny");
  Result<std::string> path = EnsureSyntheticModel(spec, dir.path());
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  const uint64_t size = fs::file_size(*path);
  ASSERT_EQ(size, SyntheticModelBytes(spec));

  // Truncated, as an interrupted copy would leave it.
  fs::resize_file(*path, size / 2);
  ASSERT_TRUE(EnsureSyntheticModel(spec, dir.path()).ok());
  EXPECT_EQ(fs::file_size(*path), size);
  EXPECT_TRUE(GgufFile::Open(*path).ok());

  // The right size but a broken header.
  {
    std::fstream f(*path, std::ios::in | std::ios::out | std::ios::binary);
    f.write("XXXX", 4);
  }
  ASSERT_FALSE(GgufFile::Open(*path).ok());
  ASSERT_TRUE(EnsureSyntheticModel(spec, dir.path()).ok());
  EXPECT_TRUE(GgufFile::Open(*path).ok());
  EXPECT_EQ(fs::file_size(*path), size);
}

TEST(ModelCacheTest, InvalidSpecAndUnwritableFolderAreErrors) {
  ScopedTempDir dir;
  SyntheticModelSpec bad = *FindSyntheticPreset("tiny");
  bad.n_layers = 0;
  EXPECT_FALSE(EnsureSyntheticModel(bad, dir.path()).ok());
  // A regular file where the folder should be.
  const std::string blocker = dir.File("file");
  std::ofstream(blocker) << "x";
  Result<std::string> r = EnsureSyntheticModel(*FindSyntheticPreset("tiny"), blocker + "/sub");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cache folder"), std::string::npos);
}

TEST(ModelCacheTest, DefaultCacheDirFollowsTheEnvironmentOrder) {
  EXPECT_EQ(DefaultCacheDir("/k", "/x", "/h"), "/k");
  EXPECT_EQ(DefaultCacheDir("", "/x", "/h"), "/x/kvengine");
  EXPECT_EQ(DefaultCacheDir(nullptr, "/x", "/h"), "/x/kvengine");
  EXPECT_EQ(DefaultCacheDir(nullptr, "relative", "/h"), "/h/.cache/kvengine");
  EXPECT_EQ(DefaultCacheDir(nullptr, "", "/h"), "/h/.cache/kvengine");
  EXPECT_EQ(DefaultCacheDir(nullptr, nullptr, nullptr), ".kvengine-cache");
}

}  // namespace
}  // namespace kvengine
