import unittest

from inventory import Item, Store


class StoreTest(unittest.TestCase):
    def setUp(self):
        self.store = Store()
        self.pen = Item("pen", 150)

    def test_adding_twice_adds_up(self):
        self.store.add(self.pen, 3)
        self.store.add(self.pen, 2)
        self.assertEqual(self.store.quantity("pen"), 5)

    def test_remove_takes_units_out(self):
        self.store.add(self.pen, 3)
        self.store.remove("pen", 1)
        self.assertEqual(self.store.quantity("pen"), 2)

    def test_sold_out_items_are_forgotten(self):
        self.store.add(self.pen, 2)
        self.store.remove("pen", 2)
        self.assertEqual(self.store.names(), [])

    def test_cannot_remove_more_than_stock(self):
        self.store.add(self.pen, 1)
        with self.assertRaises(ValueError):
            self.store.remove("pen", 2)


if __name__ == "__main__":
    unittest.main()
