"""Small text helpers."""


def slugify(text):
    """Turn text into a URL slug.

    The result is lowercase and keeps only the ASCII letters a-z and the digits 0-9. Every run
    of other characters becomes a single hyphen, and the slug never starts or ends with a
    hyphen. Text without any letters or digits gives the empty string.

    >>> slugify("Hello, World!")
    'hello-world'
    >>> slugify("  Ralph   loops: 2 rounds ")
    'ralph-loops-2-rounds'
    """
    raise NotImplementedError("slugify is not written yet")
