// `kfuse train --ranks N`: the data-parallel run's local launcher, as
// torchrun is PyTorch's. It starts N copies of the command, each told its
// rank, the world size and a rendezvous store of its own, and waits for
// them; the first rank to fail stops the others.
#pragma once

#include <string>
#include <vector>

#include "ir/support/expected.h"

namespace kfuse::cli {

// Runs this process's command line (/proc/self/cmdline), without its
// --ranks option, as ranks 0..ranks-1, each with `--rank R --world-size N --store file:DIR`
// appended (DIR a fresh directory, removed at the end). Rank 0's standard
// output is this process's; the other ranks' is discarded (every rank
// prints the same losses), their errors are not. Returns when all ranks
// have ended: an Error naming the first rank that failed (its exit status
// or signal), after stopping the others.
Status launchRanks(int ranks);

// argv without `--ranks N` / `--ranks=N`.
std::vector<std::string> withoutRanksOption(const std::vector<std::string>& argv);

}  // namespace kfuse::cli
