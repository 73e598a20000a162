"""Two versions of a 200-step workflow, as an approver would review them (loadtests/audit/run):
the second moves 10 steps, changes 20, adds 5 and removes 5. Prints both as JSON lines."""
import json
import random

random.seed(28)


def step(i):
    if i % 4 == 3:
        return {"id": f"s{i}", "type": "rule_set", "outputKey": f"r{i}",
                "rules": [{"type": "field", "path": f"score{i}", "failWhen": {"op": "gt", "value": i}},
                          {"rule": f"rule-{i % 9}"}]}
    return {"id": f"s{i}", "type": "call_app", "app": f"vendor-{i % 7}", "action": "check",
            "input": {"depth": i % 3, "country": "GB"}, "inputMapping": {"name": "subject.name"},
            "outputKey": f"o{i}"}


v1 = [step(i) for i in range(200)]
v2 = [dict(s) for s in v1]
for s in random.sample(v2, 20):
    if s["type"] == "call_app":
        s["input"] = {"depth": 9, "country": "FR"}
    else:
        s["rules"] = [{"type": "field", "path": s["rules"][0]["path"], "failWhen": {"op": "gt", "value": 1}}]
for s in random.sample(v2, 5):
    v2.remove(s)
for _ in range(10):
    s = v2.pop(random.randrange(len(v2)))
    v2.insert(random.randrange(len(v2)), s)
for i in range(200, 205):
    v2.insert(random.randrange(len(v2)), step(i))
print(json.dumps({"steps": v1}))
print(json.dumps({"steps": v2}))
