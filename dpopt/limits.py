"""Every size, iteration and memory limit of the library, in one place (docs/limits.md).

A limit bounds what one call may ask for: a size (cells, entries, attributes, rows), an
iteration count, or bytes of memory. Each one here is a module constant followed by its
docstring: what it bounds and why it exists, then two fields, ``Unit:`` and ``Past it:`` (the
error raised, the method that refuses, or the fallback taken), which docs/limits.md tabulates
(``python tools/limits_table.py`` writes the table; ``tests/unit/test_limits.py`` checks it).

The modules that check a limit import it from here under its own name, so that an error names
the limit as it is written here; the names a module once imported it as
(``dpopt.eigen.DENSE_MAX_N``, ``dpopt.planning.MEMORY_BUDGET``, …) answer with a
DeprecationWarning until 0.3 (CHANGELOG "Renamed or moved"), as do this module's own former
names (``PLAN_MEMORY_BUDGET``, ``CENSUS_MEMORY_LIMIT``, ``MAX_SEEDS``, …). Tolerances,
constants of the papers, chunk sizes and performance thresholds (``dpopt.threads``) are not
limits: they stay with the code they tune.
"""

from __future__ import annotations

import warnings
from fractions import Fraction
from typing import Any

from dpopt.errors import MissingAttribute

__all__ = [
    "CENSUS_MAX_CELLS",
    "CENSUS_MAX_SIZES",
    "CENSUS_MIN_MEMORY",
    "CERTIFIED_MAX_SCALE",
    "CHECK_MAX_VIOLATIONS",
    "CHORD_MAX_WIDTH",
    "COLLAPSE_LIMIT",
    "CPSAT_MAX_CHORDS",
    "DENSE_EIGH_MAX_N",
    "DENSE_LIMIT",
    "DGM_CVXPY_MAX_NODES",
    "DGM_MAX_QUERIES",
    "DP_TABLE_MAX_WORK",
    "EIGEN_CVXPY_MAX_QUERIES",
    "EIGEN_CVXPY_MAX_SPREAD",
    "EIGEN_GENERAL_MAX_CELLS",
    "GAUSSIAN_OPT0_MAX_N",
    "HDMM_CSV_MAX_ANSWERS",
    "HDMM_STORED_STRATEGY_ENTRIES",
    "INTERVAL_MAX_CHILDREN",
    "IPM_MAX_ITERATIONS",
    "KRON_MAX_SWEEPS",
    "L2_MAX_CG",
    "MARGINAL_ALGEBRA_MAX_ATTRIBUTES",
    "MARGINAL_DENSE_MAX_N",
    "MARGINAL_WEIGHTS_MAX_ATTRIBUTES",
    "MAX_BISECTIONS",
    "MAX_COLUMN_NAME_CHARS",
    "MAX_CONVERTED_EPSILON",
    "MAX_COST",
    "MAX_COUNT",
    "MAX_CURVE_EPSILONS",
    "MAX_CURVE_RELEASES",
    "MAX_DOMAIN_SD",
    "MAX_DOUBLINGS",
    "MAX_DRAWS",
    "MAX_FLOOR_SUPPORT",
    "MAX_GAUSSIAN_SIGMA",
    "MAX_GRID_BITS",
    "MAX_HEADER_BYTES",
    "MAX_HISTOGRAM_CELLS",
    "MAX_HOUSEHOLD_SIZE",
    "MAX_INPUT_BYTES",
    "MAX_LAPLACE_SCALE",
    "MAX_LISTED_ATTRIBUTES",
    "MAX_MARGINALS",
    "MAX_MARGINAL_ROWS",
    "MAX_MEMORY",
    "MAX_PAIR_CELLS",
    "MAX_QUERY_CELLS",
    "MAX_REGION_WEIGHT",
    "MAX_RELEASES",
    "MAX_RESTARTS",
    "MAX_SAMPLE_CELLS",
    "MAX_TERMS",
    "MAX_TEXT_FILE_BYTES",
    "MIN_MEMORY",
    "NORM_LIMIT",
    "OPT0_IMPLICIT_MAX_N",
    "OPT0_MAX_LINE_SEARCH",
    "OPT0_MAX_N",
    "OPT_M_MAX_ATTRIBUTES",
    "OPT_M_MAX_ITERATIONS",
    "PAPER_SDP_CLARABEL_MAX_N",
    "PRODUCT_HDMM_MAX_TERMS",
    "PRODUCT_MAX_QUERY_SIZE",
    "PROJECTION_CVXPY_MAX_CELLS",
    "PROJECTION_MAX_ITERATIONS",
    "PUBLISHED_MAX_SIMULATIONS",
    "RELATIONAL_MAX_CELLS",
    "RELATIONAL_MAX_EPSILON",
    "RELATIONAL_MAX_ROWS",
    "RELAXED_MAX_CELLS",
    "RELAXED_MAX_PROPAGATION_ROUNDS",
    "RESIDUAL_CVXPY_MAX_CLOSURE",
    "RESIDUAL_DENSE_BLOCKS",
    "RESIDUAL_MAX_ARITY",
    "RESIDUAL_MAX_CLOSURE",
    "RESIDUAL_MAX_ITERATIONS",
    "ROUNDING_MAX_TOTAL",
    "SDP_CLARABEL_MAX_N",
    "SDP_SCS_MAX_N",
    "SORT_KEY_LIMIT",
    "SPARSE_LIMIT",
]

