#pragma once
// Reading and writing tensors in files.

#include "oxmera/io/safetensors.h"
