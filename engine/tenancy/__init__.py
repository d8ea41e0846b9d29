"""Tenancy: who is calling and what they may use. API keys to a tenant principal
(:mod:`engine.tenancy.auth`), the admin key's strength (:mod:`engine.tenancy.admin_key`) and
per-tenant quotas (:mod:`engine.tenancy.quotas`). Above the kernel, below every room."""
