"""Analysis of DKEF's stage-1 stability study (dkef-stage1-stability.sh): the table.

    analysis.py table OUT SCHEDULES RATES SEEDS
        table.md's text on stdout, from OUT/<schedule>/lr<R>/seed-<S>/results.json (DKEF-G-10) and
        OUT/kefg/seed-<S>/results.json (KEF-G); SCHEDULES, RATES and SEEDS are comma-separated
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from common.summary import load_json, mean_sd  # noqa: E402


def ms(xs, spec=".3g"):
    # "mean ± sd" over the seeds, the value alone for one seed.
    if len(xs) < 2:
        return format(xs[0], spec) if xs else "n/a"
    mean, sd = mean_sd(xs)
    return f"{format(mean, spec)} ± {format(sd, spec)}"


def table(out, schedules, rates, seeds):
    lines = [f"DKEF stage 1 on Figure 1's mixture, patience 200, mean ± sd over seeds {', '.join(seeds)}.", "",
             "| schedule | learning rate | DKEF-G-10 Fisher div. | KEF-G Fisher div. | DKEF better (seeds) "
             "| best step | steps run | validation loss: start / best / last | max gradient norm | clipped steps "
             "| DKEF log-lik. | KEF-G log-lik. |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for sched in schedules:
        for r in rates:
            rows = []
            for s in seeds:
                row = load_json(os.path.join(out, sched, f"lr{r}", f"seed-{s}", "results.json"))["models"]
                row.update(load_json(os.path.join(out, "kefg", f"seed-{s}", "results.json"))["models"])
                rows.append(row)
            d = [x["DKEF-G-10"] for x in rows]
            k = [x["KEF-G"] for x in rows]
            fd_d = [x["metrics"]["fisher_divergence"] for x in d]
            fd_k = [x["metrics"]["fisher_divergence"] for x in k]
            better = sum(a < b for a, b in zip(fd_d, fd_k))
            lines.append(
                f"| {sched} | {r} | {ms(fd_d)} | {ms(fd_k)} | {better}/{len(seeds)} "
                f"| {ms([x['fit']['best_step'] for x in d], '.0f')} | {ms([x['fit']['iterations'] for x in d], '.0f')} "
                f"| {ms([x['fit']['curve'][0][1] for x in d])} / {ms([x['fit']['stage1_validation_loss'] for x in d])} / "
                f"{ms([x['fit']['curve'][-1][1] for x in d])} "
                f"| {ms([x['fit']['max_gradient_norm'] for x in d])} | {ms([x['fit']['clipped_steps'] for x in d], '.0f')} "
                f"| {ms([x['metrics']['log_likelihood'] for x in d])} | {ms([x['metrics']['log_likelihood'] for x in k])} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("table", help="table.md's text on stdout")
    p.add_argument("out", help="the study's output directory")
    for name in ("schedules", "rates", "seeds"):
        p.add_argument(name, type=lambda text: text.split(","), help=f"the {name}, comma-separated")
    args = parser.parse_args(argv)
    print(table(args.out, args.schedules, args.rates, args.seeds))


if __name__ == "__main__":
    main()
