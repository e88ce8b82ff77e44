#!/usr/bin/env python3
"""Measures wrap-up (report-only) turns on a real model against the report reserve.

Runs ralph-tui headless, one round per run, on the demo repository (a slugify stub and its
failing tests) at a small context, with few turns so that rounds wrap up by turns and by
context, over several seeds. From each run's events it takes every wrap-up: the context the
wrap-up turn had left (`ctx - context_counted` right after `wrap_up`), and the tokens each
report-only turn generated (the `turn_finished` events after it). It prints each run, then
min / median / max of both against the reserve, and how the runs ended.

Usage (after `make model`; a release build is faster):
    cargo build --release
    python3 scripts/measure-report-turns.py [--bin target/release/ralph-tui]
        [--model PATH] [--ctx 4096] [--max-tokens 384] [--seeds 1-8] [--turns 3,6,24]
        [--backend openai:URL]

Defaults are the held-out case of the reserve issue: the default model, ctx 4096,
max_tokens 384. The exit status is 1 when any round ended round-failed.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

RESERVE_TOKENS = 625  # protocol::report::REPORT_RESERVE_TOKENS

SLUG = '''"""Turn titles into URL slugs."""


def slugify(text):
    raise NotImplementedError
'''

TESTS = '''import unittest

from slug import slugify


class SlugifyTest(unittest.TestCase):
    def test_words_are_joined_with_hyphens(self):
        self.assertEqual(slugify("Hello World"), "hello-world")

    def test_punctuation_is_dropped(self):
        self.assertEqual(slugify("Ralph, again!"), "ralph-again")


if __name__ == "__main__":
    unittest.main()
'''

OBJECTIVE = ("Implement slugify in slug.py so that python3 -m unittest passes. "
             "Keep the tests unchanged.")


def demo_repo(at):
    os.makedirs(at)
    for name, text in [("slug.py", SLUG), ("test_slug.py", TESTS),
                       ("AGENTS.md", "Run the tests with `python3 -m unittest` from the repository root.\n")]:
        with open(os.path.join(at, name), "w") as f:
            f.write(text)
    git = ["git", "-C", at, "-c", "user.name=measure", "-c", "user.email=measure@invalid"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "demo"], check=True)


def seeds(text):
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in text.split(",")]


def run_once(args, seed, turns, work):
    repo = os.path.join(work, f"repo-{seed}-{turns}")
    demo_repo(repo)
    cmd = [args.bin, "--headless", "-C", repo, "-n", "1", "--run-dir", os.path.join(work, f"run-{seed}-{turns}"),
           "--ctx-size", str(args.ctx), "--max-tokens", str(args.max_tokens), "--max-turns", str(turns),
           "--seed", str(seed), "--sandbox", "workspace-write", "--command-timeout", "30"]
    if args.model:
        cmd += ["-m", args.model]
    if args.backend:
        cmd += ["--backend", args.backend]
    cmd.append(OBJECTIVE)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    wrap_ups = []
    for i, e in enumerate(events):
        if e.get("type") != "wrap_up":
            continue
        left = None
        report_turns = []
        for f in events[i + 1:]:
            if f.get("type") == "context_counted" and left is None:
                left = args.ctx - f["tokens"]
            if f.get("type") == "turn_finished":
                report_turns.append(f["generated_tokens"])
            if f.get("type") in ("report_accepted", "round_finished"):
                break
        wrap_ups.append({"reason": e.get("reason"), "left": left, "report_turns": report_turns})
    end = events[-1] if events else {}
    return {"seed": seed, "max_turns": turns, "status": end.get("status"), "error": end.get("error"),
            "wrap_ups": wrap_ups, "exit": out.returncode,
            "stderr": out.stderr.strip().splitlines()[-1:] if out.returncode not in (0, 3, 4) else []}


def spread(values):
    if not values:
        return "none"
    return f"min {min(values)}, median {statistics.median(values)}, max {max(values)} (n={len(values)})"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default="target/release/ralph-tui")
    p.add_argument("--model", default=None, help="GGUF file (default: ralph-tui's default model)")
    p.add_argument("--backend", default=None, help="e.g. openai:http://127.0.0.1:8080/v1")
    p.add_argument("--ctx", type=int, default=4096)
    p.add_argument("--max-tokens", type=int, default=384)
    p.add_argument("--seeds", default="1-6")
    p.add_argument("--turns", default="3,6,24", help="--max-turns values to run")
    p.add_argument("--timeout", type=int, default=900, help="seconds one run may take")
    args = p.parse_args()
    if not shutil.which(args.bin) and not os.path.isfile(args.bin):
        sys.exit(f"no ralph-tui binary at {args.bin}: build it first (cargo build --release)")
    work = tempfile.mkdtemp(prefix="measure-report-turns-")
    runs = []
    for turns in [int(t) for t in args.turns.split(",")]:
        for seed in seeds(args.seeds):
            r = run_once(args, seed, turns, work)
            runs.append(r)
            print(json.dumps(r), flush=True)
    lefts = [w["left"] for r in runs for w in r["wrap_ups"] if w["left"] is not None]
    firsts = [w["report_turns"][0] for r in runs for w in r["wrap_ups"] if w["report_turns"]]
    every = [t for r in runs for w in r["wrap_ups"] for t in w["report_turns"]]
    failed = [r for r in runs if r["status"] == "round-failed"]
    print()
    print(f"reserve: {RESERVE_TOKENS} tokens; ctx {args.ctx}, max_tokens {args.max_tokens}")
    print(f"context left at the wrap-up turn: {spread(lefts)}")
    print(f"tokens of the first report-only turn: {spread(firsts)}")
    print(f"tokens of every report-only turn: {spread(every)}")
    over = [t for t in every if t > RESERVE_TOKENS]
    print(f"report-only turns over the reserve: {len(over)}")
    reasons = {}
    for r in runs:
        for w in r["wrap_ups"]:
            reasons[w["reason"]] = reasons.get(w["reason"], 0) + 1
    print(f"wrap-ups by reason: {reasons}")
    statuses = {}
    for r in runs:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    print(f"runs by status: {statuses}")
    for r in failed:
        print(f"round-failed: seed {r['seed']} max_turns {r['max_turns']}: {r['error']}")
    print(f"run logs: {work}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
