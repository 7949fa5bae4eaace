// The reports of `kvengine plan`: text and JSON.
// Pure functions; any thread.
#pragma once

#include <string>
#include <vector>

#include "planner/kv_plan.h"

namespace kvengine {

std::string FormatPlanText(const KvPlan& plan);
std::string FormatPlanJson(const KvPlan& plan);

}  // namespace kvengine
