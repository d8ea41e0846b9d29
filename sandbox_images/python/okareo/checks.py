"""``okareo.checks`` inside the sandbox: Okareo check files run unchanged.

Covers what the SDK's ``okareo.checks`` exports (``CheckResponse``,
``BaseCheck``, ``CodeBasedCheck``, ``ModelBasedCheck``, ``CheckOutputType``).
The first three are scorebox's own (``engine.checks``, copied into the image
next to this package), so ``from okareo.checks import CodeBasedCheck,
CheckResponse`` gives the very classes the harness recognises.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from engine.checks import BaseCheck, CheckResponse, CodeBasedCheck

__all__ = ["BaseCheck", "CheckOutputType", "CheckResponse", "CodeBasedCheck", "ModelBasedCheck"]


class CheckOutputType(Enum):
    """What a model check's template asks the judge for (Okareo's enum, same values)."""

    SCORE = "score"
    PASS_FAIL = "pass_fail"
    ANALYSIS = "analysis"


class ModelBasedCheck(BaseCheck):
    """Okareo's LLM-judged check, kept so such files import; it cannot run in the sandbox.

    Model checks are judged on the host (upload the prompt template as a
    ``model`` check); the sandbox has no network to call an LLM from.
    """

    def __init__(
        self, prompt_template: str, check_type: Any = None, is_audio: bool = False
    ) -> None:
        self.prompt_template = prompt_template
        self.check_type = getattr(check_type, "value", check_type)
        self.is_audio = is_audio

    def check_config(self) -> dict[str, Any]:
        """The prompt template, check type and audio flag, as Okareo sends them."""
        return {
            "prompt_template": self.prompt_template,
            "type": self.check_type,
            "audio": self.is_audio,
        }

    @staticmethod
    def evaluate(*args: Any, **kwargs: Any) -> Any:
        """Okareo's own raises too: the judging happens on the server."""
        raise NotImplementedError("a model check is judged on the host, not in the sandbox")
