"""A tempest run's subunit v2 stream (`stestr last --subunit`) on stdin, as JSON on stdout:
[{"id": test id without its [tags], "status": "success"|"fail"|"skip", "reason": first lines
of the traceback or the skip reason}]. Run with /usr/bin/python3 (Debian's python3-subunit)."""
import json
import re
import sys

import subunit
import testtools


def reason(details):
    for key in ("traceback", "reason"):
        if key in details:
            text = details[key].as_text().strip()
            if key == "traceback":
                # the exception line(s) at the end say what failed
                lines = [l for l in text.splitlines() if l.strip()]
                return "\n".join(lines[-6:])
            return text
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
