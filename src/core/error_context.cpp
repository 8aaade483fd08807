#include "core/error_context.h"

namespace tapeflow {

void rethrow_with_context(const Error& e, const std::string& context) {
  const std::string what = context + e.what();
  if (dynamic_cast<const InvalidArgumentError*>(&e)) throw InvalidArgumentError(what);
  if (dynamic_cast<const LookupError*>(&e)) throw LookupError(what);
  if (dynamic_cast<const FailedPreconditionError*>(&e)) throw FailedPreconditionError(what);
  if (dynamic_cast<const ResourceExhaustedError*>(&e)) throw ResourceExhaustedError(what);
  if (dynamic_cast<const OutOfRangeError*>(&e)) throw OutOfRangeError(what);
  if (dynamic_cast<const UnimplementedError*>(&e)) throw UnimplementedError(what);
  if (dynamic_cast<const DataLossError*>(&e)) throw DataLossError(what);
  if (dynamic_cast<const UnavailableError*>(&e)) throw UnavailableError(what);
  if (dynamic_cast<const InternalError*>(&e)) throw InternalError(what);
  throw Error(what);
}

}  // namespace tapeflow
