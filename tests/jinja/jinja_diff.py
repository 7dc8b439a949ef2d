#!/usr/bin/env python3
"""Differential test of slimkv's Jinja engine (src/jinja/) against Python's jinja2 (Debian's python3-jinja2).

Generates random small templates and contexts from a grammar of the subset Hugging Face chat templates use (a fixed
seed, so every run is the same), renders each with jinja2 configured as transformers' apply_chat_template does
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, {% generation %}, tojson, raise_exception,
strftime_now frozen at 2026-01-01) and with the engine (test_jinja's JinjaDiff test, which reads and writes JSONL),
and compares: the same text, or an error in both (raise_exception's message must match).

Usage: jinja_diff.py TEST_JINJA_BINARY [--cases N] [--seed S] [--keep DIR]
Exit: 0 all match, 1 a mismatch (the first ones are printed), 77 jinja2 not installed (ctest: skipped)."""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from datetime import datetime

try:
    import jinja2
    from jinja2 import nodes
    from jinja2.ext import Extension
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    print("jinja_diff: python3-jinja2 is not installed (scripts/setup installs it); " +
          ("a failure in CI" if os.environ.get("CI") else "skipped"))
    sys.exit(1 if os.environ.get("CI") else 77)

FROZEN_NOW = datetime(2026, 1, 1, 0, 0, 0)


class AssistantTracker(Extension):  # transformers' {% generation %} tag, body rendered unchanged
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render_assistant", []), [], [], body).set_lineno(lineno)

    def _render_assistant(self, caller):
        return caller()


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: FROZEN_NOW.strftime(fmt)
    return env


# ---- the grammar -------------------------------------------------------------------------------------------------

WORDS = ["a", "b", "hello", "World", "x y", "  pad  ", "Tab\there", "line\nbreak", "it's", 'say "hi"', "émoji ✓",
         "UPPER", "mIxEd", "", " ", "3", "4.5", "a,b,c", "<tag>", "back\\slash", "über", "日本"]
TEXTS = ["", "x", " ", "  ", "\n", "\n\n", "\n  ", "  \n", "ab", " cd ", "\t", "\n    ", "end\n", "x\n  ", "\n\t"]
RARE_TEXTS = ["{", "}", "%", "#", "{ ", "%}", "}}"]  # next to a tag these make {{, {%, {#: lexer corner cases


