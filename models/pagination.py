"""Paginated queries: one page of rows plus the counts the envelope needs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

MAX_PER_PAGE = 100
T = TypeVar("T")
_TOTAL = "page_total"


@dataclass
class Page(Generic[T]):
    """One page of a list: the items and the totals."""

    data: list[T]
    total: int
    page: int
    per_page: int

    @property
    def total_pages(self) -> int:
        """How many pages the list has (0 when it is empty)."""
        return math.ceil(self.total / self.per_page) if self.per_page else 0


def paginate(session: Session, query: Select[Any], page: int, per_page: int) -> Page[Any]:
    """Run `query` for one page (1-based); per_page is clamped to MAX_PER_PAGE. Items are the
    query's single column or entity; a query of several columns gives a dict per row, keyed by
    the columns' names.

    `total` is exact and comes with the page in the same statement (`count(*) OVER ()`, counted
    before LIMIT): one statement per list instead of two. Only a page past the end, which holds
    no row to carry it, costs a separate `count(*)`. The query must not be DISTINCT (the window
    would count the rows before DISTINCT removes any) and must be ordered by a unique key so
    pages neither repeat nor skip rows.
    """
    per_page = max(1, min(per_page, MAX_PER_PAGE))
    page = max(page, 1)
    rows = session.execute(query.add_columns(func.count().over().label(_TOTAL))
                           .limit(per_page).offset((page - 1) * per_page)).all()
    if rows:
        total = rows[0][-1]
    elif page > 1:
        total = session.scalar(select(func.count()).select_from(query.order_by(None).subquery()))
    else:
        total = 0
    if len(query.column_descriptions) == 1:
        data = [row[0] for row in rows]
    else:
        data = [{key: value for key, value in row._mapping.items() if key != _TOTAL}
                for row in rows]
    return Page(data=data, total=total or 0, page=page, per_page=per_page)
