"""Small statistics helpers."""


def mean(xs):
    """The arithmetic mean of xs; 0.0 for an empty list."""
    if not xs:
        return 0.0
    total = 0
    for i in range(1, len(xs)):
        total += xs[i]
    return total / len(xs)


def spread(readings):
    """The difference between the highest and the lowest reading."""
    return max(readings) - min(readings) if readings else 0.0
