#pragma once
// Whether this build recycles memory itself (the tensor block pool, the recycling allocator) or
// hands every block to operator new, as sanitizer builds do (TAPEFLOW_SYSTEM_MALLOC) so that the
// sanitizers see each one. Tests of reuse skip themselves in the latter.

namespace tapeflow::testing {

#ifdef TAPEFLOW_SYSTEM_MALLOC
inline constexpr bool kRecyclesMemory = false;
#else
inline constexpr bool kRecyclesMemory = true;
#endif

}  // namespace tapeflow::testing
