#include "jinja/str_methods.h"

#include <algorithm>
#include <fmt/format.h>

#include "jinja/builtins.h"
#include "jinja/py_ops.h"
#include "jinja/py_text.h"
#include "jinja/template_error.h"
#include "jinja/utf8_text.h"

namespace slimkv::jinja {

std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right) {
  std::u32string u = utf8_decode(s), set = chars ? utf8_decode(*chars) : std::u32string();
  auto strip_it = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : py_isspace(c); };
  size_t b = 0, e = u.size();
  if (left) {
    while (b < e && strip_it(u[b])) ++b;
  }
  if (right) {
    while (e > b && strip_it(u[e - 1])) --e;
  }
  return utf8_encode(u.substr(b, e - b));
}

std::string py_upper_str(const std::string& s) {
  std::u32string u = utf8_decode(s);
  for (auto& c : u) c = py_upper(c);
  return utf8_encode(u);
}

std::string py_lower_str(const std::string& s) {
  std::u32string u = utf8_decode(s);
  for (auto& c : u) c = py_lower(c);
  return utf8_encode(u);
}

std::string py_capitalize(const std::string& s) {
  std::u32string u = utf8_decode(s);
  for (size_t i = 0; i < u.size(); ++i) u[i] = i == 0 ? py_upper(u[i]) : py_lower(u[i]);
  return utf8_encode(u);
}

namespace {

std::string py_title(const std::string& s) {
  std::u32string u = utf8_decode(s);
  bool prev_cased = false;
  for (auto& c : u) {
    bool cased = py_iscased_upper(c) || py_iscased_lower(c);
    c = cased ? (prev_cased ? py_lower(c) : py_upper(c)) : c;
    prev_cased = cased;
  }
  return utf8_encode(u);
}

bool is_linebreak(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || c == 0x1c || c == 0x1d || c == 0x1e || c == 0x85 ||
         c == 0x2028 || c == 0x2029;
}

// str.split / str.rsplit.
std::vector<Value> py_split(const std::u32string& u, const std::optional<std::u32string>& sep, int64_t maxsplit,
                            bool from_right) {
  std::vector<std::u32string> parts;
  if (!sep) {
    std::u32string s = u;
    if (from_right) std::reverse(s.begin(), s.end());
    size_t i = 0;
    while (true) {
      while (i < s.size() && py_isspace(s[i])) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) {
        size_t e = s.size();
        while (e > i && py_isspace(s[e - 1])) --e;
        parts.push_back(s.substr(i, e - i));
        break;
      }
      size_t j = i;
      while (j < s.size() && !py_isspace(s[j])) ++j;
      parts.push_back(s.substr(i, j - i));
      i = j;
    }
    if (from_right) {
      std::reverse(parts.begin(), parts.end());
      for (auto& p : parts) std::reverse(p.begin(), p.end());
    }
  } else {
    if (sep->empty()) raise(ErrorKind::Type, "empty separator");
    if (!from_right) {
      size_t start = 0, pos;
      while ((maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) &&
             (pos = u.find(*sep, start)) != std::u32string::npos) {
        parts.push_back(u.substr(start, pos - start));
        start = pos + sep->size();
      }
      parts.push_back(u.substr(start));
    } else {
      size_t end = u.size();
      while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
        if (end < sep->size()) break;
        size_t pos = u.rfind(*sep, end - sep->size());
        if (pos == std::u32string::npos) break;
        parts.push_back(u.substr(pos + sep->size(), end - pos - sep->size()));
        end = pos;
      }
      parts.push_back(u.substr(0, end));
      std::reverse(parts.begin(), parts.end());
    }
  }
  std::vector<Value> out;
  for (const auto& p : parts) out.emplace_back(utf8_encode(p));
  return out;
}

// Python's slice-style (start, end) adjustment for find / count / startswith.
std::pair<size_t, size_t> span(const BoundArgs& a, size_t i, size_t n) {
  auto adj = [&](size_t k, int64_t dflt) {
    int64_t v = a.get_int(k, dflt);
    if (v < 0) v = std::max<int64_t>(0, v + static_cast<int64_t>(n));
    return static_cast<size_t>(std::min<int64_t>(v, static_cast<int64_t>(n)));
  };
  return {adj(i, 0), adj(i + 1, static_cast<int64_t>(n))};
}

std::u32string str_arg(const BoundArgs& a, size_t i, const char* fname) {
  const Value& v = a.required(i);
  if (!v.is_string()) raise(ErrorKind::Type, fmt::format("{}() argument must be str, not {}", fname, v.type_name()));
  return utf8_decode(v.str());
}

