"""A small stand-in for Arize Phoenix inside the scorebox sandbox.

``from phoenix.experiments.evaluators import create_evaluator`` and
``from phoenix.experiments.types import EvaluationResult`` resolve here. A check that
needs more declares the real distribution, ``arize-phoenix`` (not ``phoenix``, another
project on PyPI), in a PEP 723 block.
"""

__version__ = "0.0.0+scorebox.stand-in"
