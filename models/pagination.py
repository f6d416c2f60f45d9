"""Paginated queries: one page of rows plus the counts the envelope needs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

MAX_PER_PAGE = 100
T = TypeVar("T")


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
    """Run `query` for one page (1-based); per_page is clamped to MAX_PER_PAGE.

    The query must be ordered by a unique key so pages neither repeat nor skip rows.
    """
    per_page = max(1, min(per_page, MAX_PER_PAGE))
    total = session.scalar(select(func.count()).select_from(query.order_by(None).subquery())) or 0
    rows = list(session.scalars(query.limit(per_page).offset((max(page, 1) - 1) * per_page)))
    return Page(data=rows, total=total, page=page, per_page=per_page)
