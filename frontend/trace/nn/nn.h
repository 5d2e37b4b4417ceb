// Every nn module: #include "frontend/trace/nn/nn.h".
#pragma once

#include "frontend/trace/nn/activation.h"
#include "frontend/trace/nn/container.h"
#include "frontend/trace/nn/conv.h"
#include "frontend/trace/nn/dropout.h"
#include "frontend/trace/nn/init.h"
#include "frontend/trace/nn/linear.h"
#include "frontend/trace/nn/module.h"
#include "frontend/trace/nn/normalization.h"
#include "frontend/trace/nn/pooling.h"
#include "frontend/trace/nn/transformer.h"
