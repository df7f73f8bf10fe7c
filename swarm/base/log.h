// Diagnostics for --log-level debug/trace: spdlog's default logger, which the
// CLI points at stderr. Include only in .cc files (spdlog is header-only here).
#pragma once

#include <spdlog/spdlog.h>
