"""Alembic environment: runs against the engine passed in ``config.attributes``."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Engine, create_engine

from engine.storage.tables import Base

config = context.config
target_metadata = Base.metadata


def _run() -> None:
    engine = config.attributes.get("engine")
    if not isinstance(engine, Engine):
        engine = create_engine(config.get_main_option("sqlalchemy.url") or "")
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=connection.dialect.name == "sqlite",
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata)
    with context.begin_transaction():
        context.run_migrations()
else:
    _run()
