#!/usr/bin/env python3
"""Writes tests/jinja/engine_cases.json: one case per supported construct with jinja2's render (the expectation)."""
import json, os, sys
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jinja_diff import make_env
env = make_env()
# Each construct the engine supports, rendered by jinja2 (as transformers configures it) into engine_cases.json,
# which tests/jinja/engine_cases_test.cpp replays. Re-run after adding a case: python3 tests/jinja/make_engine_cases.py
C = [
 # name, template, context
 ("print_types", "{{ 1 }}|{{ 1.0 }}|{{ 0.1 }}|{{ 1e16 }}|{{ true }}|{{ none }}|{{ 'a' }}|{{ [1, 'b', none] }}|{{ {'k': 'v', 'n': 1.5} }}|{{ (1,) }}", {}),
 ("repr_quotes", "{{ [\"it's\", 'say \"hi\"', 'a\\nb', 'back\\\\slash'] }}", {}),
 ("undefined_prints_empty", "[{{ nope }}][{{ nope is defined }}][{{ d.missing is defined }}][{{ d.missing | default('x') }}]", {"d": {}}),
 ("whitespace_control", "a  {{- 'b' -}}  c\n  {%- if true -%}  d  {%- endif -%}  e", {}),
 ("trim_lstrip_blocks", "<ul>\n    {% for x in xs %}\n    <li>{{ x }}</li>\n    {% endfor %}\n</ul>\n", {"xs": [1, 2]}),
 ("plus_disables_lstrip", "a\n    {%+ if true %}b{% endif %}\n", {}),
 ("comment_trim", "a\n{# note #}\nb {#- x -#} c", {}),
 ("raw_block", "{% raw %}{{ not evaluated }}{% endraw %}", {}),
 ("if_elif_else", "{% for n in [1, 2, 3] %}{% if n == 1 %}one{% elif n == 2 %}two{% else %}many{% endif %},{% endfor %}", {}),
 ("loop_vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem | default('-') }}{{ loop.nextitem | default('-') }};{% endfor %}", {}),
 ("loop_filter_and_else", "{% for x in xs if x is odd %}{{ x }}/{{ loop.length }} {% else %}none{% endfor %}|{% for x in [] %}x{% else %}empty{% endfor %}", {"xs": [1, 2, 3, 4, 5]}),
 ("unpacking_items", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {"d": {"b": 1, "a": 2}}),
 ("break_continue", "{% for x in range(10) %}{% if x is even %}{% continue %}{% endif %}{% if x > 6 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
 ("set_scoping", "{% set x = 1 %}{% for i in [1, 2] %}{% set x = x + i %}{{ x }}{% endfor %}|{{ x }}", {}),
 ("namespace", "{% set ns = namespace(total=0, names=[]) %}{% for m in msgs %}{% set ns.total = ns.total + 1 %}{% set ns.names = ns.names + [m.role] %}{% endfor %}{{ ns.total }} {{ ns.names }}", {"msgs": [{"role": "user"}, {"role": "assistant"}]}),
 ("block_set", "{% set body %}Hello {{ name }}{% endset %}[{{ body | upper }}]{% set t | trim %}  x  {% endset %}[{{ t }}]", {"name": "Ana"}),
 ("macro_defaults_caller", "{% macro tag(name, cls='c') %}<{{ name }} class={{ cls }}>{{ caller() if caller is defined }}</{{ name }}>{% endmacro %}{{ tag('a') }}{% call tag('b', cls='x') %}in{% endcall %}", {}),
 ("macro_recursion", "{% macro f(n) %}{{ n }}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}", {}),
 ("call_with_args", "{% macro list(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(x) list([1, 2]) %}<{{ x }}>{% endcall %}", {}),
 ("filter_block", "{% filter upper %}abc{{ 'd' }}{% endfilter %}", {}),
 ("generation_block", "{% generation %}kept {{ 1 }}{% endgeneration %}", {}),
 ("slices", "{{ s[1:3] }}|{{ s[::-1] }}|{{ xs[-2:] }}|{{ xs[::2] }}|{{ s[-1] }}|{{ 'héllo'[1:3] }}", {"s": "abcdef", "xs": [1, 2, 3, 4]}),
 ("arith", "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7 / 2 }} {{ 1 + 2.5 }} {{ 3 * 'ab' }} {{ 2 ** 3 ** 2 }}", {}),
 ("concat_tilde", "{{ 'a' ~ 1 ~ none ~ true ~ [1] }}", {}),
 ("in_not_in", "{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }}", {}),
 ("tests", "{{ none is none }} {{ 1 is number }} {{ true is number }} {{ 1 is integer }} {{ 1.0 is float }} {{ 'a' is string }} {{ {} is mapping }} {{ [] is sequence }} {{ 3 is odd }} {{ 4 is divisibleby 2 }} {{ x is undefined }} {{ true is true }} {{ 0 is false }} {{ 2 is in([1, 2]) }} {{ 1 is eq 1 }} {{ 'A' is upper }}", {}),
 ("conditional_expr", "{{ 'y' if true else 'n' }}{{ 'y' if false }}|{{ ('a' if false else 'b') | upper }}", {}),
 ("and_or_not", "{{ 0 or 'x' }} {{ 1 and 'y' }} {{ not 0 }} {{ [] or none }} {{ 'a' and '' }}", {}),
 ("comparisons", "{{ 1 < 2 < 3 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }} {{ 1 != 2 }} {{ 2 >= 2 }}", {}),
 ("str_methods", "{{ '  x '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'abc'.startswith('ab') }}|{{ 'abc'.endswith(('x', 'c')) }}|{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'hello world'.title() }}|{{ 'hELLO'.capitalize() }}|{{ 'abcabc'.find('c') }}|{{ 'abcabc'.count('b') }}|{{ 'x'.upper() }}{{ 'Y'.lower() }}|{{ 'a-b-c'.rsplit('-', 1) }}|{{ '\\n x\\n'.lstrip() }}", {}),
 ("dict_methods", "{{ d.keys() | list }} {{ d.values() | list }} {{ d.get('a') }} {{ d.get('z', 'dflt') }} {{ d.get('z') }} {{ d.items() | list }}", {"d": {"a": 1, "b": [2]}}),
 ("filters_text", "{{ '  x  ' | trim }}|{{ 'xaxbx' | trim('x') }}|{{ 'hello world' | title }}|{{ 'ab' | upper }}|{{ 'aXb' | lower }}|{{ 'abc' | capitalize }}|{{ 'aaa' | replace('a', 'b') }}|{{ 'a\\nb' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}|{{ '<&>' | escape }}|{{ 3 | string }}|{{ 'one two  three' | wordcount }}", {}),
 ("filters_seq", "{{ xs | length }} {{ xs | first }} {{ xs | last }} {{ xs | join('-') }} {{ xs | sum }} {{ xs | max }} {{ xs | min }} {{ xs | reverse | list }} {{ xs | sort(reverse=true) }} {{ [3, 1, 3] | unique | list }} {{ xs | select('odd') | list }} {{ xs | reject('odd') | list }} {{ 'abc' | list }}", {"xs": [3, 1, 2]}),
 ("filters_attr", "{{ ms | map(attribute='role') | join(',') }} {{ ms | selectattr('role', 'equalto', 'user') | list | length }} {{ ms | rejectattr('role', 'eq', 'user') | map(attribute='content') | first }} {{ ms | map(attribute='x', default='?') | list }} {{ ['a', 'b'] | map('upper') | list }}", {"ms": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}),
 ("filters_dict", "{{ d | dictsort }} {{ d | dictsort(reverse=true) | first }} {{ d | items | list }} {{ d | length }}", {"d": {"b": 2, "a": 1, "C": 3}}),
 ("filters_default", "{{ x | default('d') }} {{ '' | default('e', true) }} {{ '' | d('f') }} {{ none | default('g') }}", {}),
 ("filters_numbers", "{{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int(7) }} {{ 3 | float }} {{ '2.5' | float }} {{ -3 | abs }} {{ 2.5 | round }} {{ 3.14159 | round(2) }} {{ 2.1 | round(0, 'ceil') }} {{ 2.9 | round(0, 'floor') }}", {}),
 ("tojson", "{{ d | tojson }}|{{ d | tojson(indent=2) }}|{{ d | tojson(sort_keys=true) }}|{{ 'é\"\\n' | tojson }}|{{ [] | tojson(indent=2) }}|{{ 1.0 | tojson }}", {"d": {"z": [1, {"a": None}], "a": True, "u": "日本"}}),
 ("batch", "{{ [1, 2, 3, 4, 5] | batch(2) | list }} {{ [1, 2, 3] | batch(2, 0) | list }}", {}),
 ("range_dict_globals", "{{ range(3) | list }} {{ range(1, 10, 4) | list }} {{ dict(a=1, b='x') }} {{ namespace(a=1).a }}", {}),
 ("strftime_now", "{{ strftime_now('%d %b %Y') }} {{ strftime_now('%Y-%m-%d') }}", {}),
 ("string_escapes", "{{ 'tab\\there' }}|{{ \"q'uote\" }}|{{ 'uni\\u00e9' }}|{{ 'a' 'b' }}", {}),
 ("with_block", "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]", {}),
 ("integer_literals", "{{ 1_000 }} {{ 0x1F }} {{ 0b101 }} {{ 0o17 }} {{ 1.5e3 }}", {}),
 ("attr_vs_item", "{{ d.items is callable }}|{{ d['items'] }}|{{ d.name }}|{{ d['name'] }}|{{ xs.0 }}", {"d": {"name": "n", "items": "it"}, "xs": ["zero"]}),
]
out = []
for name, tpl, ctx in C:
    try:
        r = {"rendered": env.from_string(tpl).render(**ctx)}
    except Exception as e:
        r = {"error": str(e)}
    out.append({"name": name, "template": tpl, "context": ctx, **r})
json.dump(out, open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'engine_cases.json'), 'w', encoding='utf-8'), ensure_ascii=False, indent=1)
for o in out: print(o["name"], json.dumps(o.get("rendered", o.get("error")), ensure_ascii=False)[:150])
