"""Analysis of DDE's Table 1 (reproduce-dde-table1.sh): the KEF's basis size, the reference metric's
kernel, the MMD² of a `kef test two-sample --json` report and the table.

    analysis.py basis-size N
        the KEF's basis size by the Nyström poster's θ = 1/3 rule, ⌈N^θ log N⌉ (50 at N = 500, 70 at 1000)
    analysis.py reference-sigma GAMMA F_BD
        σ = 1/√(2γ'), γ' = GAMMA · F_BD / 0.1: the Gaussian of the reference's kernel exp(−γ'‖x − y‖²)
        for a DDE model fitted with the bandwidth factor F_BD (the reference's is 0.1)
    analysis.py mmd2 REPORT
        the unbiased MMD² of a `kef test two-sample --json` report
    analysis.py table OUT ITERATIONS DRAWS SELECT F_BD DATASET...
        table.md's text on stdout, from the files each cell of OUT/<dataset>/seed<s>/ holds
        (<model>.mmd_ref, .mmd_median, .sample_seconds, .poor_mixing, kef.min_ess)

SELECT is 1 when the DDE runs kept the iterate selected by MMD (--select), 0 otherwise.
"""
import argparse
import json
import math
import os
import statistics

# DDE Table 1: MMD² ×10⁻³ of DDE and KEF, then the seconds of DDE's and KEF+HMC's draws.
PAPER = {"two_moons": (0.11, 1.32, 0.07, 13.04), "rings": (1.53, 3.19, 0.07, 14.12), "grid": (1.32, 40.39, 0.04, 4.43)}


def basis_size(n):
    # The tolerance keeps an exact integer (the logarithm rounded up) from becoming the next one.
    return math.ceil(n ** (1 / 3) * math.log(n) - 1e-9)


def reference_sigma(gamma, f_bd):
    return 1 / math.sqrt(2 * float(gamma) * float(f_bd) / 0.1)


def mmd2(report):
    with open(report) as f:
        return json.load(f)["statistic"]["mmd2_unbiased"]


def read_number(path):
    with open(path) as f:
        return float(f.read())


def cell(values, digits):
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.{digits}f} (1 seed)"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def table(out, iterations, draws, select, f_bd, datasets):
    lines = [
        f"# DDE Table 1 (kef): MMD² ×10⁻³ between {draws} model draws and the test rows, and the seconds "
        f"`kef sample` takes to draw them; mean ± sd over seeds. DDE: {iterations} iterations"
        + (f", f_bd = {f_bd} (the reference's is 0.1; the reference kernel below is still the reference's, "
           f"γ scaled by {f_bd} / 0.1)" if float(f_bd) != 0.1 else "")
        + (", the iterate whose sampler was closest (MMD², f's kernel) to the training rows among those checked "
           "every 100 epochs (select = \"mmd\", the reference's logged checkpoints)" if select else "")
        + ", draws from the sampler network; KEF: Nyström (m by the θ = 1/3 rule, σ and λ by held-out score matching), draws "
        "by HMC. \"Reference kernel\": the reference implementation's metric, MMD²_u with the kernel of the "
        "seed's DDE f (exp(−γ‖x − y‖²), γ = 0.5 / (f_bd · m²)), the same kernel for both models; the paper's "
        "numbers belong beside it. \"Median σ\": kef's rule (the `mmd_two_sample` evaluator's, σ the median distance of "
        f"the pooled sample). Both measure the draws `kef sample` made and timed. HMC's min ESS is the smallest effective sample size over the coordinates of its "
        f"{draws} draws; \"equal ESS\" scales its time to {draws} effective draws (seconds × {draws} / min ESS), "
        "the sampler network's draws being independent.\n",
        "| data | DDE MMD (reference kernel) | KEF MMD (reference kernel) | paper: DDE / KEF MMD | DDE per seed (reference kernel) | "
        "DDE MMD (median σ) | KEF MMD (median σ) | DDE sample (s) | KEF+HMC sample (s) | HMC min ESS | "
        "KEF+HMC at equal ESS (s) | seeds | paper: DDE / KEF+HMC s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for d in datasets:
        base = os.path.join(out, d)
        seeds = sorted((s for s in os.listdir(base) if s.startswith("seed")), key=lambda s: int(s[4:])) if os.path.isdir(base) else []
        mmd = {"dde": [], "kef": []}
        ref = {"dde": [], "kef": []}
        secs = {"dde": [], "kef": []}
        poor = 0
        ess, equal = [], []
        for s in seeds:
            for m in ("dde", "kef"):
                r = os.path.join(base, s, m + ".mmd_median")
                if os.path.exists(r):
                    mmd[m].append(1e3 * read_number(r))
                r = os.path.join(base, s, m + ".mmd_ref")
                if os.path.exists(r):
                    ref[m].append(1e3 * read_number(r))
                t = os.path.join(base, s, m + ".sample_seconds")
                if os.path.exists(t):
                    secs[m].append(read_number(t))
                poor += os.path.exists(os.path.join(base, s, m + ".poor_mixing"))
            e = os.path.join(base, s, "kef.min_ess")
            t = os.path.join(base, s, "kef.sample_seconds")
            if os.path.exists(e) and os.path.exists(t):
                value = read_number(e)
                ess.append(value)
                if value > 0:
                    equal.append(read_number(t) * float(draws) / value)
        p = PAPER[d]
        hmc = f" (HMC mixed poorly in {poor} of {len(secs['kef'])} runs)" if poor else ""
        per_seed = ", ".join(f"{v:.2f}" for v in ref["dde"]) or "—"
        lines.append(
            f"| {d} | {cell(ref['dde'], 2)} | {cell(ref['kef'], 2)} | {p[0]} / {p[1]} | {per_seed} | "
            f"{cell(mmd['dde'], 2)} | {cell(mmd['kef'], 2)} | {cell(secs['dde'], 3)} | {cell(secs['kef'], 2)}{hmc} | "
            f"{cell(ess, 0)} | {cell(equal, 1)} | {len(seeds)} | {p[2]} / {p[3]} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("basis-size", help="⌈n^(1/3) log n⌉")
    p.add_argument("n", type=int)
    p = sub.add_parser("reference-sigma", help="σ of the reference metric's kernel")
    p.add_argument("gamma", help="γ of the seed's saved DDE model")
    p.add_argument("f_bd", help="the bandwidth factor the DDE model was fitted with")
    p = sub.add_parser("mmd2", help="the unbiased MMD² of a kef test two-sample --json report")
    p.add_argument("report")
    p = sub.add_parser("table", help="table.md's text on stdout")
    p.add_argument("out", help="the study's output directory")
    p.add_argument("iterations", help="the DDE iterations (a label)")
    p.add_argument("draws", help="the model draws per cell")
    p.add_argument("select", choices=["0", "1"], help="1 for --select")
    p.add_argument("f_bd", help="DDE's bandwidth factor (--f-bd)")
    p.add_argument("datasets", nargs="*")
    args = parser.parse_args(argv)
    if args.command == "basis-size":
        print(basis_size(args.n))
    elif args.command == "reference-sigma":
        print(repr(reference_sigma(args.gamma, args.f_bd)))
    elif args.command == "mmd2":
        print(repr(mmd2(args.report)))
    else:
        print(table(args.out, args.iterations, args.draws, args.select == "1", args.f_bd, args.datasets))


if __name__ == "__main__":
    main()
