"""The scores stage reads a model's judgments while it parses its configuration.

Reading and reducing the judgments (:func:`~stylisticbias.scores_columnar.reader.reduce_judgments`:
Parquet decoding, which leaves the GIL, and numpy) is most of the stage; parsing
``params.yaml`` into typed specs, loading the protocol and importing the engine are most of the
rest. :class:`JudgmentsAhead` starts the first in a thread from the file ``params.yaml`` names,
before those are done, and hands the reduced cells to
:func:`~stylisticbias.scores.write_scores` only for the same file and model that the parsed
configuration names -- anything else is read again, as without it. Nothing is written ahead.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stylisticbias.scores_columnar.reader import Cells


def keep_freed_memory() -> None:
    """Ask glibc's allocator to keep freed memory for reuse (no ``mmap`` per large array, no
    trimming of the heap), as ``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_`` would: the
    stage allocates and frees arrays of millions of rows, and every page handed back to the
    system is a page fault when the next array takes it again (a third of the stage's time was
    system time). A no-op where the C library is not glibc."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own C library
    except (OSError, AttributeError):
        return
    m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
    mallopt(m_mmap_threshold, 256 << 20)
    mallopt(m_trim_threshold, 1 << 30)
    mallopt(m_top_pad, 64 << 20)


def no_huge_pages() -> None:
    """Ask Linux to back this process's memory with ordinary pages only
    (``PR_SET_THP_DISABLE``): Arrow's allocator (mimalloc) asks for transparent huge pages, and
    each run of the stage faulted in about a hundred of them (200 MB zeroed); on a machine
    short of free memory, compacting it for them took up to 0.7 s of system time, against 0.2 s
    with ordinary pages. A no-op where there is no ``prctl``."""
    import ctypes

    try:
        prctl = ctypes.CDLL(None).prctl
    except (OSError, AttributeError):
        return
    pr_set_thp_disable = 41
    prctl(pr_set_thp_disable, 1, 0, 0, 0)


def stage_path(value: str | Path, root: Path) -> Path:
    """A ``paths.*`` value of ``params.yaml``: absolute as given, else under the project root."""
    p = Path(value)
    return p if p.is_absolute() else root / p


def judgments_path(judgments_dir: Path, model: str) -> Path:
    """``<paths.judgments>/<model>/judgments.parquet``: one model's judgments table."""
    return judgments_dir / model / "judgments.parquet"


class JudgmentsAhead:
    """One model's judgments reduced per cell in a worker thread (a context manager: leaving
    it waits for the thread). :meth:`cells` answers for one file and model."""

    def __init__(self, path: Path, model: str) -> None:
        self.path, self.model = Path(path), model
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judgments-ahead")
        self._future: Future[Cells | None] = self._pool.submit(self._read)

    @classmethod
    def from_params(cls, params: dict[str, Any], model: str, root: Path) -> JudgmentsAhead | None:
        """Start reading the judgments that ``params`` (``params.yaml``, not yet parsed) name for
        ``model``; ``None`` where it names none (the stage then fails or reads them itself)."""
        paths = params.get("paths")
        value = paths.get("judgments") if isinstance(paths, dict) else None
        if not isinstance(value, str) or not model:
            return None
        return cls(judgments_path(stage_path(value, root), model), model)

    def _read(self) -> Cells | None:
        from stylisticbias.scores_columnar.reader import reduce_judgments

        return reduce_judgments(self.path, self.model)

    def cells(self, path: Path, model: str) -> tuple[bool, Cells | None]:
        """``(True, cells)`` where ``path`` and ``model`` are what was read (``cells`` ``None``:
        the columnar engine declined the table), ``(False, None)`` otherwise."""
        if Path(path) != self.path or model != self.model:
            return False, None
        return True, self._future.result()

    def __enter__(self) -> JudgmentsAhead:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


@contextmanager
def read_ahead(model: str) -> Iterator[JudgmentsAhead | None]:
    """``model``'s judgments, as ``params.yaml`` names them, read in a thread while the block
    runs (``None`` where it names none); leaving the block waits for the thread."""
    from stylisticbias.config import load_params, project_root

    ahead = JudgmentsAhead.from_params(load_params(), model, project_root())
    if ahead is None:
        yield None
        return
    with ahead:
        yield ahead
