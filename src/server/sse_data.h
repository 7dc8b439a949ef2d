// The `data:` payloads of a server-sent event stream as its bytes arrive in arbitrary pieces: an incomplete event
// is carried to the next piece; events without a data line are skipped. Used by the encoders that re-encode the
// chat path's stream (anthropic_response, responses_response). Must not know: what the payloads mean.
#pragma once
#include <string>

namespace slimkv {

class SseData {
 public:
  void append(const std::string& bytes) { buffer_ += bytes; }
  // The next complete event's data (after "data: "), or false when none is complete yet.
  bool next(std::string* data) {
    for (size_t end; (end = buffer_.find("\n\n")) != std::string::npos;) {
      const bool is_data = buffer_.compare(0, 6, "data: ") == 0;
      if (is_data) *data = buffer_.substr(6, end - 6);
      buffer_.erase(0, end + 2);
      if (is_data) return true;
    }
    return false;
  }

 private:
  std::string buffer_;
};

}  // namespace slimkv