# --- Integers and noise (dpopt.validation, dpopt.privacy) -------------------------------------

MAX_COUNT = 2**62
"""Largest magnitude of an integer input (a count, a total, a domain bound) and of every sum of
counts the library forms. Counts are int64 (largest 2**63 − 1): capping them at 2**62 leaves
room for one more addition or subtraction of two supported values without wrapping.

Unit: count.
Past it: ValueError naming the parameter (never wrapped)."""

MAX_LAPLACE_SCALE = Fraction(1 << 56)
"""Largest discrete Laplace scale: U + 2^56·V stays below 2^63 unless V ≥ 128 (probability
e^−128), so the noise fits a 64-bit integer.

Unit: noise scale (Δ/ε).
Past it: ValueError from ``DiscreteLaplace`` ("is epsilon far too small?"); a V ≥ 128 draw is
refused rather than wrapped."""

CERTIFIED_MAX_SCALE = Fraction(1 << 32)
"""Largest noise scale (discrete Laplace scale, or the discrete Gaussian's proposal scale
σ + 1/4) drawn in certified floating point (``dpopt.privacy.certified``): beyond it −t·ln U
keeps too few exact digits of a double for floating point to settle most decisions.

Unit: noise scale.
Past it: the samplers draw with CKS's integer algorithms, exact as well and several times
slower."""

MAX_GAUSSIAN_SIGMA = Fraction(1 << 52)
"""Largest discrete Gaussian σ: beyond it the noise would not fit a 64-bit integer.

Unit: noise standard deviation.
Past it: ValueError from ``DiscreteGaussian`` (σ² above 2^104)."""

MAX_DRAWS = 1 << 31
"""Most draws one ``sample`` call makes: 16 GiB of int64 noise.

Unit: draws.
Past it: ValueError ("draw in batches")."""

MAX_GRID_BITS = 1074 + 1023
"""The finest grid 2^−bits the exact mechanisms snap a float onto: on a finer one every non-zero
float64 overflows (the smallest, 2^−1074, times 2^2098 is 2^1024).

Unit: bits.
Past it: ValueError naming ``bits``."""

MAX_CONVERTED_EPSILON = 1e4
"""Largest ε an (ε, δ) → zCDP conversion takes: above it the float search is unreliable, and
such an ε protects nothing.

Unit: ε.
Past it: ValueError ("no privacy to convert")."""

MAX_DOUBLINGS = 2200
"""Most doublings (or halvings) of a positive float64 one bracketing loop makes: 2098 span every
positive float64 (2^−1074 … 2^1024), so a loop that has not settled by then never will. One
bound for the privacy calibration's brackets and the census domain widening.

Unit: doublings.
Past it: the calibration's bracket stops at the end of the float range; the census widening
raises RuntimeError (a bug, reported rather than spun)."""

# --- Input files (the release commands, dpopt.cli.files) ---------------------------------------