Value affix_test(const std::u32string& u, const BoundArgs& a, bool prefix) {
  auto [b, e] = span(a, 1, u.size());
  std::vector<Value> cands = a.required(0).is_sequence() && a.required(0).list().tuple ? a.required(0).items()
                                                                                        : std::vector<Value>{a.required(0)};
  for (const Value& c : cands) {
    if (!c.is_string()) raise(ErrorKind::Type, "startswith/endswith first arg must be str or a tuple of str");
    std::u32string x = utf8_decode(c.str());
    if (b > e || x.size() > e - b) continue;
    if (prefix ? u.compare(b, x.size(), x) == 0 : u.compare(e - x.size(), x.size(), x) == 0) return Value(true);
  }
  return Value(false);
}

Value find_like(const std::u32string& u, const std::string& name, const BoundArgs& a) {
  std::u32string x = str_arg(a, 0, name.c_str());
  auto [b, e] = span(a, 1, u.size());
  if (name == "count") {
    if (b > e) return Value(0);
    if (x.empty()) return Value(static_cast<int64_t>(e - b + 1));
    int64_t n = 0;
    for (size_t p = b; (p = u.find(x, p)) != std::u32string::npos && p + x.size() <= e; p += x.size()) ++n;
    return Value(n);
  }
  bool rev = name == "rfind" || name == "rindex";
  int64_t found = -1;
  if (b <= e && x.size() <= e - b) {
    std::u32string_view win(u.data() + b, e - b);
    size_t p = rev ? win.rfind(x) : win.find(x);
    if (p != std::u32string_view::npos) found = static_cast<int64_t>(p + b);
  }
  if (found < 0 && (name == "index" || name == "rindex")) raise(ErrorKind::Type, "substring not found");
  return Value(found);
}

Value char_class(const std::u32string& u, const std::string& name) {
  if (u.empty()) return Value(false);
  if (name == "isupper" || name == "islower") {
    bool any = false;
    for (char32_t c : u) {
      if (name == "isupper" ? py_iscased_lower(c) : py_iscased_upper(c)) return Value(false);
      any |= py_iscased_upper(c) || py_iscased_lower(c);
    }
    return Value(any);
  }
  for (char32_t c : u) {
    bool ok = name == "isspace" ? py_isspace(c) : name == "isalpha" ? py_isalpha(c)
            : name == "isalnum" ? (py_isalpha(c) || py_isdigit(c)) : py_isdigit(c);
    if (!ok) return Value(false);
  }
  return Value(true);
}

Value pad(Evaluator& ev, const std::u32string& u, const std::string& name, const BoundArgs& a) {
  int64_t width = a.get_int(0, 0);
  ev.check_size(static_cast<size_t>(std::max<int64_t>(width, 0)) * 4);
  char32_t fill = ' ';
  if (name != "zfill" && a.has(1)) {
    std::u32string f = str_arg(a, 1, name.c_str());
    if (f.size() != 1) raise(ErrorKind::Type, "The fill character must be exactly one character long");
    fill = f[0];
  }
  if (width <= static_cast<int64_t>(u.size())) return Value(utf8_encode(u));
  size_t total = static_cast<size_t>(width) - u.size(), left = 0;
  if (name == "rjust") left = total;
  if (name == "center") left = total / 2 + (total & static_cast<size_t>(width) & 1);
  if (name == "zfill") {
    std::u32string r = u;
    size_t at = (!r.empty() && (r[0] == '+' || r[0] == '-')) ? 1 : 0;
    r.insert(at, total, U'0');
    return Value(utf8_encode(r));
  }
  return Value(utf8_encode(std::u32string(left, fill) + u + std::u32string(total - left, fill)));
}

// The rest of str's methods: searching, joining, splitting in three, affixes, padding and character classes.
Value search_or_shape_method(Evaluator& ev, const std::string& s, const std::u32string& u, const std::string& name,
                             const CallArgs& args) {
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    return find_like(u, name, BoundArgs(name, args, {"sub", "start", "end"}));
  }
  if (name == "join") {
    BoundArgs a(name, args, {"iterable"});
    std::string out;
    std::vector<Value> items = py_iterate(a.required(0));
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string()) {
        raise(ErrorKind::Type, fmt::format("sequence item {}: expected str instance, {} found", i, items[i].type_name()));
      }
      if (i) out += s;
      out += items[i].str();
      ev.check_size(out.size());
    }
    ev.charge(static_cast<int64_t>(out.size()));
    return Value(std::move(out));
  }
  if (name == "partition" || name == "rpartition") {
    BoundArgs a(name, args, {"sep"});
    std::u32string sep = str_arg(a, 0, name.c_str());
    if (sep.empty()) raise(ErrorKind::Type, "empty separator");
    size_t p = name == "partition" ? u.find(sep) : u.rfind(sep);
    if (p == std::u32string::npos) {
      return name == "partition" ? Value::list({Value(s), Value(""), Value("")}, true)
                                 : Value::list({Value(""), Value(""), Value(s)}, true);
    }
    return Value::list({Value(utf8_encode(u.substr(0, p))), Value(utf8_encode(sep)),
                        Value(utf8_encode(u.substr(p + sep.size())))}, true);
  }
  if (name == "removeprefix" || name == "removesuffix") {
    BoundArgs a(name, args, {"affix"});
    std::u32string x = str_arg(a, 0, name.c_str());
    if (x.size() <= u.size()) {
      if (name == "removeprefix" && u.compare(0, x.size(), x) == 0) return Value(utf8_encode(u.substr(x.size())));
      if (name == "removesuffix" && !x.empty() && u.compare(u.size() - x.size(), x.size(), x) == 0) {
        return Value(utf8_encode(u.substr(0, u.size() - x.size())));
      }
    }
    return Value(s);
  }
  if (name == "zfill" || name == "center" || name == "ljust" || name == "rjust") {
    return pad(ev, u, name, BoundArgs(name, args, {"width", "fillchar"}));
  }
  BoundArgs a(name, args, {});
  if (name == "isnumeric" || name == "isdecimal") return char_class(u, "isdigit");
  return char_class(u, name);
}

}  // namespace

