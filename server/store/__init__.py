"""The run store: SQLite under <workspace>/.speedpatch/, written as runs progress."""

from speedpatch.store.records import RunRecord
from speedpatch.store.sqlite import Store

__all__ = ["RunRecord", "Store"]
