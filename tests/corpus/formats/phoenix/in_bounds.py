def in_bounds(x):
    return 1 <= x <= 100