MAX_INPUT_BYTES = 4 * 2**30
"""Largest input file a release command reads (CSV or Parquet): it is read whole into memory,
at several times its size on disk.

Unit: bytes.
Past it: the command refuses the file before reading it (exit 2), nothing charged."""

MAX_COLUMN_NAME_CHARS = 1024
"""Longest column name of an input file a release command reads: the names label the released
tables and are written into their manifests.

Unit: characters.
Past it: the file is refused by name before its rows are read (exit 2), nothing charged."""

MAX_HEADER_BYTES = 1 << 20
"""Most bytes read to find a CSV's header line: a file without a line break in them (a binary or
garbage file) is refused without reading the rest.

Unit: bytes.
Past it: the file is refused as not a CSV with a header line (exit 2)."""

MAX_TEXT_FILE_BYTES = 64 * 2**20
"""Largest text file read whole by name: a workload's marginals file, a relational domains file,
a BIF network, a release's manifest (dpopt.paths.read_text).

Unit: bytes.
Past it: the file is refused by name before more of it is read (exit 2 on the command line)."""

# --- Workloads (dpopt.workload) -----------------------------------------------------------------

DENSE_LIMIT = 2**26
"""Largest array ``dense()`` materialises (512 MiB of float64); also bounds a dense Gram, a
dense covariance and the queries whose variances are enumerated one by one.

Unit: entries.
Past it: ValueError naming DENSE_LIMIT (``dense(force=True)`` overrides it); OPT₀'s SVD
candidate and the dense optimizers are skipped."""

NORM_LIMIT = 10**8
"""Longest column-norm vector built explicitly (column norms of a Kron or VStack): 800 MB of
float64.

Unit: entries.
Past it: ValueError naming NORM_LIMIT."""

SPARSE_LIMIT = 2**24
"""Most stored entries of a sparse baseline strategy (hierarchical, wavelet, hb).

Unit: stored entries.
Past it: ValueError naming SPARSE_LIMIT."""

COLLAPSE_LIMIT = 2**20
"""Widest Kronecker factor whose several column-norm terms are summed into one vector, so that a
Kron of unions stays one product of per-factor vectors instead of multiplying out.

Unit: cells of one factor.
Past it: the terms are kept apart (exact either way; only the work differs)."""

MAX_TERMS = 4096
"""Most Kronecker terms a Kron of unions is multiplied out into (the factors' term counts
multiply: the work and memory of its Gram grow with them).

Unit: Kronecker terms.
Past it: a one-attribute union factor is summed into one term; if none is, ValueError naming
MAX_TERMS."""

MAX_MARGINALS = 10**5
"""Most marginals a ``Marginals`` workload builds as separate blocks (the optimizers that read
blocks); its table holds more.

Unit: marginals.
Past it: ValueError naming MAX_MARGINALS when the blocks are asked for."""

MARGINAL_WEIGHTS_MAX_ATTRIBUTES = 26
"""Most attributes ``marginal_weights`` takes: it builds one vector of 2^d weights (512 MiB at
d = 26). Two more than MARGINAL_ALGEBRA_MAX_ATTRIBUTES, which keeps several such vectors.

Unit: attributes.
Past it: ValueError naming MARGINAL_WEIGHTS_MAX_ATTRIBUTES."""

MAX_MARGINAL_ROWS = 50_000_000
"""Most marginals one ``Marginals`` workload holds: its table has 8 bytes per attribute per
marginal.

Unit: marginals.
Past it: ValueError naming MAX_MARGINAL_ROWS (``dpopt plan`` checks it before building)."""

# --- Planning (dpopt.planning, dpopt plan) -----------------------------------------------------

MAX_MEMORY = 4 * 2**30
"""The memory one call may use unless its ``max_memory`` (``--max-memory``) says: 4 GiB, what a
laptop spares beside its other work. The one default of every ``max_memory``: a planning call's,
a census release's (its post-processing and intervals), an HDMM release's.

Unit: bytes.
Past it: ValueError with the estimate, from the public sizes, before anything is allocated (a
census release refuses a post-processing that would not fit before anything is charged; its
intervals coarsen their exact distributions instead)."""

