"""Text-similarity metrics (OpenAI graders' ``text_similarity``). Pure.

* ``fuzzy_match``: rapidfuzz ``fuzz.WRatio`` with ``utils.default_process``
  (lower-cased, non-alphanumerics to spaces, trimmed), divided by 100.
* ``bleu``: NLTK's ``sentence_bleu`` (up to 4-grams, uniform weights, brevity
  penalty) with ``SmoothingFunction().method1`` (a zero n-gram count becomes
  0.1), so "Paris is nice." against "Paris is lovely." is 0.24, not 0.
* ``rouge_1`` .. ``rouge_5``, ``rouge_l``: Google's ``rouge-score``
  (``RougeScorer``, F-measure), with the tokenizer below in place of its
  ASCII-only default.

Tokens (BLEU, ROUGE) are runs of Unicode letters and digits, lower-cased. Two
empty texts score 1.0; one empty text scores 0.0.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from rapidfuzz import fuzz, utils

if TYPE_CHECKING:
    from rouge_score import rouge_scorer

# NLTK (which BLEU uses, and rouge-score's stemmer too) imports scipy.stats when it loads,
# a second or more: both are imported by the metric that needs them, not with the built-ins.

Metric = Literal[
    "fuzzy_match", "bleu", "rouge_1", "rouge_2", "rouge_3", "rouge_4", "rouge_5", "rouge_l"
]
METRICS: tuple[str, ...] = (
    "fuzzy_match",
    "bleu",
    "rouge_1",
    "rouge_2",
    "rouge_3",
    "rouge_4",
    "rouge_5",
    "rouge_l",
)

_TOKEN = re.compile(r"[^\W_]+")


def tokens(text: str) -> list[str]:
    """Lower-cased runs of letters and digits (Unicode-aware)."""
    return _TOKEN.findall(text.lower())


class _Tokenizer:
    """rouge-score's tokenizer interface over :func:`tokens`."""

    def tokenize(self, text: str) -> list[str]:
        return tokens(text)


@lru_cache(maxsize=8)
def _scorer(rouge_type: str) -> rouge_scorer.RougeScorer:
    from rouge_score import rouge_scorer  # noqa: PLC0415 (lazy: nltk, scipy)

    return rouge_scorer.RougeScorer([rouge_type], tokenizer=_Tokenizer())


@lru_cache(maxsize=1)
def _smoothing() -> Any:
    """NLTK's ``SmoothingFunction().method1``."""
    from nltk.translate.bleu_score import SmoothingFunction  # noqa: PLC0415 (lazy: scipy)

    return SmoothingFunction().method1


def fuzzy_match(candidate: str, reference: str) -> float:
    """rapidfuzz WRatio on default-processed text, in 0..1."""
    return float(fuzz.WRatio(candidate, reference, processor=utils.default_process)) / 100.0


def _rouge(candidate: str, reference: str, rouge_type: str) -> float:
    # rouge-score's argument order is (target, prediction)
    return float(_scorer(rouge_type).score(reference, candidate)[rouge_type].fmeasure)


def rouge_n(candidate: str, reference: str, n: int) -> float:
    """ROUGE-N F1 (rouge-score)."""
    return _rouge(candidate, reference, f"rouge{n}")


def rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F1 (rouge-score; longest common subsequence of tokens)."""
    return _rouge(candidate, reference, "rougeL")


def bleu(candidate: str, reference: str) -> float:
    """Sentence BLEU (NLTK, smoothing method1)."""
    from nltk.translate.bleu_score import sentence_bleu  # noqa: PLC0415 (lazy: scipy)

    cand, ref = tokens(candidate), tokens(reference)
    if not cand or not ref:
        return 0.0
    return float(sentence_bleu([ref], cand, smoothing_function=_smoothing()))


def similarity(metric: str, candidate: str, reference: str) -> float:
    """``metric`` (one of :data:`METRICS`) of ``candidate`` against ``reference``, in 0..1."""
    if not candidate.strip() and not reference.strip():
        return 1.0
    if not candidate.strip() or not reference.strip():
        return 0.0
    if metric == "fuzzy_match":
        return fuzzy_match(candidate, reference)
    if metric == "bleu":
        return bleu(candidate, reference)
    if metric == "rouge_l":
        return rouge_l(candidate, reference)
    if metric.startswith("rouge_") and metric[-1].isdigit():
        return rouge_n(candidate, reference, int(metric[-1]))
    raise ValueError(f"unknown metric {metric!r}; use one of {', '.join(METRICS)}")
