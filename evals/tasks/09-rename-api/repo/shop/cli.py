"""`python3 -m shop.cli USER_ID` prints a user's orders and invoice."""

import sys

from shop.billing import invoice
from shop.orders import orders_of
from shop.users import get_usr


def main(argv):
    user_id = int(argv[1])
    print(f"orders of {get_usr(user_id)['name']}:")
    for order in orders_of(user_id):
        print(f"  #{order['id']}")
    print(invoice(user_id))


if __name__ == "__main__":
    main(sys.argv)
