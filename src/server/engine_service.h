// Runs the Engine on its own thread and connects it to the HTTP handlers: a job (one engine request per choice) is
// submitted whole or refused, its tokens arrive through the job's own queue, and cancelling it aborts its requests
// and frees their KV blocks at once. All engine access goes through this class's lock.
// Must not know: HTTP, JSON or text.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <variant>
#include <vector>

#include "engine/engine.h"

namespace slimkv {

struct ChoiceEvent {
  int32_t choice = 0;
  int32_t token = -1;                    // -1: this event only finishes the choice
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top_logprobs;
  FinishReason finish = FinishReason::None;
  int32_t num_prompt_tokens = 0;         // on the finishing event
  int32_t num_cached_tokens = 0;
  int32_t num_output_tokens = 0;
  std::vector<float> embedding;          // on the finishing event of a pooled (embedding) request: [dim]
};

class Job {
 public:
  // Blocks until events arrive or `deadline` passes; returns them in order (empty on timeout or when done).
  std::vector<ChoiceEvent> wait(std::chrono::steady_clock::time_point deadline);
  bool finished() const;               // every choice has finished (its events may still be queued)
  bool drained() const;                // finished, and every event has been taken
  int32_t num_choices() const { return static_cast<int32_t>(ids_.size()); }

 private:
  friend class EngineService;
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::vector<ChoiceEvent> queue_;
  std::vector<RequestId> ids_;          // [choices]
  std::vector<FinishReason> finish_;    // [choices] the engine's finish reason, None while open
  int32_t num_open_ = 0;
};

struct JobSpec {                         // one entry per choice
  std::vector<std::vector<int32_t>> prompts;
  std::vector<RequestParams> params;
};

struct Refusal {
  bool queue_full = false;               // true: 429 (retry later); false: the request itself is invalid (400)
  std::string message;
};

class EngineService {
 public:
  // max_waiting: waiting requests beyond which submissions are refused as "queue full".
  EngineService(Engine& engine, int32_t max_waiting);
  ~EngineService();                      // stops the loop (unfinished requests are aborted)

  std::variant<std::shared_ptr<Job>, Refusal> submit(JobSpec spec);
  void cancel(Job& job);                  // aborts every unfinished choice; idempotent
  void cancel_choice(Job& job, int32_t choice);
  // Graceful shutdown: ends every unfinished choice of every job (finish reason abort, delivered to its job like any
  // finish), and says whether anything is left.
  void abort_all();
  bool idle();                            // no job has an unfinished choice
  // Runs f(engine) under the engine lock, e.g. to read metrics between steps.
  void inspect(const std::function<void(Engine&)>& f);
  // Called on the engine thread after every step, under the lock, with the requests that finished.
  void set_after_step(std::function<void(Engine&, const std::vector<const Request*>&)> f) { after_step_ = std::move(f); }
  // Called, under the lock, when a choice the engine had already finished (e.g. "length") turns out to have ended on
  // a stop string its session found later: the finish as the client sees it replaces the engine's.
  void set_on_restated(std::function<void(FinishReason from, FinishReason to)> f) { on_restated_ = std::move(f); }

 private:
  void loop();
  void dispatch(const std::vector<StepEvent>& events);
  void drain_finished();                  // finished requests -> their jobs' final events
  // Callers (submit, cancel, inspect) announce themselves so the engine loop yields the lock between steps.
  std::unique_lock<std::mutex> caller_lock();

  Engine& engine_;
  int32_t max_waiting_;
  std::mutex mu_;
  std::atomic<int32_t> num_callers_waiting_{0};
  std::condition_variable work_;
  bool stop_ = false;
  struct Route {
    std::shared_ptr<Job> job;
    int32_t choice;
  };
  std::unordered_map<RequestId, Route> routes_;
  std::function<void(Engine&, const std::vector<const Request*>&)> after_step_;
  std::function<void(FinishReason, FinishReason)> on_restated_;
  std::thread thread_;
};

}  // namespace slimkv
