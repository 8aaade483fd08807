"""tf.nest: nested structures of lists, tuples, namedtuples and dicts, flattened to their leaves
and packed back, in TensorFlow's order (dicts by sorted key)."""

__all__ = ["flatten", "pack_sequence_as", "map_structure", "is_nested"]


def is_nested(structure):
    """True for a list, tuple (namedtuple included) or dict: what flatten() looks into."""
    return isinstance(structure, (list, tuple, dict))


def _children(structure):
    if isinstance(structure, dict):
        return [structure[k] for k in sorted(structure)]
    return list(structure)


def flatten(structure, expand_composites=False):
    """The leaves of `structure`, depth first; a leaf (anything not nested) is a list of itself."""
    del expand_composites  # tapeflow has no composite tensors
    if not is_nested(structure):
        return [structure]
    leaves = []
    for child in _children(structure):
        leaves.extend(flatten(child))
    return leaves


def _pack(structure, leaves):
    if not is_nested(structure):
        return next(leaves)
    if isinstance(structure, dict):
        packed = {k: _pack(structure[k], leaves) for k in sorted(structure)}
        return type(structure)((k, packed[k]) for k in structure)
    items = [_pack(child, leaves) for child in structure]
    if isinstance(structure, tuple) and hasattr(structure, "_fields"):  # a namedtuple
        return type(structure)(*items)
    return type(structure)(items)


def pack_sequence_as(structure, flat_sequence, expand_composites=False):
    """`flat_sequence` packed into the shape of `structure` (the inverse of flatten)."""
    del expand_composites
    flat_sequence = list(flat_sequence)
    expected = len(flatten(structure))
    if len(flat_sequence) != expected:
        raise ValueError(
            f"Could not pack sequence. Structure had {expected} atoms, but flat_sequence had "
            f"{len(flat_sequence)} items. Structure: {structure}, flat_sequence: {flat_sequence}.")
    return _pack(structure, iter(flat_sequence))


def map_structure(func, *structures):
    """`func` applied to the leaves of `structures` (all of one structure), packed as the first."""
    if not structures:
        raise ValueError("Must provide at least one structure")
    flats = [flatten(s) for s in structures]
    if any(len(f) != len(flats[0]) for f in flats):
        raise ValueError("The structures given to map_structure do not have the same number of elements")
    return pack_sequence_as(structures[0], [func(*leaves) for leaves in zip(*flats)])
