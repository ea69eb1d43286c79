"""A DP synthetic relational database end to end (Alimohammadi et al., §3–8).

    python examples/relational_synthesis.py [--quick] [--movielens FOLDER] [--epsilon 2]
        [--seeds 5] [--sweep] [--seed 0] [--out examples/output] [--no-plot]

1. Builds the real database: the MovieLens-1M files in ``--movielens`` (users.dat, movies.dat,
   ratings.dat, pruned to d_max = 10), else a generated users × movies instance of the same
   shape (6,040 × 3,883, 10,000 links) with planted cross-table correlations.
2. Synthesizes it at (ε, δ) = (``--epsilon``, 10⁻⁵) for the whole release (one zCDP budget:
   30 % to the two tables' built-in MST, 70 % to the links), writes ``relational_users.csv``,
   ``relational_movies.csv`` and ``relational_links.csv`` to ``--out``, and prints the budget,
   the time, the peak memory and the error table (cross 3-way error, TV, mse, single-table
   errors, and random links between the same tables).
3. ``--sweep``: the paper's Fig. 3 experiment (:mod:`dpopt.paper.relational_figure`), error
   against ε_rel ∈ {0.1, 0.3, 1, 3, 10} over ``--seeds`` seeds, printed beside the paper's
   values and plotted to ``relational_synthesis.png``.

``--quick`` runs a 600 × 400 instance with 1,000 links, d_max = 3 and 3 link rounds (seconds,
not minutes).
``--seed`` seeds the generated data, the random-links baseline and the sweep's simulations;
the release itself draws fresh OS entropy (``rng=None``), because its noise seed is a secret
key: whoever knows it can remove the noise.
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

import numpy as np
import plot_output

from dpopt import relational
from dpopt.paper import relational_figure
from dpopt.relational import LinkSettings, cross_errors, evaluate, generate, load_movielens

FULL = {"shape": (6040, 3883, 10_000), "d_max": 10, "links": LinkSettings()}
QUICK = {"shape": (600, 400, 1000), "d_max": 3, "links": LinkSettings(rounds=3)}


def synthesize_once(args: argparse.Namespace, sizes: dict) -> None:
    if args.movielens:
        data = load_movielens(args.movielens)
        source = f"MovieLens files in {args.movielens}"
    else:
        users, movies, links = sizes["shape"]
        data = generate(users, movies, links, d_max=sizes["d_max"], seed=args.seed)
        source = f"generated {users} × {movies}, {links} links, d_max {sizes['d_max']}"
    print(f"real database: {source}; m = {data.m}")
    started = time.perf_counter()
    # rng=None: fresh OS entropy (a noise seed is a secret key, never a small int)
    database = relational.synthesize(
        data, epsilon=args.epsilon, delta=1e-5, settings=sizes["links"], progress=True
    )
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    args.out.mkdir(parents=True, exist_ok=True)
    for name, frame in (
        ("relational_users.csv", database.left),
        ("relational_movies.csv", database.right),
        ("relational_links.csv", database.links),
    ):
        frame.to_csv(args.out / name, index=False)
        print(f"wrote {args.out / name} ({len(frame)} rows)")
    budget = database.budget
    print(
        f"privacy: ({database.epsilon:g}, {database.delta:.3g})-DP in all: spent "
        f"ρ = {budget['spent']:.6g} of {budget['total']:.6g} in {len(budget['charges'])} "
        f"charges; link fits: {database.status}"
    )
    print(f"synthesis took {seconds:.1f} s, peak resident memory {peak:.0f} MiB")
    left = database.left.drop(columns="id")
    right = database.right.drop(columns="id")
    scores = evaluate(data, left, right, database.link_result.links)
    rng = np.random.default_rng(args.seed)
    cells = rng.choice(len(left) * len(right), len(database.links), replace=False)
    random_links = np.column_stack(np.divmod(cells, len(right)))
    baseline = cross_errors(data, left, right, random_links)
    cross = scores["cross"]
    print(f"\n{'metric':<38} {'synthetic':>10} {'random links':>12}")
    for key, label in (
        ("error_percent", "cross 3-way error % (100·mean L1)"),
        ("mean_tv", "cross 3-way mean TV"),
        ("mse", "cross 3-way mse (Def. 3)"),
    ):
        print(f"{label:<38} {cross[key]:>10.4g} {baseline[key]:>12.4g}")
    for side in ("left", "right"):
        print(f"{side + ' table mean L1 (1- and 2-way)':<38} {scores[side]['mean_l1']:>10.4g}")


def sweep(args: argparse.Namespace, sizes: dict) -> None:
    rows = relational_figure.run(
        seeds=args.seeds, shape=sizes["shape"], d_max=sizes["d_max"], seed=args.seed
    )
    summary = relational_figure.summarize(rows)
    print("\n" + relational_figure.format_report(summary))
    if args.no_plot:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(5.5, 3.8))
    eps = [s["epsilon"] for s in summary]
    axis.errorbar(
        eps,
        [s["error_percent"] for s in summary],
        yerr=[s["error_percent_sd"] for s in summary],
        marker="o",
        label="dpopt (generated, MST tables)",
    )
    axis.plot(eps, [s["random_links_percent"] for s in summary], "k:", label="random links")
    paper = relational_figure.PAPER_MOVIELENS
    axis.plot(list(paper), [v[0] for v in paper.values()], "s--", label="paper, MovieLens, AIM")
    axis.set_xscale("log")
    axis.set_xlabel("ε_rel")
    axis.set_ylabel("average 3-way cross error (%)")
    axis.legend(fontsize=8)
    plot_output.save(figure, args.out, "relational_synthesis.png")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small instance: seconds")
    parser.add_argument("--movielens", type=Path, help="folder with the MovieLens-1M .dat files")
    parser.add_argument("--epsilon", type=float, default=2.0, help="ε of the whole release")
    parser.add_argument("--sweep", action="store_true", help="also run the ε_rel sweep")
    parser.add_argument("--seeds", type=int, default=5, help="seeds per ε_rel in the sweep")
    parser.add_argument("--seed", type=int, default=0, help="seed of the whole run")
    plot_output.add_arguments(parser)
    args = parser.parse_args()
    sizes = QUICK if args.quick else FULL
    synthesize_once(args, sizes)
    if args.sweep:
        sweep(args, sizes)


if __name__ == "__main__":
    main()
