"""Compare inference results with ground truth, the TIPC compare_results way (upstream's
test_tipc/compare_results.py), with the checks it lacks:

    python test_tipc/compare_results.py --gt_file='GLOB' --log_file='GLOB' --atol=1e-3 --rtol=1e-3

Results are lines `<name>\t<json>` (a JSON object of outputs, or a list of numbers). Ground-truth
files are bucketed by the precision token in their names (fp32/fp16/int8); a log is compared with
the bucket of the token in its own name, else with ground truth whose name has no token (a log of
a precision without ground truth is skipped, and says so). For each output, in
this order: every name and output present, then shapes and dtypes, then values (NaN or Inf
fails; |actual - expected| <= atol + rtol * |expected|). Every failure is collected before the
verdict; the max absolute and relative difference per output is printed, and with --diff_log
written in reprod_log's log format. Exit code 0 if all pass, 1 if not, 2 on bad arguments.
Needs numpy only.
"""
import argparse
import glob
import json
import os
import re
import sys
import time

sys.dont_write_bytecode = True  # importing tipc_compare leaves no __pycache__ in the repository's test_tipc/
from tipc_compare import MARKER, Outcome, compare_outputs  # noqa: E402

PRECISIONS = ("fp32", "fp16", "int8")
MAX_SHOWN = 10  # failures printed one by one; all are counted


def parse_results(path):
    """name -> outputs, from the lines `<name>\\t<json>` of a result or log file."""
    results = {}
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            name, tab, payload = line.rstrip("\n").partition("\t")
            if not tab or not payload.lstrip().startswith(("{", "[")) or name in results:
                continue
            try:
                value = json.loads(payload)
            except ValueError:
                continue
            results[name] = value if isinstance(value, dict) else {"result": value}
    return results


def precision_of(path):
    found = [p for p in PRECISIONS if re.search(r"(^|[_.-])" + p + r"([_.-]|$)", os.path.basename(path))]
    return found[0] if found else None


def compare(expected, actual, source, atol, rtol, outcome):
    """Every result line of the ground truth against the log's line of the same name (tipc_compare)."""
    for name, outputs in expected.items():
        if name not in actual:
            outcome.fail(f"{source}: result {name} is missing")
            continue
        compare_outputs(outputs, actual[name], atol, rtol, f"{source}: {name}", outcome)


def write_diff_log(path, outcome, atol):
    """The log in reprod_log's ReprodDiffHelper format, max abs diff per output."""
    stamp = time.strftime("[%Y/%m/%d %H:%M:%S] root INFO: ")
    lines = []
    for output, value in sorted(outcome.max_abs.items()):
        lines.append(f"{stamp}{output}: ")
        lines.append(f"{stamp}\tmax diff: check passed: {value <= atol}, value: {value}")
    lines.append(stamp + ("diff check passed" if not outcome.failures else "diff check failed"))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gt_file", required=True, help="ground-truth file(s), a glob")
    parser.add_argument("--log_file", required=True, help="result or log file(s), a glob")
    parser.add_argument("--atol", type=float, default=1e-3)
    parser.add_argument("--rtol", type=float, default=1e-3)
    parser.add_argument("--diff_log", help="also write the differences in reprod_log's format here")
    args = parser.parse_args()
    gts, logs = sorted(glob.glob(args.gt_file)), sorted(glob.glob(args.log_file))
    if not gts:
        print(f"compare_results: no ground-truth file matches {args.gt_file}", file=sys.stderr)
        return 2
    if not logs:
        print(f"compare_results: no result file matches {args.log_file}", file=sys.stderr)
        return 2
    buckets = {}
    for path in gts:
        buckets.setdefault(precision_of(path), {}).update(parse_results(path))
    outcome = Outcome()
    compared = 0
    for path in gts:
        if not parse_results(path):
            outcome.fail(f"{path}: holds no `<name>\\t<json>` result lines")
    for path in logs:
        token = precision_of(path)
        expected = buckets.get(token, buckets.get(None))
        if expected is None:
            print(f"skipped {path}: no {token} ground truth")
            continue
        compared += 1
        compare(expected, parse_results(path), path, args.atol, args.rtol, outcome)
    if not compared:
        outcome.fail("no result file had ground truth of its precision: nothing was compared")
    for output in sorted(outcome.max_abs):
        print(f"{output}: max abs diff {outcome.max_abs[output]:.3e}, max rel diff {outcome.max_rel[output]:.3e} "
              f"(atol {args.atol:g}, rtol {args.rtol:g})")
    for failure in outcome.failures[:MAX_SHOWN]:
        print(f"FAIL {failure}")
    if len(outcome.failures) > MAX_SHOWN:
        print(f"FAIL ... and {len(outcome.failures) - MAX_SHOWN} more failures")
    print(MARKER + json.dumps({"passed": not outcome.failures, "atol": args.atol, "rtol": args.rtol,
                               "max_abs": outcome.max_abs, "max_rel": outcome.max_rel,
                               "failures": len(outcome.failures), "logs": compared}))
    if args.diff_log:
        write_diff_log(args.diff_log, outcome, args.atol)
    if outcome.failures:
        print(f"The results of {len(logs)} file(s) and {args.gt_file} are inconsistent!")
        return 1
    print(f"Assert allclose passed! The results of {len(logs)} file(s) and {args.gt_file} are consistent!")
    return 0


if __name__ == "__main__":
    sys.exit(main())
