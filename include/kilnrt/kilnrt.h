// The whole public C++ API of kilnrt.
#pragma once
#include "kilnrt/dtype.h"
#include "kilnrt/engine.h"
#include "kilnrt/error.h"
#include "kilnrt/npy.h"
#include "kilnrt/tensor.h"
