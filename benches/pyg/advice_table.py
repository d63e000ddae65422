"""Prints issue 30's table from advice_proof.py's rows, and its four figures:
jobs advised as fitting that survived under the limit, the median real peak
÷ budget of those, the jobs whose advised batch is at least half the largest
batch that fits (up to the job's own), and the jobs left without advice.

    python3 benches/pyg/advice_table.py tests/fixtures/pyg/advice-2611253.jsonl
"""

import json
import statistics
import sys

GIB = 1 << 30


def advice_text(r):
    rec = r["advice"]
    if not rec:
        return "none"
    ch = [f"{c['setting']} {c['from']}→{c['to']}" for c in rec.get("changes", [])]
    return ", ".join(ch) if ch else "keep yours"


def largest(r):
    """(largest batch known to fit, smallest known not to, the job's own batch)."""
    own = int(r["command"].split("--batch ")[1].split()[0])
    steps = r.get("batch_steps", [])
    ok = max([r["advice"]["batch_size"]] + [s["batch"] for s in steps if s["survived"]])
    bad = min([s["batch"] for s in steps if not s["survived"]], default=None)
    return min(ok, own), bad, own


def main(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    print("| job | real peak | budget | plan's peak | advice | fits by plan | outcome under the budget | real peak ÷ budget | advised batch ÷ largest that fits |")
    print("|---|---:|---:|---:|---|---|---|---:|---:|")
    fitting, survived, ratios, half, judged, none = 0, 0, [], 0, 0, 0
    killed = undecided = failed = 0
    for r in rows:
        rec = r["advice"]
        if not rec:
            none += 1
        run = r.get("advised_run")
        outcome, ratio, share = "not run", "", ""
        if rec and rec.get("fits"):
            fitting += 1
            if run["survived"]:
                survived += 1
                ratios.append(run["peak"] / r["budget"])
                outcome = "survived"
                ok, bad, own = largest(r)
                b = rec["batch_size"]
                if bad is None:
                    share = f"{b / ok:.2f} (the job's own {own} fits)" if ok == own else f"≤ {b / ok:.2f}"
                else:
                    share = f"{b / (bad - 1):.2f}–{b / ok:.2f}"
                # The largest that fits is below `bad`: at least half if 2b >= bad - 1.
                judged += 1
                half += (b / ok >= 0.5) if bad is None else (2 * b >= bad - 1)
            elif run["exit"] is None:
                outcome = "time cap: not decided"
                undecided += 1
            elif run["exit"] != 137:
                # Not a kill: the verdict watch gave (the tail of its output).
                why = run.get("why", "").split("verdict: ")[-1].split(":")[0].strip()
                outcome = f"failed (exit {run['exit']}, {why or 'see the row'})"
                failed += 1
            else:
                outcome = f"killed (exit {run['exit']})"
                killed += 1
            ratio = f"{run['peak'] / r['budget']:.2f}"
        elif rec:
            c = r.get("closest_run")
            need = rec["needs_host_bytes"] / GIB
            outcome = f"nothing fits: closest needs {need:.2f} GiB" + (
                f"; under that: {'survived' if c['survived'] else 'killed'}, real peak "
                f"{c['peak'] / GIB:.2f} GiB ({c['peak'] / r['budget']:.2f} of the budget)"
                if c else "")
        print(f"| {r['id']} | {r['peak'] / GIB:.2f} GiB | {r['budget'] / GIB:.2f} GiB | "
              f"{(r['planned_original'] or 0) / GIB:.2f} GiB | {advice_text(r)} | "
              f"{rec.get('fits') if rec else '-'} | {outcome} | {ratio} | {share} |")
    print()
    print(f"jobs: {len(rows)}; advised as fitting: {fitting}: survived {survived}, killed {killed}, "
          f"failed otherwise {failed}, not decided (time cap) {undecided}")
    if ratios:
        print(f"real peak ÷ budget of those: median {statistics.median(ratios):.2f}, "
              f"min {min(ratios):.2f}, max {max(ratios):.2f}")
    print(f"advised batch at least half the largest that fits: {half} of {judged}")
    print(f"left without advice: {none}; nothing fits by the model (closest given): "
          f"{sum(1 for r in rows if r['advice'] and not r['advice'].get('fits'))}")


if __name__ == "__main__":
    main(sys.argv[1])
