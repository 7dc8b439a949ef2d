// JSON text from outside (request bodies, JSON held in their strings, JSON a model generates) parsed into an
// ordered_json in time linear in its size: nlohmann's SAX pass builds the tree itself, appending each key to its
// object (ordered_json's own insert finds a key by a linear scan: n keys cost O(n^2), 100k keys 21 s), with
// duplicate keys found through a hash index (the last value wins, in the first one's place, as nlohmann does), and
// with caps on what one document may ask of the code after it — nesting depth, keys per object, items per array,
// values in all — each refused with the path of the value that crossed it.
// Must not know: HTTP, the OpenAI API or where the text came from.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/check.h"

namespace slimkv {

struct JsonLimits {                    // ServerConfig's --max-json-* flags, 1:1
  int32_t max_depth = 128;             // --max-json-depth: arrays and objects nested
  int64_t max_object_keys = 10000;     // --max-json-keys: distinct keys in one object
  int64_t max_array_items = 1 << 20;   // --max-json-items: items in one array
  int64_t max_values = 1 << 21;        // --max-json-values: values in the whole document (containers included)
};

// Why a text was refused: not JSON (limit empty), or over one of the caps (limit names the flag). `path` is where:
// "" for the document itself, else like `messages[3].content` (top_field: `messages`).
class JsonTextError : public Error {
 public:
  JsonTextError(const std::string& message, std::string path, std::string top_field, std::string limit)
      : Error(message), path(std::move(path)), top_field(std::move(top_field)), limit(std::move(limit)) {}
  std::string path, top_field, limit;
};

// The document, or throws JsonTextError. A NUL byte is an error (nlohmann would stop at it and ignore the rest).
nlohmann::ordered_json parse_bounded_json(std::string_view text, const JsonLimits& limits = JsonLimits{});

// The same, or a discarded value (is_discarded()) instead of an error: for text that may simply not be JSON.
nlohmann::ordered_json parse_bounded_json_or_discarded(std::string_view text, const JsonLimits& limits = JsonLimits{});

}  // namespace slimkv
