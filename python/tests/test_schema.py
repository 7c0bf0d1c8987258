"""The one plan schema (issue 25): vlplan/plan_schema.json is what `vlplan schema` prints
from the C field table; every key the C writer puts in a plan is in it; and the Python
reader enforces every field of it -- each value outside a field's type or range, each
missing required member, each list too short or holding a wrong element is a PlanError."""
import copy
import glob
import json
import os

import pytest

from conftest import ROOT, run_vlplan
from vlplan import records
from vlplan import schema as S
from vlplan.stream import PlanError

PLANS = sorted(p for p in glob.glob(os.path.join(ROOT, "testdata", "golden", "*.jsonl"))
               if not p.endswith("manifest.jsonl"))
PLANS += sorted(glob.glob(os.path.join(ROOT, "testdata", "verify", "base_*.jsonl")))


def test_the_copy_is_what_vlplan_exports():
    exported = run_vlplan("schema", "--format", "json")
    with open(S._PATH, encoding="utf-8") as f:
        assert f.read() == exported, "python/vlplan/plan_schema.json is stale: run make schema"


def test_every_rule_and_claim_is_implemented():
    rows = [f for fields in S.FIELDS.values() for f in fields.values()]
    rows += [m for metas in S.META.values() for m in metas.values()]
    assert {f["rule"] for f in rows if "rule" in f} == S.RULES
    assert {f["claim"] for f in rows if "claim" in f} == S.CLAIMS


def lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(x) for x in f]


def elements(rec):
    """(level, record) of an iteration record and every rank and pack in it."""
    yield "iter", rec
    for rank in rec.get("ranks", []):
        yield "rank", rank
        for key in ("mbs", "bwd"):
            for pack in rank.get(key, []):
                yield "pack", pack


def test_every_key_the_writer_writes_is_in_the_schema():
    seen = set()
    for path in PLANS:
        recs = lines(path)
        for key in recs[0]:
            assert key == "type" or key in S.META["header"], (path, key)
        for key in recs[-1]:
            assert key == "type" or key in S.META["footer"], (path, key)
        for rec in recs[1:-1]:
            for level, elem in elements(rec):
                for key, value in elem.items():
                    if level == "iter" and key == "type":
                        continue
                    assert key in S.FIELDS[level], f"{path}: {level} key {key!r}"
                    seen.add((level, key))
                    f = S.field(level, key)
                    if f["type"] == "list" and f["items"].get("type") == "tuple":
                        assert all(records._tuple_ok(v, f["items"]) for v in value), (path, key)
    every = {(level, key) for level, fields in S.FIELDS.items() for key in fields}
    assert seen == every, f"fields no plan of the corpus shows: {sorted(every - seen)}"


# ---- each field enforced ----

def longest(value):
    """The longest tuple of a list of tuples (0 for anything else)."""
    return max((len(t) for t in value if isinstance(t, list)), default=0) \
        if isinstance(value, list) else 0


def base_with(level, key):
    """(header, record, element) of a plan record whose `level` element has key: the one
    with the longest tuples, so that every position is there to change."""
    best = None
    for path in PLANS:
        recs = lines(path)
        for rec in recs[1:-1]:
            for lv, elem in elements(rec):
                if lv == level and key in elem and \
                        (best is None or longest(elem[key]) > longest(best[2][key])):
                    best = recs[0], rec, elem
    if best:
        return best
    raise AssertionError(f"no plan has {level} key {key}")


def read_iteration(hdr, rec, number):
    uneven = "uneven_mbs" in (hdr.get("caps") or [])
    return records.iteration(rec, "p.jsonl", 2, number, uneven, hdr)


def refused(hdr, rec, elem, change, key):
    """change(elem') on a copy of rec makes the Python reader refuse it, naming key."""
    rec2 = copy.deepcopy(rec)
    for lv, e in elements(rec2):   # the same element in the copy, by position
        if e == elem and lv:
            change(e)
            break
    with pytest.raises(PlanError) as err:
        read_iteration(hdr, rec2, rec.get("it", 0))
    return err


def scalar_cases(f):
    yield f["min"] - 1
    yield f["max"] + 1
    yield "1"
    yield 1.5
    yield None


