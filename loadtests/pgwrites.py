#!/usr/bin/env python3
"""What Postgres did for a pass of a load test, per event: statements executed, rows written,
index entries written, WAL records and bytes, commits, and the statements that cost most.

    pgwrites.py snapshot OUT.json          # before and after the pass (DATABASE_URL)
    pgwrites.py report BEFORE AFTER EVENTS # per event of the pass

Statement figures need pg_stat_statements (the stack preloads it, ./stack up); without it they
are left out. Index entries are counted from the tables' counters: each inserted row and each
update that was not HOT writes one entry in every index of its table (a partial index whose
predicate the row misses is counted all the same, so the figure is an upper bound).
"""
import json
import os
import subprocess
import sys

SNAPSHOT = r"""
SELECT json_build_object({statements}
  'wal', (SELECT json_build_object('records', wal_records, 'bytes', wal_bytes) FROM pg_stat_wal),
  'commits', (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),
  'tables', (SELECT coalesce(json_object_agg(t.relname, json_build_object(
      'ins', t.n_tup_ins, 'upd', t.n_tup_upd, 'hot', t.n_tup_hot_upd, 'del', t.n_tup_del,
      'indexes', (SELECT count(*) FROM pg_index i WHERE i.indrelid = t.relid))), '{}')
    FROM pg_stat_user_tables t))
"""

STATEMENTS = r"""
  'statements', (SELECT coalesce(json_object_agg(queryid, json_build_object(
      'calls', calls, 'ms', total_exec_time, 'rows', rows, 'query', left(query, 160))), '{}')
    FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database
      WHERE datname = current_database())),"""


def psql(sql):
    done = subprocess.run(
        ["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", os.environ["DATABASE_URL"], "-c", sql],
        capture_output=True, text=True,
    )
    return json.loads(done.stdout) if done.returncode == 0 else None


def snapshot(path):
    # Without pg_stat_statements (not preloaded, or the extension not created) the rest still.
    taken = psql(SNAPSHOT.replace("{statements}", STATEMENTS))
    if taken is None:
        taken = psql(SNAPSHOT.replace("{statements}", ""))
    if taken is None:
        sys.exit("pgwrites: the database did not answer")
    with open(path, "w") as f:
        json.dump(taken, f)


def report(before_path, after_path, events):
    before = json.load(open(before_path))
    after = json.load(open(after_path))
    events = float(events)
    per = lambda n: n / events
    rows = index_entries = 0
    by_table = []
    for name, t in after["tables"].items():
        b = before["tables"].get(name, {"ins": 0, "upd": 0, "hot": 0, "del": 0})
        ins, upd, hot, dele = (t[k] - b[k] for k in ("ins", "upd", "hot", "del"))
        written = ins + upd + dele
        if written <= 0:
            continue
        entries = (ins + upd - hot) * t["indexes"]
        rows += written
        index_entries += entries
        by_table.append((written, name, ins, upd, hot, dele, entries))
    wal = {k: after["wal"][k] - before["wal"][k] for k in ("records", "bytes")}
    print(f"per event: {per(rows):.2f} rows written, {per(index_entries):.2f} index entries, "
          f"{per(wal['records']):.1f} WAL records, {per(float(wal['bytes'])):,.0f} WAL bytes, "
          f"{per(after['commits'] - before['commits']):.3f} commits")
    for written, name, ins, upd, hot, dele, entries in sorted(by_table, reverse=True)[:8]:
        print(f"  {name}: {per(written):.2f} rows (ins {per(ins):.2f}, upd {per(upd):.2f} of "
              f"which HOT {per(hot):.2f}, del {per(dele):.2f}), {per(entries):.2f} index entries")
    statements = after.get("statements")
    if not statements:
        print("  statements: pg_stat_statements not loaded")
        return
    moved = []
    for qid, s in statements.items():
        b = (before.get("statements") or {}).get(qid, {"calls": 0, "ms": 0.0})
        calls = s["calls"] - b["calls"]
        if calls > 0:
            moved.append((s["ms"] - b["ms"], calls, s["query"]))
    calls = sum(m[1] for m in moved)
    ms = sum(m[0] for m in moved)
    print(f"  statements: {per(calls):.2f} per event, {1000 * per(ms):.0f} us of execution per event")
    for ms_of, calls_of, query in sorted(moved, reverse=True)[:8]:
        text = " ".join(query.split())[:110]
        print(f"    {1000 * per(ms_of):6.1f} us  {per(calls_of):5.2f} calls  {text}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "snapshot":
        snapshot(sys.argv[2])
    elif len(sys.argv) == 5 and sys.argv[1] == "report":
        report(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
