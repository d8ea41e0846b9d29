"""``okareo.checks`` inside the sandbox: Okareo check files run unchanged.

Re-exports scorebox's base classes (``engine.checks``, copied into the image
next to this package), so ``from okareo.checks import CodeBasedCheck,
CheckResponse`` gives the very classes the harness recognises.
"""

from __future__ import annotations

from typing import Any

from engine.checks import BaseCheck, CheckResponse, CodeBasedCheck

__all__ = ["BaseCheck", "CheckResponse", "CodeBasedCheck", "ModelBasedCheck"]


class ModelBasedCheck(BaseCheck):
    """Okareo's LLM-judged check, kept so such files import; it cannot run in the sandbox.

    Model checks are judged on the host (upload the prompt template as a
    ``model`` check); the sandbox has no network to call an LLM from.
    """

    def __init__(self, prompt_template: str, check_type: Any = None) -> None:
        self.prompt_template = prompt_template
        self.check_type = check_type

    def check_config(self) -> dict[str, Any]:
        """The prompt template and check type, as Okareo reports them."""
        return {"prompt_template": self.prompt_template, "type": str(self.check_type)}
