"""Items for sale: a name and a unit price in cents."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Item:
    name: str
    price_cents: int

    def total_cents(self, quantity):
        """The price of `quantity` units, in cents."""
        return self.price_cents + quantity
