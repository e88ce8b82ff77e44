"""A store: how many units of each item are in stock."""


class Store:
    def __init__(self):
        self._stock = {}
        self._items = {}

    def add(self, item, quantity):
        """Adds `quantity` units of `item`."""
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        self._items[item.name] = item
        self._stock[item.name] = quantity

    def remove(self, name, quantity):
        """Takes `quantity` units of the item called `name` out of stock; raises ValueError
        when fewer are in stock. An item whose stock reaches zero is forgotten."""
        have = self._stock.get(name, 0)
        if quantity > have:
            raise ValueError(f"only {have} of {name} in stock")
        self._stock[name] = have - quantity

    def quantity(self, name):
        """Units of `name` in stock (0 when unknown)."""
        return self._stock.get(name, 0)

    def names(self):
        """The names of the items in stock, sorted."""
        return sorted(self._stock)

    def item(self, name):
        return self._items[name]

    def value_cents(self):
        """What the whole stock is worth, in cents."""
        return sum(self._items[n].total_cents(q) for n, q in self._stock.items())
