"""tf.image: image adjustments."""

from . import _tapeflow


def adjust_contrast(images, contrast_factor):
    """(images - mean) * contrast_factor + mean per channel (raw op AdjustContrastv2, which has no
    gradient, as in TensorFlow)."""
    return _tapeflow.adjust_contrast(images, contrast_factor)
