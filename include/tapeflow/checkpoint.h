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
/// restore_checkpoint needs the variables to exist: a model not yet called, or an optimizer not
/// yet built, has none. tf::Checkpoint (tf.train.Checkpoint) restores them as they are created,
/// and tf::CheckpointManager (tf.train.CheckpointManager) numbers, keeps and finds checkpoints:
///
///   tf::Checkpoint ckpt;
///   ckpt.track("model", model).track("optimizer", optimizer);
///   tf::CheckpointManager manager(ckpt, "run/", {.max_to_keep = 3});
///   manager.restore_or_initialize();     // restores the latest, if any: the variables that
///                                        // exist now at once, the others as they are created
///   for (...) { train_step(); if (...) manager.save(); }   // run/ckpt-1, run/ckpt-2, ...
///
/// A restore that leaves entries of the file unmatched is never silent: the status's asserts
/// (assert_consumed, assert_existing_objects_matched, assert_nontrivial_match) throw listing
/// them, and a restoration that ends (its Checkpoint destroyed or restoring again) with entries
/// never matched logs a warning naming them, unless expect_partial() was called.
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

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tapeflow/module.h"
#include "tapeflow/shape.h"
#include "tapeflow/variable.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

namespace optimizers {
class Optimizer;
}

/// A list of named variables, the unit a checkpoint saves and restores. Names must be non-empty
/// and unique within one list; they are stored as given (UTF-8 bytes, at most 65535 bytes).
using NamedVariables = std::vector<std::pair<std::string, Variable>>;

/// Options for restore_checkpoint.
struct RestoreOptions {
  /// By default an entry in the file that matches no variable is an error (it usually means the
  /// wrong file, a renamed variable, or variables not created yet: a model not yet called, an
  /// optimizer not yet built; tf::Checkpoint restores those as they are created). Set to restore
  /// a subset, e.g. a model's weights from a checkpoint that also holds an optimizer's state. An
  /// empty variable list is refused all the same when the file holds tensors: it would restore
  /// nothing.
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
/// different shape or dtype, unused entries, duplicate names, file cannot be opened, an empty
/// `vars` while the file holds tensors).
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

namespace detail {
struct PendingRestore;     // a restoration's file and what it has matched (src/io/checkpoint.cpp)
struct CheckpointObjects;  // what a Checkpoint tracks
}  // namespace detail

/// What Checkpoint::restore matched (tf.train.Checkpoint.restore's CheckpointLoadStatus). It
/// follows the restoration as it goes on: a variable created later with a name the file holds is
/// restored when it is created, and counts from then on. Every assert returns the status, so that
/// `ckpt.restore(path).assert_consumed();` reads as in TensorFlow, and throws
/// InvalidArgumentError naming the file and listing (the first ten of) what is unmatched.
/// Valid while its Checkpoint and the objects it tracks live.
class CheckpointLoadStatus {
 public:
  /// Every entry of the file restored a variable, and every variable of the tracked objects that
  /// exists now was restored (nothing left over on either side).
  const CheckpointLoadStatus& assert_consumed() const;
  /// Every variable of the tracked objects that exists now was restored; entries not matched
  /// (yet) are allowed.
  const CheckpointLoadStatus& assert_existing_objects_matched() const;
  /// At least one variable was restored: the file is not unrelated to the tracked objects.
  const CheckpointLoadStatus& assert_nontrivial_match() const;
  /// Declares a partial restore intended: no warning about entries never matched when the
  /// restoration ends. The asserts still check.
  const CheckpointLoadStatus& expect_partial() const;
  /// The checkpoint file restored from.
  const std::string& path() const;

 private:
  friend class Checkpoint;
  explicit CheckpointLoadStatus(std::shared_ptr<detail::PendingRestore> restore)
      : restore_(std::move(restore)) {}
  std::shared_ptr<detail::PendingRestore> restore_;
};

/// Modules, optimizers and variables saved and restored together under names
/// (tf.train.Checkpoint(model=..., optimizer=...)), restoring variables created after the
/// restore as they are created: a model restored before its first call gets its weights when the
/// call builds its layers, an optimizer's slots when build() or the first update creates them.
///
///   tf::Checkpoint ckpt;
///   ckpt.track("model", model).track("optimizer", optimizer);
///   ckpt.write("train.ckpt");
///   ...
///   ckpt.restore("train.ckpt");          // before the model's first call: nothing exists yet
///   model(x);                            // builds the layers, which get the saved values
///
/// Names in the file: a module's variables under "<name>/" as checkpoint_variables(module,
/// name + "/") names them ("model/0/kernel"), an optimizer's under "<name>/" as its variables()
/// ("optimizer/iterations", "optimizer/kernel/m"), a variable as "<name>". So a file written by
/// save_checkpoint with those names restores here, and the other way round.
///
/// NOTE: a module's entries are numbered by the variable's position in module.variables(). A
/// variable restored when it is created keeps its number only if the variables created after it
/// come after it in that order, as when layers build in the order they were tracked (a
/// Sequential, a model calling its layers in order). If a later variable takes its place, the
/// creation throws FailedPreconditionError naming both: build such a model (call it once) before
/// restoring.
///
/// The tracked objects must outlive the Checkpoint (as a Module's sub-modules do). A Checkpoint is
/// used from one thread; variables may be created in any thread while a restoration is pending.
class Checkpoint {
 public:
  /// A checkpoint tracking nothing yet.
  Checkpoint();
  /// Ends the pending restoration, if any (see restore()).
  ~Checkpoint();
  Checkpoint(const Checkpoint&) = delete;
  Checkpoint& operator=(const Checkpoint&) = delete;

