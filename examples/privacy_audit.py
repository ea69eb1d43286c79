"""Empirical privacy audit of dpopt's mechanisms: claimed ε against the ε their runs prove.

Each mechanism's measurement runs ``--runs`` times on each of two neighbouring inputs; the
log-likelihood-ratio statistic of every run goes to ``dpopt.privacy.audit.epsilon_lower_bound``
(half the runs pick the distinguishing event, half estimate its probabilities with
Clopper–Pearson intervals at confidence 1 − α). A correct mechanism never proves more than it
claims, beyond the false-alarm rate α. Run: ``python examples/privacy_audit.py``
(``--quick``: the first audit, 500 runs per neighbour). The runs' seed is an audit's, not a
release's: a real release takes ``rng=None``, because a noise seed is a secret key.
"""

from __future__ import annotations

import argparse
import json
import time

from dpopt.compare import AUDITS, run_audit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20_000, help="runs per neighbour")
    parser.add_argument("--seed", type=int, default=0, help="seed of the runs (default: 0)")
    parser.add_argument("--alpha", type=float, default=0.05, help="false-alarm rate")
    parser.add_argument("--only", nargs="*", choices=sorted(AUDITS), help="audits to run")
    parser.add_argument("--json", metavar="PATH", help="write the table as JSON")
    parser.add_argument("--quick", action="store_true", help="one audit, 500 runs: seconds")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.only = 500, args.only or [next(iter(AUDITS))]
    rows = []
    print(f"{'mechanism':<38} {'claimed ε':>9} {'δ':>7} {'empirical ε ≥':>13} {'runs':>8} {'s':>6}")
    for key in args.only or AUDITS:
        audit = AUDITS[key]()
        start = time.perf_counter()
        result = run_audit(audit, args.runs, seed=args.seed, alpha=args.alpha)
        seconds = time.perf_counter() - start
        rows.append(
            {
                "mechanism": audit.name,
                "claimed_epsilon": result.claimed_epsilon,
                "claimed_delta": result.claimed_delta,
                "empirical_epsilon_lower": result.epsilon_lower,
                "runs": result.trials,
                "seconds": seconds,
                "consistent": result.consistent,
            }
        )
        print(
            f"{audit.name:<38} {result.claimed_epsilon:>9.3f} {result.claimed_delta:>7.0e} "
            f"{result.epsilon_lower:>13.3f} {result.trials:>8} {seconds:>6.1f}"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=1)
    if not all(row["consistent"] for row in rows):
        raise SystemExit("an audit proved more privacy loss than its mechanism claims")


if __name__ == "__main__":
    main()
