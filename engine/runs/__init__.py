"""Runs: the score request and stored runs, from the route to the sandbox and back
(docs/architecture.md, "Score request")."""
