"""The dependency floor of a CLI command that opens the platform, for ``bench/startup.py``.

    python bench/startup_floor.py <sqlite file>

What any such command pays before Corral's own code runs, with the dependencies DESIGN.md
chose: typer and its rich renderer, pydantic, SQLAlchemy's ORM on asyncio with aiosqlite,
and one mapped table read from the data folder's database. Corral's commands are measured
against it: what they take beyond it is ours to cut.
"""

from __future__ import annotations

import asyncio
import sys

import pydantic
import rich.table
import typer
from sqlalchemy import String, select
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class Conversation(Base):
    __tablename__ = "conversations"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)


class Listed(pydantic.BaseModel):
    id: str


async def read(database: str) -> list[Listed]:
    engine = create_async_engine(f"sqlite+aiosqlite:///{database}")
    try:
        async with AsyncSession(engine) as session:
            ids = (await session.execute(select(Conversation.id))).scalars().all()
    finally:
        await engine.dispose()
    return [Listed(id=i) for i in ids]


def main(database: str) -> None:
    table = rich.table.Table("id")
    for row in asyncio.run(read(database)):
        table.add_row(row.id)
    typer.echo(f"{table.row_count} conversation(s)")


if __name__ == "__main__":
    main(sys.argv[1])
