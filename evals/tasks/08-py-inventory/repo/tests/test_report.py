import unittest

from inventory import Item, Store, stock_report


class ReportTest(unittest.TestCase):
    def test_cents_are_two_digits(self):
        store = Store()
        store.add(Item("pen", 105), 2)
        store.add(Item("ink", 1250), 1)
        self.assertEqual(
            stock_report(store),
            "ink: 1 x 12.50 = 12.50\npen: 2 x 1.05 = 2.10\ntotal: 14.60",
        )


if __name__ == "__main__":
    unittest.main()
