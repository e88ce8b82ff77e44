"""Tiny statistics helpers for lists of numbers."""


def mean(values):
    """The arithmetic mean; raises ValueError for an empty list."""
    if not values:
        raise ValueError("mean of an empty list")
    return sum(values) / len(values)


def median(values):
    """The middle value of the sorted values; for an even count, the mean of the two middle
    values. Raises ValueError for an empty list."""
    if not values:
        raise ValueError("median of an empty list")
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle]
