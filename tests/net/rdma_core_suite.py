#!/usr/bin/python3
# rdma-core's own conformance suite (python3-pyverbs installs it under
# /usr/share/doc/rdma-core/tests) run with unittest as its run_tests.py runs
# it, but with a result class that prints one TAP line per test:
#   ok N - test_file.Class.test_name
#   ok N - test_file.Class.test_name # SKIP the suite's own reason
#   not ok N - test_file.Class.test_name (FAIL|ERROR): the exception
# and at the end the suite's own summary ("Ran N tests ...") and counts per
# test file as TAP comments.
#
#   xrxe run -- python3 tests/net/rdma_core_suite.py SUITE_DIR --dev DEVICE
#       [--exclude-file FILE] [--per-test-timeout S] [-k PATTERN]
#       [run_tests.py options]
# SUITE_DIR is a copy of the suite with its .py.gz files gunzipped
# (tests/net/rdma_core_suite.sh makes it). --exclude-file names tests (one id
# per line, '#' comments) that are reported as SKIP with the reason written
# after the id, without running them; every such line must be explained in
# README.md.
import collections
import importlib.util
import os
import signal
import sys
import time
import traceback
import unittest


def take_opt(name, default=None):
    """Remove --name VALUE from sys.argv; the rest goes to the suite's parser."""
    if name in sys.argv:
        i = sys.argv.index(name)
        value = sys.argv[i + 1]
        del sys.argv[i:i + 2]
        return value
    return default


suite_dir = os.path.abspath(sys.argv.pop(1))
exclude_file = take_opt("--exclude-file")
per_test_timeout = int(take_opt("--per-test-timeout", "120"))
only = take_opt("-k")  # run only tests matching this (unittest -k), for debugging

excluded = {}
if exclude_file:
    with open(exclude_file) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                name, _, why = line.partition(" ")
                excluded[name] = why.strip() or "excluded by xrxe (see README)"

# The suite's modules import each other as top-level modules (args_parser,
# base, utils) and as the package "tests": load it as run_tests.py does.
sys.path.insert(0, suite_dir)
from args_parser import parser  # noqa: E402

spec = importlib.util.spec_from_file_location(
    "tests", os.path.join(suite_dir, "__init__.py"),
    submodule_search_locations=[suite_dir])
tests = importlib.util.module_from_spec(spec)
sys.modules["tests"] = tests
spec.loader.exec_module(tests)
parser.parse_args()


class TestTimeout(Exception):
    pass


def on_alarm(signum, frame):
    raise TestTimeout("no result within %d s" % per_test_timeout)


def short_id(test):
    # "tests.test_qp.QPTest.test_x" -> "test_qp.QPTest.test_x"
    tid = test.id()
    return tid[len("tests."):] if tid.startswith("tests.") else tid


def file_of(test):
    return short_id(test).split(".", 1)[0]


class TapResult(unittest.TestResult):
    """unittest's result, printed as TAP as each test ends."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.n = 0
        self.per_file = collections.defaultdict(collections.Counter)
        self.t0 = 0.0

    def _line(self, test, status, text):
        self.n += 1
        self.per_file[file_of(test)][status] += 1
        print(text % (self.n, short_id(test)), flush=True)

    def startTest(self, test):
        super().startTest(test)
        self.t0 = time.monotonic()
        signal.alarm(per_test_timeout)

    def stopTest(self, test):
        signal.alarm(0)
        super().stopTest(test)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._line(test, "pass", "ok %d - %s")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        reason = " ".join(str(reason).split()) or "no reason given"
        self._line(test, "skip", "ok %d - %s # SKIP " + reason.replace("%", "%%"))

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._line(test, "pass", "ok %d - %s (expected failure)")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._line(test, "fail", "not ok %d - %s (unexpected success)")

    def _bad(self, test, err, kind):
        status = "fail" if kind == "FAIL" else "error"
        exc = traceback.format_exception_only(err[0], err[1])[-1].strip()
        self._line(test, status, "not ok %d - %s (" + kind + "): " + exc.replace("%", "%%"))
        for line in traceback.format_exception(*err)[-12:]:
            for sub in line.rstrip().splitlines():
                print("#   " + sub)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._bad(test, err, "FAIL")

    def addError(self, test, err):
        super().addError(test, err)
        # setUpClass/module errors come as _ErrorHolder, not a TestCase
        if not isinstance(test, unittest.TestCase):
            self.n += 1
            self.per_file[test.description.split()[-1].strip("()").split(".")[1]
                          if "tests." in test.description else "?"]["error"] += 1
            print("not ok %d - %s (ERROR): %s" % (self.n, test.description, err[1]))
            return
        self._bad(test, err, "ERROR")


def skip_excluded(suite):
    """Replace the excluded tests by ones that skip with the README's reason."""
    out = unittest.TestSuite()
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            out.addTest(skip_excluded(t))
        elif short_id(t) in excluded:
            why = excluded[short_id(t)]
            setattr(t, t._testMethodName, unittest.skip(why)(lambda *a: None))
            out.addTest(t)
        else:
            out.addTest(t)
    return out


signal.signal(signal.SIGALRM, on_alarm)
loader = unittest.TestLoader()
if only:
    loader.testNamePatterns = ["*%s*" % only]
suite = skip_excluded(loader.loadTestsFromModule(tests))
result = TapResult()
start = time.monotonic()
suite.run(result)
took = time.monotonic() - start
print("1..%d" % result.n)

# The suite's own summary, as unittest's TextTestRunner would print it.
print("# Ran %d tests in %.3fs" % (result.testsRun, took))
extra = []
if result.failures:
    extra.append("failures=%d" % len(result.failures))
if result.errors:
    extra.append("errors=%d" % len(result.errors))
if result.skipped:
    extra.append("skipped=%d" % len(result.skipped))
print("# %s%s" % ("OK" if result.wasSuccessful() else "FAILED",
                  " (%s)" % ", ".join(extra) if extra else ""))
total = collections.Counter()
for name in sorted(result.per_file):
    c = result.per_file[name]
    total.update(c)
    print("# per-file %-26s pass %3d  fail %2d  error %2d  skip %3d" %
          (name, c["pass"], c["fail"], c["error"], c["skip"]))
print("# per-file %-26s pass %3d  fail %2d  error %2d  skip %3d" %
      ("TOTAL", total["pass"], total["fail"], total["error"], total["skip"]))
sys.exit(0 if result.wasSuccessful() else 1)
