def get_assert(output, context):
    config = context.get("config", {})
    banned = [w.lower() for w in config.get("banned", [])]
    hits = [w for w in banned if w in output.lower()]
    if hits:
        return {"pass": False, "score": 0.0, "reason": "banned: " + ", ".join(hits)}
    return {"pass": True, "score": 1.0, "reason": "clean"}
