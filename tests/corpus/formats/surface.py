"""Print the surface of named objects: a model's or dataclass's fields, a function's
parameters. Run with the real packages (in their test-only virtualenvs) and with the
image's stand-ins, so a test can hold the two equal.

    python surface.py [--path DIR] MODULE:NAME ...
"""

import dataclasses
import importlib
import inspect
import json
import sys


def describe(obj):
    fields = getattr(obj, "model_fields", None)
    if isinstance(fields, dict):
        return {"fields": sorted(fields)}
    own = getattr(obj, "_fields", None)
    if isinstance(own, dict):  # the stand-ins' models
        return {"fields": sorted(own)}
    if dataclasses.is_dataclass(obj):
        return {"fields": sorted(f.name for f in dataclasses.fields(obj))}
    target = obj.__init__ if inspect.isclass(obj) else obj
    signature = inspect.signature(target)
    named = [
        p.name
        for p in signature.parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"
    ]
    rest = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    return {"parameters": named, "var_keyword": rest}


def main():
    specs = sys.argv[1:]
    if specs[:1] == ["--path"]:  # the stand-ins' directory, first on the path
        sys.path.insert(0, specs[1])
        specs = specs[2:]
    out = {}
    for spec in specs:
        module, _, name = spec.partition(":")
        out[spec] = describe(getattr(importlib.import_module(module), name))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
