// Helpers of the demo tests: the `tiny` synthetic model and its tokenizer, generated once into
// the test temp dir (safe when test processes run in parallel).
#pragma once

#include <filesystem>
#include <memory>

#include <gtest/gtest.h>

#include "demo/demo_workload.h"
#include "gguf/gguf_reader.h"
#include "model/model.h"
#include "synth/model_cache.h"
#include "tokenizer/tokenizer.h"

namespace kvengine::demo::testing {

struct TinyModel {
  std::shared_ptr<const GgufFile> file;
  std::shared_ptr<const Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
};

inline const TinyModel& Tiny() {
  static const TinyModel* tiny = [] {
    auto spec = FindSyntheticPreset("tiny");
    KV_CHECK(spec.ok());
    const std::string dir =
        (std::filesystem::path(::testing::TempDir()) / "kvengine_demo_test").string();
    auto path = EnsureSyntheticModel(*spec, dir);
    KV_CHECK(path.ok()) << path.status().ToString();
    auto file = GgufFile::Open(*path);
    KV_CHECK(file.ok()) << file.status().ToString();
    auto* t = new TinyModel;
    t->file = std::shared_ptr<const GgufFile>(std::move(file).value());
    auto model = LoadModel(t->file, "tiny");
    KV_CHECK(model.ok()) << model.status().ToString();
    t->model = std::shared_ptr<const Model>(std::move(model).value());
    auto tok = Tokenizer::FromGguf(*t->file);
    KV_CHECK(tok.ok()) << tok.status().ToString();
    t->tokenizer = std::move(tok).value();
    return t;
  }();
  return *tiny;
}

// A workload small enough for the tiny model's 512-token context and a fast test.
inline WorkloadOptions SmallOptions() {
  WorkloadOptions o;
  o.system_prompt_tokens = 64;
  o.users = 4;
  o.question_tokens = 24;  // The tiny vocabulary spends ~12 on "Customer 3:".
  o.chat_turns = 3;
  o.chat_message_tokens = 16;
  o.document_tokens = 192;
  o.document_questions = 3;
  o.max_tokens = 8;
  return o;
}

}  // namespace kvengine::demo::testing
