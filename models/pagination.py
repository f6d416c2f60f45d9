"""Paginated queries: one page of rows plus the counts the envelope needs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import Select, bindparam, func, select
from sqlalchemy.orm import Session

MAX_PER_PAGE = 100
T = TypeVar("T")
_TOTAL = "page_total"
_LIMIT = "page_limit"
_OFFSET = "page_offset"


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


class PageQuery:
    """A list query and the statements of its pages, built once: the page (the query with its
    total as `count(*) OVER ()` and LIMIT/OFFSET bound at each run) and the count of a page
    past the end. Why: building a statement and computing its cache key costs SQLAlchemy more
    than running it, so a hot list whose only variables are bound parameters keeps one of
    these per process and runs it with `run`; `paginate` builds one for a one-off query."""

    def __init__(self, query: Select[Any]) -> None:
        self.query = query
        self._page = (query.add_columns(func.count().over().label(_TOTAL))
                      .limit(bindparam(_LIMIT)).offset(bindparam(_OFFSET)))
        columns = query.column_descriptions
        # A query of one column or entity gives its values; of several, a dict per row.
        self._keys = None if len(columns) == 1 else [column["name"] for column in columns]

    def run(self, session: Session, page: int, per_page: int,
            params: dict[str, Any] | None = None) -> Page[Any]:
        """One page (1-based) of the query with `params` bound, its `total` exact (see
        `paginate`); per_page is clamped to MAX_PER_PAGE."""
        per_page = max(1, min(per_page, MAX_PER_PAGE))
        page = max(page, 1)
        rows = session.execute(self._page, {**(params or {}), _LIMIT: per_page,
                                            _OFFSET: (page - 1) * per_page}).all()
        if rows:
            total = rows[0][-1]
        elif page > 1:
            total = session.scalar(select(func.count()).select_from(
                self.query.order_by(None).subquery()), params)
        else:
            total = 0
        if self._keys is None:
            data = [row[0] for row in rows]
        else:
            data = [dict(zip(self._keys, row[:-1], strict=True)) for row in rows]
        return Page(data=data, total=total or 0, page=page, per_page=per_page)


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
    if count_cap is not None:
        per_page = max(1, min(per_page, MAX_PER_PAGE))
        return _paginate_capped(session, query, max(page, 1), per_page, count_cap)
    return PageQuery(query).run(session, page, per_page)


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


def _items(query: Select[Any], rows: list[Any]) -> list[Any]:
    """The page's items out of its rows."""
    if len(query.column_descriptions) == 1:
        return [row[0] for row in rows]
    return [dict(row._mapping) for row in rows]
