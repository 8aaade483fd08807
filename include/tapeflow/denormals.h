#pragma once
/// \file denormals.h
/// Whether tapeflow's ops flush subnormal ("denormal") numbers to zero.
///
///   tf::set_flush_denormal(false);   // IEEE gradual underflow, as NumPy and PyTorch compute
///
/// By default every op computes as TensorFlow's kernels do: subnormal operands read as zero and
/// subnormal results are written as zero (x86's flush-to-zero and denormals-are-zero modes), and
/// rounding is to nearest. So tf::sigmoid(tf::constant(-100.f)) is 0, not 3.7e-44. On x86 an
/// operation on a subnormal takes tens to a hundred times as long as on a normal number, and
/// training produces them (Adam's moment estimates of tiny gradients): without flushing, the MLP
/// of `tapeflow train` ran its third epoch at a third of its first epoch's speed. The smallest
/// normal float32 is about 1.2e-38 (float64: 2.2e-308), so flushing changes only results below
/// those.
///
/// The setting applies to every op, on every thread, from the next op on; it changes the mode of
/// the calling thread only while an op runs (the program's own arithmetic is untouched) and that
/// of tapeflow's worker threads. OpenBLAS's worker threads (large matrix products) keep the
/// process's mode. On CPUs other than x86 flushing is not supported and the setting stays off.

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// Makes ops flush subnormal numbers to zero (true, the default) or compute with them (false).
/// Returns whether the CPU supports flushing (x86: always); where it does not, a call to turn it
/// on changes nothing.
bool set_flush_denormal(bool flush);

/// Whether ops flush subnormal numbers to zero now.
bool flush_denormal();

}  // namespace tapeflow
#pragma GCC visibility pop
