"""Text similarity shared by recall, learning dedup/suggestion and methodology merging.

TF-IDF (scikit-learn) with word unigrams+bigrams over lower-cased text; cosine similarity.
Jaccard over character 4-grams is the fallback for methodology merging only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import cosine_similarity


def tfidf_vectorizer() -> TfidfVectorizer:
    # token_pattern keeps 1-char tokens and CJK runs; sublinear tf damps repeated words
    return TfidfVectorizer(
        lowercase=True, ngram_range=(1, 2), token_pattern=r"(?u)\b\w+\b", sublinear_tf=True
    )


def tfidf_cosine(queries: Sequence[str], documents: Sequence[str]) -> np.ndarray:
    """Matrix [len(queries), len(documents)] of TF-IDF cosine similarities (fit on both sides)."""
    if not queries or not documents:
        return np.zeros((len(queries), len(documents)))
    corpus = [q or "" for q in queries] + [d or "" for d in documents]
    try:
        matrix = tfidf_vectorizer().fit_transform(corpus)
    except ValueError:  # empty vocabulary: nothing is similar to anything
        return np.zeros((len(queries), len(documents)))
    return cosine_similarity(matrix[: len(queries)], matrix[len(queries) :])


def char_ngrams(text: str, n: int = 4) -> set[str]:
    t = " ".join((text or "").lower().split())
    return {t[i : i + n] for i in range(max(len(t) - n + 1, 1))} if t else set()


def jaccard_4gram(a: str, b: str) -> float:
    """Jaccard similarity of character 4-gram sets."""
    sa, sb = char_ngrams(a), char_ngrams(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / len(sa | sb)


def tfidf_vectors(texts: Sequence[str]):
    """L2-normalized TF-IDF rows (scipy CSR) fit on ``texts``, or None when TF-IDF fails (no vocabulary).

    Row dot products are cosine similarities; a text without any token gets an all-zero row,
    which callers treat as "TF-IDF failed for this text".
    """
    if not texts:
        return None
    try:
        return tfidf_vectorizer().fit_transform([t or "" for t in texts])
    except ValueError:
        return None