MIN_MEMORY = 2**20
"""The smallest ``max_memory`` accepted (1 MiB): the census, DGM and relational planners'
fixed overhead alone is above it (8–64 MiB), an HDMM plan's is 0.2–0.3 MiB, so a smaller
budget is a mistake, most likely in its unit.

Unit: bytes.
Past it (below it): ValueError naming ``max_memory``."""

MAX_CURVE_EPSILONS = 100
"""Most ε values one simulated error curve (or one ``dpopt plan`` table) evaluates: each is a
set of simulated releases.

Unit: ε values.
Past it: ValueError naming ``epsilons`` (argparse error on the command line)."""

MAX_CURVE_RELEASES = 1000
"""Most simulated releases per ε of one DGM or relational error curve (``releases``).

Unit: releases.
Past it: ValueError naming ``releases``."""

MAX_LISTED_ATTRIBUTES = 10**4
"""Most attributes a workload of the ``dpopt plan`` grammar names: a ``SIZES`` list
(``10x100``) or the factors of one Kronecker product, checked before the list is made. A
domain's size Π nᵢ is a big integer every block of a union computes: all ≤1-way marginals of
10⁶ attributes took 100 s and 360 MB to plan, of 10⁴ attributes 2.5 s (imports included).

Unit: attributes.
Past it: the workload is refused at once (exit 2 on the command line, the limit named)."""

# --- HDMM (dpopt.hdmm, dpopt.models.hdmm, dpopt.solvers.hdmm) ----------------------------------

DENSE_EIGH_MAX_N = 4096
"""Largest n whose n × n Gram is eigendecomposed densely: about 10–15 s at n = 4096 on 2 cores.
One cap for every such step: Eigen-Design's dense path, the ``l2-dual`` optimizer (one
eigendecomposition per step) and OPT₀'s SVD-bound candidate.

Unit: cells (n).
Past it: ``eigen-design`` and ``l2-dual`` refuse the instance (``solve`` raises ValueError
naming the limit; ``dpopt.eigen`` designs factor by factor); OPT₀ goes without the SVD
candidate (AllRange and Prefix Grams have closed-form eigenpairs at every n)."""

MARGINAL_DENSE_MAX_N = 4096
"""Largest domain ``marginal_strategy_dense`` materialises: a dense 𝕄(θ) is a test aid for
small domains, checked against the implicit marginal algebra.

Unit: cells (n).
Past it: ValueError naming MARGINAL_DENSE_MAX_N."""

MARGINAL_ALGEBRA_MAX_ATTRIBUTES = 24
"""Most attributes of the marginal algebra behind OPT_M and the marginal error formulas: it
keeps several vectors of 2^d entries at once (θ, u, the gradient, Y⁻¹ products: 128 MiB each
at d = 24). Two fewer than MARGINAL_WEIGHTS_MAX_ATTRIBUTES, which builds one.

Unit: attributes.
Past it: ValueError ("domain must have 1 to 24 attributes")."""

OPT_M_MAX_ATTRIBUTES = min(15, MARGINAL_ALGEBRA_MAX_ATTRIBUTES)
"""Most attributes OPT_M optimizes over: its L-BFGS works on vectors of 2^d entries, and the
paper runs it up to d = 15.

Unit: attributes.
Past it: the ``opt-marginals`` method refuses; ``dpopt plan`` says to plan Gaussian noise."""

SDP_SCS_MAX_N = 64
"""Largest n of the exact Def. 12 SDP solved through cvxpy with SCS (4–16 s at n = 64); also
the largest the Eigen-Design ratio tables solve exactly.

Unit: cells (n).
Past it: ``cvxpy:scs`` refuses (ValueError from ``solve``); the tables leave the SDP out."""

SDP_CLARABEL_MAX_N = 32
"""Largest n of the exact Def. 12 SDP solved with Clarabel: its interior point took ~110 s at
n = 64.

Unit: cells (n).
Past it: ``cvxpy:clarabel`` refuses (ValueError from ``solve``)."""

PAPER_SDP_CLARABEL_MAX_N = 16
"""Largest n at which the Eigen-Design ratio tables solve the SDP with Clarabel rather than
SCS: each table solves dozens of SDPs, and Clarabel's time grows fastest with n.

Unit: cells (n).
Past it: the tables use SCS (up to SDP_SCS_MAX_N)."""

