// The JSON decoder's walk (json_walk_impl.hpp) compiled for AVX2: this file alone is built with
// simdjson's haswell target flags (-mavx2 -mbmi -mpclmul -mlzcnt; see Makefile and
// CMakeLists.txt), so simdjson::ondemand here is simdjson::haswell::ondemand and the walk and
// the inlined On-Demand code use AVX2/BMI instructions. JsonDecoder calls new_haswell_kernel()
// only after checking the CPU (json_decoder.cpp, haswell_kernel_supported()).
//
// Rules for this file, so that no AVX2 instruction runs on a CPU without AVX2:
// - Nothing here may run before that check: no namespace-scope objects with constructors
//   (none: checked with `nm` for a _GLOBAL__sub_I_ symbol when this was written).
// - Inline and template code that other units also instantiate would be merged by the linker
//   with theirs, and the linker may keep this unit's AVX2 copy for all callers. The walk
//   itself has internal linkage and simdjson's On-Demand code lives in simdjson::haswell, so
//   those are distinct; the kernel is handed raw pointers (json_walk.hpp) to keep the shared
//   std:: templates it touches to trivial accessors, which an optimised build inlines.
#include "json_walk.hpp"

#if defined(__x86_64__)

#if !SIMDJSON_CAN_ALWAYS_RUN_HASWELL
#error "json_decoder_haswell.cpp must be compiled with -mavx2 -mbmi -mpclmul -mlzcnt"
#endif

#include "json_walk_impl.hpp"

#include <type_traits>

static_assert(std::is_same_v<simdjson::ondemand::parser, simdjson::haswell::ondemand::parser>,
              "this unit must build simdjson's haswell On-Demand implementation");

namespace stoatflow::kafka::detail {
WalkKernel* new_haswell_kernel() { return new Kernel("haswell"); }
}  // namespace stoatflow::kafka::detail

#else

namespace stoatflow::kafka::detail {
WalkKernel* new_haswell_kernel() { return nullptr; }
}  // namespace stoatflow::kafka::detail

#endif
