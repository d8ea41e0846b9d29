"""Text-similarity metrics (OpenAI graders' ``text_similarity``). Pure.

* ``fuzzy_match``: rapidfuzz ``fuzz.WRatio`` with ``utils.default_process``
  (lower-cased, non-alphanumerics to spaces, trimmed), divided by 100.
* ``bleu``: sentence BLEU (Papineni et al.) up to 4-grams with uniform weights,
  clipped counts and the brevity penalty ``exp(1 - r/c)`` when the candidate is
  shorter; orders longer than the candidate are left out (sacrebleu's
  "effective order"); no smoothing, so a zero precision at any used order gives 0.
* ``rouge_1`` .. ``rouge_5``: ROUGE-N F1 on clipped n-gram overlap.
* ``rouge_l``: ROUGE-L F1 on the longest common subsequence of tokens.

Tokens (BLEU, ROUGE) are runs of Unicode letters and digits, lower-cased. Two
empty texts score 1.0; one empty text scores 0.0.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Literal

from rapidfuzz import fuzz, utils
from rapidfuzz.distance import LCSseq

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


def _ngrams(words: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def _f1(overlap: int, candidate_total: int, reference_total: int) -> float:
    if overlap == 0 or candidate_total == 0 or reference_total == 0:
        return 0.0
    precision = overlap / candidate_total
    recall = overlap / reference_total
    return 2 * precision * recall / (precision + recall)


def fuzzy_match(candidate: str, reference: str) -> float:
    """rapidfuzz WRatio on default-processed text, in 0..1."""
    return float(fuzz.WRatio(candidate, reference, processor=utils.default_process)) / 100.0


def rouge_n(candidate: str, reference: str, n: int) -> float:
    """ROUGE-N F1."""
    cand, ref = _ngrams(tokens(candidate), n), _ngrams(tokens(reference), n)
    overlap = sum((cand & ref).values())
    return _f1(overlap, sum(cand.values()), sum(ref.values()))


def rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F1 (longest common subsequence of tokens)."""
    cand, ref = tokens(candidate), tokens(reference)
    lcs = int(LCSseq.similarity(cand, ref)) if cand and ref else 0
    return _f1(lcs, len(cand), len(ref))


def bleu(candidate: str, reference: str, max_order: int = 4) -> float:
    """Sentence BLEU with effective order and brevity penalty (no smoothing)."""
    cand, ref = tokens(candidate), tokens(reference)
    if not cand or not ref:
        return 0.0
    order = min(max_order, len(cand))
    log_sum = 0.0
    for n in range(1, order + 1):
        cand_ngrams = _ngrams(cand, n)
        matched = sum((cand_ngrams & _ngrams(ref, n)).values())
        if matched == 0:
            return 0.0
        log_sum += math.log(matched / sum(cand_ngrams.values()))
    penalty = 1.0 if len(cand) > len(ref) else math.exp(1 - len(ref) / len(cand))
    return penalty * math.exp(log_sum / order)


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
