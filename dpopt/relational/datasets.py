"""Relational databases to run the mechanism on (Alimohammadi et al., §8): a seeded users ×
movies generator with planted cross-table correlations, and the MovieLens-1M reader.

Both build a :class:`~dpopt.relational.data.RelationalData` under the public MovieLens-1M
schema (users left: gender, age bucket, occupation; movies right: the 18 genre flags). Their
domains are declared, never read off the data (docs/families/relational.md#relational-domains).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dpopt.errors import InternalError, InvalidInput
from dpopt.relational.data import RelationalData
from dpopt.validation import file_path, generator, integer

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MOVIELENS_AGES",
    "MOVIELENS_GENRES",
    "MOVIELENS_OCCUPATIONS",
    "generate",
    "load_movielens",
]

MOVIELENS_GENRES = (
    "Action",
    "Adventure",
    "Animation",
    "Children's",
    "Comedy",
    "Crime",
    "Documentary",
    "Drama",
    "Fantasy",
    "Film-Noir",
    "Horror",
    "Musical",
    "Mystery",
    "Romance",
    "Sci-Fi",
    "Thriller",
    "War",
    "Western",
)
"""The 18 MovieLens-1M genres, each a binary flag of the movies table (Alimohammadi et al., §8)."""
MOVIELENS_AGES = (1, 18, 25, 35, 45, 50, 56)
"""The public MovieLens-1M age buckets."""
MOVIELENS_OCCUPATIONS = tuple(range(21))


def _movielens_domains() -> dict[str, dict[str, list[Any]]]:
    """The public MovieLens-1M schema (users left, movies right)."""
    return {
        "left": {
            "gender": ["F", "M"],
            "age": list(MOVIELENS_AGES),
            "occupation": list(MOVIELENS_OCCUPATIONS),
        },
        "right": {genre: [0, 1] for genre in MOVIELENS_GENRES},
    }


# --------------------------------------------------------------------------- generator


def generate(
    n_left: int = 6040,
    n_right: int = 3883,
    links: int = 10_000,
    *,
    d_max: int = 10,
    strength: float = 0.8,
    seed: Any = None,
) -> RelationalData:
    """A seeded users × movies instance with planted cross-table correlations.

    The schema is MovieLens-1M's (Alimohammadi et al., §8): users (left) have gender (F/M), age (7
    buckets) and occupation (21 values); movies (right) have the 18 binary genre flags of
    :data:`MOVIELENS_GENRES`. Each user has a latent favourite genre, a fixed function of
    (gender, age) with probability 0.8 and uniform otherwise; each link picks, with probability
    ``strength``, a movie of the user's favourite genre (else any movie), so cross marginals
    such as age × genre depart from independence. ``strength = 0`` links uniformly at random.

    Links are unique and every row has at most ``d_max`` of them (Alimohammadi et al., §2.1). Draws
    are vectorised in rounds; ``links`` must be at most 90% of min(n_left, n_right)·d_max.

    Parameters
    ----------
    n_left, n_right, links, d_max
        Users, movies, links m, degree bound.
    strength
        The share of links that follow the favourite genre, in [0, 1].
    seed
        An int/None for ``np.random.default_rng`` or a ``numpy.random.Generator``.
    """
    n_left = integer("n_left", n_left, minimum=1)
    n_right = integer("n_right", n_right, minimum=1)
    m = integer("links", links, minimum=1)
    d_max = integer("d_max", d_max, minimum=1)
    if isinstance(strength, bool) or not isinstance(strength, int | float):
        raise InvalidInput(f"strength must be a number in [0, 1], got {strength!r}")
    if not 0 <= strength <= 1:
        raise InvalidInput(f"strength must lie in [0, 1], got {strength!r}")
    capacity = min(n_left, n_right) * d_max
    if m > 0.9 * capacity:
        raise InvalidInput(
            f"links = {m} exceeds 90% of min(n_left, n_right)·d_max = {capacity}; lower links "
            "or raise d_max"
        )
    if n_left * n_right > 2**62:
        raise InvalidInput("n_left·n_right is too large")
    rng = generator(seed)
    genres = len(MOVIELENS_GENRES)
    # users: gender, age bucket (MovieLens-like shares), occupation
    gender = (rng.random(n_left) < 0.72).astype(np.int64)
    age = rng.choice(7, n_left, p=[0.04, 0.18, 0.35, 0.2, 0.09, 0.08, 0.06])
    occupation = rng.integers(0, 21, n_left)
    users = np.column_stack([gender, age, occupation]).astype(np.int64)
    # movies: a primary genre plus each other genre with probability 0.08
    flags = (rng.random((n_right, genres)) < 0.08).astype(np.int64)
    flags[np.arange(n_right), rng.integers(0, genres, n_right)] = 1
    # the planted preference: (gender, age) → genre, a fixed public-looking table
    table = (np.arange(14).reshape(2, 7) * 5 + 3) % genres
    favourite = np.where(
        rng.random(n_left) < 0.8, table[gender, age], rng.integers(0, genres, n_left)
    )
    # movies of each genre, as one array sliced by genre (a movie may be in several)
    by_genre = np.argsort(np.nonzero(flags.T)[0], kind="stable")
    members = np.nonzero(flags.T)[1][by_genre]
    count = flags.sum(axis=0)
    start = np.concatenate([[0], np.cumsum(count)[:-1]])
    chosen = np.empty((0, 2), dtype=np.int64)
    keys = np.empty(0, dtype=np.int64)
    user_degree = np.zeros(n_left, dtype=np.int64)
    movie_degree = np.zeros(n_right, dtype=np.int64)
    for _round in range(500):
        need = m - chosen.shape[0]
        if need == 0:
            break
        draws = max(64, int(need * 1.5))
        open_users = np.flatnonzero(user_degree < d_max)
        open_movies = np.flatnonzero(movie_degree < d_max)
        u = open_users[rng.integers(0, open_users.size, draws)]
        g = favourite[u]
        follow = (rng.random(draws) < strength) & (count[g] > 0)
        pick = start[g] + (rng.random(draws) * count[g]).astype(np.int64)
        liked = members[np.minimum(pick, max(members.size - 1, 0))] if members.size else pick
        anyone = open_movies[rng.integers(0, open_movies.size, draws)]
        v = np.where(follow, liked, anyone)
        # late rounds: a favourite movie may be full; fall back to open movies
        if _round > 20:
            v = np.where(movie_degree[v] < d_max, v, anyone)
        key = u * n_right + v
        fresh = ~np.isin(key, keys)
        _, first = np.unique(key, return_index=True)
        once = np.zeros(draws, dtype=bool)
        once[first] = True
        keep = fresh & once
        u, v, key = u[keep], v[keep], key[keep]
        # the users' caps first, then the movies' caps among the survivors
        ok_u = _within_capacity(u, user_degree, d_max)
        u, v, key = u[ok_u], v[ok_u], key[ok_u]
        ok_v = _within_capacity(v, movie_degree, d_max)
        u, v, key = u[ok_v], v[ok_v], key[ok_v]
        u, v, key = u[:need], v[:need], key[:need]
        chosen = np.concatenate([chosen, np.column_stack([u, v])])
        keys = np.concatenate([keys, key])
        np.add.at(user_degree, u, 1)
        np.add.at(movie_degree, v, 1)
    if chosen.shape[0] < m:  # pragma: no cover - the 90% cap keeps this from happening
        raise InternalError(f"generate placed only {chosen.shape[0]} of {m} links")
    domains = _movielens_domains()
    return RelationalData(
        left_columns=tuple(domains["left"]),
        right_columns=tuple(domains["right"]),
        left_domains=tuple(tuple(d) for d in domains["left"].values()),
        right_domains=tuple(tuple(d) for d in domains["right"].values()),
        left_codes=users,
        right_codes=flags,
        links=chosen,
        d_max=d_max,
    )


def _within_capacity(rows: np.ndarray, degree: np.ndarray, d_max: int) -> np.ndarray:
    """Which candidate links fit: the r-th new link of a row (in candidate order) fits when
    degree + r < d_max."""
    if rows.size == 0:
        return np.zeros(0, dtype=bool)
    order = np.argsort(rows, kind="stable")
    sorted_rows = rows[order]
    boundary = np.r_[True, sorted_rows[1:] != sorted_rows[:-1]]
    group_start = np.maximum.accumulate(np.where(boundary, np.arange(rows.size), 0))
    rank = np.empty(rows.size, dtype=np.int64)
    rank[order] = np.arange(rows.size) - group_start
    return degree[rows] + rank < d_max  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- MovieLens


def _read_dat(path: Path, columns: int) -> pd.DataFrame:
    import pandas as pd

    text = path.read_text(encoding="latin-1").replace("::", "\t")
    frame = pd.read_csv(
        io.StringIO(text),
        sep="\t",
        header=None,
        quoting=csv.QUOTE_NONE,
        dtype=str,
        keep_default_na=False,
    )
    if frame.shape[1] != columns:
        raise InvalidInput(f"{path.name}: expected {columns} '::'-separated fields per line")
    return frame


def load_movielens(folder: str | Path, *, d_max: int = 10) -> RelationalData:
    """The MovieLens-1M database: users (left) × movies (right), ratings as links (Alimohammadi et
    al., §8).

    Reads ``users.dat`` (UserID::Gender::Age::Occupation::Zip-code), ``movies.dat``
    (MovieID::Title::Genres, genres '|'-separated) and ``ratings.dat``
    (UserID::MovieID::Rating::Timestamp), latin-1. The zip code, title, rating and timestamp
    are dropped; movies get the 18 binary genre flags of :data:`MOVIELENS_GENRES`. Domains are
    the public MovieLens schema (gender F/M, ages 1/18/25/35/45/50/56, occupation 0–20,
    flags 0/1), not read from the data (docs/families/relational.md#relational-domains).

    Links are pruned as the authors' code does (Alimohammadi et al., §8): a repeated (user, movie)
    pair keeps its first rating; then the first ``d_max`` ratings of each movie are kept, then the
    first ``d_max`` of each user, in file order (with d_max = 10, 10,075 links on ML-1M). The pruned
    database is the protected input (docs/families/relational.md#relational-degree-cap).
    """
    import pandas as pd

    d_max = integer("d_max", d_max, minimum=1)
    folder = file_path("folder", folder)
    users = _read_dat(folder / "users.dat", 5)
    movies = _read_dat(folder / "movies.dat", 3)
    ratings = _read_dat(folder / "ratings.dat", 4)
    left = pd.DataFrame(
        {
            "gender": users[1].to_numpy(),
            "age": _integers("users.dat age", users[2]),
            "occupation": _integers("users.dat occupation", users[3]),
        },
        index=pd.Index(_integers("users.dat UserID", users[0])),
    )
    genre_lists = movies[2].str.split("|")
    unknown = set(genre_lists.explode()) - set(MOVIELENS_GENRES)
    if unknown:
        raise InvalidInput(f"movies.dat: unknown genres {sorted(unknown)}")
    right = pd.DataFrame(
        {g: genre_lists.map(lambda gs, g=g: int(g in gs)).to_numpy() for g in MOVIELENS_GENRES},
        index=pd.Index(_integers("movies.dat MovieID", movies[0])),
    )
    pairs = pd.DataFrame(
        {
            "user": _integers("ratings.dat UserID", ratings[0]),
            "movie": _integers("ratings.dat MovieID", ratings[1]),
        }
    )
    pairs = pairs.drop_duplicates(keep="first")
    pairs = pairs[pairs.groupby("movie", sort=False).cumcount() < d_max]
    pairs = pairs[pairs.groupby("user", sort=False).cumcount() < d_max]
    return RelationalData.from_frames(left, right, pairs, d_max=d_max, domains=_movielens_domains())


def _integers(where: str, column: pd.Series) -> np.ndarray:
    try:
        return column.astype(np.int64).to_numpy()
    except (TypeError, ValueError):
        raise InvalidInput(f"{where} must hold integers") from None
