import re

from reward_kit import reward_function


@reward_function
def boxed_answer(messages, ground_truth, **kwargs):
    """The last \\boxed{...} in the reply equals the ground truth."""
    found = re.findall(r"\\boxed\{([^}]*)\}", messages[-1]["content"])
    if not found:
        return {"score": 0.0, "reason": "no boxed answer"}
    ok = found[-1].strip() == str(ground_truth).strip()
    return {"score": float(ok), "reason": f"boxed {found[-1]}"}
