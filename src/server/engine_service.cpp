#include "server/engine_service.h"

namespace slimkv {

std::vector<ChoiceEvent> Job::wait(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lk(m_);
  cv_.wait_until(lk, deadline, [&] { return !queue_.empty() || num_open_ == 0; });
  std::vector<ChoiceEvent> out;
  out.swap(queue_);
  return out;
}

bool Job::finished() const {
  std::lock_guard lk(m_);
  return num_open_ == 0;
}

bool Job::drained() const {
  std::lock_guard lk(m_);
  return num_open_ == 0 && queue_.empty();
}

EngineService::EngineService(Engine& engine, int32_t max_waiting)
    : engine_(engine), max_waiting_(max_waiting), thread_([this] { loop(); }) {}

EngineService::~EngineService() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
    for (auto& [id, route] : routes_) engine_.abort(id);
    drain_finished();
  }
  work_.notify_all();
  thread_.join();
}

std::unique_lock<std::mutex> EngineService::caller_lock() {
  ++num_callers_waiting_;
  std::unique_lock lk(mu_);
  --num_callers_waiting_;
  return lk;
}

std::variant<std::shared_ptr<Job>, Refusal> EngineService::submit(JobSpec spec) {
  SLIMKV_CHECK(spec.prompts.size() == spec.params.size() && !spec.prompts.empty(), "submit: one prompt per choice");
  auto job = std::make_shared<Job>();
  {
    // More choices than the queue holds can never be admitted, busy or idle: a bad request (400), not "retry".
    if (static_cast<int64_t>(spec.prompts.size()) > max_waiting_) {
      return Refusal{false, fmt::format("the request asks for {} completions (prompts x n) but at most {} can be "
                                        "queued (--max-queue)", spec.prompts.size(), max_waiting_)};
    }
    auto lk = caller_lock();
    if (engine_.metrics().num_waiting + static_cast<int32_t>(spec.prompts.size()) > max_waiting_) {
      return Refusal{true, fmt::format("the server is busy: {} requests are waiting (--max-queue {})",
                                       engine_.metrics().num_waiting, max_waiting_)};
    }
    for (size_t i = 0; i < spec.prompts.size(); ++i) {
      auto r = engine_.add_request(std::move(spec.prompts[i]), spec.params[i]);
      if (auto* why = std::get_if<std::string>(&r)) {  // all or nothing: withdraw the choices already added
        for (RequestId id : job->ids_) {
          engine_.abort(id);
          routes_.erase(id);
        }
        drain_finished();
        return Refusal{false, *why};
      }
      const RequestId id = std::get<RequestId>(r);
      job->ids_.push_back(id);
      job->finish_.push_back(FinishReason::None);
      routes_[id] = {job, static_cast<int32_t>(i)};
    }
    job->num_open_ = static_cast<int32_t>(job->ids_.size());
  }
  work_.notify_one();
  return job;
}

void EngineService::cancel_choice(Job& job, int32_t choice) {
  auto lk = caller_lock();
  // a choice ends here on a stop string: a finished request ("stop"), not an abort, in the metrics — also when the
  // engine ran ahead of the session and had already finished it for another reason
  if (routes_.count(job.ids_.at(choice))) {
    engine_.abort(job.ids_[choice], FinishReason::Stop);
  } else {
    std::lock_guard jl(job.m_);
    const FinishReason was = job.finish_.at(choice);
    if (was != FinishReason::None && was != FinishReason::Stop) {
      job.finish_[choice] = FinishReason::Stop;
      if (on_restated_) on_restated_(was, FinishReason::Stop);
    }
  }
  drain_finished();
}

void EngineService::cancel(Job& job) {
  auto lk = caller_lock();
  for (RequestId id : job.ids_) {
    if (routes_.count(id)) engine_.abort(id);
  }
  drain_finished();
}

void EngineService::abort_all() {
  auto lk = caller_lock();
  std::vector<RequestId> ids;
  for (const auto& [id, route] : routes_) ids.push_back(id);
  for (RequestId id : ids) engine_.abort(id);
  drain_finished();
}

bool EngineService::idle() {
  auto lk = caller_lock();
  return routes_.empty();
}

void EngineService::inspect(const std::function<void(Engine&)>& f) {
  auto lk = caller_lock();
  f(engine_);
}

void EngineService::loop() {
  std::unique_lock lk(mu_);
  while (true) {
    work_.wait(lk, [&] { return stop_ || engine_.has_unfinished(); });
    if (stop_) return;
    dispatch(engine_.step());
    drain_finished();
    if (num_callers_waiting_.load() > 0) {  // let submissions, cancels and scrapes in between steps
      lk.unlock();
      while (num_callers_waiting_.load() > 0) std::this_thread::yield();
      lk.lock();
    }
  }
}

void EngineService::dispatch(const std::vector<StepEvent>& events) {
  for (const auto& e : events) {
    if (e.token < 0) continue;  // a stop on EOS: its finishing event comes from drain_finished
    auto it = routes_.find(e.id);
    if (it == routes_.end()) continue;
    Job& job = *it->second.job;
    std::lock_guard jl(job.m_);
    ChoiceEvent ev;
    ev.choice = it->second.choice;
    ev.token = e.token;
    ev.logprob = e.logprob;
    ev.top_logprobs = e.top_logprobs;
    job.queue_.push_back(std::move(ev));
    job.cv_.notify_all();
  }
}

void EngineService::drain_finished() {
  auto done = engine_.take_finished();
  std::vector<const Request*> finished;
  for (const auto& r : done) {
    finished.push_back(r.get());
    auto it = routes_.find(r->id);
    if (it == routes_.end()) continue;
    Job& job = *it->second.job;
    {
      std::lock_guard jl(job.m_);
      ChoiceEvent ev;
      ev.choice = it->second.choice;
      ev.finish = r->finish;
      ev.num_prompt_tokens = r->num_prompt_tokens;
      ev.num_cached_tokens = std::max(0, r->num_cached_tokens);
      ev.num_output_tokens = r->num_output_tokens();
      ev.embedding = std::move(r->embedding);
      job.queue_.push_back(std::move(ev));
      job.finish_.at(it->second.choice) = r->finish;
      --job.num_open_;
      job.cv_.notify_all();
    }
    routes_.erase(it);
  }
  if (after_step_) after_step_(engine_, finished);
}

}  // namespace slimkv