def list_cases(f):
    yield 7
    yield {}
    items = f["items"]
    if items.get("type") == "record":
        yield [5]
        return
    if f["min_len"] > 1:
        yield "short"
    if items.get("type") == "tuple":
        yield "arity"
        for i, pos in enumerate(items["items"]):
            yield ("pos", i, pos)
    else:
        yield ("elem", items["min"] - 1)
        yield ("elem", items["max"] + 1)
        yield ("elem", "x")


def bad_position(pos):
    if pos["type"] == "int":
        return [pos["min"] - 1, pos["max"] + 1, "x"]
    if pos["type"] == "id":
        return [1.5, None, "a\0b"]
    return ["Q", 0]


def apply(elem, key, case):
    """The list at elem[key] changed as case says."""
    v = elem[key]
    if case == "short":
        elem[key] = v[:1]
    elif case == "arity":
        elem[key] = [list(v[0]) + [0] * (len(v[0]) + 1)]
    elif isinstance(case, tuple) and case[0] == "elem":
        elem[key] = [case[1]] + v[1:]
    else:
        elem[key] = case


FIELD_IDS = [(level, key) for level, fields in S.FIELDS.items() for key in fields]


@pytest.mark.parametrize("level,key", FIELD_IDS, ids=[f"{lv}.{k}" for lv, k in FIELD_IDS])
def test_each_field_is_enforced(level, key):
    hdr, rec, elem = base_with(level, key)
    read_iteration(hdr, rec, rec.get("it", 0))   # the base is valid
    f = S.field(level, key)
    if f["required"]:
        refused(hdr, rec, elem, lambda e: e.pop(key), key)
    if f["type"] != "list":
        for bad in scalar_cases(f):
            err = refused(hdr, rec, elem, lambda e: e.__setitem__(key, bad), key)
            assert key in str(err.value), (bad, str(err.value))
        return
    for case in list_cases(f):
        if isinstance(case, tuple) and case[0] == "pos":
            _, i, pos = case
            for bad in bad_position(pos):
                def put(e, i=i, bad=bad):
                    for t in e[key]:
                        if len(t) > i:
                            t[i] = bad
                            return
                    pytest.skip(f"no {key} entry with position {i}")
                refused(hdr, rec, elem, put, key)
        else:
            refused(hdr, rec, elem, lambda e: apply(e, key, case), key)


# ---- header and footer ----

META_IDS = [(r, k) for r, metas in S.META.items() for k in metas]


def meta_base(record, key):
    for path in PLANS:
        recs = lines(path)
        rec = recs[0] if record.startswith("header") else recs[-1]
        part = rec.get("manifest", {}) if record == "header.manifest" else rec
        if key in part:
            return rec, part
    raise AssertionError(f"no plan has {record} key {key}")


def meta_cases(m):
    if m["type"] == "count":
        return [m["min"] - 1, m["max"] + 1, "1", 1.5]
    if m["type"] == "string":
        bad = [5, None]
        if "values" in m:
            bad.append("no-such-" + m["values"][0])
        if "max" in m:
            bad.append("s" * (m["max"] + 1))
        return bad
    if m["type"] == "object":
        return [5, [], "x"]
    if m["type"] == "caps":
        return [5, ["no_such_capability"], [5]]
    items = m["items"]   # a list of tuples: the footer's "dropped"
    cases = [5, [5], [[0, 0, 1]]]
    for i, pos in enumerate(items["items"]):
        for bad in bad_position(pos):
            t = ["a", 0, 1, items["items"][3]["values"][0]]
            t[i] = bad
            cases.append([t])
    return cases


@pytest.mark.parametrize("record,key", META_IDS, ids=[f"{r}.{k}" for r, k in META_IDS])
def test_each_header_and_footer_member_is_enforced(record, key):
    rec, part = meta_base(record, key)

    def check(r):
        if record == "footer":
            records.check_footer(r, records.Where("p.jsonl", 9))
        else:
            records.header(r, "p.jsonl", 1)

    check(rec)   # the base is valid
    for bad in meta_cases(S.meta(record, key)):
        rec2 = copy.deepcopy(rec)
        (rec2["manifest"] if record == "header.manifest" else rec2)[key] = bad
        with pytest.raises(PlanError):
            check(rec2)
