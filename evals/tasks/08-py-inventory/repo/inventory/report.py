"""A plain-text stock report."""


def format_cents(cents):
    """12345 -> '123.45'."""
    return f"{cents // 100}.{cents % 100}"


def stock_report(store):
    """One line per item, sorted by name: `name: quantity x price = total`, then a total line."""
    lines = []
    for name in store.names():
        item = store.item(name)
        quantity = store.quantity(name)
        lines.append(
            f"{name}: {quantity} x {format_cents(item.price_cents)}"
            f" = {format_cents(item.total_cents(quantity))}"
        )
    lines.append(f"total: {format_cents(store.value_cents())}")
    return "\n".join(lines)
