"""Orders, and who placed them."""

from shop.users import get_usr

ORDERS = [
    {"id": 10, "user_id": 1, "total_cents": 1250},
    {"id": 11, "user_id": 2, "total_cents": 300},
    {"id": 12, "user_id": 1, "total_cents": 999},
]


def orders_of(user_id):
    """The orders placed by `user_id`."""
    get_usr(user_id)
    return [o for o in ORDERS if o["user_id"] == user_id]


def customer_name(order):
    return get_usr(order["user_id"])["name"]
