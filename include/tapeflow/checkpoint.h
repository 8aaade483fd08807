#pragma once
/// \file checkpoint.h
/// Checkpoints: saving and restoring named variables (a model's weights, an optimizer's state).
///
///   namespace tf = tapeflow;
///   tf::save_checkpoint("model.ckpt", model);          // every variable of a Module
///   ...
///   tf::restore_checkpoint("model.ckpt", model);       // all-or-nothing; throws on any problem
///
///   // A model and its optimizer in one file: any list of (name, Variable) pairs works.
///   auto entries = tf::checkpoint_variables(model, "model/");
///   for (auto& [name, var] : optimizer.variables()) entries.emplace_back("optimizer/" + name, var);
///   tf::save_checkpoint("train.ckpt", entries);
///   tf::restore_checkpoint("train.ckpt", entries);
///
/// The file format (little-endian, CRC32 over the index and over every tensor's bytes) is
/// described in docs/CHECKPOINT_FORMAT.md.
///
/// Saving is atomic: the bytes go to an unnamed file (O_TMPFILE) fsynced, linked as `path + ".tmp.<pid>"`
/// and renamed over `path` (then the directory is fsynced). If anything fails, the temporary file is
/// removed and the previous checkpoint at `path`, if any, is untouched. `path` must be a regular file or
/// not exist: a directory, device, FIFO, socket or symbolic link there is refused, never replaced. A save
/// killed while writing leaves nothing; one killed between link and rename, or without O_TMPFILE, leaves
/// its `path + ".tmp.<pid>"`, which the next save of the same path removes with every other one whose
/// process no longer exists (kill(pid, 0) fails with ESRCH), keeping those of live processes.
///
/// Restoring reads only regular files: a FIFO, device or directory is refused at once (the file
/// is opened without blocking, so a FIFO with no writer does not hang the reader).
///
/// Restoring validates the whole file and matches it against the variables before any variable
/// changes: on any error every variable keeps its value.
///   - DataLossError: the file is corrupt or truncated (bad magic, unknown version or dtype,
///     lengths or offsets outside the file, checksum mismatch, ...).
///   - InvalidArgumentError: the file is sound but does not fit the variables (a name missing, a
///     shape or dtype different, unused entries), the variable list is invalid (duplicate or
///     empty names), or the file cannot be opened (the message names the path and the reason).
///   - FailedPreconditionError: saving failed in the file system (cannot create, write, fsync or
///     rename; the path is not a regular file; its directory is missing or not writable); the
///     message names the path and the reason.
/// Every message names the file and, where there is one, the tensor.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tapeflow/module.h"
#include "tapeflow/shape.h"
#include "tapeflow/variable.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// A list of named variables, the unit a checkpoint saves and restores. Names must be non-empty
/// and unique within one list; they are stored as given (UTF-8 bytes, at most 65535 bytes).
using NamedVariables = std::vector<std::pair<std::string, Variable>>;

/// Options for restore_checkpoint.
struct RestoreOptions {
  /// By default an entry in the file that matches no variable is an error (it usually means the
  /// wrong file or a renamed variable). Set to restore a subset, e.g. a model's weights from a
  /// checkpoint that also holds an optimizer's state.
  bool allow_unused_entries = false;
};

/// What the index of a checkpoint says about one tensor (see list_checkpoint).
struct CheckpointEntry {
  /// The name the tensor was saved under, its dtype and its shape.
  ///@{
  std::string name;
  DType dtype;
  Shape shape;
  ///@}
};

/// Writes the current values of `vars` to `path`, atomically (see the file comment).
/// Throws InvalidArgumentError for a duplicate, empty or over-long name, FailedPreconditionError
/// when the file system refuses (the message names the path and the reason).
void save_checkpoint(const std::string& path, const NamedVariables& vars);

/// Checks, without writing anything, what save_checkpoint checks of `path` before it writes:
/// `path` is a regular file or nothing, and its directory exists and is writable. Lets a program
/// refuse a bad path before hours of work instead of at the first save. Throws
/// FailedPreconditionError naming the path and the reason (InvalidArgumentError for "").
void check_checkpoint_path(const std::string& path);

/// Reads `path` and assigns every variable of `vars` the tensor saved under its name.
/// All-or-nothing: the file is validated and decoded completely before any variable is assigned.
/// Throws DataLossError (corrupt or truncated file) or InvalidArgumentError (missing name,
/// different shape or dtype, unused entries, duplicate names, file cannot be opened).
void restore_checkpoint(const std::string& path, const NamedVariables& vars, RestoreOptions options = {});

/// The names under which the Module overloads save a module's variables: entry i of
/// `module.variables()` is named `prefix + "<i>/" + variable.name()`, e.g. "0/kernel", "1/bias",
/// "2/scale:0". The index keeps names unique when several layers have a "kernel"; the name makes
/// a restore into a module whose variables were reordered or changed fail loudly.
NamedVariables checkpoint_variables(const Module& module, std::string_view prefix = "");

/// save_checkpoint(path, checkpoint_variables(module)).
void save_checkpoint(const std::string& path, const Module& module);
/// restore_checkpoint(path, checkpoint_variables(module), options).
void restore_checkpoint(const std::string& path, const Module& module, RestoreOptions options = {});

/// The entries of a checkpoint's index, in file order (like tf.train.list_variables). Validates
/// the header and index (DataLossError if corrupt); does not read the tensor data.
std::vector<CheckpointEntry> list_checkpoint(const std::string& path);

}  // namespace tapeflow
#pragma GCC visibility pop
