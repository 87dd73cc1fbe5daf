"""A tempest run's subunit v2 stream (`stestr last --subunit`) on stdin, as JSON on stdout:
[{"id": test id without its [tags], "status": "success"|"fail"|"skip", "reason": first lines
of the traceback or the skip reason}]. Run with /usr/bin/python3 (Debian's python3-subunit)."""
import json
import re
import sys

import subunit
import testtools


NOT_THE_ERROR = ("Traceback", "During handling", "Failed validating", "On instance", "Details:")


def reason(details):
    """The exception a failure ended with (and its Details line), or the skip reason."""
    if "traceback" in details:
        lines = details["traceback"].as_text().strip().splitlines()
        # the exception lines are the unindented ones; the last is what the test failed with
        ends = [i for i, l in enumerate(lines)
                if l and not l[0].isspace() and ":" in l and not l.startswith(NOT_THE_ERROR)]
        if not ends:
            return "\n".join(lines[-3:])
        at = ends[-1]
        found = [lines[at]]
        if at + 1 < len(lines) and lines[at + 1].startswith("Details:"):
            found.append(lines[at + 1])
        return " ".join(found)[:600]
    if "reason" in details:
        return details["reason"].as_text().strip()
    return ""


def main():
    results = []

    def on_test(test):
        # a class whose setUpClass failed reports as one "setUpClass (module.Class)" failure
        if test["status"] in ("success", "fail", "skip", "xfail", "uxsuccess"):
            results.append({
                "id": re.sub(r"\[.*\]$", "", test["id"]),
                "status": test["status"],
                "reason": reason(test["details"]) if test["status"] != "success" else "",
            })

    stream = subunit.ByteStreamToStreamResult(sys.stdin.buffer, non_subunit_name="stdout")
    sink = testtools.StreamToDict(on_test)
    sink.startTestRun()
    stream.run(sink)
    sink.stopTestRun()
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
