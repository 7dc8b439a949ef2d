#include "server/embeddings_request.h"

#include <fmt/format.h>

#include "server/api_error.h"
#include "server/json_field.h"

namespace slimkv {

EmbeddingsRequest parse_embeddings_request(const nlohmann::ordered_json& body) {
  if (!body.is_object()) throw invalid_request("the body must be a JSON object");
  EmbeddingsRequest r;
  if (const auto* m = json_field(body, "model")) {
    if (!m->is_string()) throw invalid_request("'model' must be a string", "model");
    r.model = m->get<std::string>();
  }
  r.inputs = parse_prompt_inputs(body, "input");
  if (const auto* f = json_field(body, "encoding_format")) {
    if (!f->is_string() || (*f != "float" && *f != "base64")) {
      throw invalid_request("'encoding_format' must be \"float\" or \"base64\"", "encoding_format");
    }
    r.base64 = *f == "base64";
  }
  if (const auto* d = json_field(body, "dimensions")) {
    if (!d->is_number_integer() || d->get<int64_t>() < 1) {
      throw invalid_request("'dimensions' must be a positive integer", "dimensions");
    }
    r.dimensions = d->get<int64_t>();
  }
  if (const auto* u = json_field(body, "user"); u && !u->is_string()) {
    throw invalid_request("'user' must be a string", "user");
  }
  return r;
}

}  // namespace slimkv