OPT0_MAX_N = 8192
"""Largest n of OPT₀ (Laplace) on an explicit n × n Gram: it forms several n × n arrays.

Unit: cells (n).
Past it: ``opt0-laplace`` refuses (ValueError from ``solve``)."""

OPT0_IMPLICIT_MAX_N = 16384
"""Largest n of OPT₀ (Laplace) on an implicit Gram: no n × n Gram is formed, but the strategy
returned is a dense (n + n/16) × n array, 2.3 GB at this n.

Unit: cells (n).
Past it: ``opt0-laplace`` refuses (ValueError from ``solve``)."""

GAUSSIAN_OPT0_MAX_N = 1024
"""Largest n of the Gaussian OPT₀: L-BFGS-B over n(n−1)/2 entries with an n³ Cholesky per
step took over 900 s at n = 4096; Eigen-Design is the L2 path above it.

Unit: cells (n).
Past it: ``opt0-gaussian`` refuses and names ``eigen-design``."""

OPT0_MAX_LINE_SEARCH = 100
"""Most line-search steps per L-BFGS-B iteration of OPT₀: at scipy's default 20, 58 of 640
stages ended "ABNORMAL"; at 100 none did, the objectives as accurate.

Unit: line-search steps.
Past it: scipy ends that stage "ABNORMAL" and OPT₀ keeps its best point."""

OPT_M_MAX_ITERATIONS = 15000
"""Most L-BFGS-B iterations of OPT_M (``maxiter``): a bound on a runaway optimisation.

Unit: iterations.
Past it: the optimisation stops; its point is returned ``feasible``."""

L2_MAX_CG = 50
"""Most conjugate-gradient products per Newton step of the ``l2-dual`` optimizer (the step is
inexact by design: CG also stops at a relative residual).

Unit: CG iterations.
Past it: the Newton step taken is CG's iterate so far."""

KRON_MAX_SWEEPS = 10
"""Default number of sweeps of the Kronecker OPT⊗ optimizer over the attributes (each sweep
re-optimizes every factor; ``max_sweeps`` overrides it).

Unit: sweeps.
Past it: the optimizer stops; its point is returned ``feasible`` with the sweeps done."""

MAX_RESTARTS = 1000
"""Most restarts a randomised HDMM optimizer accepts: each is a full optimisation.

Unit: restarts.
Past it: ValueError naming ``restarts``."""

MAX_BISECTIONS = 64
"""Most bisection steps of HDMM's ``plan_epsilon`` (rtol = 1e-12 takes 45 over its ε range).

Unit: bisection steps.
Past it: the search stops; the plan returned is the smallest ε found that meets the targets."""

PRODUCT_HDMM_MAX_TERMS = 64
"""Most terms of a product-marginal workload on which ``hdmm.optimize_product(W, "gaussian")``
also runs OPT_HDMM (OPT_⊗, OPT_+, OPT_M, Identity) and keeps the better strategy; past it the
residual strategy alone (OPT_+ solves one OPT_⊗ per term).

Unit: terms.
Past it: the residual strategy is returned without the comparison."""

PRODUCT_MAX_QUERY_SIZE = 4096
"""Largest attribute of a product-marginal workload (``workload.ProductMarginals``) that carries
a query other than the identity: its residual strategy is the dense L2 optimum of an n × n
Gram (the limit of the exact L2 method, ``l2-dual``).

Unit: cells of one attribute.
Past it: ValueError naming PRODUCT_MAX_QUERY_SIZE."""

RESIDUAL_MAX_ARITY = 16
"""Most attributes in one marginal of a residual workload: its 2^k subsets are enumerated
(65,536 at k = 16).

Unit: attributes per marginal.
Past it: ValueError naming RESIDUAL_MAX_ARITY."""

RESIDUAL_MAX_CLOSURE = 50_000_000
"""Most (marginal, subset) pairs the residual closure enumerates: 8 bytes each in every working
array (all ≤3-way marginals of 200 attributes are 10.7 million).

Unit: (marginal, subset) pairs.
Past it: ValueError naming RESIDUAL_MAX_CLOSURE."""

