#include "core/bounded_json.h"

#include <unordered_map>
#include <vector>

#include <fmt/format.h>

namespace slimkv {
namespace {

using ojson = nlohmann::ordered_json;

// An object past this many keys gets a hash index for its duplicate check (below it, a scan is cheaper).
constexpr size_t kIndexAfterKeys = 16;

struct Frame {                 // one open array or object
  ojson* node;                 // points into its parent's storage, stable while the frame is open
  std::string key;             // objects: the key whose value comes next
  std::unordered_map<std::string, size_t> index;  // objects past kIndexAfterKeys keys: key -> position
};

// nlohmann's SAX interface (json_sax): builds the tree and counts, stops (false) at the first cap crossed.
class BoundedBuilder {
 public:
  using Pairs = ojson::object_t::Container;  // ordered_map is this vector; its own operator[] takes keys
  using number_integer_t = ojson::number_integer_t;
  using number_unsigned_t = ojson::number_unsigned_t;
  using number_float_t = ojson::number_float_t;
  using string_t = ojson::string_t;
  using binary_t = ojson::binary_t;

  explicit BoundedBuilder(const JsonLimits& limits) : lim_(limits) {}

  bool null() { return put(ojson(nullptr)) != nullptr; }
  bool boolean(bool v) { return put(ojson(v)) != nullptr; }
  bool number_integer(number_integer_t v) { return put(ojson(v)) != nullptr; }
  bool number_unsigned(number_unsigned_t v) { return put(ojson(v)) != nullptr; }
  bool number_float(number_float_t v, const string_t&) { return put(ojson(v)) != nullptr; }
  bool string(string_t& v) { return put(ojson(std::move(v))) != nullptr; }
  bool binary(binary_t&) { return refuse("binary values are not JSON", ""); }
  bool start_object(std::size_t) { return open(ojson::object()); }
  bool start_array(std::size_t) { return open(ojson::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(string_t& k) {
    Frame& f = stack_.back();
    f.key = std::move(k);
    if (static_cast<int64_t>(f.node->size()) >= lim_.max_object_keys && !find_key(f)) {
      return refuse(fmt::format("is an object with more than {} keys", lim_.max_object_keys), "--max-json-keys");
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    std::string what = e.what();  // "[json.exception.parse_error.101] parse error at ...": the library's tag off
    if (what.rfind("[json.exception", 0) == 0 && what.find("] ") != std::string::npos) {
      what = what.substr(what.find("] ") + 2);
    }
    syntax_ = true;
    message_ = "not valid JSON: " + what;
    return false;
  }

  ojson& root() { return root_; }
  [[noreturn]] void fail() const {
    if (syntax_) throw JsonTextError(message_, "", "", "");
    throw JsonTextError(message_, path_, top_, limit_);
  }

 private:
  static Pairs& pairs(Frame& f) { return f.node->get_ref<ojson::object_t&>(); }

  // The position of the current frame's pending key among its object's keys, if it is there already.
  const size_t* find_key(Frame& f) {
    Pairs& obj = pairs(f);
    if (obj.size() > kIndexAfterKeys) {
      if (f.index.empty()) {
        for (size_t i = 0; i < obj.size(); ++i) f.index.emplace(obj[i].first, i);
      }
      auto it = f.index.find(f.key);
      found_ = it == f.index.end() ? SIZE_MAX : it->second;
    } else {
      found_ = SIZE_MAX;
      for (size_t i = 0; i < obj.size(); ++i) {
        if (obj[i].first == f.key) found_ = i;
      }
    }
    return found_ == SIZE_MAX ? nullptr : &found_;
  }

  // Places a value where the parse is (the root, an array's end, or the pending key of an object); null past a cap.
  ojson* put(ojson&& v) {
    if (++values_ > lim_.max_values) {
      refuse(fmt::format("takes the document past {} values in all", lim_.max_values), "--max-json-values");
      return nullptr;
    }
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Frame& f = stack_.back();
    if (f.node->is_array()) {
      auto& arr = f.node->get_ref<ojson::array_t&>();
      if (static_cast<int64_t>(arr.size()) >= lim_.max_array_items) {
        refuse(fmt::format("is an array with more than {} items", lim_.max_array_items), "--max-json-items");
        return nullptr;
      }
      arr.push_back(std::move(v));
      return &arr.back();
    }
    Pairs& obj = pairs(f);
    if (const size_t* at = find_key(f)) {  // a duplicate key: the last value wins, in the first one's place
      obj[*at].second = std::move(v);
      return &obj[*at].second;
    }
    obj.emplace_back(f.key, std::move(v));  // ordered_map is a vector of pairs: appended, no scan
    if (!f.index.empty()) f.index.emplace(f.key, obj.size() - 1);
    return &obj.back().second;
  }

  bool open(ojson&& container) {
    if (static_cast<int32_t>(stack_.size()) >= lim_.max_depth) {
      return refuse(fmt::format("nests arrays and objects deeper than {} levels", lim_.max_depth), "--max-json-depth");
    }
    ojson* node = put(std::move(container));
    if (!node) return false;
    stack_.push_back(Frame{node, {}, {}});
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  // Where the parse is, as `a.b[3].c` (an array's index: the item being read; the innermost array or object itself
  // for the items and keys caps, which are about it).
  bool refuse(std::string what, const char* limit) {
    std::string path;
    for (size_t i = 0; i < stack_.size(); ++i) {
      const Frame& f = stack_[i];
      const bool last = i + 1 == stack_.size();
      if (f.node->is_array()) {
        if (!last) path += fmt::format("[{}]", f.node->size() - 1);
        continue;
      }
      if (last && limit == std::string_view("--max-json-keys")) break;  // the object itself is the culprit
      path += (path.empty() ? "" : ".") + f.key;
      if (i == 0) top_ = f.key;
    }
    path_ = path;
    limit_ = limit;
    const std::string shown = path.size() > 80 ? path.substr(0, 64) + "..." : path;  // deep nesting: cut
    message_ = fmt::format("{} {} ({})", path.empty() ? "the document" : "'" + shown + "'", what, limit);
    return false;
  }

  const JsonLimits& lim_;
  ojson root_;
  std::vector<Frame> stack_;
  int64_t values_ = 0;
  size_t found_ = SIZE_MAX;
  bool syntax_ = false;
  std::string message_, path_, top_, limit_;
};

}  // namespace

ojson parse_bounded_json(std::string_view text, const JsonLimits& limits) {
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    throw JsonTextError(fmt::format("not valid JSON: a NUL byte at offset {}", nul), "", "", "");
  }
  BoundedBuilder b(limits);
  if (!ojson::sax_parse(text.begin(), text.end(), &b)) b.fail();
  return std::move(b.root());
}

ojson parse_bounded_json_or_discarded(std::string_view text, const JsonLimits& limits) {
  try {
    return parse_bounded_json(text, limits);
  } catch (const JsonTextError&) {
    return ojson(ojson::value_t::discarded);
  }
}

}  // namespace slimkv
