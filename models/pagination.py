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
    # True when `total` is a lower bound: counting stopped at a cap (see `paginate`).
    total_capped: bool = False

    @property
    def total_pages(self) -> int:
        """How many pages the list has (0 when it is empty)."""
        return math.ceil(self.total / self.per_page) if self.per_page else 0


def paginate(session: Session, query: Select[Any], page: int, per_page: int,
             count_cap: int | None = None) -> Page[Any]:
    """Run `query` for one page (1-based); per_page is clamped to MAX_PER_PAGE. Items are the
    query's single column or entity; a query of several columns gives a dict per row, keyed by
    the columns' names.

    Without `count_cap`, `total` is exact and comes with the page in the same statement
    (`count(*) OVER ()`, counted before LIMIT): one statement per list instead of two. Only a
    page past the end, which holds no row to carry it, costs a separate `count(*)`. The query
    must not be DISTINCT (the window would count the rows before DISTINCT removes any) and must
    be ordered by a unique key so pages neither repeat nor skip rows.

    With `count_cap`, counting stops past max(`count_cap`, the rows up to this page's end): an
    exact count reads every matching index entry, hundreds of thousands for a large list, while
    the page itself reads 20. `total` is then exact up to that bound; beyond it `total` is the
    bound and `total_capped` is True (more rows exist: the next page is never empty). A page
    that is not full needs no count at all: it is the last one.
    """
    per_page = max(1, min(per_page, MAX_PER_PAGE))
    page = max(page, 1)
    if count_cap is not None:
        return _paginate_capped(session, query, page, per_page, count_cap)
    rows = session.execute(query.add_columns(func.count().over().label(_TOTAL))
                           .limit(per_page).offset((page - 1) * per_page)).all()
    if rows:
        total = rows[0][-1]
    elif page > 1:
        total = session.scalar(select(func.count()).select_from(query.order_by(None).subquery()))
    else:
        total = 0
    return Page(data=_items(query, rows, counted=True), total=total or 0, page=page,
                per_page=per_page)


def _paginate_capped(session: Session, query: Select[Any], page: int, per_page: int,
                     cap: int) -> Page[Any]:
    offset = (page - 1) * per_page
    rows = session.execute(query.limit(per_page).offset(offset)).all()
    if rows and len(rows) < per_page:
        return Page(data=_items(query, rows), total=offset + len(rows), page=page,
                    per_page=per_page)
    if not rows and page == 1:
        return Page(data=[], total=0, page=page, per_page=per_page)
    bound = max(cap, page * per_page)
    counted = session.scalar(select(func.count()).select_from(
        query.order_by(None).limit(bound + 1).subquery())) or 0
    return Page(data=_items(query, rows), total=min(counted, bound), page=page,
                per_page=per_page, total_capped=counted > bound)


def _items(query: Select[Any], rows: list[Any], counted: bool = False) -> list[Any]:
    """The page's items out of its rows (`counted`: each row ends with the window's count)."""
    end = -1 if counted else None
    if len(query.column_descriptions) == 1:
        return [row[0] for row in rows]
    return [{key: value for key, value in list(row._mapping.items())[:end]} for row in rows]
