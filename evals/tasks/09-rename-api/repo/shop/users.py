"""Users of the shop."""

USERS = {
    1: {"name": "Ada", "email": "ada@example.com"},
    2: {"name": "Grace", "email": "grace@example.com"},
}


def get_usr(user_id):
    """The user with `user_id`; raises KeyError when there is none."""
    return USERS[user_id]
