"""The plan schema as the C writer and readers hold it (lib/plan/planio_fields.c), exported
by `vlplan schema --format json` into plan_schema.json next to this file (`make schema`).
The structural checks of records.py read their keys, types, ranges, defaults, list shapes
and rules from here, so that the two readers refuse the same files; a rule or claim this
reader does not implement is refused at import (RULES, CLAIMS)."""
import json
import os

from .stream import PlanError

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plan_schema.json")

# The rules on lists and the claims of counts that records.py implements, by the names
# the schema gives them; tests/test_schema.py holds the two sets equal to the schema's.
RULES = frozenset(("rank_size", "prefix_sums", "distinct_self", "names_pack", "bwd_tokens",
                   "cp_below_sp"))
CLAIMS = frozenset(("position", "sum_tokens", "loss", "epoch", "cap"))


def _load():
    with open(_PATH, encoding="utf-8") as f:
        doc = json.load(f)
    fields = {level: {f["key"]: f for f in rows} for level, rows in doc["records"].items()}
    meta = {rec: {m["key"]: m for m in rows} for rec, rows in doc["meta"].items()}
    named = [f.get("rule") for rows in fields.values() for f in rows.values()]
    named += [m.get("rule") for rows in meta.values() for m in rows.values()]
    unknown = {r for r in named if r} - RULES
    unknown |= {f["claim"] for rows in fields.values() for f in rows.values()
                if f.get("claim")} - CLAIMS
    if unknown:   # a schema newer than this reader: refuse rather than check less
        raise PlanError(f"{_PATH}: rules this reader does not know: {sorted(unknown)}")
    return doc["schema"], fields, meta


SCHEMA, FIELDS, META = _load()


def field(level, key):
    """The schema of member `key` of a record at `level` ("iter", "rank", "pack")."""
    return FIELDS[level][key]


def items(level, key):
    """What the list `key` of a `level` record holds."""
    return FIELDS[level][key]["items"]


def meta(record, key):
    """The schema of member `key` of "header", "header.manifest" or "footer"."""
    return META[record][key]
