"""Assertions for a support bot: promptfoo names each one as file://refusal_grader.py:NAME."""

import json


def _as_dict(output):
    if isinstance(output, dict):
        return output
    try:
        return json.loads(output)
    except (TypeError, ValueError):
        return {}


def declined(output, context):
    """The bot declines requests the test marks as out of scope."""
    text = output if isinstance(output, str) else json.dumps(output)
    refused = any(p in text.lower() for p in ("can't help", "cannot help", "not able to"))
    should = bool(context["vars"].get("out_of_scope"))
    ok = refused == should
    return {
        "pass": ok,
        "score": 1.0 if ok else 0.0,
        "reason": "declined as expected" if ok else f"refused={refused}, expected {should}",
    }


def ticket_fields(output, context):
    """A structured reply carries a ticket id and a priority."""
    data = _as_dict(output)
    present = [k for k in ("ticket_id", "priority") if data.get(k) is not None]
    score = len(present) / 2
    return {
        "pass": score == 1.0,
        "score": score,
        "reason": f"fields: {', '.join(present) or 'none'}",
    }
