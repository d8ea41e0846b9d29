"""``phoenix.experiments``, as a stand-in (evaluators and their result type only)."""
