import unittest

from shop.billing import invoice
from shop.orders import customer_name, orders_of
from shop.users import get_user


class ShopTest(unittest.TestCase):
    def test_get_user(self):
        self.assertEqual(get_user(2)["name"], "Grace")

    def test_orders_of(self):
        self.assertEqual([o["id"] for o in orders_of(1)], [10, 12])

    def test_customer_name(self):
        self.assertEqual(customer_name({"user_id": 2}), "Grace")

    def test_invoice(self):
        self.assertEqual(invoice(1), "Ada <ada@example.com>: 22.49")


if __name__ == "__main__":
    unittest.main()
