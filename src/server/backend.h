// InferenceBackend: the calls the HTTP server makes on an engine. The server holds no
// scheduling or cache logic; this seam lets its HTTP behaviour (streaming, cancellation on
// disconnect, errors) be tested against a scripted backend as well as the real Engine.
//
// Threads: every method may be called from any HTTP thread concurrently (Engine's contract).
// `on_event` is called on the backend's own thread and must not block.
#pragma once

#include <memory>

#include "kvengine/engine.h"

namespace kvengine::server {

class InferenceBackend {
 public:
  virtual ~InferenceBackend() = default;
  virtual Result<RequestId> Submit(RequestParams params, EventCallback on_event) = 0;
  virtual void Cancel(RequestId id) = 0;
  // Ends one choice (a stop string was found in its text); the other choices go on.
  virtual void StopChoice(RequestId id, int choice) = 0;
  virtual EngineStats Stats() const = 0;
};

// Adapts an Engine (not owned; it must outlive the adapter).
class EngineBackend : public InferenceBackend {
 public:
  explicit EngineBackend(Engine& engine) : engine_(engine) {}
  Result<RequestId> Submit(RequestParams params, EventCallback on_event) override {
    return engine_.Submit(std::move(params), std::move(on_event));
  }
  void Cancel(RequestId id) override { engine_.Cancel(id); }
  void StopChoice(RequestId id, int choice) override { engine_.StopChoice(id, choice); }
  EngineStats Stats() const override { return engine_.Stats(); }

 private:
  Engine& engine_;
};

}  // namespace kvengine::server
