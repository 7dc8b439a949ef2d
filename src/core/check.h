// Error type and invariant checks used everywhere.
// Owns: slimkv::Error (one clear message, caught once in main) and SLIMKV_CHECK.
// Must not know: anything about models, tokens or I/O.
#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdexcept>
#include <string>

namespace slimkv {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace slimkv

// SLIMKV_CHECK(cond, "fmt {}", args...) throws slimkv::Error with the message when cond is false.
#define SLIMKV_CHECK(cond, ...)            \
  do {                                     \
    if (!(cond)) ::slimkv::fail(__VA_ARGS__); \
  } while (0)