RESIDUAL_CVXPY_MAX_CLOSURE = 2_000
"""Largest residual closure the cvxpy models take (the fast paths are exact at any size).

Unit: closure members.
Past it: the cvxpy methods refuse; ``dual-ascent`` skips its cvxpy polish."""

RESIDUAL_MAX_ITERATIONS = 20_000
"""Default iteration cap of ``dual-ascent``'s multiplicative update: the large workloads
tested needed under 2,000; nearly tied constraints may need more (``max_iterations``).

Unit: iterations.
Past it: the point is returned ``feasible`` with its duality gap (not certified)."""

RESIDUAL_DENSE_BLOCKS = 4096
"""Most closure members ``ResidualStrategy.measured_blocks`` lists as dense factors.

Unit: closure members.
Past it: ValueError: measure it with ``hdmm.measure`` instead."""

ROUNDING_MAX_TOTAL = 1 << 40
"""Largest total of the tables ``hdmm.residual.rounding.round_marginals`` rounds: its flows'
costs (2^20 a unit) times their units stay far inside int64 (1.1 × 10^12 records).

Unit: records (the tables' total).
Past it: ValueError naming ROUNDING_MAX_TOTAL."""

MAX_HISTOGRAM_CELLS = 1 << 24
"""Largest domain a residual release takes as a histogram (16.8 million cells).

Unit: cells.
Past it: ValueError: give the data as records."""

PROJECTION_MAX_ITERATIONS = 5000
"""Most iterations of ``dual-ascent``, the fast path of the marginals' post-processing
(dpopt.solvers.hdmm.marginal_projection): each costs about two passes over every table.

Unit: iterations.
Past it: the method stops with status feasible and the certified gap it reached."""

PROJECTION_CVXPY_MAX_CELLS = 200_000
"""Most workload cells the cvxpy model of the marginals' post-processing writes out (one sparse
row per cell and a term per residual cell; docs/families/hdmm.md, "Publishable marginals").

Unit: cells.
Past it: the cvxpy methods refuse the problem; ``dual-ascent`` is exact at any size."""

PUBLISHED_MAX_SIMULATIONS = 100_000
"""Most simulated releases one simulation of a residual release's published tables draws
(dpopt.hdmm.residual.intervals: the cells' standard errors and intervals, and the planned
error of the post-processed tables at a reference): each is one post-processing, and the
intervals keep 4 bytes per cell and simulation.

Unit: simulated releases.
Past it: ValueError naming ``simulations``."""

HDMM_CSV_MAX_ANSWERS = 1 << 20
"""Most answers an HDMM release directory writes as CSV when its table format is ``auto``: a
CSV of a few million rows takes minutes to write and to check, Parquet seconds.

Unit: answers (rows of the answers table).
Past it: ``answers.parquet`` is written instead (pyarrow, the [dask] extra; refused before the
charge, naming the extra and ``--table-format csv``, when it is missing)."""

HDMM_STORED_STRATEGY_ENTRIES = 1 << 22
"""Most entries of a strategy's measured factors an HDMM release directory's manifest holds
(as JSON numbers, about 20 bytes each), from which ``dpopt check`` recomputes its sensitivity.

Unit: matrix entries.
Past it: the manifest names the strategy's template only; its sensitivity is not recomputed."""

# --- Eigen-Design (dpopt.eigen, dpopt.solvers.eigen) -------------------------------------------

IPM_MAX_ITERATIONS = 200
"""Most iterations of the certified ``ipm`` of the Eigen-Design weighting program.

Unit: iterations.
Past it: the point is returned ``feasible`` with its gap and "200 iterations"."""

EIGEN_CVXPY_MAX_QUERIES = 512
"""Most design queries the cvxpy weighting methods take: Clarabel took 3.2 s at k = 512.

Unit: design queries.
Past it: the cvxpy methods refuse (``ipm`` has no limit)."""

EIGEN_GENERAL_MAX_CELLS = 64
"""Largest n of the general (matrix_frac) weighting SDP, an n × n SDP.

Unit: cells (n).
Past it: the method refuses (ValueError from ``solve``)."""

