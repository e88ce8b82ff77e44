# ralph-tui's trace of a Python check: which of the workspace's own functions each test ran.
#
# It is put first on PYTHONPATH as `sitecustomize` for the check's run at a round's start, and
# only there. With RALPH_PYTRACE_OUT and RALPH_PYTRACE_ROOT set it installs a profile hook
# that, for every call of a function defined in a workspace file that is not a test file,
# finds the test function on the stack (a `test*` function of a test file) and notes the
# pair; at exit it writes them as JSON. It never prints, never changes what the check does,
# and takes itself off past a bound of events (calls and returns). Whatever sitecustomize it shadows still runs.
import os
import sys


def _chain():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        import importlib.machinery
        import importlib.util

        paths = [p for p in sys.path if os.path.abspath(p or ".") != here]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", paths)
        if spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
    except Exception:
        pass


def _install():
    out = os.environ.pop("RALPH_PYTRACE_OUT", None)
    root = os.environ.pop("RALPH_PYTRACE_ROOT", None)
    if not out or not root:
        return
    import atexit
    import json
    import threading

    root = os.path.join(os.path.realpath(root), "")
    try:
        max_events = int(os.environ.pop("RALPH_PYTRACE_MAX_EVENTS", "3000000"))
    except ValueError:
        max_events = 3_000_000
    state = {"events": 0, "on": True}
    # code object -> (relative path, is test file) or None (outside the workspace)
    where = {}
    # (test file, test qualname) -> {(file, qualname, first line, last line): None}
    ran = {}

    def place(code):
        found = where.get(code, 0)
        if found != 0:
            return found
        found = None
        name = code.co_filename
        if name and not name.startswith("<"):
            path = os.path.realpath(os.path.join(os.getcwd(), name))
            if path.startswith(root):
                rel = path[len(root):]
                parts = rel.split(os.sep)
                base = parts[-1]
                test = (
                    any(p in ("tests", "test") for p in parts[:-1])
                    or base.startswith("test_")
                    or base.endswith("_test.py")
                    or base == "conftest.py"
                )
                found = (rel, test)
        where[code] = found
        return found

    def last_line(code):
        try:
            return max(line for _, _, line in code.co_lines() if line)
        except Exception:
            return code.co_firstlineno

    def stop():
        state["on"] = False
        sys.setprofile(None)
        threading.setprofile(None)

    def profile(frame, event, arg):
        state["events"] += 1
        if state["events"] > max_events:
            stop()
            return
        if event != "call" or not state["on"]:
            return
        try:
            code = frame.f_code
            here = place(code)
            if here is None or here[1]:
                return
            up = frame.f_back
            while up is not None:
                upper = up.f_code
                if upper.co_name.startswith("test"):
                    there = place(upper)
                    if there is not None and there[1]:
                        key = (there[0], getattr(upper, "co_qualname", upper.co_name))
                        entry = (
                            here[0],
                            getattr(code, "co_qualname", code.co_name),
                            code.co_firstlineno,
                            last_line(code),
                        )
                        ran.setdefault(key, {})[entry] = None
                        return
                up = up.f_back
        except Exception:
            stop()

    def dump():
        try:
            tests = [
                {"file": k[0], "test": k[1], "ran": [list(e) for e in list(v)[:40]]}
                for k, v in list(ran.items())[:400]
            ]
            with open(out, "w", encoding="utf-8") as f:
                json.dump({"tests": tests}, f)
        except Exception:
            pass

    atexit.register(dump)
    sys.setprofile(profile)
    threading.setprofile(profile)


try:
    _install()
except Exception:
    pass
_chain()
