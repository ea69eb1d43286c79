"""Expected error against ε before spending, DGM and relational (docs/choosing-epsilon.md): the
curves of
:func:`dpopt.dgm.plan_error_curve` and :func:`dpopt.relational.plan_error_curve` beside their
baselines.

DGM: alarm with 10,000 records, marginal L1 of the default budget split and of the uniform
split (D-Ind), with CPDs drawn from the Dirichlet(1) prior on the public structure and with
alarm's own CPDs. Relational: 600 × 400 tables, 1,000 links, d_max 3, the learned links' cross
3-way error beside random links. The plot (``error_curves.png`` under ``--out``) has both.

Run: ``python examples/error_curves.py`` (about 2 min on 2 cores); ``--quick``: asia and a
smaller database, one seed.
"""

from __future__ import annotations

import argparse

import plot_output

from dpopt import dgm, relational
from dpopt.dgm import ErrorCurve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="asia, a small database, 1 seed")
    plot_output.add_arguments(parser)
    args = parser.parse_args()
    network, records = ("asia", 2_000) if args.quick else ("alarm", 10_000)
    shape = (200, 150, 300) if args.quick else (600, 400, 1000)
    seeds = 1 if args.quick else 3
    dgm_epsilons = (0.5, 1.0, 3.0)
    curves = {
        prior: dgm.plan_error_curve(
            network, records=records, epsilons=dgm_epsilons, releases=seeds, prior=prior
        )
        for prior in ("dirichlet", "given")
    }
    print(f"DGM {network}, {records:,} records: marginal L1, default / D-Ind")
    for prior, curve in curves.items():
        ratios = " ".join(f"{r:.3f}" for r in curve.ratio["marginal_l1"])
        print(f"  {prior:<10} ratio at ε = {dgm_epsilons}: {ratios}")
    links = relational.plan_error_curve(shape, d_max=3, epsilons=(1.0, 3.0, 10.0), releases=seeds)
    print(f"relational {shape}, d_max 3: learned / random links at ε_rel = {links.epsilons}")
    print("  ratio " + " ".join(f"{r:.3f}" for r in links.ratio["error_percent"]))
    if not args.no_plot:
        plot(curves, links, args.out)


def plot(curves: dict[str, ErrorCurve], links: ErrorCurve, folder) -> None:
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(9, 3.8))
    for prior, curve in curves.items():
        style = "-" if prior == "dirichlet" else "--"
        for method in ("default", "baseline"):
            left.loglog(
                curve.epsilons,
                curve.mean[method]["marginal_l1"],
                style,
                marker="o",
                label=f"{method} ({prior} CPDs)",
            )
    left.set_xlabel("ε")
    left.set_ylabel("marginal L1")
    left.set_title(f"DGM {next(iter(curves.values())).parameters['network']}")
    left.legend(fontsize=7)
    right.semilogx(
        links.epsilons, links.mean["default"]["error_percent"], marker="o", label="learned links"
    )
    right.semilogx(
        links.epsilons, links.mean["baseline"]["error_percent"], "--", label="random links"
    )
    right.set_xlabel("ε_rel")
    right.set_ylabel("cross 3-way error %")
    right.set_title(f"relational {links.parameters['shape']}")
    right.legend(fontsize=7)
    plot_output.save(figure, folder, "error_curves.png")


if __name__ == "__main__":
    main()
