// The engine's errors and sandbox: each failure is a TemplateError of the right kind (raise_exception's message
// verbatim, so the server can name the rule), never a crash or a hang; the limits hold; values come in from JSON.
#include <gtest/gtest.h>

#include "jinja/template.h"

namespace slimkv::test {
namespace {

using jinja::ErrorKind;
using jinja::Template;
using ojson = nlohmann::ordered_json;

std::string render_text(const std::string& tpl, const ojson& ctx = ojson::object(), jinja::Options opt = {}) {
  return Template::parse(tpl, opt).render(ctx);
}

ErrorKind error_kind_of(const std::string& tpl, const ojson& ctx = ojson::object(), jinja::Options opt = {},
                        std::string* msg = nullptr) {
  try {
    render_text(tpl, ctx, opt);
  } catch (const jinja::TemplateError& e) {
    if (msg) *msg = e.what();
    return e.kind();
  }
  ADD_FAILURE() << "no error from " << tpl;
  return ErrorKind::Syntax;
}

TEST(JinjaErrors, RaiseExceptionCarriesTheTemplatesMessage) {
  std::string msg;
  EXPECT_EQ(error_kind_of("{{ raise_exception('Conversation roles must alternate user/assistant') }}", ojson::object(),
                          {}, &msg),
            ErrorKind::Raised);
  EXPECT_EQ(msg, "Conversation roles must alternate user/assistant");
  // A raised error is a slimkv::Error too (the CLI's single catch).
  EXPECT_THROW(render_text("{{ raise_exception('x') }}"), Error);
}

TEST(JinjaErrors, SyntaxErrorsNameTheLine) {
  std::string msg;
  try {
    Template::parse("line one\n{% if x %}\n{% endfor %}");
    FAIL();
  } catch (const jinja::TemplateError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Syntax);
    msg = e.what();
  }
  EXPECT_NE(msg.find("line 3"), std::string::npos) << msg;
  for (const char* bad : {"{{ 1 +  }}", "{% for %}", "{% if x %}", "{{ 'unterminated }}", "{# open", "{{ (1 }}",
                          "{% break %}", "{% include 'x' %}", "{% for x in y recursive %}{% endfor %}", "{{ x | nofilter }}",
                          "{% macro m(a=1, b) %}{% endmacro %}", "{{ 99999999999999999999 }}"}) {
    EXPECT_THROW(Template::parse(bad), jinja::TemplateError) << bad;
  }
  // Unknown filters inside an if are only an error when they run (jinja2's soft frames).
  EXPECT_EQ(render_text("{% if false %}{{ x | nofilter }}{% endif %}ok"), "ok");
}

TEST(JinjaErrors, UndefinedBehavesLikeJinja2sDefault) {
  EXPECT_EQ(render_text("[{{ x }}][{{ x | length }}][{% for i in x %}i{% endfor %}][{{ x is defined }}]"), "[][0][][False]");
  EXPECT_EQ(error_kind_of("{{ x.y }}"), ErrorKind::Undefined);
  EXPECT_EQ(error_kind_of("{{ x + 1 }}"), ErrorKind::Undefined);
  EXPECT_EQ(error_kind_of("{{ x() }}"), ErrorKind::Undefined);
  EXPECT_EQ(render_text("{{ d.y is defined }}{{ 'no' if d.y is not defined else d.y.z }}", {{"d", ojson::object()}}),
            "Falseno");
}

TEST(JinjaErrors, PythonTypeErrors) {
  EXPECT_EQ(error_kind_of("{{ 'a' + 1 }}"), ErrorKind::Type);
  EXPECT_EQ(error_kind_of("{{ 1 / 0 }}"), ErrorKind::Type);
  EXPECT_EQ(error_kind_of("{{ 1 // 0 }}"), ErrorKind::Type);
  EXPECT_EQ(error_kind_of("{{ 5 | length }}"), ErrorKind::Type);
  EXPECT_EQ(error_kind_of("{% for a, b in [1] %}{% endfor %}"), ErrorKind::Type);
  EXPECT_EQ(error_kind_of("{% set x = 1 %}{% set x.y = 2 %}"), ErrorKind::Type);
  EXPECT_EQ(error_kind_of("{{ 9223372036854775807 + 1 }}"), ErrorKind::Type);  // ints are 64-bit here
  EXPECT_EQ(error_kind_of("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}"), ErrorKind::Type);
}

TEST(JinjaSandbox, NoMutationNoInternals) {
  ojson ctx = {{"d", {{"k", 1}}}, {"xs", {1, 2}}};
  EXPECT_EQ(error_kind_of("{{ d.update({'k': 2}) }}", ctx), ErrorKind::Security);
  EXPECT_EQ(error_kind_of("{{ xs.append(3) }}", ctx), ErrorKind::Security);
  EXPECT_EQ(error_kind_of("{{ xs.pop() }}", ctx), ErrorKind::Security);
  // Python internals are not attributes here: they are undefined, and using them fails.
  EXPECT_EQ(render_text("[{{ ''.__class__ }}][{{ d.__dict__ is defined }}]", ctx), "[][False]");
  EXPECT_EQ(error_kind_of("{{ ''.__class__.__mro__ }}", ctx), ErrorKind::Undefined);
  EXPECT_EQ(error_kind_of("{{ range.__globals__.os }}", ctx), ErrorKind::Undefined);
}

TEST(JinjaSandbox, LimitsAreErrorsNotCrashes) {
  jinja::Options opt;
  opt.limits.max_loop_iterations = 1000;
  EXPECT_EQ(error_kind_of("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", ojson::object(), opt),
            ErrorKind::Limit);
  EXPECT_EQ(error_kind_of("{% for i in range(100001) %}{% endfor %}"), ErrorKind::Limit);  // jinja2's MAX_RANGE
  EXPECT_EQ(error_kind_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"), ErrorKind::Limit);
  opt = {};
  opt.limits.max_output_bytes = 1 << 16;
  EXPECT_EQ(error_kind_of("{{ 'x' * 100000 }}", ojson::object(), opt), ErrorKind::Limit);
  EXPECT_EQ(error_kind_of("{% for i in range(1000) %}{{ 'abcdefghij' * 10 }}{% endfor %}", ojson::object(), opt),
            ErrorKind::Limit);
  EXPECT_EQ(error_kind_of("{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"),
            ErrorKind::Limit);
  opt = {};
  opt.limits.max_work = 100000;
  EXPECT_EQ(error_kind_of("{% for i in range(100000) %}{{ i }}{% endfor %}", ojson::object(), opt), ErrorKind::Limit);
  // Deep nesting in the source is refused by the parser, not by the stack.
  EXPECT_THROW(Template::parse("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"), jinja::TemplateError);
  EXPECT_THROW(Template::parse("{{ " + std::string(100000, '[') + " }}"), jinja::TemplateError);
  EXPECT_THROW(Template::parse("{{ " + std::string(100000, '-') + "1 }}"), jinja::TemplateError);
  std::string chain = "{{ x", attrs = "{{ x", sum = "{{ 1";
  for (int i = 0; i < 100000; ++i) chain += " | trim", attrs += ".a", sum += " + 1";
  EXPECT_THROW(Template::parse(chain + " }}"), jinja::TemplateError);
  EXPECT_THROW(Template::parse(attrs + " }}"), jinja::TemplateError);
  EXPECT_THROW(Template::parse(sum + " }}"), jinja::TemplateError);
  // Values built at run time cannot nest without bound either, and cycles through a namespace are harmless.
  EXPECT_EQ(error_kind_of("{% set ns = namespace(x=[]) %}{% for i in range(10000) %}{% set ns.x = [ns.x] %}{% endfor %}"),
            ErrorKind::Limit);
  EXPECT_EQ(render_text("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns.me.me is defined }}"), "True");
  std::string nested;
  for (int i = 0; i < 300; ++i) nested += "{% if true %}";
  EXPECT_THROW(Template::parse(nested), jinja::TemplateError);
}

TEST(JinjaApi, ContextFromJsonKeepsKeyOrderAndTypes) {
  ojson ctx = ojson::parse(R"({"d": {"z": 1, "a": 2.0, "m": [true, null, "s"]}, "big": 12345678901})");
  EXPECT_EQ(render_text("{{ d }}|{{ d | tojson }}|{{ big + 1 }}", ctx),
            "{'z': 1, 'a': 2.0, 'm': [True, None, 's']}|{\"z\": 1, \"a\": 2.0, \"m\": [true, null, \"s\"]}|12345678902");
  // With plain nlohmann::json (sorted keys) the order is the sorted one.
  nlohmann::json sorted = nlohmann::json::parse(R"({"d": {"z": 1, "a": 2}})");
  EXPECT_EQ(Template::parse("{{ d }}").render(sorted), "{'a': 2, 'z': 1}");
  EXPECT_THROW(Template::parse("x").render(ojson::array()), jinja::TemplateError);
  // One parsed template renders many times, each render independent.
  auto t = Template::parse("{% set ns = namespace(n=0) %}{% for m in ms %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}");
  EXPECT_EQ(t.render(ojson{{"ms", {1, 2}}}), "2");
  EXPECT_EQ(t.render(ojson{{"ms", {1}}}), "1");
}

TEST(JinjaApi, SourceNewlinesAndInvalidUtf8) {
  EXPECT_EQ(render_text("a\r\nb\rc\n"), "a\nb\nc");  // newlines normalised, one trailing newline dropped
  EXPECT_EQ(render_text("{{ s | length }}|{{ s[1:] | length }}", {{"s", "h\xc3\xa9llo"}}), "5|4");
  // Bytes that are not UTF-8 pass through unchanged.
  EXPECT_EQ(render_text(std::string("x\xff{{ 'y\xfe' }}")), std::string("x\xffy\xfe"));
}

}  // namespace
}  // namespace slimkv::test
