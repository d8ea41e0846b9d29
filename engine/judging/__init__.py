"""LLM judging: reply parsing, model-check templates, model checks, pairwise (the judged
built-ins are in :mod:`engine.builtins.judged`).

Pure parts (``parse``, ``templates``) do no I/O; the rest talk to an
:class:`engine.llm.client.LLMClient` and turn every LLM failure into a ``judge_error``
row result, never an exception that stops a batch.
"""
