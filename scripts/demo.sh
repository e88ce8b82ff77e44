#!/usr/bin/env bash
# Creates a small demo repository and starts ralph-tui on it with a demo objective.
# Pass extra ralph-tui options through RALPH_ARGS (e.g. RALPH_ARGS="--headless").
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
demo="$root/target/demo-repo"
rm -rf "$demo"
mkdir -p "$demo"
cd "$demo"
git init -q
git config user.name "ralph-tui demo"
git config user.email "demo@ralph-tui.invalid"
cat > slug.py <<'PY'
"""Turn titles into URL slugs."""


def slugify(text):
    raise NotImplementedError
PY
cat > test_slug.py <<'PY'
import unittest

from slug import slugify


class SlugifyTest(unittest.TestCase):
    def test_words_are_joined_with_hyphens(self):
        self.assertEqual(slugify("Hello World"), "hello-world")

    def test_punctuation_is_dropped(self):
        self.assertEqual(slugify("Ralph, again!"), "ralph-again")


if __name__ == "__main__":
    unittest.main()
PY
cat > AGENTS.md <<'MD'
Run the tests with `python3 -m unittest` from the repository root.
MD
git add -A
git commit -q -m "demo: a slugify stub and its tests"

objective="Implement slugify in slug.py so that python3 -m unittest passes. Keep the tests unchanged."
# shellcheck disable=SC2086
exec "$root/target/debug/ralph-tui" -C "$demo" --verify "python3 -m unittest" ${RALPH_ARGS:-} "$objective"
