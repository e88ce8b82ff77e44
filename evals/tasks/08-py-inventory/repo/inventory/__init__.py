"""A small stock-keeping library."""

from .items import Item
from .report import stock_report
from .store import Store

__all__ = ["Item", "Store", "stock_report"]
