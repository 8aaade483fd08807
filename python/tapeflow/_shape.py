"""tf.TensorShape: a tensor's dimensions, a tuple that prints as TensorFlow prints it."""

__all__ = ["TensorShape"]


class TensorShape(tuple):
    """The dimensions of a tensor: `print(x.shape)` shows `(3, 2)`, `repr` `TensorShape([3, 2])`.
    Indexing and comparison are a tuple's; None is an unknown dimension."""

    def __new__(cls, dims):
        if dims is None:
            dims = ()
        return super().__new__(cls, (None if d is None or d < 0 else int(d) for d in dims))

    def __repr__(self):
        return f"TensorShape({list(self)})"

    __str__ = tuple.__repr__

    @property
    def rank(self):
        return len(self)

    @property
    def ndims(self):
        return len(self)

    def as_list(self):
        return list(self)

    def num_elements(self):
        n = 1
        for d in self:
            if d is None:
                return None
            n *= d
        return n

    def is_fully_defined(self):
        return all(d is not None for d in self)