class Gen:
    def __init__(self, rng):
        self.r = rng
        self.vars = {}  # name -> type, the variables in scope where the generator is
        self.macros = []  # (name, nparams, uses_caller)
        self.in_loop = 0
        self.depth = 0

    def pick(self, xs):
        return self.r.choice(xs)

    def chance(self, p):
        return self.r.random() < p

    # -- literals
    def str_lit(self):
        w = self.pick(WORDS)
        q = '"' if "'" in w else "'" if '"' in w else self.pick(["'", '"'])
        esc = w.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")
        return q + esc + q

    def int_lit(self):
        return str(self.pick([0, 1, 2, 3, 5, 7, 10, 42, 100, -1, -3]))

    def float_lit(self):
        return self.pick(["0.5", "1.0", "2.25", "3.14159", "0.1", "1e3", "2.5e-3", "10.0", "1e15", "0.0001"])

    def names_of(self, typ):
        return [n for n, t in self.vars.items() if t == typ]

    # -- typed expressions
    def expr(self, typ="any", depth=0):
        if typ == "any":
            typ = self.pick(["str", "str", "int", "num", "bool", "list", "dict", "none"])
        if depth > 2:
            return self.leaf(typ)
        e = getattr(self, "e_" + typ)(depth + 1)
        # Mostly parenthesised, so that composed expressions parse; sometimes bare, to exercise precedence.
        atomic = e.replace("_", "").replace(".", "").isalnum() or e[:1] in "'\"" and e[-1:] == e[:1] and len(e) > 1
        return e if atomic or self.chance(0.1) else "(" + e + ")"

    def leaf(self, typ):
        names = self.names_of(typ)
        if names and self.chance(0.6):
            return self.pick(names)
        return {"str": self.str_lit, "int": self.int_lit, "num": self.float_lit,
                "bool": lambda: self.pick(["true", "false", "True", "none is none"]),
                "list": lambda: self.pick(["[1, 2, 3]", "['a', 'b']", "[]", "xs", "ss"]),
                "dict": lambda: self.pick(["{'k': 1}", "{}", "d", "msgs[0]"]),
                "none": lambda: "none"}[typ]()

    def e_none(self, d):
        return self.pick(["none", "None", "nothing_here.x if false else none", "d.get('missing')"])

    def e_str(self, d):
        r = self.r.randrange(24)
        e = lambda t="str": self.expr(t, d)
        if r == 0: return self.str_lit()
        if r == 1: return self.leaf("str")
        if r == 2: return f"{e()} ~ {e('any')}"
        if r == 3: return f"{e()} + {e()}"
        if r == 4: return f"{e()} | {self.pick(['upper', 'lower', 'trim', 'title', 'capitalize', 'string'])}"
        if r == 5: return f"{e()}.{self.pick(['strip()', 'upper()', 'lower()', 'title()', 'capitalize()', 'lstrip()', 'rstrip()', 'swapcase()'])}"
        if r == 6: return f"{e()}.replace({self.str_lit()}, {self.str_lit()})"
        if r == 7: return f"{e('list')} | join({self.pick(['', repr(', '), repr('-'), self.str_lit()])})"
        if r == 8: return f"{e()}[{self.pick(['1:', ':2', '::-1', '1:3', '-2:', '::2', '0', '-1', '5'])}]"
        if r == 9: return f"({e()} if {e('bool')} else {e()})"
        if r == 10: return f"{e('any')} | string" if self.chance(0.8) else self.pick(["1e16", "1e17", "1.5e-7", "-0.0", "123456789.125", "2**0.5", "1/3", "0.1+0.2"]) + " | string"
        if r == 11: return f"{e(self.pick(['dict', 'list', 'str', 'int', 'num', 'none', 'bool']))} | tojson{self.pick(['', '(indent=2)', '(indent=4)', '(sort_keys=true)', '(indent=1, sort_keys=true)'])}"
        if r == 12: return f"{e()} * {self.pick(['0', '1', '2', '3'])}"
        if r == 13: return f"{e()}.split({self.pick(['', self.str_lit(), repr(' '), repr(',')])}) | join('|')"
        if r == 14: return f"msgs[{self.pick(['0', '1', '-1'])}].{self.pick(['role', 'content'])}"
        if r == 15: return f"{e()}.strip({self.str_lit()})"
        if r == 16: return f"{e()} | indent({self.pick(['2', '4', 'first=true', '2, true', 'width=3, blank=true'])})"
        if r == 17: return f"{e()} | replace({self.str_lit()}, {self.str_lit()})"
        if r == 18: return f"{e('list')} | first | string"
        if r == 19: return f"{e('any')} | default({self.str_lit()}{self.pick(['', ', true'])}) | string"
        if r == 20: return f"{e()} | center({self.pick(['5', '9', '12'])})"
        if r == 21: return f"{e()}.rsplit({self.str_lit()}, 1) | join('/')"
        if r == 22: return f"{e('dict')} | dictsort | string"
        return f"d.name ~ {e('int')}"

    def e_int(self, d):
        r = self.r.randrange(20)
        e = lambda t="int": self.expr(t, d)
        if r == 0: return self.int_lit()
        if r == 1: return self.leaf("int")
        if r == 2: return f"{e()} {self.pick(['+', '-', '*'])} {e()}"
        if r == 3: return f"{e()} {self.pick(['//', '%'])} {self.pick(['2', '3', '-4', '7'])}"
        if r == 4: return f"{e(self.pick(['str', 'list', 'dict']))} | {self.pick(['length', 'count'])}"
        if r == 5: return f"{e()} | abs"
        if r == 6: return f"{e('str')}.{self.pick(['find', 'count', 'rfind'])}({self.str_lit()})"
        if r == 7: return f"xs[{self.pick(['0', '1', '-1'])}]"
        if r == 8: return f"{e('list')} | {self.pick(['sum', 'max', 'min'])}" if self.chance(0.3) else "xs | sum"
        if r == 9: return f"{e('str')} | int"
        if r == 10: return f"{e('num')} | int"
        if r == 11: return f"{e()} ** {self.pick(['0', '1', '2', '3'])}"
        if r == 12: return f"range({self.pick(['3', '0', '2, 9, 3', '5, 0, -2'])}) | list | length"
        if r == 13: return f"{e('str')} | wordcount"
        if r == 14: return f"-{e()}"
        if r == 15: return f"({e()} if {e('bool')} else {e()})"
        if r == 16: return f"{e('list')}.index({self.pick(['1', '2', 'xs[0]'])})" if self.chance(0.3) else "xs.index(2)"
        if r == 17: return f"{e('bool')} | int"
        if r == 18: return f"xs | select('odd') | list | length"
        return f"{e()} + loop_len" if "loop_len" in self.vars else "n1 * 2"

    def e_num(self, d):
        r = self.r.randrange(10)
        e = lambda t="num": self.expr(t, d)
        if r == 0: return self.float_lit()
        if r == 1: return "f1"
        if r == 2: return f"{e()} {self.pick(['+', '-', '*'])} {e(self.pick(['num', 'int']))}"
        if r == 3: return f"{e(self.pick(['int', 'num']))} / {self.pick(['2', '4.0', '3', '0.5', '0'])}"
        if r == 4: return e() + " | round" + self.pick(["", "(1)", "(2)", "(0, 'floor')", "(1, 'ceil')"])
        if r == 5: return f"{e('str')} | float"
        if r == 6: return f"{e('int')} | float"
        if r == 7: return f"{e()} // {self.pick(['1', '2.5', '-2'])}"
        if r == 8: return f"{e()} % {self.pick(['1', '2.5', '-2'])}"
        return f"{e('int')} ** -1"

    def e_bool(self, d):
        r = self.r.randrange(20)
        e = lambda t="any": self.expr(t, d)
        if r == 0: return self.pick(["true", "false"])
        if r == 1: return f"{e('int')} {self.pick(['==', '!=', '<', '>', '<=', '>='])} {e('int')}"
        if r == 2: return f"{e('str')} {self.pick(['==', '!=', '<', '>='])} {e('str')}"
        if r == 3: return f"{e('str')} {self.pick(['in', 'not in'])} {e('str')}"
        if r == 4: return f"{e('int')} {self.pick(['in', 'not in'])} {e('list')}"
        if r == 5: return f"{e()} is {self.pick(['defined', 'undefined', 'none', 'string', 'number', 'integer', 'float', 'mapping', 'iterable', 'sequence', 'boolean', 'true', 'false', 'callable', 'lower', 'upper'])}"
        if r == 6: return f"{e()} is not {self.pick(['defined', 'none', 'string', 'mapping'])}"
        if r == 7: return f"{e('int')} is {self.pick(['odd', 'even', 'divisibleby 3', 'divisibleby(2)', 'eq 3', 'gt 2', 'lt(5)', 'in([1, 2, 3])', 'sameas 1'])}"
        if r == 8: return f"{e('bool')} {self.pick(['and', 'or'])} {e('bool')}"
        if r == 9: return f"not {e('bool')}"
        if r == 10: return f"{e('str')}.{self.pick(['startswith', 'endswith'])}({self.str_lit()})"
        if r == 11: return f"{self.pick(['nothing_here', 'd.missing', 'msgs[0].missing', 'd.name'])} is defined"
        if r == 12: return f"{e()}"  # truthiness of anything
        if r == 13: return f"{self.str_lit()} in d"
        if r == 14: return f"{e('str')}.{self.pick(['isdigit', 'isalpha', 'isspace', 'isupper', 'islower', 'isalnum'])}()"
        if r == 15: return f"{e('list')} == {e('list')}"
        if r == 16: return f"{e('any')} == {e('any')}"
        if r == 17: return f"{e('int')} < {e('int')} < {e('int')}"
        if r == 18: return f"(msgs | selectattr('role', 'equalto', 'user') | list | length) > 1"
        return "b1"

    def e_list(self, d):
        r = self.r.randrange(20)
        e = lambda t="list": self.expr(t, d)
        if r == 0: return self.leaf("list")
        if r == 1: return f"[{', '.join(self.expr('any', d) for _ in range(self.r.randrange(4)))}]"
        if r == 2: return f"range({self.pick(['3', '1, 4', '0', '10, 0, -3'])}) | list"
        if r == 3: return f"{e()}[{self.pick(['1:', ':2', '::-1', '::2', '-2:'])}]"
        if r == 4: return f"{e()} + {e()}"
        if r == 5: return f"{e()} | {self.pick(['reverse', 'unique', 'sort', 'list'])} | list"
        if r == 6: return f"xs | {self.pick(['select', 'reject'])}({self.pick(['', repr('odd'), repr('even'), repr('gt') + ', 2'])}) | list"
        if r == 7: return f"msgs | {self.pick(['selectattr', 'rejectattr'])}('role', {self.pick(['', repr('equalto') + ', ' + repr('user'), repr('ne') + ', ' + repr('system'), repr('defined')])}) | list"
        if r == 8: return f"msgs | map(attribute={self.pick(['role', 'content', 'missing'])!r}{self.pick(['', ', default=' + repr('dflt')])}) | list"
        if r == 9: return f"{self.pick(['ss', 'xs', '[1, 2]'])} | map({self.pick(['string', 'upper', 'int', 'string'])!r}) | list" if True else ""
        if r == 10: return f"d.{self.pick(['items', 'keys', 'values'])}() | list"
        if r == 11: return f"{self.expr('str', d)}.split({self.pick(['', repr(' '), repr(',')])})"
        if r == 12: return f"ss | sort(reverse={self.pick(['true', 'false'])}{self.pick(['', ', case_sensitive=true'])})"
        if r == 13: return f"d | dictsort{self.pick(['', '(reverse=true)', '(by=' + repr('value') + ')'])}" if self.chance(0.3) else "d2 | dictsort"
        if r == 14: return f"xs | batch({self.pick(['2', '3'])}{self.pick(['', ', 0'])}) | list"
        if r == 15: return f"({self.expr('any', d)}, {self.expr('any', d)})"
        if r == 16: return f"{e()} * {self.pick(['0', '2'])}"
        if r == 17: return f"d2 | items | list"
        if r == 18: return f"msgs | sort(attribute='role') | map(attribute='content') | list"
        return f"[{self.expr('int', d)}, {self.expr('str', d)}]"

    def e_dict(self, d):
        r = self.r.randrange(8)
        if r == 0: return self.leaf("dict")
        if r == 1: return "{" + ", ".join(f"{self.str_lit()}: {self.expr('any', d)}" for _ in range(self.r.randrange(3))) + "}"
        if r == 2: return f"dict({self.pick(['a=1', 'a=1, b=' + repr('x'), ''])})"
        if r == 3: return f"msgs[{self.pick(['0', '1', '-1'])}]"
        if r == 4: return "d"
        if r == 5: return "{1: 'one', 2.5: none, true: [1]}" if self.chance(0.5) else "d2"
        if r == 6: return "nested.inner"
        return "{'k': {'n': [1, {'deep': 'x'}]}}"

    # -- statements
    def ws(self, left):
        return self.pick(["", "", "", "-"] + (["+"] if left else []))

    def btag(self, body):
        return "{%" + self.ws(True) + " " + body + " " + self.ws(False) + "%}"

    def text(self):
        t = self.pick(RARE_TEXTS) if self.chance(0.03) else self.pick(TEXTS)
        return t + self.pick(["", "", "  ", "\n", "\t"])

    def output(self):
        return "{{" + self.pick(["", "", "-"]) + " " + self.expr("any") + " " + self.pick(["", "", "-"]) + "}}"

    def body(self, n=None):
        self.depth += 1
        out = []
        for _ in range(n if n is not None else self.r.randrange(1, 4)):
            out.append(self.stmt())
        self.depth -= 1
        return "".join(out)

    def scoped_body(self, extra):
        saved = dict(self.vars)
        self.vars.update(extra)
        b = self.body()
        self.vars = saved
        return b

    def stmt(self):
        if self.depth > 3:
            return self.pick([self.text(), self.output()])
        r = self.r.randrange(22)
        if r < 5: return self.text()
        if r < 9: return self.output()
        if r == 9: return self.s_if()
        if r in (10, 11): return self.s_for()
        if r == 12: return self.s_set()
        if r == 13: return self.s_namespace()
        if r == 14: return self.s_macro()
        if r == 15: return self.s_call()
        if r == 16: return self.btag("filter " + self.pick(["upper", "lower", "trim", "title", "upper | trim", "indent(2)", "replace('a', 'b')"])) + self.body() + self.btag("endfilter")
        if r == 17: return "{#" + self.pick(["", "-"]) + " comment " + self.pick(["", "-"]) + "#}" + self.text()
        if r == 18 and self.in_loop: return self.btag(f"if {self.expr('bool')}") + self.btag(self.pick(["break", "continue"])) + self.btag("endif")
        if r == 19: return self.btag("set blk") + self.body() + self.btag("endset") + "{{ blk }}"
        if r == 20: return self.btag("generation") + self.body() + self.btag("endgeneration")
        if r == 21 and self.chance(0.3): return self.btag("if " + self.expr("bool")) + "{{ raise_exception('rule: ' ~ " + self.expr("str") + ") }}" + self.btag("endif")
        return self.pick(["{% raw %}{{ raw }}{% endraw %}", "{{ strftime_now('%Y-%m-%d %d %b') }}", "\n  {%- if true %}t{% endif -%}\n", "{{ with_default | default('dd') }}"])

    def s_if(self):
        s = self.btag(f"if {self.expr('bool')}") + self.body()
        for _ in range(self.r.randrange(2)):
            s += self.btag(f"elif {self.expr('bool')}") + self.body()
        if self.chance(0.5):
            s += self.btag("else") + self.body()
        return s + self.btag("endif")

    def s_for(self):
        kind = self.r.randrange(6)
        if kind == 0: head, extra = "x in xs", {"x": "int"}
        elif kind == 1: head, extra = "s in ss", {"s": "str"}
        elif kind == 2: head, extra = "m in msgs", {"m": "dict"}
        elif kind == 3: head, extra = "k, v in d.items()", {"k": "str"}
        elif kind == 4: head, extra = f"i in range({self.pick(['3', '0', '1, 5', '4, 0, -1'])})", {"i": "int"}
        else: head, extra = "c in " + self.expr("str"), {"c": "str"}
        if self.chance(0.25):
            var = head.split()[0].rstrip(",")
            head += f" if {self.pick([var + ' is defined', 'loop is not defined', 'not ' + var + ' is none', var + ' != 2'])}"
        extra = dict(extra, **{"loop.index": "int", "loop.index0": "int", "loop.length": "int", "loop.revindex": "int",
                               "loop.first": "bool", "loop.last": "bool", "loop_len": "int"})
        self.in_loop += 1
        b = self.scoped_body(extra)
        if self.chance(0.3):
            b += self.pick(["{{ loop.previtem | default('^') }}", "{{ loop.nextitem is defined }}", "{{ loop.cycle('o', 'e') }}", "{{ loop.revindex0 }}"])
        self.in_loop -= 1
        s = self.btag("for " + head) + b
        if self.chance(0.3):
            s += self.btag("else") + self.body()
        return s + self.btag("endfor")

    def s_set(self):
        typ = self.pick(["str", "int", "list", "bool", "num"])
        name = self.pick(["v1", "v2", "v3"])
        s = self.btag(f"set {name} = {self.expr(typ)}")
        if self.depth <= 1:
            self.vars[name] = typ
        return s + "{{ " + name + " }}"

    def s_namespace(self):
        s = self.btag(f"set ns = namespace(count={self.int_lit()}, text='', seen=[])")
        self.in_loop += 1
        s += self.btag("for x in xs") + self.btag("set ns.count = ns.count + x") + self.btag("set ns.text = ns.text ~ x") + self.btag("set ns.seen = ns.seen + [x]") + self.btag("endfor")
        self.in_loop -= 1
        return s + "{{ ns.count }}|{{ ns.text }}|{{ ns.seen }}"

    def s_macro(self):
        name = f"m{len(self.macros)}"
        params = self.pick([("a",), ("a", "b='dflt'"), ("a", "b", "c=3"), ()])
        extra = {p.split("=")[0]: "str" for p in params}
        uses_caller = False
        saved, self.vars = self.vars, dict(self.vars, **extra)
        loops, self.in_loop = self.in_loop, 0
        b = self.body()
        if self.chance(0.3):
            b += "{{ caller() if caller is defined else 'nocaller' }}"
            uses_caller = True
        if self.chance(0.2):
            b += "{{ varargs | length }}{{ kwargs | dictsort }}"
        self.vars, self.in_loop = saved, loops
        self.macros.append((name, len([p for p in params if "=" not in p]), len(params)))
        s = self.btag(f"macro {name}({', '.join(params)})") + b + self.btag("endmacro")
        return s + self.call_expr()

    def call_expr(self):
        if not self.macros:
            return ""
        name, need, total = self.pick(self.macros)
        args = [self.expr("str") for _ in range(self.pick([need, need, total, total + 1]))]
        if self.chance(0.3) and total > need:
            args = args[:need] + ["b=" + self.expr("str")]
        return "{{ " + f"{name}({', '.join(args)})" + " }}"

    def s_call(self):
        if not self.macros:
            return self.s_macro()
        name, need, total = self.pick(self.macros)
        args = ", ".join(self.expr("str") for _ in range(need))
        return self.btag(f"call {name}({args})") + self.body() + self.btag("endcall")

    def context(self):
        r = self.r
        msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": r.choice(WORDS)},
                {"role": "assistant", "content": r.choice(WORDS)}, {"role": "user", "content": "Q2 "}]
        return {"s1": r.choice(WORDS), "s2": r.choice(WORDS), "n1": r.choice([0, 1, 7, -3, 12]), "n2": r.choice([2, 5, 10]),
                "f1": r.choice([0.5, 1.0, 2.75, -1.5, 1e-7]), "b1": r.choice([True, False]), "xs": [1, 2, 3, 4, 5][: r.randrange(1, 6)],
                "ss": ["beta", "Alpha", "gamma", "alpha"][: r.randrange(1, 5)], "msgs": msgs[: r.randrange(1, 5)],
                "d": {"name": "Ana", "age": 31, "tags": ["x", "y"], "score": 2.5, "ok": True, "none": None},
                "d2": {"b": 2, "a": 1, "C": 3}, "nested": {"inner": {"z": 1, "a": [1, 2]}}, "nothing": None,
                "with_default": r.choice([None, "set", ""]), "tools": None}

    def case(self):
        self.vars = {"s1": "str", "s2": "str", "n1": "int", "n2": "int", "f1": "num", "b1": "bool", "xs": "list",
                     "ss": "list", "msgs": "list", "d": "dict", "d2": "dict", "d.name": "str", "d.age": "int"}
        self.macros = []
        self.depth = 0
        tpl = self.body(self.r.randrange(2, 7))
        return tpl, self.context()


