import unittest

from inventory import Item


class ItemTest(unittest.TestCase):
    def test_total_is_price_times_quantity(self):
        self.assertEqual(Item("pen", 150).total_cents(4), 600)

    def test_total_of_nothing(self):
        self.assertEqual(Item("pen", 150).total_cents(0), 0)


if __name__ == "__main__":
    unittest.main()