std::string py_replace(Evaluator& ev, const std::string& s, const std::string& old, const std::string& repl,
                       int64_t count) {
  std::u32string u = utf8_decode(s), o = utf8_decode(old), r = utf8_decode(repl), out;
  size_t i = 0;
  int64_t done = 0;
  while (i <= u.size()) {
    if (count >= 0 && done >= count) break;
    size_t p = o.empty() ? i : u.find(o, i);
    if (p == std::u32string::npos) break;
    out.append(u, i, p - i);
    out += r;
    ++done;
    ev.check_size((out.size() + u.size()) * 4);
    if (o.empty()) {
      if (p < u.size()) out.push_back(u[p]);
      i = p + 1;
    } else {
      i = p + o.size();
    }
  }
  if (i < u.size()) out.append(u, i, std::u32string::npos);
  ev.charge(static_cast<int64_t>(out.size()));
  return utf8_encode(out);
}

std::vector<std::string> py_splitlines(const std::string& s, bool keepends) {
  std::u32string u = utf8_decode(s);
  std::vector<std::string> out;
  size_t i = 0, start = 0;
  while (i < u.size()) {
    if (!is_linebreak(u[i])) {
      ++i;
      continue;
    }
    size_t eol = i + ((u[i] == '\r' && i + 1 < u.size() && u[i + 1] == '\n') ? 2 : 1);
    out.push_back(utf8_encode(u.substr(start, (keepends ? eol : i) - start)));
    i = start = eol;
  }
  if (start < u.size()) out.push_back(utf8_encode(u.substr(start)));
  return out;
}

Value call_str_method(Evaluator& ev, const std::string& s, const std::string& name, const CallArgs& args) {
  ev.charge(static_cast<int64_t>(s.size() / 16));
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    BoundArgs a(name, args, {"chars"});
    std::optional<std::string> chars;
    if (a.has(0) && !a.get(0).is_none()) chars = py_str(a.get(0));
    return Value(py_strip(s, chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize" || name == "swapcase" || name == "casefold") {
    BoundArgs a(name, args, {});
    if (name == "upper") return Value(py_upper_str(s));
    if (name == "lower" || name == "casefold") return Value(py_lower_str(s));
    if (name == "title") return Value(py_title(s));
    if (name == "capitalize") return Value(py_capitalize(s));
    std::u32string u = utf8_decode(s);
    for (auto& c : u) c = py_iscased_upper(c) ? py_lower(c) : py_upper(c);
    return Value(utf8_encode(u));
  }
  std::u32string u = utf8_decode(s);
  if (name == "split" || name == "rsplit") {
    BoundArgs a(name, args, {"sep", "maxsplit"});
    std::optional<std::u32string> sep;
    if (a.has(0) && !a.get(0).is_none()) sep = str_arg(a, 0, name.c_str());
    return Value::list(py_split(u, sep, a.get_int(1, -1), name == "rsplit"));
  }
  if (name == "splitlines") {
    BoundArgs a(name, args, {"keepends"});
    std::vector<Value> out;
    for (auto& l : py_splitlines(s, a.get_or(0, Value(false)).truthy())) out.emplace_back(std::move(l));
    return Value::list(std::move(out));
  }
  if (name == "startswith" || name == "endswith") {
    return affix_test(u, BoundArgs(name, args, {"prefix", "start", "end"}), name == "startswith");
  }
  if (name == "replace") {
    BoundArgs a(name, args, {"old", "new", "count"});
    return Value(py_replace(ev, s, utf8_encode(str_arg(a, 0, "replace")), utf8_encode(str_arg(a, 1, "replace")), a.get_int(2, -1)));
  }
  return search_or_shape_method(ev, s, u, name, args);
}

}  // namespace slimkv::jinja