def render_py(env, tpl, ctx):
    try:
        return {"rendered": env.from_string(tpl).render(**ctx)}
    except Exception as e:  # noqa: BLE001 - any jinja2 / Python error is an expected error
        return {"error": str(e), "error_type": type(e).__name__}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=20260101)
    ap.add_argument("--keep", help="write cases.jsonl / expected.jsonl / got.jsonl here")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    gen = Gen(rng)
    env = make_env()
    cases, expected = [], []
    for i in range(a.cases):
        tpl, ctx = gen.case()
        cases.append({"id": i, "template": tpl, "context": ctx})
        expected.append(render_py(env, tpl, ctx))
    work = a.keep or tempfile.mkdtemp(prefix="jinja_diff_")
    os.makedirs(work, exist_ok=True)
    in_path, out_path = os.path.join(work, "cases.jsonl"), os.path.join(work, "got.jsonl")
    with open(in_path, "w", encoding="utf-8") as f:
        for c in cases:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    if a.keep:
        with open(os.path.join(work, "expected.jsonl"), "w", encoding="utf-8") as f:
            for i, e in enumerate(expected):
                f.write(json.dumps(dict(id=i, **e), ensure_ascii=False) + "\n")
    env_vars = dict(os.environ, SLIMKV_JINJA_DIFF_IN=in_path, SLIMKV_JINJA_DIFF_OUT=out_path)
    p = subprocess.run([a.binary, "--gtest_filter=JinjaDiff.DISABLED_RenderCasesFromEnv",
                        "--gtest_also_run_disabled_tests"], env=env_vars,
                       capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stdout[-4000:], p.stderr[-4000:])
        print("jinja_diff: the engine's renderer failed")
        return 1
    got = {}
    with open(out_path, encoding="utf-8") as f:
        for line in f:
            g = json.loads(line)
            got[g["id"]] = g
    matched, mismatches = 0, []
    n_err = sum("error" in e for e in expected)
    for c, e in zip(cases, expected):
        g = got.get(c["id"], {})
        if "rendered" in e:
            ok = g.get("rendered") == e["rendered"]
        else:  # both must fail; a raise_exception message must be the same text
            ok = "error" in g and (e["error_type"] != "TemplateError" or g["kind"] != "TemplateError" or g["error"] == e["error"])
        matched += ok
        if not ok:
            mismatches.append((c, e, g))
    print(f"jinja_diff: {len(cases)} generated cases (seed {a.seed}; {len(cases) - n_err} rendered by jinja2, "
          f"{n_err} raised), {matched} matched, {len(mismatches)} differ")
    for c, e, g in mismatches[:8]:
        print("---- case", c["id"])
        print("template:", json.dumps(c["template"], ensure_ascii=False))
        print("jinja2:  ", json.dumps(e, ensure_ascii=False)[:600])
        print("slimkv:  ", json.dumps(g, ensure_ascii=False)[:600])
    if not a.keep:
        for p_ in (in_path, out_path):
            os.remove(p_)
        os.rmdir(work)
    return 0 if not mismatches else 1


if __name__ == "__main__":
    sys.exit(main())
