"""Small statistics helpers."""


def mean(xs):
    """The arithmetic mean of xs; 0.0 for an empty list."""
    if not xs:
        return 0.0
    total = 0
    for i in range(1, len(xs)):
        total += xs[i]
    return total / len(xs)


def passed(scores, pass_mark=50):
    """How many scores reach the pass mark."""
    return sum(1 for s in scores if s >= pass_mark)
