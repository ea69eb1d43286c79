"""Implicit (structured) query matrices for HDMM: 1-D building blocks and their combinators.

A workload or strategy is a :class:`Matrix`: it answers ``matvec``/``rmatvec`` without being
materialised, gives its Gram matrix WᵀW in structured form (McKenna et al., §5) and its
sensitivities as maximum column norms (McKenna et al., §3). Kronecker order is numpy's ``np.kron``:
attribute 1 is the slowest index (McKenna et al., §3, §10).
"""

from dpopt.deprecation import moved_attributes
from dpopt.workload.blocks import (
    AllRange,
    Identity,
    IdentityTotal,
    Prefix,
    Suffix,
    Total,
    WidthRanges,
    gram_eigenpairs,
)
from dpopt.workload.core import (
    COLLAPSE_LIMIT,
    DENSE_LIMIT,
    MAX_MARGINALS,
    MAX_TERMS,
    NORM_LIMIT,
    SPARSE_LIMIT,
    BlockGram,
    Collapse,
    Explicit,
    Kron,
    Matrix,
    Sum,
    Terms,
    VStack,
    Weighted,
    domain,
    exact_log,
    issparse,
    positive_size,
    union_of_kron_terms,
)
from dpopt.workload.marginals import (
    MAX_MARGINAL_ROWS,
    Marginal,
    Marginals,
    MarginalTable,
    marginal_key,
    marginal_table,
    marginal_weights,
)
from dpopt.workload.products import (
    PRODUCT_MAX_QUERY_SIZE,
    ProductMarginals,
    ProductTable,
    product_table,
)

__all__ = [
    "COLLAPSE_LIMIT",
    "DENSE_LIMIT",
    "MAX_MARGINALS",
    "MAX_MARGINAL_ROWS",
    "MAX_TERMS",
    "NORM_LIMIT",
    "PRODUCT_MAX_QUERY_SIZE",
    "SPARSE_LIMIT",
    "AllRange",
    "BlockGram",
    "Collapse",
    "Explicit",
    "Identity",
    "IdentityTotal",
    "Kron",
    "Marginal",
    "MarginalTable",
    "Marginals",
    "Matrix",
    "Prefix",
    "ProductMarginals",
    "ProductTable",
    "Suffix",
    "Sum",
    "Terms",
    "Total",
    "VStack",
    "Weighted",
    "WidthRanges",
    "domain",
    "exact_log",
    "gram_eigenpairs",
    "issparse",
    "marginal_key",
    "marginal_table",
    "marginal_weights",
    "positive_size",
    "product_table",
    "union_of_kron_terms",
]

__getattr__ = moved_attributes(
    __name__,
    {
        "MAX_ATTRIBUTES": "dpopt.limits.MARGINAL_WEIGHTS_MAX_ATTRIBUTES",
    },
)
"""The names this module once imported its limits as, until 0.3 (CHANGELOG "Renamed or
moved")."""