EIGEN_CVXPY_MAX_SPREAD = 1e6
"""Largest ratio of the largest to the smallest positive cost the cvxpy weighting methods take:
beyond it Clarabel missed the optimum by up to 5e-5 while reporting "optimal" (40 of 400
random instances with up to 9 decades; none of 400 with up to 6).

Unit: ratio of costs.
Past it: the cvxpy methods refuse (``ipm`` has no limit)."""

# --- Census (dpopt.census, dpopt.models.census, dpopt.solvers.census) --------------------------

CENSUS_MIN_MEMORY = 64 * 2**20
"""The smallest ``max_memory`` of a census release (64 MiB): below it the coarse pivots get
too coarse.

Unit: bytes.
Past it (below it): ValueError naming ``max_memory``."""

INTERVAL_MAX_CHILDREN = 32
"""Most children whose answers a census confidence interval combines with a region's own: the
combination's variance is k/(k + 1) of the own answer's (under 3 % less), while the exact
distribution's support grows with k.

Unit: child regions.
Past it: the region's own answer alone."""

CENSUS_MAX_SIZES = 10**5
"""Most sizes in a size set K (the counts have one column per size).

Unit: sizes.
Past it: ValueError naming ``sizes``."""

CENSUS_MAX_CELLS = 2_000_000
"""Most (region, size) cells the synthetic census data builds: 20× a county-level US census
(51 states, 3,143 counties, 30 sizes: 95,000 cells), a few seconds to draw.

Unit: cells.
Past it: ValueError naming MAX_CELLS."""

MAX_HOUSEHOLD_SIZE = 1000
"""Largest ``sizes`` of the synthetic household distribution: its geometric tail stays far
above float64's smallest number (it would underflow to 0 past ~2,500).

Unit: persons per household.
Past it: ValueError naming ``sizes``."""

MAX_DOMAIN_SD = 1e6
"""Widest starting domain of the census post-processing: the domains double until feasible,
and at this width they already cover 0..n for any count a 64-bit integer holds.

Unit: noise standard deviations.
Past it: ValueError naming ``domain_sd``."""

MAX_RELEASES = 64
"""Most simulated releases one census ``plan_epsilon`` may run (``max_releases``).

Unit: releases.
Past it: ValueError naming ``max_releases``."""

MAX_FLOOR_SUPPORT = 10**6
"""Most probabilities the census utility's faithful-floor convolution may hold (its time grows
with the square of it).

Unit: probabilities.
Past it: the floor is NaN, with the reason."""

MAX_REGION_WEIGHT = 2**31
"""Largest region weight of a census post-processing Problem: a weight times a squared error
must leave the DP's int64 costs room.

Unit: weight.
Past it: ValueError naming ``weights``."""

CHORD_MAX_WIDTH = 4096
"""Widest cell domain whose square the CP-SAT model encodes by its chords (one linear cut per
unit segment).

Unit: integers in a cell's domain.
Past it: CP-SAT's multiplication constraint (exact but weaker)."""

CPSAT_MAX_CHORDS = 500_000
"""Most objective chords (cells × widest domain) of the slow exact CP-SAT reference.

Unit: chords.
Past it: the ``cpsat`` method refuses (ValueError from ``solve``)."""

RELAXED_MAX_PROPAGATION_ROUNDS = 1000
"""Most rounds of the interval propagation that proves a cumulative relaxation (Model 2)
infeasible before the relaxed method trusts a solver's claim of infeasibility; each round
narrows some bound by at least one count or ends the propagation.

Unit: rounds.
Past it: no proof; a solver's claim of infeasibility is reported as ``error`` (uncertified)."""

DP_TABLE_MAX_WORK = 5_000_000
"""Most work (cells × widest domain²) of the explicit min-plus tables of ``dp-table``, the slow
exact reference.

Unit: table entries.
Past it: ``dp-table`` refuses (ValueError from ``solve``)."""

RELAXED_MAX_CELLS = 300_000
"""Most cells of the census relaxation (a QP through cvxpy).

Unit: cells.
Past it: the relaxation refuses (ValueError from ``solve``)."""

MAX_COST = 2**62
"""Largest cost a census DP table may hold: beyond it int64 arithmetic could overflow.

Unit: weighted squared error.
Past it: ValueError: narrow the domains (or the noise is too large for the method)."""

