// Internal: how kernel_target.cc assembles one KernelTable per target from the translation units
// that implement the kernels. Each *_hwy.cc compiles its kernels once per Highway target and
// fills its members of the table for the target asked for.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hwy/targets.h"
#include "kernels/kernel_target.h"

namespace kvengine::kernels_internal {

// Each fills its members of `table` (and target_name / hwy_target) with the kernels compiled for
// `hwy_target`, one of hwy::SupportedAndGeneratedTargets().
void FillMatMulKernels(int64_t hwy_target, KernelTable* table);     // matmul_hwy.cc
void FillVectorOpsKernels(int64_t hwy_target, KernelTable* table);  // vector_ops_hwy.cc
void FillRopeKernels(int64_t hwy_target, KernelTable* table);       // rope_hwy.cc
// The scalar reference (kernel_ref.h).
void FillReferenceKernels(KernelTable* table);  // kernel_target.cc

// The index of `hwy_target`'s entry in a HWY_EXPORT table: what hwy::ChosenTarget::GetIndex
// returns on a CPU that supports exactly that target (its mask shifted into the table's order,
// with the baseline SCALAR / EMU128 entry last). Lets us pick any compiled target without
// hwy::SetSupportedTargetsForTest, which changes process-wide state.
inline size_t HwyExportIndex(int64_t hwy_target) {
#if (HWY_TARGETS & (HWY_TARGETS - 1)) == 0
  (void)hwy_target;
  return 0;  // Only one target compiled: HWY_EXPORT makes a one-entry table.
#else
  const int64_t mask = HWY_CHOSEN_TARGET_SHIFT(hwy_target) | HWY_CHOSEN_TARGET_MASK_SCALAR;
  return hwy::Num0BitsBelowLS1Bit_Nonzero64(
      static_cast<uint64_t>(mask & HWY_CHOSEN_TARGET_MASK_TARGETS));
#endif
}

}  // namespace kvengine::kernels_internal
