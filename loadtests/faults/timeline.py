"""A fault run's answers against its timeline (lib.sh's `event` lines and readiness readings).

    python3 timeline.py RESULTS_DIR

For each phase between two events (a dependency going, coming back): the answers to the requests
sent in it, by kind and status, and the longest; the readiness readings that named each dependency; and, after each
`<name>.back`, how long until every kind was accepted again and readiness answered 200.
Prints a table; exits 1 when an answer took longer than HANG_MS (default 30,000: a hang), or
a kind was not accepted again within RECOVERY_MS (default 30,000) of a return.
"""

import collections
import os
import re
import sys

ANSWER = re.compile(r"answer (\w+) (\S+) (\d+) (\S+) (\d+) (\d+)")
ACCEPTED = {"install": {200}, "run": {202}, "case": {201}, "webhook": {202}}
HANG_MS = int(os.environ.get("HANG_MS", 30_000))
RECOVERY_MS = int(os.environ.get("RECOVERY_MS", 30_000))


def main():
    results = sys.argv[1]
    answers = []
    with open(os.path.join(results, "answers.txt"), errors="replace") as lines:
        for line in lines:
            found = ANSWER.search(line)
            if found:
                kind, _, status, _, ms, at = found.groups()
                # By when it was sent: what a request met is the phase it arrived in.
                answers.append((int(at) - int(ms), kind, int(status), int(ms)))
    events = []
    readiness = []
    with open(os.path.join(results, "timeline.txt")) as lines:
        for line in lines:
            words = line.split()
            if words[0] == "event":
                events.append((int(words[2]), words[1]))
    with open(os.path.join(results, "readiness.txt")) as lines:
        for line in lines:
            words = line.split()
            if len(words) >= 5 and words[0] == "ready":
                readiness.append((int(words[1]), words[2], words[3], words[4]))
    answers.sort()
    events.sort()
    start = answers[0][0] if answers else 0
    bounds = [(start, "start")] + events + [(answers[-1][0] + 1 if answers else 0, "end")]
    failed = []
    print("| phase | seconds | answers to the requests sent, by kind and status | longest answer (ms) | readiness named |")
    print("|---|---|---|---|---|")
    for (begin, name), (end, _) in zip(bounds, bounds[1:]):
        inside = [a for a in answers if begin <= a[0] < end]
        by = collections.Counter((kind, status) for _, kind, status, _ in inside)
        text = ", ".join(f"{kind} {status}: {n:,}" for (kind, status), n in sorted(by.items()))
        longest = max((ms for *_, ms in inside), default=0)
        named = collections.Counter()
        for at, _, _, deps in readiness:
            if begin <= at < end and deps != "-":
                named.update(deps.split(","))
        names = ", ".join(f"{dep} {n}" for dep, n in sorted(named.items())) or "-"
        print(f"| after {name} | {(end - begin) / 1000:.0f} | {text or '-'} | {longest:,} | {names} |")
        if longest > HANG_MS:
            failed.append(f"an answer took {longest} ms after {name}")
    for at, name in events:
        if not name.endswith(".back"):
            continue
        kinds = {kind for _, kind, _, _ in answers}
        waits = []
        for kind in sorted(kinds):
            first = next((a for a in answers if a[0] >= at and a[1] == kind and a[2] in ACCEPTED[kind]), None)
            wait = (first[0] - at) if first else None
            waits.append(f"{kind} {wait / 1000:.1f} s" if wait is not None else f"{kind} never")
            if wait is None or wait > RECOVERY_MS:
                failed.append(f"{kind} not accepted within {RECOVERY_MS} ms of {name}")
        ready = next((r for r in readiness if r[0] >= at and r[1] == "200" and r[2] == "200"), None)
        ready_text = f"{(ready[0] - at) / 1000:.1f} s" if ready else "never"
        print(f"  {name}: accepted again after {', '.join(waits)}; both ready after {ready_text}")
    verdict = "PASS" if not failed else "FAIL: " + "; ".join(failed)
    print(f"timeline: {verdict}")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