  /// Tracks `module`'s variables, present and future, under "<name>/". Returns *this. Throws
  /// InvalidArgumentError for an empty name or one tracked already.
  Checkpoint& track(const std::string& name, const Module& module);
  /// Tracks `optimizer`'s state (iterations and slots, present and future) under "<name>/".
  Checkpoint& track(const std::string& name, const optimizers::Optimizer& optimizer);
  /// Tracks one variable under `name`.
  Checkpoint& track(const std::string& name, const Variable& variable);

  /// The variables the tracked objects hold now, under their names in the file, in tracking order.
  NamedVariables variables() const;

  /// Writes variables() to `path` with save_checkpoint (atomically; same errors).
  void write(const std::string& path) const;

  /// Restores `path` into the tracked objects. The file is validated (DataLossError) and the
  /// variables that exist now are matched and assigned all-or-nothing, as restore_checkpoint does
  /// (InvalidArgumentError for a shape or dtype that differs; nothing changes then). An entry
  /// whose variable does not exist yet stays pending: the variable is assigned the saved value
  /// when a tracked module or optimizer creates it (InvalidArgumentError from that creation if
  /// its shape or dtype differs). The restoration stays pending, holding the file open (it may
  /// be deleted or replaced meanwhile), until every entry is matched, restore() is called again,
  /// or the Checkpoint is destroyed; it then logs a warning listing the entries never matched,
  /// unless the status's expect_partial() was called. Throws InvalidArgumentError when the file
  /// cannot be opened.
  CheckpointLoadStatus restore(const std::string& path);

 private:
  std::shared_ptr<const detail::CheckpointObjects> objects_;
  std::shared_ptr<detail::PendingRestore> pending_;
};

/// Options of CheckpointManager.
struct CheckpointManagerOptions {
  /// How many checkpoints to keep (at least 1): after a save, the oldest beyond this many are
  /// deleted. std::nullopt keeps all.
  std::optional<int> max_to_keep = 5;
  /// The checkpoints' file names are "<checkpoint_name>-<number>" (a plain file name: no '/').
  std::string checkpoint_name = "ckpt";
};

/// Numbered checkpoints of one Checkpoint in a directory, the last few kept
/// (tf.train.CheckpointManager):
///
///   tf::CheckpointManager manager(ckpt, "run/", {.max_to_keep = 3});
///   manager.restore_or_initialize();      // the latest checkpoint, if any; else nothing
///   ...
///   std::string path = manager.save();    // "run/ckpt-1", then "run/ckpt-2", ...
///
/// The directory holds the checkpoints and an index file named "checkpoint", which lists the
/// kept checkpoints oldest first (docs/CHECKPOINT_FORMAT.md): a manager created later on the same
/// directory (after a restart) finds them, and numbers its saves after the highest. A save writes
/// the checkpoint, then the index, each atomically, then deletes the checkpoints the index no
/// longer lists: a crash midway never leaves an index naming a missing or partial file. The
/// directory must not be shared by two managers saving at the same time.
class CheckpointManager {
 public:
  /// Manages `checkpoint`'s saves in `directory`, which is created if missing. Reads the index if
  /// there is one: DataLossError naming it when it is corrupt. Throws InvalidArgumentError for
  /// max_to_keep < 1 or a checkpoint_name that is empty or holds '/', FailedPreconditionError
  /// when the directory cannot be created or is not a directory. `checkpoint` must outlive it.
  CheckpointManager(Checkpoint& checkpoint, std::string directory, CheckpointManagerOptions options = {});

  /// Writes the checkpoint as "<directory>/<checkpoint_name>-<number>", `number` defaulting to
  /// one more than the highest kept (1 for the first), updates the index and deletes the oldest
  /// checkpoints beyond max_to_keep. Returns the path written. Throws what save_checkpoint
  /// throws, InvalidArgumentError for a negative number; nothing is deleted if a write fails.
  std::string save(std::optional<std::int64_t> number = std::nullopt);

  /// The path of the newest checkpoint kept, std::nullopt when there is none.
  std::optional<std::string> latest_checkpoint() const;
  /// The paths of the kept checkpoints, oldest first.
  std::vector<std::string> checkpoints() const;

  /// Restores the latest checkpoint (Checkpoint::restore, deferred for variables not created
  /// yet) and returns its status; when there is none, runs `initialize` (if given) and returns
  /// std::nullopt. A latest checkpoint that is missing or corrupt throws (InvalidArgumentError,
  /// DataLossError): training never silently starts over.
  std::optional<CheckpointLoadStatus> restore_or_initialize(const std::function<void()>& initialize = {});

  /// The directory, as given.
  const std::string& directory() const { return directory_; }

 private:
  std::string path_of(const std::string& file_name) const;
  void write_index(const std::vector<std::string>& kept) const;

  Checkpoint& checkpoint_;
  std::string directory_;
  CheckpointManagerOptions options_;
  std::vector<std::string> kept_;  // file names, oldest first
};

}  // namespace tapeflow
#pragma GCC visibility pop
