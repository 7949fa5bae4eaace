// Kernel tables per target, the one in use, and the override.
#include "kernels/kernel_target.h"

#include <atomic>
#include <cctype>
#include <limits>

#include "base/check.h"
#include "base/strings.h"
#include "hwy/targets.h"
#include "kernels/kernel_ref.h"
#include "kernels/kernel_registry.h"

namespace kvengine {
namespace {

constexpr const char* kReferenceName = "ref";

std::vector<KernelTable> BuildTables() {
  std::vector<KernelTable> tables;
  // SupportedAndGeneratedTargets: compiled targets this CPU runs, best (lowest bit) first.
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    KernelTable table;
    kernels_internal::FillMatMulKernels(target, &table);
    kernels_internal::FillVectorOpsKernels(target, &table);
    kernels_internal::FillRopeKernels(target, &table);
    KV_CHECK(table.hwy_target == target)
        << "dispatch table index is wrong for target " << hwy::TargetName(target);
    tables.push_back(table);
  }
  KernelTable ref;
  kernels_internal::FillReferenceKernels(&ref);
  tables.push_back(ref);
  return tables;
}

// The table in use; nullptr until first use, then always one of AvailableKernelTables().
std::atomic<const KernelTable*> g_active{nullptr};


bool IsBaseline(int64_t hwy_target) { return hwy_target == HWY_SCALAR || hwy_target == HWY_EMU128; }

// The table `name` selects (see ForceKernelTarget), or nullptr.
const KernelTable* FindTable(std::string_view name) {
  const std::vector<KernelTable>& tables = AvailableKernelTables();
  if (EqualsIgnoreCase(name, "auto")) return &tables.front();
  const bool baseline_alias = EqualsIgnoreCase(name, "scalar") || EqualsIgnoreCase(name, "emu128");
  for (const KernelTable& table : tables) {
    if (EqualsIgnoreCase(name, table.target_name)) return &table;
    if (baseline_alias && IsBaseline(table.hwy_target)) return &table;
  }
  return nullptr;
}

}  // namespace

void kernels_internal::FillReferenceKernels(KernelTable* table) {
  table->target_name = kReferenceName;
  table->hwy_target = 0;
  table->matmul_rows = &kernels_ref::MatMulRows;
  table->matmul_stream_tokens = std::numeric_limits<int64_t>::max();  // No setup per call.
  table->dequantize_row = &kernels_ref::DequantizeRow;
  table->quant_dot = &kernels_ref::QuantDotTokens;
  table->quant_dot_range = &kernels_ref::QuantDotRange;
  table->rms_norm = &kernels_ref::RmsNorm;
  table->softmax = &kernels_ref::Softmax;
  table->swiglu = &kernels_ref::SwiGlu;
  table->add_in_place = &kernels_ref::AddInPlace;
  table->exp = &kernels_ref::Exp;
  table->exp_non_positive = &kernels_ref::Exp;
  table->rope_apply = &kernels_ref::RopeApply;
}

const std::vector<KernelTable>& AvailableKernelTables() {
  static const std::vector<KernelTable>* const tables = new std::vector<KernelTable>(BuildTables());
  return *tables;
}

const KernelTable& ReferenceKernelTable() { return AvailableKernelTables().back(); }

const KernelTable& ActiveKernelTable() {
  const KernelTable* table = g_active.load(std::memory_order_acquire);
  if (table != nullptr) return *table;
  const KernelTable* best = &AvailableKernelTables().front();
  // First use: choose the best target, unless ForceKernelTarget got there first.
  g_active.compare_exchange_strong(table, best, std::memory_order_acq_rel);
  return *g_active.load(std::memory_order_acquire);
}

Status ForceKernelTarget(std::string_view name) {
  const KernelTable* chosen = FindTable(name);
  if (chosen == nullptr) {
    std::string available;
    for (const std::string& n : AvailableKernelTargets()) {
      available += (available.empty() ? "" : ", ") + n;
    }
    return InvalidArgument("unknown kernel target '" + std::string(name) +
                           "'; available on this CPU: " + available + " (or auto)");
  }
  g_active.store(chosen, std::memory_order_release);
  return Status::Ok();
}

std::string ActiveKernelTarget() { return ActiveKernelTable().target_name; }

std::vector<std::string> AvailableKernelTargets() {
  std::vector<std::string> names;
  for (const KernelTable& table : AvailableKernelTables()) names.emplace_back(table.target_name);
  return names;
}

}  // namespace kvengine