SORT_KEY_LIMIT = 2**61
"""Largest sum of the parents' slope ranges for which the census levels sort sorts (parent,
slope) as one int64 key.

Unit: slope values.
Past it: a lexsort of the two arrays (the same order, slower)."""

CHECK_MAX_VIOLATIONS = 20
"""Most violations a census release check lists one by one (the report stays readable).

Unit: violations.
Past it: the rest are counted, not listed."""

# --- DGM (dpopt.dgm, dpopt.solvers.dgm) --------------------------------------------------------

MAX_QUERY_CELLS = 4096
"""Largest joint domain |dom(X ∪ Y)| of a random DGM evaluation query: the paper's query sizes
would ask for up to 10^17 exact answers on alarm.

Unit: cells.
Past it: the node is skipped when the query's nodes are drawn (``max_cells``)."""

DGM_MAX_QUERIES = 1000
"""Most random queries per simulated DGM release (each is an exact inference).

Unit: queries.
Past it: ValueError naming ``queries``."""

DGM_CVXPY_MAX_NODES = 200_000
"""Most nodes of the DGM budget allocation the cvxpy model takes (the closed form is exact at
any size).

Unit: nodes.
Past it: the cvxpy method refuses (ValueError from ``solve``)."""

# --- Relational (dpopt.relational) --------------------------------------------------------------

RELATIONAL_MAX_ROWS = 2**31
"""Largest number of input or synthetic rows: keeps every selection score exact in float64.

Unit: rows.
Past it: ValueError naming the table or ``rows``, before anything is charged."""

MAX_SAMPLE_CELLS = 2**27
"""Largest rows × attributes of a synthetic table (1 GiB of int64 codes).

Unit: codes.
Past it: ValueError naming MAX_SAMPLE_CELLS, before anything is charged."""

MAX_PAIR_CELLS = 2**24
"""Largest total number of cells over all attribute pairs (the selection computes them all),
and of one marginal the evaluation compares.

Unit: cells.
Past it: ValueError naming MAX_PAIR_CELLS."""

RELATIONAL_MAX_EPSILON = 10**6
"""Largest ε of a relational release (Theorem 1's (ε, δ) → ρ, dpopt.relational.budget). Up
to it every measurement asks ρ ≤ 10⁶, so σ² ≥ Δ²/(2ρ) ≥ 10⁻⁶ (Δ² ≥ 2), far above the
discrete Gaussian's finest step of σ² (2⁻²⁵): the noise is drawn at the planned scale and
the budget spent as planned. Past about 10¹⁰ that floor leaves the plan's noise and charge
unmet, and such an ε protects nothing. 10⁶ is the ε_rel of the noise-free runs
(dpopt.paper.relational_figure.NOISE_FREE).

Unit: ε.
Past it: ValueError naming ``epsilon``, before anything is read or charged."""

RELATIONAL_MAX_CELLS = 10**8
"""Largest joint domain of one relational workload or marginal (its answer is a dense vector of
that length).

Unit: cells.
Past it: ValueError naming the workload."""


# This module's former names (CHANGELOG "Renamed or moved"): CENSUS_MEMORY_LIMIT was 2 GiB, the
# census default is now MAX_MEMORY.
_FORMER = {
    "PLAN_MEMORY_BUDGET": "MAX_MEMORY",
    "CENSUS_MEMORY_LIMIT": "MAX_MEMORY",
    "PLAN_MIN_MEMORY": "MIN_MEMORY",
    "CENSUS_MIN_MEMORY_LIMIT": "CENSUS_MIN_MEMORY",
    "MAX_SEEDS": "MAX_CURVE_RELEASES",
}


def __getattr__(name: str) -> Any:
    """A former name of a limit, with a DeprecationWarning (until 0.3). The warning is written
    here, not by ``dpopt.deprecation``, which imports this module."""
    if name not in _FORMER:
        raise MissingAttribute(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"dpopt.limits.{name} is deprecated: use dpopt.limits.{_FORMER[name]} (the old name "
        "goes in dpopt 0.3)",
        DeprecationWarning,
        stacklevel=2,
    )
    return globals()[_FORMER[name]]
