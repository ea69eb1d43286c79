"""Census group-size post-processing (Fioretto et al., §5–9): the Problem types and their exact
models (:mod:`~dpopt.models.census.problems`), and Model 1's optimality certificate
(:mod:`~dpopt.models.census.optimality`)."""

__all__: list[str] = []  # a namespace of modules; import from them
