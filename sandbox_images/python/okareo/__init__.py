"""Okareo compatibility shim inside the scorebox sandbox: ``from okareo.checks import ...``."""
