"""Checks kfuse profile --json against kfuse stats --json for one model:
one row per fused launch in plan order, times that add up, shares that sum
to 100%. Prints the rows for FileCheck; exits non-zero on a mismatch."""
import json
import sys

stats = json.load(open(sys.argv[1]))
prof = json.load(open(sys.argv[2]))
steps = prof["steps"]
launches = stats["fused"]["launches"]
assert prof["launches_per_run"] == launches, (prof["launches_per_run"], launches)
assert len(steps) == launches, (len(steps), launches)
assert [s["index"] for s in steps] == list(range(len(steps))), "rows not in plan order"
assert all(s["mean_us"] >= 0 for s in steps), steps
assert abs(sum(s["mean_us"] for s in steps) - prof["steps_total_us"]) <= 1e-6 * max(1.0, prof["steps_total_us"])
assert prof["steps_total_us"] <= prof["run_wall_us"], (prof["steps_total_us"], prof["run_wall_us"])
if prof["steps_total_us"] > 0:
    assert abs(sum(s["share_percent"] for s in steps) - 100) < 1e-6
assert prof["repeat"] == 2 and prof["warmup"] == 0 and prof["train"] is False and prof["target"] == "cpu"
print(f"{len(steps)} steps, {launches} launches per run, as kfuse stats counts")
for s in steps:
    print(s["name"], s["kind"], s["phase"])
