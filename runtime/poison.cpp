#include "runtime/poison.h"

#ifndef KFUSE_POISON_BY_DEFAULT
#define KFUSE_POISON_BY_DEFAULT 0
#endif

namespace kfuse {

bool poisonByDefault() { return KFUSE_POISON_BY_DEFAULT != 0; }

}  // namespace kfuse
