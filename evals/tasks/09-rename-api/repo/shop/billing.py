"""Invoices."""

from shop import users
from shop.orders import orders_of


def invoice(user_id):
    """A one-line invoice for everything `user_id` ordered."""
    user = users.get_usr(user_id)
    total = sum(o["total_cents"] for o in orders_of(user_id))
    return f"{user['name']} <{user['email']}>: {total / 100:.2f}"
