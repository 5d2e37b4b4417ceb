// Whether buffer poisoning (CpuRunnerOptions::poison) is on when no option
// says otherwise. Off, unless kfuse was configured with
// -DKFUSE_POISON_BY_DEFAULT=ON: scripts/test.sh builds that way for a pass
// of the whole suite with every dead buffer poisoned (docs/memory.md). A
// build choice, not an environment variable: only poison.cpp differs
// between the two builds, so switching relinks and recompiles nothing else.
#pragma once

namespace kfuse {

bool poisonByDefault();

}  // namespace kfuse
