"""Two versions of a workflow of STEPS steps (default 200), as an approver would review them
(loadtests/audit/run): the second moves, changes, adds and removes steps in proportion (for 200
steps: moves 10, changes 20, adds 5, removes 5). Prints both as JSON lines.

  python3 workflows.py [STEPS] [SEED]"""
import json
import random
import sys

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
random.seed(int(sys.argv[2]) if len(sys.argv) > 2 else 28)


def step(i):
    if i % 4 == 3:
        return {"id": f"s{i}", "type": "rule_set", "outputKey": f"r{i}",
                "rules": [{"type": "field", "path": f"score{i}", "failWhen": {"op": "gt", "value": i}},
                          {"rule": f"rule-{i % 9}"}]}
    return {"id": f"s{i}", "type": "call_app", "app": f"vendor-{i % 7}", "action": "check",
            "input": {"depth": i % 3, "country": "GB"}, "inputMapping": {"name": "subject.name"},
            "outputKey": f"o{i}"}


v1 = [step(i) for i in range(steps)]
v2 = [dict(s) for s in v1]
for s in random.sample(v2, max(1, steps // 10)):
    if s["type"] == "call_app":
        s["input"] = {"depth": 9, "country": "FR"}
    else:
        s["rules"] = [{"type": "field", "path": s["rules"][0]["path"], "failWhen": {"op": "gt", "value": 1}}]
for s in random.sample(v2, max(1, steps // 40)):
    v2.remove(s)
for _ in range(max(1, steps // 20)):
    s = v2.pop(random.randrange(len(v2)))
    v2.insert(random.randrange(len(v2)), s)
for i in range(steps, steps + max(1, steps // 40)):
    v2.insert(random.randrange(len(v2)), step(i))
print(json.dumps({"steps": v1}))
print(json.dumps({"steps": v2}))
