#!/usr/bin/env python3
"""Sum the time of each package's actions in a `go build -debug-actiongraph`
file and print the top N packages and the top modules (docs/build.md).

usage: python3 docs/build-actiongraph.py ag.json [N]
"""
import collections
import datetime
import json
import sys


def ts(s):
    # RFC 3339 with nanoseconds; Python reads microseconds.
    s = s.replace("Z", "+00:00")
    a, b = s.split(".", 1)
    i = max(b.find("+"), b.find("-"))
    return datetime.datetime.fromisoformat(a + "." + (b[:i] + "000000")[:6] + b[i:]).timestamp()


def module(pkg):
    parts = pkg.split("/")
    if "." not in parts[0]:
        return "std"
    n = 3 if parts[0] in ("github.com", "golang.org", "google.golang.org") else 2
    return "/".join(parts[:n])


def main():
    per, mods, total = collections.Counter(), collections.Counter(), 0.0
    for a in json.load(open(sys.argv[1])):
        if a.get("Mode") not in ("build", "link") or not a.get("TimeStart") or not a.get("TimeDone"):
            continue
        d = ts(a["TimeDone"]) - ts(a["TimeStart"])
        per[(a["Mode"], a.get("Package", ""))] += d
        total += d
        if a["Mode"] == "build":
            mods[module(a.get("Package", ""))] += d
    print("sum of action time %.0f s" % total)
    for (mode, pkg), d in per.most_common(int(sys.argv[2]) if len(sys.argv) > 2 else 25):
        print("%7.1f  %s %s" % (d, mode, pkg))
    print("--- by module")
    for m, d in mods.most_common(15):
        print("%7.1f  %s" % (d, m))


if __name__ == "__main__":
    main()
