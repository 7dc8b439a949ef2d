#include "jinja/py_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "jinja/template_error.h"
#include "jinja/utf8_text.h"

namespace slimkv::jinja {

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[40];
  for (int prec = 1; prec <= 17; ++prec) {  // the shortest %e form that reads back to d
    std::snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::string s(buf), sign, digits;
  size_t i = 0;
  if (s[0] == '-') sign = "-", i = 1;
  size_t e = s.find('e');
  for (size_t k = i; k < e; ++k) {
    if (s[k] != '.') digits.push_back(s[k]);
  }
  int exp = std::atoi(s.c_str() + e + 1);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  if (exp >= -4 && exp < 16) {
    std::string out;
    if (exp >= 0) {
      std::string ip = digits.substr(0, std::min<size_t>(digits.size(), exp + 1));
      ip.append(exp + 1 - ip.size(), '0');
      std::string fp = digits.size() > static_cast<size_t>(exp + 1) ? digits.substr(exp + 1) : "0";
      out = ip + "." + fp;
    } else {
      out = "0." + std::string(-exp - 1, '0') + digits;
    }
    return sign + out;
  }
  std::string mant = digits.substr(0, 1);
  if (digits.size() > 1) mant += "." + digits.substr(1);
  return fmt::format("{}{}e{}{:02d}", sign, mant, exp < 0 ? '-' : '+', std::abs(exp));
}

std::string string_repr(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos, has_double = s.find('"') != std::string::npos;
  char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (char32_t c : utf8_decode(s)) {
    if (c == static_cast<char32_t>(q) || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (py_isprintable(c)) {
      utf8_append(out, c);
    } else if (c < 0x100) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(c));
    } else if (c < 0x10000) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out += fmt::format("\\U{:08x}", static_cast<unsigned>(c));
    }
  }
  out.push_back(q);
  return out;
}

namespace {
std::string repr_items(const Value& v) {
  std::string out;
  if (v.is_generator()) return std::string("<") + v.type_name() + " object>";
  if (v.is_list() && v.list().view) {  // dict_items([('a', 1)])
    return std::string(v.type_name()) + "(" + repr_items(Value::list(v.items())) + ")";
  }
  if (v.is_list()) {
    bool tuple = v.list().tuple;
    out = tuple ? "(" : "[";
    for (size_t i = 0; i < v.items().size(); ++i) {
      if (i) out += ", ";
      out += py_repr(v.items()[i]);
    }
    if (tuple && v.items().size() == 1) out += ",";
    out += tuple ? ")" : "]";
    return out;
  }
  out = "{";
  bool first = true;
  for (const auto& [k, e] : v.dict().items) {
    if (!first) out += ", ";
    first = false;
    out += py_repr(k) + ": " + py_repr(e);
  }
  return out + "}";
}
}  // namespace

std::string py_str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return v.as_bool() ? "True" : "False";
    case Value::Kind::Int: return std::to_string(v.as_int());
    case Value::Kind::Float: return float_repr(v.as_float());
    case Value::Kind::String: return v.str();
    case Value::Kind::List:
    case Value::Kind::Dict: return repr_items(v);
    case Value::Kind::Namespace: return "<jinja2.utils.Namespace object>";  // Python adds an address
    case Value::Kind::Callable: return v.callable().describe();
  }
  return "";
}

std::string py_repr(const Value& v) {
  if (v.is_string()) return string_repr(v.str());
  if (v.is_undefined()) return "Undefined";
  return py_str(v);
}

namespace {
void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out.push_back('"');
  for (char32_t c : utf8_decode(s)) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || (ensure_ascii && c >= 0x7f)) {
          if (c >= 0x10000) {
            char32_t v = c - 0x10000;
            out += fmt::format("\\u{:04x}\\u{:04x}", static_cast<unsigned>(0xD800 + (v >> 10)),
                               static_cast<unsigned>(0xDC00 + (v & 0x3ff)));
          } else {
            out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
          }
        } else {
          utf8_append(out, c);
        }
    }
  }
  out.push_back('"');
}

std::string json_float(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return float_repr(d);
}

std::string json_key(const Value& k) {
  switch (k.kind()) {
    case Value::Kind::String: return k.str();
    case Value::Kind::Int: return std::to_string(k.as_int());
    case Value::Kind::Float: return json_float(k.as_float());
    case Value::Kind::Bool: return k.as_bool() ? "true" : "false";
    case Value::Kind::None: return "null";
    default: raise(ErrorKind::Type, std::string("keys must be str, int, float, bool or None, not ") + k.type_name());
  }
}

struct JsonWriter {
  const JsonDumpOptions& opt;
  std::string item_sep, key_sep;
  std::string out;

  void newline(int level) {
    out.push_back('\n');
    for (int i = 0; i < level; ++i) out += *opt.indent;
  }

  void write(const Value& v, int level) {
    switch (v.kind()) {
      case Value::Kind::None: out += "null"; return;
      case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
      case Value::Kind::Int: out += std::to_string(v.as_int()); return;
      case Value::Kind::Float: out += json_float(v.as_float()); return;
      case Value::Kind::String: json_string(out, v.str(), opt.ensure_ascii); return;
      case Value::Kind::List:
        if (!v.list().view) return write_list(v.items(), level);
        [[fallthrough]];
      case Value::Kind::Dict: return write_dict(v.dict(), level);
      default:
        raise(ErrorKind::Type, std::string("Object of type ") + v.type_name() + " is not JSON serializable");
    }
  }

  void write_list(const std::vector<Value>& items, int level) {
    if (items.empty()) {
      out += "[]";
      return;
    }
    out.push_back('[');
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += item_sep;
      if (opt.indent) newline(level + 1);
      write(items[i], level + 1);
    }
    if (opt.indent) newline(level);
    out.push_back(']');
  }

  void write_dict(const DictData& d, int level) {
    if (d.items.empty()) {
      out += "{}";
      return;
    }
    std::vector<std::pair<std::string, const Value*>> entries;
    for (const auto& [k, e] : d.items) entries.emplace_back(json_key(k), &e);
    if (opt.sort_keys) {
      std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    }
    out.push_back('{');
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i) out += item_sep;
      if (opt.indent) newline(level + 1);
      json_string(out, entries[i].first, opt.ensure_ascii);
      out += key_sep;
      write(*entries[i].second, level + 1);
    }
    if (opt.indent) newline(level);
    out.push_back('}');
  }
};
}  // namespace

std::string json_dumps(const Value& v, const JsonDumpOptions& opt) {
  JsonWriter w{opt, opt.item_separator.value_or(opt.indent ? "," : ", "), opt.key_separator.value_or(": "), {}};
  w.write(v, 0);
  return std::move(w.out);
}

}  // namespace slimkv::jinja
