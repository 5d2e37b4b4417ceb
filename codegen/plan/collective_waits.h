// Where each collective's wait goes: a Start step hands its bucket to the
// communicator, and the steps after it run while the exchange proceeds
// until one needs the bucket.
#pragma once

#include "exec/plan.h"

namespace kfuse {

// Inserts, for every collective Start step, its Wait step just before the
// first later step that touches the storage of one of its outputs (through
// any alias), or at the end. A bucket holding a plan output (the loss) is
// also waited for before the first later step that writes a parameter or a
// parameter's new value (which in-place rewriting may put in its storage),
// so that the runner's finite-loss guard reads the exchanged loss.
void placeCollectiveWaits(Plan& p);

}  // namespace kfuse
