#!/usr/bin/env python3
"""jsonq.py [-c] FILE PATH: the values at PATH in the JSON document FILE, one
per line (strings as they are, anything else as compact JSON), or with -c how
many there are. The shell tests assert JSON through this, never by grepping
the writer's formatting (lib.sh defines `jsonq`).

PATH is steps separated by dots:
  NAME      the member NAME of an object
  N         element N of an array (from 0)
  *         every element of an array, every member value of an object
A step may carry filters, [SUB OP VALUE], each keeping only the elements whose
SUB (a path of NAMEs and Ns, from the element) compares so with VALUE:
  =  !=     equal, not equal (types count: 0 is not "0", not false)
  < <= > >= numbers only
  ^=        a string that starts with VALUE
VALUE is read as JSON when it is JSON (0, true, null, "0"), else as a string.
A filter on a step that yields an array keeps elements of that array:
  kernels[op=attn_fwd].name                        names of attention kernels
  -c kernels[resources.vgpr_spill=0][resources.sgpr_spill=0]   kernels without spills
  kernels.*.compiler                               every kernel's compiler
A missing member, an index out of range or a step into a number is an error:
a message on stderr and exit status 2, so that an assertion over it fails.
"""
import json
import re
import sys


class QueryError(Exception):
    pass


def split_top(path):
    """Splits PATH at the dots that are not inside [...]."""
    parts, depth, cur = [], 0, ""
    for ch in path:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise QueryError("unbalanced ']' in " + repr(path))
        if ch == "." and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if depth:
        raise QueryError("unbalanced '[' in " + repr(path))
    parts.append(cur)
    return parts


def parse_step(step):
    """'name[f1][f2]' -> ('name', ['f1', 'f2'])."""
    m = re.fullmatch(r"([^\[\]]*)((?:\[[^\[\]]*\])*)", step)
    if not m or (not m.group(1) and not m.group(2)):
        raise QueryError("bad step " + repr(step))
    return m.group(1), re.findall(r"\[([^\[\]]*)\]", m.group(2))


def literal(text):
    try:
        return json.loads(text)
    except ValueError:
        return text


def kind(v):
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    return type(v).__name__


def member(v, key, where):
    if isinstance(v, dict):
        if key not in v:
            raise QueryError("%s: no member %r (members: %s)" % (where, key, ", ".join(sorted(v)) or "none"))
        return v[key]
    if isinstance(v, list):
        if not re.fullmatch(r"[0-9]+", key):
            raise QueryError("%s: an array has no member %r" % (where, key))
        i = int(key)
        if i >= len(v):
            raise QueryError("%s: index %d, but the array has %d elements" % (where, i, len(v)))
        return v[i]
    raise QueryError("%s: a %s has no member %r" % (where, kind(v), key))


def subpath(v, path, where):
    for key in path.split("."):
        v = member(v, key, where)
        where += "." + key
    return v


def keep(v, flt, where):
    m = re.fullmatch(r"([A-Za-z0-9_.]+)(\^=|!=|<=|>=|=|<|>)(.*)", flt, re.S)
    if not m:
        raise QueryError("bad filter [%s]" % flt)
    got = subpath(v, m.group(1), where)
    op, want = m.group(2), literal(m.group(3))
    if op in ("=", "!="):
        same = kind(got) == kind(want) and got == want
        return same if op == "=" else not same
    if op == "^=":
        return isinstance(got, str) and got.startswith(m.group(3))
    if kind(got) != "number" or kind(want) != "number":
        raise QueryError("%s.%s: %s compares numbers, not %r with %r" % (where, m.group(1), op, got, want))
    return {"<": got < want, "<=": got <= want, ">": got > want, ">=": got >= want}[op]


def query(doc, path):
    cur = [(doc, "$")]
    if path in ("", "."):
        return [doc]
    for step in split_top(path):
        name, filters = parse_step(step)
        nxt = []
        for v, where in cur:
            if name == "*":
                if isinstance(v, list):
                    nxt += [(x, "%s.%d" % (where, i)) for i, x in enumerate(v)]
                elif isinstance(v, dict):
                    nxt += [(x, where + "." + k) for k, x in v.items()]
                else:
                    raise QueryError("%s: '*' over a %s" % (where, kind(v)))
            elif name:
                nxt.append((member(v, name, where), where + "." + name))
            else:
                nxt.append((v, where))
        if filters:
            out = []
            for v, where in nxt:
                # a filter on an array keeps its elements; on anything else, the value itself
                items = [(x, "%s.%d" % (where, i)) for i, x in enumerate(v)] if isinstance(v, list) else [(v, where)]
                out += [(x, w) for x, w in items if all(keep(x, f, w) for f in filters)]
            nxt = out
        cur = nxt
    return [v for v, _ in cur]


def strict_object(pairs):
    obj = {}
    for k, v in pairs:
        if k in obj:
            raise ValueError("duplicate key %r" % k)
        obj[k] = v
    return obj


def no_constant(name):
    raise ValueError(name + " is not JSON")


def show(v):
    return v if isinstance(v, str) else json.dumps(v, separators=(",", ":"), sort_keys=True)


def main(argv):
    count = False
    if argv[:1] == ["-c"]:
        count, argv = True, argv[1:]
    if len(argv) != 2:
        sys.stderr.write("usage: jsonq.py [-c] FILE PATH\n")
        return 2
    path, q = argv
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f, object_pairs_hook=strict_object, parse_constant=no_constant)
    except (OSError, ValueError) as e:
        sys.stderr.write("jsonq: %s: %s\n" % (path, e))
        return 2
    try:
        vals = query(doc, q)
    except QueryError as e:
        sys.stderr.write("jsonq: %s: %s: %s\n" % (path, q, e))
        return 2
    if count:
        print(len(vals))
    else:
        for v in vals:
            print(show(v))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
